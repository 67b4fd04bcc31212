//! What each error holds and says: one variant per problem, with the byte offset where it
//! was found (input problems) or the field path it concerns (value problems).

use crate::codes::{DataType, Value, ValueType};

/// What an [`Error`](super::Error) holds: one variant per problem, with its fields (the
/// offset, what was read, the sizes), to match on where [`ErrorKind`](super::ErrorKind) is
/// not enough, and to build the errors the constructors of [`Error`](super::Error) do not
/// cover (`Error::from(details)`), as csv's `ErrorKind` does. New variants may be added in
/// minor releases.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorDetails {
    /// The underlying reader or writer failed.
    #[error("I/O error: {0}")]
    Io(std::io::Error),

    /// The input ends before a field that must be there.
    #[error("unexpected end of input at byte {offset}: {what} needs {needed} bytes but only {available} remain (truncated file or transfer?)")]
    UnexpectedEof {
        /// Where the missing field starts.
        offset: u64,
        /// The field that is cut off.
        what: &'static str,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },

    /// A size computed from the header does not fit this machine's address space.
    #[error(
        "{what} at byte {offset} would take {bytes} bytes, more than this machine can address"
    )]
    TooLarge {
        /// Where the size was read.
        offset: u64,
        /// What is too large.
        what: &'static str,
        /// The size it would take.
        bytes: u128,
    },

    /// Reading would exceed the configured limit (`Options::max_bytes`).
    #[error("{what} at byte {offset} would read past the limit of {limit} bytes (raise Options::max_bytes if the input is trusted)")]
    LimitExceeded {
        /// Where the read started.
        offset: u64,
        /// What was being read.
        what: &'static str,
        /// The limit in bytes.
        limit: u64,
    },

    /// A typed read would allocate more than `Options::max_alloc` allows.
    #[error("reading the object at byte {offset} into this type takes about {bytes} bytes, more than its bytes in the input plus Options::max_alloc ({limit}); raise max_alloc if the file is trusted")]
    AllocationLimit {
        /// Offset of the object.
        offset: u64,
        /// The memory the read would take.
        bytes: u128,
        /// The limit beyond the object's encoded size.
        limit: u64,
    },

    /// Memory for a matrix could not be allocated.
    #[error("could not allocate {bytes} bytes for the matrix")]
    OutOfMemory {
        /// Bytes requested.
        bytes: u128,
    },

    /// The version byte is not 1.
    #[error("unsupported format version {version} at byte {offset}: only version 1 exists")]
    UnsupportedVersion {
        /// Offset of the version byte.
        offset: u64,
        /// The version found.
        version: u8,
    },

    /// The data type code is not 1, 2 or 3.
    #[error("unknown data type code {code} at byte {offset}: expected 1 (DenseMatrix), 2 (CSRMatrix) or 3 (Frame)")]
    UnknownDataType {
        /// Offset of the code.
        offset: u64,
        /// The code found.
        code: u8,
    },

    /// The value type code is not 1 to 10.
    #[error("unknown value type code {code} at byte {offset}: expected 1 to 10 (u8, u16, u32, u64, i8, i16, i32, i64, f32, f64)")]
    UnknownValueType {
        /// Offset of the code.
        offset: u64,
        /// The code found.
        code: u8,
    },

    /// The block type code is not 0 to 3.
    #[error("unknown block type code {code} at byte {offset}: expected 0 (empty), 1 (dense), 2 (sparse) or 3 (ultra-sparse)")]
    UnknownBlockType {
        /// Offset of the code.
        offset: u64,
        /// The code found.
        code: u8,
    },

    /// A frame label is not UTF-8.
    #[error("the label of frame column {column} at byte {offset} is not valid UTF-8")]
    InvalidLabel {
        /// Offset of the label's first byte.
        offset: u64,
        /// The column index.
        column: u64,
    },

    /// A frame label is longer than its `u16` length field allows.
    #[error(
        "the label of frame column {column} is {len} bytes long; labels hold at most 65535 bytes"
    )]
    LabelTooLong {
        /// The column index.
        column: u64,
        /// The label's length in bytes.
        len: usize,
    },

    /// A sparse block's row counts do not add up to its declared number of non-zeros.
    #[error("sparse block at byte {offset}: the rows hold {counted} non-zeros (at least) but the block declares {declared}")]
    SparseCountMismatch {
        /// Offset of the count that broke the sum (or of the declared total).
        offset: u64,
        /// The block's `#nzb`.
        declared: u64,
        /// The sum of the row counts read.
        counted: u64,
    },

    /// A column index is not inside its block.
    #[error(
        "column index {index} at byte {offset} is outside its block, which has {cols} columns"
    )]
    ColumnOutOfRange {
        /// Offset of the index.
        offset: u64,
        /// The index found.
        index: u32,
        /// The block's number of columns.
        cols: u32,
    },

    /// A row index is not inside its block.
    #[error("row index {index} at byte {offset} is outside its block, which has {rows} rows")]
    RowOutOfRange {
        /// Offset of the index.
        offset: u64,
        /// The index found.
        index: u32,
        /// The block's number of rows.
        rows: u32,
    },

    /// Column indices within a sparse row do not strictly increase.
    #[error("column index {index} at byte {offset} follows column {previous} in row {row} of a sparse block: columns must strictly increase (duplicate or unsorted entry)")]
    UnsortedColumns {
        /// Offset of the index.
        offset: u64,
        /// The row within the block.
        row: u32,
        /// The column before it.
        previous: u32,
        /// The column found.
        index: u32,
    },

    /// Ultra-sparse entries are not in strictly increasing (row, column) order.
    #[error("ultra-sparse entry {index:?} at byte {offset} follows {previous:?}: entries must strictly increase in (row, column) order (duplicate or unsorted entry)")]
    UnsortedCoordinates {
        /// Offset of the entry.
        offset: u64,
        /// The (row, column) before it.
        previous: (u32, u32),
        /// The (row, column) found.
        index: (u32, u32),
    },

    /// A block does not lie inside its object.
    #[error("block at byte {offset} covers rows {row}..{row_end} and columns {col}..{col_end}, outside the {object_rows} x {object_cols} object")]
    BlockOutsideObject {
        /// Offset of the block entry.
        offset: u64,
        /// The block's first row.
        row: u64,
        /// One past the block's last row.
        row_end: u128,
        /// The block's first column.
        col: u64,
        /// One past the block's last column.
        col_end: u128,
        /// The object's rows.
        object_rows: u64,
        /// The object's columns.
        object_cols: u64,
    },

    /// A block covers cells that an earlier block of the same object covers.
    #[error("block at byte {offset} (at row {row}, column {col}) overlaps an earlier block of the same object")]
    OverlappingBlocks {
        /// Offset of the block entry.
        offset: u64,
        /// The block's first row.
        row: u64,
        /// The block's first column.
        col: u64,
    },

    /// A block has no cells although its object has some (it would never help cover it).
    #[error("block at byte {offset} is {rows} x {cols}: an object with cells cannot hold blocks without cells")]
    ZeroSizedBlock {
        /// Offset of the block entry.
        offset: u64,
        /// The block's rows.
        rows: u32,
        /// The block's columns.
        cols: u32,
    },

    /// A block of an object without cells is not where the tiling rule puts it.
    #[error("block at byte {offset} is at ({found:?}) but the next block of this empty object must be a 0-sized block at ({expected:?})")]
    MisplacedBlock {
        /// Offset of the block entry.
        offset: u64,
        /// Where the block must start.
        expected: (u64, u64),
        /// Where it starts.
        found: (u64, u64),
    },

    /// Two entries given for the same cell of a matrix built from coordinates.
    #[error("entries {first} and {second} (counting from 0) are both at row {row}, column {col}")]
    DuplicateEntry {
        /// The earlier entry's index in the input.
        first: usize,
        /// The later entry's index in the input.
        second: usize,
        /// The cell's row (from 0).
        row: u64,
        /// The cell's column (from 0).
        col: u64,
    },

    /// A frame block with values spans several columns.
    #[error("frame block at byte {offset} spans {cols} columns starting at column {col}: a frame block with values must lie within one column")]
    FrameBlockSpansColumns {
        /// Offset of the block entry.
        offset: u64,
        /// The block's first column.
        col: u64,
        /// The block's number of columns.
        cols: u32,
    },

    /// Bytes follow the last expected object.
    #[error("trailing bytes at byte {offset}: the input continues after the last object")]
    TrailingBytes {
        /// Offset of the first unexpected byte.
        offset: u64,
    },

    /// The bytes read validly in both dialects but mean different things.
    #[error("the object at byte {offset} reads validly in both dialects: {message}; choose one with Options::dialect, or keep DAPHNE's .meta sidecar beside the file")]
    AmbiguousDialect {
        /// Offset of the object.
        offset: u64,
        /// What differs between the two readings.
        message: String,
    },

    /// An object in the DAPHNE runtime dialect breaks that dialect's layout.
    #[error("runtime-dialect object at byte {offset}: {message}")]
    RuntimeLayout {
        /// Offset of the offending field.
        offset: u64,
        /// What is wrong.
        message: String,
    },

    /// The DAPHNE runtime's string value types have no numeric representation.
    #[error("value type code {code} at byte {offset} is DAPHNE's {what} type: strings have no representation in this crate")]
    StringValueType {
        /// Offset of the code.
        offset: u64,
        /// The runtime code (8 = str, 9 = fixedstr16).
        code: u8,
        /// The type's name.
        what: &'static str,
    },

    /// The value cannot be written in the chosen dialect.
    #[error("{what} cannot be written in the DAPHNE runtime dialect: {reason}")]
    NotInDialect {
        /// What was being written.
        what: String,
        /// Why the runtime cannot hold it.
        reason: &'static str,
    },

    /// A `.meta` sidecar is unreadable or disagrees with its data file.
    #[error("the sidecar {path}: {message}")]
    Sidecar {
        /// The sidecar's path.
        path: String,
        /// What is wrong.
        message: String,
    },

    /// A block index is damaged, or describes another version of the file it is read with.
    #[error("the block index does not match the file at byte {offset}: {message}; write the index again (`dbdf index`) or open the file without it")]
    StaleIndex {
        /// Where in the file (or, for a damaged index, in the index) the two part.
        offset: u64,
        /// What differs.
        message: String,
    },

    /// A stored value does not fit the requested Rust type exactly.
    #[error("the value {value} in the block at byte {offset} cannot be represented exactly as {to}: read into a wider type")]
    LossyConversion {
        /// Offset of the block holding the value.
        offset: u64,
        /// The value as stored.
        value: Value,
        /// The requested type.
        to: ValueType,
    },

    /// A stored value meant as a `bool` is neither 0 nor 1.
    #[error("the value {value} of the object at byte {offset} is not a bool (0 or 1)")]
    NotABool {
        /// Offset of the object.
        offset: u64,
        /// The value.
        value: Value,
    },

    /// The object's shape does not fit the requested Rust type.
    #[error("the object at byte {offset} is {rows} x {cols}, but {expected}")]
    ShapeMismatch {
        /// Offset of the object.
        offset: u64,
        /// What the Rust type needs.
        expected: String,
        /// The object's rows.
        rows: u64,
        /// The object's columns.
        cols: u64,
    },

    /// The object's data type does not fit the requested Rust type.
    #[error("the object at byte {offset} is a {found}, but {expected} was expected")]
    DataTypeMismatch {
        /// Offset of the object.
        offset: u64,
        /// What the Rust type needs.
        expected: &'static str,
        /// The data type found.
        found: DataType,
    },

    /// A frame has no column with a label the Rust type needs, or the columns do not match.
    #[error("{}{message}", at_path(path))]
    FrameMismatch {
        /// The field path.
        path: String,
        /// What is wrong.
        message: String,
    },

    /// A tile given to `DbdfWriter` holds values of a type its object cannot hold
    /// exactly.
    #[error("a tile of {found} values cannot go into object {object}, whose values are {expected}: convert the tile to {expected} first")]
    TileValueType {
        /// The object's index in the file.
        object: usize,
        /// The object's (or column's) value type.
        expected: ValueType,
        /// The tile's value type.
        found: ValueType,
    },

    /// A tile given to `DbdfWriter` is not where the dialect needs the next one.
    #[error("object {object}: a tile at row {}, column {} cannot come next ({reason}); the next must start at row {expected}", found.0, found.1)]
    TileOrder {
        /// The object's index in the file.
        object: usize,
        /// The row the next tile must start at.
        expected: u64,
        /// Where the tile starts (row, column).
        found: (u64, u64),
        /// Why.
        reason: &'static str,
    },

    /// `DbdfWriter` was finished, or given the next object, before the tiles
    /// covered the current one.
    #[error("object {object} is covered by tiles to {covered} of its {cells} cells: write the missing tiles first")]
    IncompleteObject {
        /// The object's index in the file.
        object: usize,
        /// The cells covered.
        covered: u128,
        /// The object's cells.
        cells: u128,
    },

    /// The Rust value has no representation in the DAPHNE format.
    #[error("{}{what} have no representation in the DAPHNE format", at_path(path))]
    Unrepresentable {
        /// The field path, such as `meta.name` or `items[3]`.
        path: String,
        /// What kind of value, such as `strings`.
        what: &'static str,
    },

    /// The Rust value is of a representable kind but cannot be written as it is.
    #[error("{}{message}", at_path(path))]
    InvalidValue {
        /// The field path.
        path: String,
        /// What is wrong, such as ragged rows.
        message: String,
    },

    /// A file of a neighbouring format (Futhark, Binsparse, NumPy) is malformed, or holds
    /// what this crate does not read.
    #[error("{format} input{}: {message}", at_byte(*offset))]
    ForeignInput {
        /// The format, such as `Futhark` or `Binsparse`.
        format: &'static str,
        /// Offset in the input, where the container has byte offsets.
        offset: Option<u64>,
        /// What is wrong and what to do about it.
        message: String,
    },

    /// A value has no exact counterpart on the other side of a conversion between DAPHNE and
    /// a neighbouring format (complex values, fill values, 3-D arrays, frames).
    #[error("cannot convert {what} to {to}: {reason}")]
    NotConvertible {
        /// What was to be converted.
        what: String,
        /// The target format.
        to: &'static str,
        /// Why not, and what would work.
        reason: String,
    },

    /// An error raised by a `Serialize` or `Deserialize` implementation.
    #[error("{}{message}", at_path(path))]
    Message {
        /// The field path.
        path: String,
        /// The message.
        message: String,
    },
}

fn at_byte(offset: Option<u64>) -> String {
    offset.map_or(String::new(), |o| format!(" at byte {o}"))
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("field \"{path}\": ")
    }
}
