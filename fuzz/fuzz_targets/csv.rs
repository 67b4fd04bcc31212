//! Any bytes as CSV, with and without a sidecar's types: an error or an object, never a
//! panic.
#![no_main]

use dbdf::convert::{from_slice, ConvertOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = from_slice(data, "csv".parse().unwrap(), &ConvertOptions::default());
});
