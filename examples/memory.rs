//! Peak memory of file writes and reads, for `/usr/bin/time -v` (issue: at most the matrix's
//! N payload bytes plus 16 MiB).
//!
//! ```text
//! cargo build --release --example memory
//! /usr/bin/time -v target/release/examples/memory baseline PATH   # just the matrix in memory
//! /usr/bin/time -v target/release/examples/memory write PATH      # the matrix, then to_file
//! /usr/bin/time -v target/release/examples/memory read PATH       # from_file into Array2
//! ```
//! The matrix is 4096 x 8192 f64: N = 256 MiB.

use ndarray::Array2;
use serde_daphne::{Dense, DenseView};

const ROWS: usize = 4096;
const COLS: usize = 8192;

fn matrix() -> Array2<f64> {
    Array2::from_shape_fn((ROWS, COLS), |(r, c)| (r * COLS + c) as f64 + 0.5)
}

fn main() -> serde_daphne::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (mode, path) = match args.as_slice() {
        [_, mode, path] => (mode.as_str(), path.as_str()),
        _ => {
            eprintln!("usage: memory baseline|write|read PATH");
            std::process::exit(2);
        }
    };
    let n = ROWS * COLS * 8;
    match mode {
        "baseline" => {
            let m = matrix();
            println!("built {} MiB", n >> 20);
            drop(std::hint::black_box(m));
        }
        "write" => {
            let m = matrix();
            serde_daphne::to_file(path, &DenseView(m.view()))?;
            println!("wrote {} MiB of payload to {path}", n >> 20);
        }
        "read" => {
            let Dense(m) = serde_daphne::from_file::<_, Dense<f64>>(path)?;
            assert_eq!(m[[ROWS - 1, COLS - 1]], (ROWS * COLS - 1) as f64 + 0.5);
            println!(
                "read {} x {} ({} MiB of payload)",
                m.nrows(),
                m.ncols(),
                n >> 20
            );
        }
        other => {
            eprintln!("unknown mode {other}");
            std::process::exit(2);
        }
    }
    Ok(())
}
