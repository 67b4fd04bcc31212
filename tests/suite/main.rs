//! Integration tests: one binary, one module per concern.

/// Asserts that a `Result` failed (or an `Error` is) of the given kind and, where fields are
/// given, that its details hold them: `assert_error!(read(&b), UnexpectedEof { offset: 27, .. })`.
/// The kind is checked through the public `Error::kind()`, the fields through the details
/// the workspace's crates share (`Error::details()`, not public API).
macro_rules! assert_error {
    ($value:expr, $kind:ident $(,)?) => {{
        let value = &$value;
        let error: &serde_daphne::Error = crate::AsError::as_error(value);
        assert_eq!(error.kind(), serde_daphne::ErrorKind::$kind, "{error:?}");
    }};
    ($value:expr, $kind:ident { $($fields:tt)* } $(if $guard:expr)? $(,)?) => {{
        let value = &$value;
        let error: &serde_daphne::Error = crate::AsError::as_error(value);
        assert_eq!(error.kind(), serde_daphne::ErrorKind::$kind, "{error:?}");
        #[allow(unused_variables)]
        match error.details() {
            serde_daphne::__private::error::ErrorImpl::$kind { $($fields)* } $(if $guard)? => {}
            other => panic!("expected {}, got {other:?}", stringify!($kind { $($fields)* })),
        }
    }};
}

/// What `assert_error!` reads its error from: an `Error`, or a `Result` that must have failed.
pub trait AsError {
    /// The error.
    fn as_error(&self) -> &serde_daphne::Error;
}

impl AsError for &serde_daphne::Error {
    fn as_error(&self) -> &serde_daphne::Error {
        self
    }
}

impl AsError for serde_daphne::Error {
    fn as_error(&self) -> &serde_daphne::Error {
        self
    }
}

impl<T: std::fmt::Debug> AsError for Result<T, serde_daphne::Error> {
    fn as_error(&self) -> &serde_daphne::Error {
        match self {
            Err(error) => error,
            Ok(value) => panic!("expected an error, got Ok({value:?})"),
        }
    }
}

mod csr_arrays;
mod daphne_runtime;
mod data_model;
mod derive_and_files;
mod frames;
mod golden_bytes;
mod hostile;
mod lazy;
mod roundtrip;
#[cfg(feature = "proptest")]
mod stream;
mod structure;

/// Little-endian byte layout, field by field, as the spec's diagrams draw it.
#[derive(Default)]
pub struct Layout(pub Vec<u8>);

impl Layout {
    pub fn new() -> Self {
        Layout(Vec::new())
    }
    pub fn u8(mut self, x: u8) -> Self {
        self.0.push(x);
        self
    }
    pub fn u16(mut self, x: u16) -> Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    pub fn u32(mut self, x: u32) -> Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    pub fn u64(mut self, x: u64) -> Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    /// Header of a matrix: version 1, dt, #r, #c, vt.
    pub fn matrix(self, dt: u8, rows: u64, cols: u64, vt: u8) -> Self {
        self.u8(1).u8(dt).u64(rows).u64(cols).u8(vt)
    }
    /// Body entry position and general block header: rx, cx, #r, #c, bt.
    pub fn block(self, rx: u64, cx: u64, rows: u32, cols: u32, bt: u8) -> Self {
        self.u64(rx).u64(cx).u32(rows).u32(cols).u8(bt)
    }
}
