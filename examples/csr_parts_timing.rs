//! Times `DbdfFile::read_csr_parts` (what Python's `dbdf.load` of a CSR matrix runs) of a
//! spec-dialect file into `f64` values and `i32` indices: medians of N in one process.
//!
//! `cargo run --release --example csr_parts_timing -- FILE [N]`

use std::time::Instant;

use serde_daphne::DbdfFile;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args[1].as_str();
    let reps: usize = args.get(2).map_or(15, |s| s.parse().unwrap());
    let mut ms = Vec::new();
    let mut nnz = 0;
    for _ in 0..reps {
        let start = Instant::now();
        let parts = DbdfFile::open(path)
            .and_then(|mut f| f.read_csr_parts::<f64, i32>(0))
            .unwrap();
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        nnz = parts.values.len();
        std::hint::black_box(parts);
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "read_csr_parts::<f64, i32> median {:.1} ms (min {:.1}, max {:.1}), {nnz} entries",
        ms[ms.len() / 2],
        ms[0],
        ms[ms.len() - 1]
    );
}
