//! Times a window read from a large tiled file against `from_file` of a file holding just
//! that window (the baseline), medians of several windows in one process, with plain reads
//! (the default) and with a memory map. Used by `benches/out_of_core.sh`.
//!
//! Each window has its own baseline file, all written before any is timed, and the three
//! reads of window k follow each other, so that no side reads values the CPU's cache still
//! holds from an earlier read of the same bytes (reading one small file nine times would).
//!
//! Usage: cargo run --release --example window_timing -- BIG.dbdf [SIZE]

use std::time::{Duration, Instant};

use serde_daphne::{DbdfFile, Dense, DenseView, Options};

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Bit for bit (random bits hold NaNs, which equal nothing).
fn same_bits(a: &ndarray::Array2<f64>, b: &ndarray::Array2<f64>) -> bool {
    a.dim() == b.dim() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> serde_daphne::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: window_timing BIG.dbdf [SIZE]");
    let size: u64 = args
        .next()
        .map_or(1000, |s| s.parse().expect("a window size"));
    let open_start = Instant::now();
    let mut plain = DbdfFile::open(&path)?;
    let opened = open_start.elapsed();
    let mut mapped = Options {
        memory_map: true,
        ..Options::new()
    }
    .open(&path)?;
    let (rows, cols) = plain.objects()[0].header.shape();
    // Windows that cross tile edges, spread over the matrix.
    let starts: Vec<(u64, u64)> = (0..9)
        .map(|k| {
            (
                (k * 1777 + 500) % (rows - size),
                (k * 2903 + 700) % (cols - size),
            )
        })
        .collect();
    let small = |k: usize| {
        std::env::temp_dir().join(format!("window_timing_{}_{k}.dbdf", std::process::id()))
    };
    for (k, &(r, c)) in starts.iter().enumerate() {
        let w = plain.read_window::<f64>(0, r..r + size, c..c + size)?;
        Options::new().to_file(small(k), &DenseView(w.view()))?;
    }
    let (mut plain_times, mut mapped_times, mut whole_times) = (vec![], vec![], vec![]);
    for (k, &(r, c)) in starts.iter().enumerate() {
        let t = Instant::now();
        let w = plain.read_window::<f64>(0, r..r + size, c..c + size)?;
        plain_times.push(t.elapsed());
        let t = Instant::now();
        let m: Dense<f64> = serde_daphne::from_file(small(k))?;
        whole_times.push(t.elapsed());
        assert!(same_bits(&m.0, &w), "window {k}");
        let t = Instant::now();
        let w = mapped.read_window::<f64>(0, r..r + size, c..c + size)?;
        mapped_times.push(t.elapsed());
        assert!(same_bits(&m.0, &w), "window {k}");
    }
    for k in 0..starts.len() {
        std::fs::remove_file(small(k))?;
    }
    let (p, f, m) = (
        median(plain_times),
        median(whole_times),
        median(mapped_times),
    );
    println!(
        "open (index of {} blocks): {:.2} ms",
        plain.objects()[0].blocks.len(),
        ms(opened)
    );
    println!(
        "{size} x {size} window of {rows} x {cols}: {:.2} ms; from_file of that window alone: {:.2} ms; ratio {:.2}",
        ms(p),
        ms(f),
        ms(p) / ms(f)
    );
    println!(
        "the same windows through a memory map: {:.2} ms; ratio {:.2}",
        ms(m),
        ms(m) / ms(f)
    );
    Ok(())
}
