//! Times a window read from a large tiled file against `from_file` of a file holding just
//! that window (the baseline), medians of several runs in one process. Used by
//! `benches/out_of_core.sh`.
//!
//! Usage: cargo run --release --example window_timing -- BIG.dbdf [SIZE]

use std::time::{Duration, Instant};

use serde_daphne::{DbdfFile, Dense, DenseView, Options};

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() -> serde_daphne::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: window_timing BIG.dbdf [SIZE]");
    let size: u64 = args
        .next()
        .map_or(1000, |s| s.parse().expect("a window size"));
    let open_start = Instant::now();
    let mut file = DbdfFile::open(&path)?;
    let opened = open_start.elapsed();
    let (rows, cols) = file.objects()[0].header.shape();
    // Windows that cross tile edges, spread over the matrix.
    let starts: Vec<(u64, u64)> = (0..9)
        .map(|k| {
            (
                (k * 1777 + 500) % (rows - size),
                (k * 2903 + 700) % (cols - size),
            )
        })
        .collect();
    let mut window_times = Vec::new();
    let mut window = None;
    for &(r, c) in &starts {
        let t = Instant::now();
        let w = file.read_window::<f64>(0, r..r + size, c..c + size)?;
        window_times.push(t.elapsed());
        window = Some(w);
    }
    let window = window.expect("at least one window");
    // The same windows with plain reads (a vectored read per block's rows, no memory map).
    let mut plain = DbdfFile::open_with(&path, &Options::new().memory_map(false))?;
    let mut plain_times = Vec::new();
    for &(r, c) in &starts {
        let t = Instant::now();
        let w = plain.read_window::<f64>(0, r..r + size, c..c + size)?;
        plain_times.push(t.elapsed());
        assert_eq!(w.dim(), window.dim());
    }
    let small = std::env::temp_dir().join(format!("window_timing_{}.dbdf", std::process::id()));
    serde_daphne::to_file_with(&small, &DenseView(window.view()), &Options::new())?;
    let mut whole_times = Vec::new();
    for _ in &starts {
        let t = Instant::now();
        let m: Dense<f64> = serde_daphne::from_file(&small)?;
        whole_times.push(t.elapsed());
        assert_eq!(m.0.dim(), window.dim());
    }
    std::fs::remove_file(&small)?;
    let (w, f, p) = (
        median(window_times),
        median(whole_times),
        median(plain_times),
    );
    println!(
        "open (index of {} blocks): {:.2} ms",
        file.objects()[0].blocks.len(),
        opened.as_secs_f64() * 1e3
    );
    println!(
        "{size} x {size} window of {rows} x {cols}: {:.2} ms; from_file of that window alone: {:.2} ms; ratio {:.2}",
        w.as_secs_f64() * 1e3,
        f.as_secs_f64() * 1e3,
        w.as_secs_f64() / f.as_secs_f64()
    );
    println!(
        "the same windows with plain reads: {:.2} ms; ratio {:.2}",
        p.as_secs_f64() * 1e3,
        p.as_secs_f64() / f.as_secs_f64()
    );
    Ok(())
}
