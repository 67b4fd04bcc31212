//! Every path that fills new memory, each call made after the machine was idle for a while
//! (issue 48): memory freed by the last call has then gone back to the host of a virtual
//! machine that takes back free memory, as on a server between requests. Medians of
//! `--runs` calls, the paths taken in turns, each call after `--idle` seconds of sleep.
//! Criterion's benchmarks call back to back instead, and measure memory the host still backs.
//!
//! `cargo bench --bench idle -- [--idle SECONDS] [--runs N]` (defaults: 3 and 5).

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_daphne::{Csr, CsrView, Dense, DenseView, Options};

use common::{dense_matrix, random_csr};

/// A path's name and one call of it (whose result is dropped outside the timing).
type Path<'a> = (&'a str, Box<dyn Fn() -> Box<dyn std::any::Any> + 'a>);

fn option(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (idle, runs) = (option("--idle", 3), option("--runs", 5) as usize);
    let a = dense_matrix(4096, 4096);
    let dense = serde_daphne::to_vec(&DenseView(a.view())).unwrap();
    let tiled = Options {
        tile: Some((1000, 1000)),
        ..Options::new()
    };
    let tiled_bytes = tiled.to_vec(&DenseView(a.view())).unwrap();
    let m = random_csr(1_000_000, 10_000_000);
    let csr = serde_daphne::to_vec(&CsrView(m.view())).unwrap();
    #[cfg(target_os = "linux")]
    let npy = {
        use ndarray_npy::WriteNpyExt;
        let mut npy = Vec::new();
        a.write_npy(&mut npy).unwrap();
        npy
    };
    let mut warm = dense.clone();
    let warm_copy = std::cell::RefCell::new(&mut warm);
    let mut paths: Vec<Path<'_>> = vec![
        (
            "dense memcpy/warm",
            Box::new(|| {
                warm_copy.borrow_mut().copy_from_slice(black_box(&dense));
                Box::new(())
            }),
        ),
        (
            "dense memcpy/fresh",
            Box::new(|| Box::new(black_box(&dense).to_vec())),
        ),
        (
            "dense from_slice",
            Box::new(|| Box::new(serde_daphne::from_slice::<Dense<f64>>(&dense).unwrap())),
        ),
        (
            "dense to_vec",
            Box::new(|| Box::new(serde_daphne::to_vec(&DenseView(a.view())).unwrap())),
        ),
        (
            "dense from_slice_tiled_1000",
            Box::new(|| Box::new(serde_daphne::from_slice::<Dense<f64>>(&tiled_bytes).unwrap())),
        ),
        (
            "csr memcpy/fresh",
            Box::new(|| Box::new(black_box(&csr).to_vec())),
        ),
        (
            "csr from_slice",
            Box::new(|| Box::new(serde_daphne::from_slice::<Csr<f64>>(&csr).unwrap())),
        ),
        (
            "csr to_vec",
            Box::new(|| Box::new(serde_daphne::to_vec(&CsrView(m.view())).unwrap())),
        ),
    ];
    #[cfg(target_os = "linux")]
    paths.push((
        "dense read_npy",
        Box::new(|| {
            use ndarray_npy::ReadNpyExt;
            Box::new(ndarray::Array2::<f64>::read_npy(&npy[..]).unwrap())
        }),
    ));
    let mut times = vec![Vec::new(); paths.len()];
    for _ in 0..runs {
        for (k, (_, call)) in paths.iter().enumerate() {
            std::thread::sleep(Duration::from_secs(idle));
            let started = Instant::now();
            let result = call();
            times[k].push(started.elapsed().as_secs_f64() * 1e3);
            drop(result);
        }
    }
    // The CPU model beside the figures, as every benchmark prints it (benches/machine.py).
    let _ = std::process::Command::new("python3")
        .arg("benches/machine.py")
        .status();
    println!("each call after {idle} s idle, medians of {runs}:");
    for ((name, _), t) in paths.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let all: Vec<String> = t.iter().map(|x| format!("{x:.0}")).collect();
        println!(
            "  {name:<32} {:9.2} ms  [{}]",
            t[t.len() / 2],
            all.join(" ")
        );
    }
}
