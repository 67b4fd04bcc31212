//! The error type, as serde_json's and csv's: one pointer wide ([`Error`] boxes its details),
//! with a [`kind`](Error::kind) to match on, the byte [`offset`](Error::offset) of an input
//! problem, the field [`path`](Error::path) of a value problem, and a message a person can
//! act on.

mod imp;

use std::fmt;

pub use imp::ErrorDetails;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing the DAPHNE format.
///
/// Ask it its [`kind`](Error::kind), the [`offset`](Error::offset) (bytes from the start of
/// the input; for [`crate::from_slice`], the slice) or the [`path`](Error::path) of the field
/// it concerns; its `Display` is a message a person can act on.
///
/// ```
/// use serde_daphne::ErrorKind;
///
/// let err = serde_daphne::from_slice::<Vec<f64>>(&[1, 7]).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::UnknownDataType);
/// assert_eq!(err.offset(), Some(1));
/// assert!(err.to_string().starts_with("unknown data type code 7 at byte 1"));
/// ```
pub struct Error(Box<ErrorDetails>);

/// What kind of problem an [`Error`] is: one kind per problem, for matching. New kinds may
/// be added in minor releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The underlying reader or writer failed.
    Io,
    /// The input ends before a field that must be there.
    UnexpectedEof,
    /// A size computed from the header does not fit this machine's address space.
    TooLarge,
    /// Reading would exceed the configured limit ([`crate::Options::max_bytes`]).
    LimitExceeded,
    /// A typed read would allocate more than [`crate::Options::max_alloc`] allows.
    AllocationLimit,
    /// Memory for a matrix could not be allocated.
    OutOfMemory,
    /// The version byte is not 1.
    UnsupportedVersion,
    /// The data type code is not 1, 2 or 3.
    UnknownDataType,
    /// The value type code is not 1 to 10.
    UnknownValueType,
    /// The block type code is not 0 to 3.
    UnknownBlockType,
    /// A frame label is not UTF-8.
    InvalidLabel,
    /// A frame label is longer than its `u16` length field allows.
    LabelTooLong,
    /// A sparse block's row counts do not add up to its declared number of non-zeros.
    SparseCountMismatch,
    /// A column index is not inside its block.
    ColumnOutOfRange,
    /// A row index is not inside its block.
    RowOutOfRange,
    /// Column indices within a sparse row do not strictly increase.
    UnsortedColumns,
    /// Ultra-sparse entries are not in strictly increasing (row, column) order.
    UnsortedCoordinates,
    /// A block does not lie inside its object.
    BlockOutsideObject,
    /// A block covers cells that an earlier block of the same object covers.
    OverlappingBlocks,
    /// A block has no cells although its object has some (it would never help cover it).
    ZeroSizedBlock,
    /// A block of an object without cells is not where the tiling rule puts it.
    MisplacedBlock,
    /// Two entries given for the same cell of a matrix built from coordinates.
    DuplicateEntry,
    /// A frame block with values spans several columns.
    FrameBlockSpansColumns,
    /// Bytes follow the last expected object.
    TrailingBytes,
    /// The bytes read validly in both dialects but mean different things.
    AmbiguousDialect,
    /// An object in the DAPHNE runtime dialect breaks that dialect's layout.
    RuntimeLayout,
    /// The DAPHNE runtime's string value types have no numeric representation.
    StringValueType,
    /// The value cannot be written in the chosen dialect.
    NotInDialect,
    /// A `.meta` sidecar is unreadable or disagrees with its data file.
    Sidecar,
    /// A block index is damaged, or describes another version of the file it is read with.
    StaleIndex,
    /// A stored value does not fit the requested Rust type exactly.
    LossyConversion,
    /// A stored value meant as a `bool` is neither 0 nor 1.
    NotABool,
    /// The object's shape does not fit the requested Rust type.
    ShapeMismatch,
    /// The object's data type does not fit the requested Rust type.
    DataTypeMismatch,
    /// A frame has no column with a label the Rust type needs, or the columns do not match.
    FrameMismatch,
    /// A tile given to [`crate::DbdfWriter`] holds values of a type its object cannot hold exactly.
    TileValueType,
    /// A tile given to [`crate::DbdfWriter`] is not where the dialect needs the next one.
    TileOrder,
    /// [`crate::DbdfWriter`] was finished, or given the next object, before the tiles covered the current one.
    IncompleteObject,
    /// The Rust value has no representation in the DAPHNE format.
    Unrepresentable,
    /// The Rust value is of a representable kind but cannot be written as it is.
    InvalidValue,
    /// A file of a neighbouring format (Futhark, Binsparse, NumPy, Parquet, Arrow) is malformed, or holds what this crate does not read.
    ForeignInput,
    /// A value has no exact counterpart on the other side of a conversion between DAPHNE and a neighbouring format (complex values, fill values, 3-D arrays, nulls, strings).
    NotConvertible,
    /// An error raised by a `Serialize` or `Deserialize` implementation.
    Message,
}

