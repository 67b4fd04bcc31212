//! Reading a 128 MiB dense matrix into a new `Array2`, and `to_vec` of it, with and without
//! huge pages, against an allocate-and-copy of the same bytes: medians of 9, alternating, in
//! one process.
//!
//! Usage: cargo run --release --example huge_pages

use std::time::{Duration, Instant};

use serde_daphne::Dense;

fn median(mut t: Vec<Duration>) -> f64 {
    t.sort();
    t[t.len() / 2].as_secs_f64() * 1e3
}

fn main() -> serde_daphne::Result<()> {
    let n = 4096;
    let m = ndarray::Array2::from_shape_fn((n, n), |(r, c)| (r * n + c) as f64);
    let bytes = serde_daphne::to_vec(&serde_daphne::DenseView(m.view()))?;
    let (mut on, mut off, mut copy) = (Vec::new(), Vec::new(), Vec::new());
    let (mut write_on, mut write_off) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        for huge in [true, false] {
            serde_daphne::lowlevel::set_huge_pages(huge);
            let t = Instant::now();
            let back: Dense<f64> = serde_daphne::from_slice(&bytes)?;
            let took = t.elapsed();
            assert_eq!(back.0.dim(), (n, n));
            drop(back);
            if huge {
                on.push(took)
            } else {
                off.push(took)
            }
            let t = Instant::now();
            let out = serde_daphne::to_vec(&serde_daphne::DenseView(m.view()))?;
            let took = t.elapsed();
            assert_eq!(out.len(), bytes.len());
            drop(out);
            if huge {
                write_on.push(took)
            } else {
                write_off.push(took)
            }
        }
        let t = Instant::now();
        let fresh = bytes.clone();
        copy.push(t.elapsed());
        drop(fresh);
    }
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    println!("THP mode: {}", thp.trim());
    println!(
        "from_slice 4096^2 f64 (128 MiB): huge pages {:.1} ms, without {:.1} ms; allocate+copy {:.1} ms",
        median(on),
        median(off),
        median(copy)
    );
    println!(
        "to_vec 4096^2 f64: huge pages {:.1} ms, without {:.1} ms",
        median(write_on),
        median(write_off)
    );
    Ok(())
}
