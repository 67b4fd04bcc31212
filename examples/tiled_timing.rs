//! Times `from_file` of a 4096 x 4096 f64 matrix stored untiled and tiled 1000 x 1000, into
//! a new `Array2` (medians of N, alternating, in one process).
//!
//! `cargo run --release --example tiled_timing -- DIR [N]` (`ALL=1` also prints every time)

use std::time::Instant;

use serde_daphne::{Dense, DenseView, Options};

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(|a, b| a.total_cmp(b));
    ms[ms.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::Path::new(&args[1]);
    let reps: usize = args.get(2).map_or(9, |s| s.parse().unwrap());
    let n = 4096;
    let m = ndarray::Array2::from_shape_fn((n, n), |(r, c)| (r * n + c) as f64);
    let (untiled, tiled) = (dir.join("untiled.dbdf"), dir.join("tiled.dbdf"));
    let no_sync = Options {
        sync: false,
        ..Options::new()
    };
    no_sync.to_file(&untiled, &DenseView(m.view())).unwrap();
    (serde_daphne::Options {
        tile: Some((1000, 1000)),
        ..no_sync
    })
    .to_file(&tiled, &DenseView(m.view()))
    .unwrap();
    let (mut u, mut t) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        for (path, times) in [(&untiled, &mut u), (&tiled, &mut t)] {
            let start = Instant::now();
            let back: Dense<f64> = serde_daphne::from_file(path).unwrap();
            times.push(start.elapsed().as_secs_f64() * 1e3);
            assert_eq!(back.0.dim(), (n, n));
        }
    }
    if std::env::var_os("ALL").is_some() {
        println!("untiled, in order: {u:.1?}\ntiled, in order: {t:.1?}");
    }
    let (u, t) = (median(u), median(t));
    println!(
        "from_file untiled {u:.1} ms, tiled 1000 x 1000 {t:.1} ms: tiled at {:.2}x",
        u / t
    );
    std::fs::remove_file(untiled).unwrap();
    std::fs::remove_file(tiled).unwrap();
}