impl Error {
    /// What kind of problem this is.
    pub fn kind(&self) -> ErrorKind {
        match &*self.0 {
            ErrorDetails::Io(_) => ErrorKind::Io,
            ErrorDetails::UnexpectedEof { .. } => ErrorKind::UnexpectedEof,
            ErrorDetails::TooLarge { .. } => ErrorKind::TooLarge,
            ErrorDetails::LimitExceeded { .. } => ErrorKind::LimitExceeded,
            ErrorDetails::AllocationLimit { .. } => ErrorKind::AllocationLimit,
            ErrorDetails::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            ErrorDetails::UnsupportedVersion { .. } => ErrorKind::UnsupportedVersion,
            ErrorDetails::UnknownDataType { .. } => ErrorKind::UnknownDataType,
            ErrorDetails::UnknownValueType { .. } => ErrorKind::UnknownValueType,
            ErrorDetails::UnknownBlockType { .. } => ErrorKind::UnknownBlockType,
            ErrorDetails::InvalidLabel { .. } => ErrorKind::InvalidLabel,
            ErrorDetails::LabelTooLong { .. } => ErrorKind::LabelTooLong,
            ErrorDetails::SparseCountMismatch { .. } => ErrorKind::SparseCountMismatch,
            ErrorDetails::ColumnOutOfRange { .. } => ErrorKind::ColumnOutOfRange,
            ErrorDetails::RowOutOfRange { .. } => ErrorKind::RowOutOfRange,
            ErrorDetails::UnsortedColumns { .. } => ErrorKind::UnsortedColumns,
            ErrorDetails::UnsortedCoordinates { .. } => ErrorKind::UnsortedCoordinates,
            ErrorDetails::BlockOutsideObject { .. } => ErrorKind::BlockOutsideObject,
            ErrorDetails::OverlappingBlocks { .. } => ErrorKind::OverlappingBlocks,
            ErrorDetails::ZeroSizedBlock { .. } => ErrorKind::ZeroSizedBlock,
            ErrorDetails::MisplacedBlock { .. } => ErrorKind::MisplacedBlock,
            ErrorDetails::DuplicateEntry { .. } => ErrorKind::DuplicateEntry,
            ErrorDetails::FrameBlockSpansColumns { .. } => ErrorKind::FrameBlockSpansColumns,
            ErrorDetails::TrailingBytes { .. } => ErrorKind::TrailingBytes,
            ErrorDetails::AmbiguousDialect { .. } => ErrorKind::AmbiguousDialect,
            ErrorDetails::RuntimeLayout { .. } => ErrorKind::RuntimeLayout,
            ErrorDetails::StringValueType { .. } => ErrorKind::StringValueType,
            ErrorDetails::NotInDialect { .. } => ErrorKind::NotInDialect,
            ErrorDetails::Sidecar { .. } => ErrorKind::Sidecar,
            ErrorDetails::StaleIndex { .. } => ErrorKind::StaleIndex,
            ErrorDetails::LossyConversion { .. } => ErrorKind::LossyConversion,
            ErrorDetails::NotABool { .. } => ErrorKind::NotABool,
            ErrorDetails::ShapeMismatch { .. } => ErrorKind::ShapeMismatch,
            ErrorDetails::DataTypeMismatch { .. } => ErrorKind::DataTypeMismatch,
            ErrorDetails::FrameMismatch { .. } => ErrorKind::FrameMismatch,
            ErrorDetails::TileValueType { .. } => ErrorKind::TileValueType,
            ErrorDetails::TileOrder { .. } => ErrorKind::TileOrder,
            ErrorDetails::IncompleteObject { .. } => ErrorKind::IncompleteObject,
            ErrorDetails::Unrepresentable { .. } => ErrorKind::Unrepresentable,
            ErrorDetails::InvalidValue { .. } => ErrorKind::InvalidValue,
            ErrorDetails::ForeignInput { .. } => ErrorKind::ForeignInput,
            ErrorDetails::NotConvertible { .. } => ErrorKind::NotConvertible,
            ErrorDetails::Message { .. } => ErrorKind::Message,
        }
    }

