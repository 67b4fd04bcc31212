//! Any bytes as Futhark binary data, a .npy array (record arrays too), a Binsparse .npz
//! archive, a scipy sparse .npz and a numpy .npz of arrays: an error or objects, never a
//! panic; what reads writes back and reads again the same.
#![no_main]

use dbdf::convert::{self, ConvertOptions, FormatOptions};
use dbdf::{futhark, scipy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fut = "futhark".parse().expect("a format");
    let plain = ConvertOptions::default();
    if let Ok(objects) = convert::from_slice(data, fut, &plain) {
        let matrices = futhark::WriteOptions {
            matrices: true,
            ..Default::default()
        };
        let options = ConvertOptions {
            formats: FormatOptions::default().with(matrices),
            ..ConvertOptions::default()
        };
        let bytes = convert::to_vec(&objects, fut, &options).expect("what reads, writes");
        assert_eq!(
            convert::from_slice(&bytes, fut, &plain)
                .expect("what we write reads")
                .len(),
            objects.len()
        );
    }
    let npy = "npy".parse().expect("a format");
    if let Ok(objects) = convert::from_slice(data, npy, &plain) {
        let bytes = convert::to_vec(&objects, npy, &plain).expect("what reads, writes");
        assert_eq!(
            convert::from_slice(&bytes, npy, &plain).expect("what we write reads"),
            objects
        );
    }
    let bsp = "binsparse".parse().expect("a format");
    if let Ok(objects) = convert::from_slice(data, bsp, &plain) {
        if let Ok(bytes) = convert::to_vec(&objects, bsp, &plain) {
            let again = convert::from_slice(&bytes, bsp, &plain).expect("what we write reads");
            let headers = |objects: &[serde_daphne::Object]| -> Vec<_> {
                objects.iter().map(|o| o.header().clone()).collect()
            };
            assert_eq!(headers(&again), headers(&objects));
        }
    }
    let sparse = "scipy".parse().expect("a format");
    if let Ok(objects) = convert::from_slice(data, sparse, &plain) {
        for compressed in [false, true] {
            let options = ConvertOptions {
                formats: FormatOptions::default().with(scipy::WriteOptions { compressed }),
                ..ConvertOptions::default()
            };
            let bytes = convert::to_vec(&objects, sparse, &options).expect("what reads, writes");
            assert_eq!(
                convert::from_slice(&bytes, sparse, &plain).expect("what we write reads"),
                objects
            );
        }
    }
    let npz = "npz".parse().expect("a format");
    if let Ok(arrays) = convert::from_slice(data, npz, &plain) {
        if let Ok(bytes) = convert::to_vec(&arrays, npz, &plain) {
            assert_eq!(
                convert::from_slice(&bytes, npz, &plain).expect("what we write reads"),
                arrays
            );
        }
    }
});
