//! Times what Python's `dbdf.load` and `dbdf.save` of a CSR matrix run, in one process
//! (medians of N): `DbdfFile::read_csr_parts` of a spec-dialect file into `f64` values and
//! `i32` indices, and `to_file` of those arrays through `CsrView::try_from_arrays` (checked,
//! then written without sync, as numpy does not sync).
//!
//! `cargo run --release --example csr_arrays_timing -- FILE [N]`

use std::time::Instant;

use serde_daphne::{CsrView, DbdfFile, Options};

fn median(mut ms: Vec<f64>) -> String {
    ms.sort_by(f64::total_cmp);
    let (mid, min, max) = (ms[ms.len() / 2], ms[0], ms[ms.len() - 1]);
    format!("median {mid:.1} ms (min {min:.1}, max {max:.1})")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args[1].as_str();
    let reps: usize = args.get(2).map_or(15, |s| s.parse().unwrap());
    let read = || {
        DbdfFile::open(path)
            .and_then(|mut f| f.read_csr_parts::<f64, i32>(0))
            .unwrap()
    };
    let shape = DbdfFile::open(path).unwrap().objects()[0].header.shape();
    let shape = (shape.0 as usize, shape.1 as usize);
    let mut reads = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        std::hint::black_box(read());
        reads.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let parts = read();
    let out = format!("{path}.written");
    let no_sync = Options {
        sync: false,
        ..Options::new()
    };
    let (mut checks, mut writes) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let start = Instant::now();
        let view =
            CsrView::try_from_arrays(shape, &parts.row_offsets, &parts.col_indices, &parts.values);
        std::hint::black_box(view.unwrap());
        checks.push(start.elapsed().as_secs_f64() * 1e3);
        let _ = std::fs::remove_file(&out);
        let start = Instant::now();
        let view =
            CsrView::try_from_arrays(shape, &parts.row_offsets, &parts.col_indices, &parts.values)
                .unwrap();
        no_sync.to_file(&out, &view).unwrap();
        writes.push(start.elapsed().as_secs_f64() * 1e3);
    }
    std::fs::remove_file(&out).unwrap();
    println!("{} entries", parts.values.len());
    println!("read_csr_parts::<f64, i32> {}", median(reads));
    println!("try_from_arrays {}", median(checks));
    println!("try_from_arrays + to_file {}", median(writes));
}