    /// The byte offset the error refers to, for errors about input.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset()
    }

    /// The field path the error refers to (such as `meta.items[3].name`), for errors about
    /// Rust values.
    pub fn path(&self) -> Option<&str> {
        self.0.path()
    }

    /// The I/O error underneath, for [`crate::ErrorKind::Io`].
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match &*self.0 {
            ErrorDetails::Io(e) => Some(e),
            _ => None,
        }
    }

    /// What the error holds, field by field.
    ///
    /// ```
    /// use serde_daphne::ErrorDetails;
    ///
    /// let err = serde_daphne::from_slice::<Vec<f64>>(&[1, 7]).unwrap_err();
    /// assert!(matches!(err.details(), ErrorDetails::UnknownDataType { code: 7, .. }));
    /// ```
    pub fn details(&self) -> &ErrorDetails {
        &self.0
    }

    /// What the error holds, taken out (to re-phrase it, or to keep an I/O error whole).
    pub fn into_details(self) -> ErrorDetails {
        *self.0
    }

    /// Puts `segment` (a field name, or `[i]`) in front of the error's field path.
    pub(crate) fn within(mut self, segment: &dyn fmt::Display) -> Self {
        self.0.prefix_path(segment);
        self
    }

    /// This error as found inside a member of a container (a `.npy` inside a zip archive):
    /// an input offset counted from the member's start is moved by `member_start`, where the
    /// member's bytes lie in the file as they are, and dropped for `None` (a compressed
    /// member, whose offsets would not point into the file). Errors of other kinds are kept.
    ///
    /// ```
    /// use serde_daphne::Error;
    ///
    /// let e = Error::foreign("NPY", Some(10), "a bad header").relocated(Some(100));
    /// assert_eq!(e.offset(), Some(110));
    /// assert_eq!(e.relocated(None).offset(), None);
    /// ```
    #[must_use]
    pub fn relocated(mut self, member_start: Option<u64>) -> Self {
        if let ErrorDetails::ForeignInput { offset, .. } = &mut *self.0 {
            *offset = match (*offset, member_start) {
                (Some(at), Some(base)) => Some(at.saturating_add(base)),
                _ => None,
            };
        }
        self
    }

    /// Names where a foreign-input or conversion error happened (a file, an object):
    /// `context` goes in front of a [`ErrorKind::ForeignInput`] message and after the
    /// object a [`ErrorKind::NotConvertible`] error names. Errors of other kinds are kept.
    ///
    /// ```
    /// use serde_daphne::Error;
    ///
    /// let e = Error::foreign("Zarr", None, "no zarr.json").with_context("m.zarr");
    /// assert_eq!(e.to_string(), "Zarr input: m.zarr: no zarr.json");
    /// let e = Error::not_convertible("a Frame", "Futhark", "one type only");
    /// assert_eq!(
    ///     e.with_context("object 1").to_string(),
    ///     "cannot convert a Frame (object 1) to Futhark: one type only"
    /// );
    /// ```
    #[must_use]
    pub fn with_context(mut self, context: impl fmt::Display) -> Self {
        match &mut *self.0 {
            ErrorDetails::ForeignInput { message, .. } => {
                *message = format!("{context}: {message}")
            }
            ErrorDetails::NotConvertible { what, .. } => *what = format!("{what} ({context})"),
            _ => {}
        }
        self
    }

    /// Malformed input of a neighbouring format, for converters: `format` as people name it
    /// (`"MatrixMarket"`, `"NPY"`), the byte `offset` in the input where the format has
    /// offsets to give, and a `message` that says what is wrong and what to do about it.
    /// Its kind is [`ErrorKind::ForeignInput`].
    ///
    /// ```
    /// use serde_daphne::{Error, ErrorKind};
    ///
    /// let e = Error::foreign("Toy", Some(4), "a row count of 0");
    /// assert_eq!(e.kind(), ErrorKind::ForeignInput);
    /// assert_eq!(e.to_string(), "Toy input at byte 4: a row count of 0");
    /// ```
    pub fn foreign(format: &'static str, offset: Option<u64>, message: impl fmt::Display) -> Self {
        ErrorDetails::ForeignInput {
            format,
            offset,
            message: message.to_string(),
        }
        .into()
    }

    /// `what` (a DAPHNE object or value) has no exact counterpart in the format `to`, for
    /// `reason` (which should say what would work). Its kind is
    /// [`ErrorKind::NotConvertible`].
    pub fn not_convertible(
        what: impl Into<String>,
        to: &'static str,
        reason: impl Into<String>,
    ) -> Self {
        ErrorDetails::NotConvertible {
            what: what.into(),
            to,
            reason: reason.into(),
        }
        .into()
    }

    pub(crate) fn unrepresentable(what: &'static str) -> Self {
        ErrorDetails::Unrepresentable {
            path: String::new(),
            what,
        }
        .into()
    }

    /// A value or a call that does not fit what it is given to (a band of another value
    /// type than announced, a tile out of order): kind [`ErrorKind::InvalidValue`], with
    /// `message` as its text.
    pub fn invalid(message: impl Into<String>) -> Self {
        ErrorDetails::InvalidValue {
            path: String::new(),
            message: message.into(),
        }
        .into()
    }
}

