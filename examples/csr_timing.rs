//! Times reading and writing a runtime-dialect CSR file (medians of N in one process), for
//! `benches/daphne_csr.sh`, which times DAPHNE's own reader on the same file.
//!
//! `cargo run --release --example csr_timing -- make FILE` writes a 1e6 x 1e6 matrix with
//! 1e7 non-zeros (ten per row, random columns, fixed seed); `... -- time FILE [N]` prints the
//! median `from_file` and `to_file` (no sync, as DAPHNE does not sync) times and peak memory
//! is measured from outside.

use std::time::Instant;

use serde_daphne::{Csr, CsrView, Dialect, Options};

fn median(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(|a, b| a.total_cmp(b));
    (ms[ms.len() / 2], ms[0], ms[ms.len() - 1])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, path) = (args[1].as_str(), args[2].as_str());
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    if mode == "make" {
        let n = 1_000_000usize;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let (mut indptr, mut indices) = (vec![0usize], Vec::with_capacity(10 * n));
        for _ in 0..n {
            let mut c = 0usize;
            for _ in 0..10 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                c += 1 + (x % 99_000) as usize;
                indices.push(c);
            }
            indptr.push(indices.len());
        }
        let data: Vec<f64> = (0..indices.len()).map(|i| i as f64 + 0.5).collect();
        let m = sprs::CsMat::new((n, n), indptr, indices, data);
        runtime.to_file(path, &CsrView(m.view())).unwrap();
        return;
    }
    let reps: usize = args.get(3).map_or(9, |s| s.parse().unwrap());
    let mut reads = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        let m: Csr<f64> = serde_daphne::from_file(path).unwrap();
        reads.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(m);
    }
    let m: Csr<f64> = serde_daphne::from_file(path).unwrap();
    let out = format!("{path}.written");
    let no_sync = serde_daphne::Options {
        sync: false,
        ..runtime
    };
    let mut writes = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        no_sync.to_file(&out, &CsrView(m.0.view())).unwrap();
        writes.push(start.elapsed().as_secs_f64() * 1e3);
        std::fs::remove_file(&out).unwrap();
    }
    let _ = std::fs::remove_file(format!("{out}.meta"));
    let (r, r0, r1) = median(reads);
    let (w, w0, w1) = median(writes);
    println!(
        "serde_daphne from_file median {r:.1} ms (min {r0:.1}, max {r1:.1}), {} non-zeros",
        m.0.nnz()
    );
    println!("serde_daphne to_file (no sync) median {w:.1} ms (min {w0:.1}, max {w1:.1})");
}
