//! Any bytes into `Object`, in every dialect and through a reader: an error or an object,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_daphne::{Deserializer, Dialect, Object, Options};

fuzz_target!(|data: &[u8]| {
    let _ = serde_daphne::from_slice::<Object>(data);
    let _ = serde_daphne::from_reader::<_, Object>(data);
    for dialect in [Dialect::Spec, Dialect::Runtime] {
        let _ = Options {
            dialect: Some(dialect),
            ..Options::new()
        }
        .from_slice::<Object>(data);
    }
    // A stream of objects, as `dbdf info` reads it.
    for object in Deserializer::from_slice(data)
        .into_iter::<Object>()
        .take(64)
    {
        if let Ok(object) = object {
            let _ = object.nnz();
            let _ = object.get(0, 0);
        }
    }
});
