//! Any Zarr store as a Binsparse group: the input is a packed store (entries of a 1-byte
//! key length, the key, a 2-byte little-endian value length and the value; `seed.sh` packs
//! the test groups so). Metadata, codecs and chunks are all hostile: an error or a matrix,
//! never a panic, never an allocation the store cannot justify; what reads writes back and
//! reads again the same.
#![no_main]

use std::collections::BTreeMap;

use dbdf::binsparse::zarr;
use dbdf::binsparse::{ReadOptions, WriteOptions};
use libfuzzer_sys::fuzz_target;

fn unpack(mut data: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut store = BTreeMap::new();
    while let Some((&n, rest)) = data.split_first() {
        let Some((key, rest)) = rest.split_at_checked(usize::from(n)) else {
            break;
        };
        let Some((len, rest)) = rest.split_at_checked(2) else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([len[0], len[1]])).min(rest.len());
        let (value, rest) = rest.split_at(len);
        store.insert(String::from_utf8_lossy(key).into_owned(), value.to_vec());
        data = rest;
    }
    store
}

fuzz_target!(|data: &[u8]| {
    let store = unpack(data);
    let options = ReadOptions {
        max_alloc: 1 << 24,
        ..Default::default()
    };
    if let Ok(read) = zarr::read_store(&store, &options) {
        let mut again = BTreeMap::new();
        let write = WriteOptions {
            format: Some(read.format),
            attributes: read.attributes.clone(),
            ..Default::default()
        };
        if zarr::write_store(&mut again, &read.object, &write).is_ok() {
            let back = zarr::read_store(&again, &options).expect("what we write reads");
            assert_eq!(back.attributes, read.attributes);
        }
    }
});