impl ErrorDetails {
    fn offset(&self) -> Option<u64> {
        use ErrorDetails::*;
        match self {
            UnexpectedEof { offset, .. }
            | TooLarge { offset, .. }
            | LimitExceeded { offset, .. }
            | AllocationLimit { offset, .. }
            | UnsupportedVersion { offset, .. }
            | UnknownDataType { offset, .. }
            | UnknownValueType { offset, .. }
            | UnknownBlockType { offset, .. }
            | InvalidLabel { offset, .. }
            | SparseCountMismatch { offset, .. }
            | ColumnOutOfRange { offset, .. }
            | RowOutOfRange { offset, .. }
            | UnsortedColumns { offset, .. }
            | UnsortedCoordinates { offset, .. }
            | BlockOutsideObject { offset, .. }
            | OverlappingBlocks { offset, .. }
            | ZeroSizedBlock { offset, .. }
            | MisplacedBlock { offset, .. }
            | FrameBlockSpansColumns { offset, .. }
            | TrailingBytes { offset }
            | LossyConversion { offset, .. }
            | AmbiguousDialect { offset, .. }
            | RuntimeLayout { offset, .. }
            | StringValueType { offset, .. }
            | NotABool { offset, .. }
            | ShapeMismatch { offset, .. }
            | DataTypeMismatch { offset, .. }
            | StaleIndex { offset, .. } => Some(*offset),
            ForeignInput { offset, .. } => *offset,
            _ => None,
        }
    }

    fn path_mut(&mut self) -> Option<&mut String> {
        match self {
            ErrorDetails::FrameMismatch { path, .. }
            | ErrorDetails::Unrepresentable { path, .. }
            | ErrorDetails::InvalidValue { path, .. }
            | ErrorDetails::Message { path, .. } => Some(path),
            _ => None,
        }
    }

    fn path(&self) -> Option<&str> {
        match self {
            ErrorDetails::FrameMismatch { path, .. }
            | ErrorDetails::Unrepresentable { path, .. }
            | ErrorDetails::InvalidValue { path, .. }
            | ErrorDetails::Message { path, .. } => Some(path),
            _ => None,
        }
    }

    fn prefix_path(&mut self, segment: &dyn fmt::Display) {
        if let Some(path) = self.path_mut() {
            let segment = segment.to_string();
            *path = if path.is_empty() {
                segment
            } else if path.starts_with('[') {
                format!("{segment}{path}")
            } else {
                format!("{segment}.{path}")
            };
        }
    }
}

impl From<ErrorDetails> for Error {
    fn from(details: ErrorDetails) -> Self {
        Error(Box::new(details))
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        ErrorDetails::Io(error).into()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io_error().map(|e| e as _)
    }
}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ErrorDetails::Message {
            path: String::new(),
            message: msg.to_string(),
        }
        .into()
    }
}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        <Self as serde::ser::Error>::custom(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_compose_like_field_accessors() {
        let e = Error::unrepresentable("strings")
            .within(&"name")
            .within(&"[3]")
            .within(&"items")
            .within(&"meta");
        assert_eq!(e.path(), Some("meta.items[3].name"));
        assert_eq!(e.kind(), ErrorKind::Unrepresentable);
        assert_eq!(
            e.to_string(),
            "field \"meta.items[3].name\": strings have no representation in the DAPHNE format"
        );
    }

    #[test]
    fn an_error_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
        assert_eq!(
            std::mem::size_of::<Result<()>>(),
            std::mem::size_of::<usize>()
        );
    }
}
