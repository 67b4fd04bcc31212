//! Any bytes as CSV, with and without a sidecar's types: an error or an object, never a
//! panic.
#![no_main]

use dbdf::csv;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = csv::from_slice(data);
});
