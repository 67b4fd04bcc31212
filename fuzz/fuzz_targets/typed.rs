//! Any bytes into each typed adapter and serde shape: an error or a value, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_daphne::{from_slice_with, Csr, Dense, Frame, Options};

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
    let _ = from_slice_with::<Dense<f64>>(data, &options);
    let _ = from_slice_with::<Dense<u8>>(data, &options);
    let _ = from_slice_with::<Csr<f64>>(data, &options);
    let _ = from_slice_with::<Csr<i32>>(data, &options);
    let _ = from_slice_with::<Frame<Record>>(data, &options);
    let _ = from_slice_with::<Vec<f64>>(data, &options);
    let _ = from_slice_with::<Vec<Vec<i64>>>(data, &options);
    let _ = from_slice_with::<f64>(data, &options);
    let _ = from_slice_with::<(u8, f32)>(data, &options);
    let _ = from_slice_with::<Mixed>(data, &options);
    let _ = serde_daphne::from_reader_with::<_, Vec<Dense<i16>>>(data, &options);
});
