//! Differential round trip: whatever decodes, encodes, and decodes again to the same thing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_daphne::{Dialect, Object, Options, Value};

/// The cells that are non-zero in the header's value type, sorted.
fn cells(object: &Object) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let header = object.header();
    object.for_each_nonzero(|r, c, v: Value| {
        let vt = header.value_type_of(c).expect("column in range");
        let v = v
            .convert(vt)
            .expect("decoding checks that stored values fit the header's type");
        // A stored non-zero can be zero in the object's type (-0.0 in an integer column).
        if !v.is_zero() {
            out.push((r, c, v.bits()));
        }
    });
    out.sort_unstable();
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(object) = serde_daphne::from_slice::<Object>(data) else {
        return;
    };
    let spec = Options {
        dialect: Some(Dialect::Spec),
        ..Options::new()
    };
    // As stored: encoding is a fixed point.
    let bytes = object.to_bytes().expect("a decoded object encodes");
    let again: Object = spec.from_slice(&bytes).expect("our encoding decodes");
    assert_eq!(again.to_bytes().expect("encodes"), bytes);
    assert_eq!(again.shape(), object.shape());
    assert_eq!(again.labels(), object.labels());
    // Re-encoded under the writer's own choices: the same cells.
    let (rows, cols) = object.shape();
    let header_fits = (0..cols.min(64)).all(|c| object.header().value_type_of(c).is_some());
    if rows.saturating_mul(cols) <= 1 << 20 && rows <= 1 << 16 && cols <= 1 << 16 && header_fits {
        let decoded_cells = std::panic::catch_unwind(|| cells(&object));
        let Ok(expected) = decoded_cells else { return };
        let mut rewritten = Vec::new();
        for options in [
            Options::new(),
            Options {
                narrow: true,
                tile: Some((3, 2)),
                ..Options::new()
            },
        ] {
            rewritten.clear();
            if object.write_with(&mut rewritten, &options).is_ok() {
                let back: Object = spec.from_slice(&rewritten).expect("our output decodes");
                assert_eq!(cells(&back), expected);
            }
        }
    }
});
