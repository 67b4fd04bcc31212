//! Integration tests of the converters and the `dbdf` tool: one binary, one module per
//! format, against the reference files in `tests/data/` (provenance in its README).

/// `assert!(matches!(value, pattern))` that shows the value it got when it fails.
macro_rules! assert_matches {
    ($value:expr, $pattern:pat $(if $guard:expr)? $(,)?) => {
        match $value {
            $pattern $(if $guard)? => {}
            ref other => panic!(
                "expected {}, got {other:?}",
                stringify!($pattern $(if $guard)?)
            ),
        }
    };
}

mod binsparse;
mod cli;
mod futhark;
mod npy_stream;
mod systemds;
#[cfg(feature = "zarr")]
mod zarr;
