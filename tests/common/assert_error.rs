//! `assert_error!`, shared by the integration tests of both crates (each includes this file
//! as its `assert_error` module).

/// Asserts that a `Result` failed (or an `Error` is) of the given kind and, where fields are
/// given, that its details hold them: `assert_error!(read(&b), UnexpectedEof { offset: 27, .. })`.
/// The kind is checked through the public `Error::kind()`, the fields through the details
/// [`serde_daphne::ErrorDetails`] (`Error::details()`).
macro_rules! assert_error {
    ($value:expr, $kind:ident $(,)?) => {{
        let value = &$value;
        let error: &serde_daphne::Error = $crate::assert_error::AsError::as_error(value);
        assert_eq!(error.kind(), serde_daphne::ErrorKind::$kind, "{error:?}");
    }};
    ($value:expr, $kind:ident { $($fields:tt)* } $(if $guard:expr)? $(,)?) => {{
        let value = &$value;
        let error: &serde_daphne::Error = $crate::assert_error::AsError::as_error(value);
        assert_eq!(error.kind(), serde_daphne::ErrorKind::$kind, "{error:?}");
        #[allow(unused_variables)]
        match error.details() {
            serde_daphne::ErrorDetails::$kind { $($fields)* } $(if $guard)? => {}
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
