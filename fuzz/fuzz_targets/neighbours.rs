//! Any bytes as Futhark binary data, a .npy array and a Binsparse .npz archive: an error or
//! objects, never a panic; what reads writes back and reads again the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_daphne::interop::binsparse::{self, WriteOptions};
use serde_daphne::interop::{futhark, npy};

fuzz_target!(|data: &[u8]| {
    if let Ok(objects) = futhark::read(data) {
        let bytes = futhark::to_vec(&objects, &futhark::WriteOptions::new().matrices(true))
            .expect("what reads, writes");
        assert_eq!(futhark::read(&bytes).expect("what we write reads").len(), objects.len());
    }
    if let Ok(object) = npy::read(data) {
        let mut bytes = Vec::new();
        npy::write(&object, &mut bytes).expect("what reads, writes");
        assert_eq!(npy::read(&bytes).expect("what we write reads"), object);
    }
    if let Ok(read) = binsparse::read_npz(data) {
        let options = WriteOptions::new().format(read.format);
        if let Ok(bytes) = binsparse::to_npz(&read.object, &read.attributes, &options) {
            let again = binsparse::read_npz(&bytes).expect("what we write reads");
            assert_eq!(again.attributes, read.attributes);
        }
    }
});
