//! Times `to_vec` of a 4096 x 4096 f64 matrix untiled and tiled 1000 x 1000 into fresh
//! vectors, and the same into a reused vector (`append_to_vec`), alternating, medians of N in
//! one process, with the minor page faults each took (Linux).
//!
//! `cargo run --release --example tiled_write_timing -- [N] [untiled|tiled]` (both by default).

use std::hint::black_box;
use std::time::Instant;

use serde_daphne::{DenseView, Options};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Minor page faults of this process so far (0 where /proc is missing).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    after
        .split_whitespace()
        .nth(7)
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let reps: usize = std::env::args().nth(1).map_or(21, |s| s.parse().unwrap());
    let n = 4096;
    let m = ndarray::Array2::from_shape_fn((n, n), |(r, c)| (r * n + c) as f64);
    let untiled = Options::new();
    let tiled = Options {
        tile: Some((1000, 1000)),
        ..Options::new()
    };
    let only = std::env::args().nth(2);
    let cases: Vec<(&str, &Options)> = [("untiled", &untiled), ("tiled", &tiled)]
        .into_iter()
        .filter(|(name, _)| only.as_deref().is_none_or(|o| o == *name))
        .collect();
    let mut fresh = [Vec::new(), Vec::new()];
    let mut faults = [Vec::new(), Vec::new()];
    let mut reused = [Vec::new(), Vec::new()];
    let mut out = Vec::new();
    for _ in 0..reps {
        for (i, (_, options)) in cases.iter().enumerate() {
            let f0 = minor_faults();
            let start = Instant::now();
            let bytes = options.to_vec(&DenseView(m.view())).unwrap();
            fresh[i].push(start.elapsed().as_secs_f64() * 1e3);
            faults[i].push(minor_faults() - f0);
            drop(black_box(bytes));
            out.clear();
            let start = Instant::now();
            options
                .append_to_vec(&mut out, &DenseView(m.view()))
                .unwrap();
            reused[i].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    if std::env::var_os("ALL").is_some() {
        for (i, (name, _)) in cases.iter().enumerate() {
            let mut t = fresh[i].clone();
            t.sort_by(|a, b| a.total_cmp(b));
            println!("{name}: {t:.1?}");
        }
    }
    for (i, (name, _)) in cases.iter().enumerate() {
        println!(
            "{name:>8}: to_vec {:6.2} ms ({} faults), append_to_vec reused {:6.2} ms",
            median(fresh[i].clone()),
            median(faults[i].iter().map(|&f| f as f64).collect()) as u64,
            median(reused[i].clone()),
        );
    }
    if cases.len() == 2 {
        println!(
            "tiled / untiled speed: to_vec {:.2}x, reused {:.2}x",
            median(fresh[0].clone()) / median(fresh[1].clone()),
            median(reused[0].clone()) / median(reused[1].clone()),
        );
    }
}
