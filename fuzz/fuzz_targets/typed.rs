//! Any bytes into each typed adapter and serde shape: an error or a value, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_daphne::{Csr, Dense, Frame, Options};

#[derive(Deserialize)]
#[allow(dead_code)]
struct Record {
    a: f64,
    b: i32,
    c: bool,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Mixed {
    #[serde(with = "serde_daphne::dense")]
    dense: ndarray::Array2<f32>,
    #[serde(with = "serde_daphne::csr")]
    csr: sprs::CsMat<u16>,
    #[serde(with = "serde_daphne::frame")]
    frame: Vec<Record>,
    vector: Vec<u64>,
    pair: (i8, f64),
}

fuzz_target!(|data: &[u8]| {
    // Typed reads materialise every cell: the allocation limit keeps the fuzzer's memory
    // bounded, and is exercised itself.
    let options = Options {
        max_alloc: 64 << 20,
        ..Options::new()
    };
    let _ = options.from_slice::<Dense<f64>>(data);
    let _ = options.from_slice::<Dense<u8>>(data);
    let _ = options.from_slice::<Csr<f64>>(data);
    let _ = options.from_slice::<Csr<i32>>(data);
    let _ = options.from_slice::<Frame<Record>>(data);
    let _ = options.from_slice::<Vec<f64>>(data);
    let _ = options.from_slice::<Vec<Vec<i64>>>(data);
    let _ = options.from_slice::<f64>(data);
    let _ = options.from_slice::<(u8, f32)>(data);
    let _ = options.from_slice::<Mixed>(data);
    let _ = options.from_reader::<_, Vec<Dense<i16>>>(data);
});
