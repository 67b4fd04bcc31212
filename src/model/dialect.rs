//! Dialects: the spec's and the one DAPHNE's C++ runtime writes; telling them apart from the
//! bytes; turning runtime objects into [`Object`]s and writing objects for the runtime.
//!
//! Detection, per object, without options:
//! 1. Data type 4 (a scalar) exists only in the runtime dialect.
//! 2. A matrix is runtime-shaped only if it has one block at (0, 0) whose dimensions are the
//!    object's (cast to u32), of block type 1 (dense) or 2 (CSR), repeating the object's value
//!    type. Anything else is the spec's.
//! 3. Codes that exist in one table only decide (0: runtime; 10: spec).
//! 4. Otherwise the two readings give different lengths (the tables never agree on a value's
//!    size; the CSR layouts differ): a reading is consistent when the input ends where it
//!    ends or another object starts there. If both are, both are parsed in full.
//! 5. Frames: spec labels are UTF-8 and a spec body starts with a valid block header; the
//!    runtime body is exactly rows x the row's width.
//!
//! A `.meta` sidecar decides by its value types. When the bytes stay valid in both dialects
//! (a dense matrix without values and a code in 1..9, say), reading fails with
//! [`Error::AmbiguousDialect`] rather than guess.

use std::io::Write;

use crate::error::{Error, Result};
use crate::model::encode::{places, write_matrix, Layout, MatrixRef};
use crate::model::object::{Block, Object};
use crate::options::Options;
use crate::wire::runtime::{self, runtime_code_size, RuntimeObject};
use crate::wire::sink::Sink;
use crate::wire::source::SliceSource;
use crate::wire::values::{read_le, with_value_type, with_values};
use crate::wire::{BlockData, BlockPlace, Column, DataType, Header, Source, ValueType, Values};

/// Which byte layout and code table an object uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Dialect {
    /// The published specification (`doc/BinaryFormat.md`): this crate's default for writing.
    Spec,
    /// What DAPHNE's C++ runtime writes and reads (runtime value type codes, CSR as three
    /// arrays, frames without block headers, scalars as data type 4, `.meta` sidecars).
    Runtime,
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Dialect::Spec => "spec",
            Dialect::Runtime => "DAPHNE runtime",
        })
    }
}

/// What a `.meta` sidecar says about the object beside it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hint {
    /// Where the sidecar is, for error messages.
    pub path: String,
    /// `numRows`.
    pub rows: u64,
    /// `numCols`.
    pub cols: u64,
    /// The matrix's value type, or each frame column's (`None` for a type this crate lacks).
    pub value_types: Vec<Option<ValueType>>,
    /// Frame labels, when the sidecar has a schema.
    pub labels: Option<Vec<String>>,
    /// `numNonZeros`, when given.
    pub nnz: Option<u64>,
}

impl Hint {
    fn mismatch(&self, message: String) -> Error {
        Error::Sidecar {
            path: self.path.clone(),
            message,
        }
    }
}

/// Reads the next object in `dialect`, or in the dialect detected from its bytes.
pub(crate) fn read_object<S: Source + ?Sized>(
    src: &mut S,
    dialect: Option<Dialect>,
    hint: Option<&Hint>,
) -> Result<Object> {
    let dialect = match dialect {
        Some(d) => d,
        None => detect(src, hint)?,
    };
    let object = match dialect {
        Dialect::Spec => Object::decode(src)?,
        Dialect::Runtime => {
            let offset = src.offset();
            let parts = runtime::decode(src)?;
            from_runtime(parts, offset, hint.and_then(|h| h.labels.clone()))?
        }
    };
    if let Some(hint) = hint {
        check_hint(&object, hint)?;
    }
    Ok(object)
}

fn check_hint(object: &Object, hint: &Hint) -> Result<()> {
    let header = object.header();
    if header.data_type() != DataType::Scalar && header.shape() != (hint.rows, hint.cols) {
        return Err(hint.mismatch(format!(
            "says {} x {} but the file holds {} x {}",
            hint.rows,
            hint.cols,
            header.rows(),
            header.cols()
        )));
    }
    let types: Vec<Option<ValueType>> = (0..header.cols().min(hint.value_types.len() as u64))
        .map(|c| header.value_type_of(c))
        .collect();
    let expected = &hint.value_types[..types.len().min(hint.value_types.len())];
    if types != expected {
        return Err(hint.mismatch(format!(
            "gives value types {expected:?} but the file holds {types:?}"
        )));
    }
    if let Some(nnz) = hint.nnz {
        if object.nnz() != nnz {
            return Err(hint.mismatch(format!(
                "says {nnz} non-zeros but the file holds {}",
                object.nnz()
            )));
        }
    }
    Ok(())
}

/// Tells the dialect of the next object from its bytes (and the sidecar, if any).
fn detect<S: Source + ?Sized>(src: &mut S, hint: Option<&Hint>) -> Result<Dialect> {
    let start = src.offset();
    let head = src.peek(53)?.to_vec();
    if head.len() < 18 || head[0] != 1 {
        return Ok(Dialect::Spec);
    }
    let rows: u64 = read_le(&head[2..]);
    let cols: u64 = read_le(&head[10..]);
    match head[1] {
        4 => Ok(Dialect::Runtime),
        1 | 2 => detect_matrix(src, start, &head, rows, cols, hint),
        3 => detect_frame(src, start, rows, cols, hint),
        _ => Ok(Dialect::Spec),
    }
}

/// How well a reading that ends `len` bytes after `start` fits the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fit {
    /// The input ends exactly there: strong evidence.
    End,
    /// Another header seems to start there: weak evidence (two bytes can match by chance).
    Next,
    /// Neither.
    No,
}

fn fit<S: Source + ?Sized>(src: &mut S, start: u64, len: u128) -> Result<Fit> {
    let relative = src.offset() - start;
    let Ok(end) = usize::try_from(len - u128::from(relative)) else {
        return Ok(Fit::No);
    };
    if let Some(remaining) = src.remaining() {
        if end as u64 > remaining {
            return Ok(Fit::No);
        }
        if end as u64 == remaining {
            return Ok(Fit::End);
        }
    }
    let bytes = src.peek(end.saturating_add(2))?;
    Ok(match bytes.len() {
        n if n == end => Fit::End,
        n if n < end + 2 => Fit::No,
        _ if bytes[end] == 1 && (1..=4).contains(&bytes[end + 1]) => Fit::Next,
        _ => Fit::No,
    })
}

/// Decides between two readings from how they fit; `None` when only parsing both can tell.
fn by_fit(spec: Fit, runtime: Fit) -> Option<Dialect> {
    match (spec, runtime) {
        (Fit::End, Fit::Next | Fit::No) | (Fit::Next, Fit::No) | (Fit::No, Fit::No) => {
            Some(Dialect::Spec)
        }
        (Fit::Next | Fit::No, Fit::End) | (Fit::No, Fit::Next) => Some(Dialect::Runtime),
        _ => None,
    }
}

fn code_types(code: u8) -> (Option<ValueType>, Option<ValueType>) {
    (
        ValueType::from_code(code),
        runtime::from_runtime_code(code, 0).ok().flatten(),
    )
}

/// Picks the dialect whose reading of `codes` gives the sidecar's value types.
fn by_hint(hint: &Hint, codes: &[u8]) -> Result<Dialect> {
    let spec: Vec<Option<ValueType>> = codes.iter().map(|&c| code_types(c).0).collect();
    let runtime: Vec<Option<ValueType>> = codes.iter().map(|&c| code_types(c).1).collect();
    if runtime == hint.value_types {
        Ok(Dialect::Runtime)
    } else if spec == hint.value_types {
        Ok(Dialect::Spec)
    } else {
        Err(hint.mismatch(format!(
            "gives value types {:?}, which the file's codes {codes:?} mean in neither dialect",
            hint.value_types
        )))
    }
}

fn detect_matrix<S: Source + ?Sized>(
    src: &mut S,
    start: u64,
    head: &[u8],
    rows: u64,
    cols: u64,
    hint: Option<&Hint>,
) -> Result<Dialect> {
    if head.len() < 45 {
        return Ok(Dialect::Spec);
    }
    let csr = head[1] == 2;
    let code = head[18];
    let (rx, cx): (u64, u64) = (read_le(&head[19..]), read_le(&head[27..]));
    let (block_rows, block_cols): (u32, u32) = (read_le(&head[35..]), read_le(&head[39..]));
    let runtime_shaped = (rx, cx) == (0, 0)
        && (block_rows, block_cols) == (rows as u32, cols as u32)
        && head[43] == if csr { 2 } else { 1 }
        && head[44] == code;
    if !runtime_shaped {
        return Ok(Dialect::Spec);
    }
    if let Some(hint) = hint {
        return by_hint(hint, &[code]);
    }
    if rows > u64::from(u32::MAX) || cols > u64::from(u32::MAX) {
        // Only the runtime writes a block smaller than the object it claims to cover.
        return Ok(Dialect::Runtime);
    }
    let spec_size = ValueType::from_code(code).map(ValueType::size);
    let runtime_size = runtime_code_size(code);
    let (spec_size, runtime_size) = match (spec_size, runtime_size) {
        (Some(s), Some(r)) => (s as u128, r as u128),
        (None, Some(_)) => return Ok(Dialect::Runtime),
        _ => return Ok(Dialect::Spec),
    };
    let (rows128, cols128) = (u128::from(rows), u128::from(cols));
    let (spec_len, runtime_len) = if csr {
        if head.len() < 53 {
            return Ok(Dialect::Spec);
        }
        let nnz = u128::from(read_le::<u64>(&head[45..]));
        (
            53 + 4 * rows128 + nnz * (4 + spec_size),
            53 + 8 * (rows128 + 1) + nnz * (8 + runtime_size),
        )
    } else {
        let cells = rows128 * cols128;
        if cells == 0 {
            let (s, r) = code_types(code);
            return Err(Error::AmbiguousDialect {
                offset: start,
                message: format!(
                    "a {rows} x {cols} dense matrix without values has value type code {code}, \
                     {} in the spec but {} in DAPHNE's runtime",
                    s.map_or("unknown", ValueType::name),
                    r.map_or("a string type", ValueType::name)
                ),
            });
        }
        (45 + cells * spec_size, 45 + cells * runtime_size)
    };
    let spec_fit = fit(src, start, spec_len)?;
    let runtime_fit = fit(src, start, runtime_len)?;
    match by_fit(spec_fit, runtime_fit) {
        Some(dialect) => Ok(dialect),
        None => trial_parse(src, start, spec_len.max(runtime_len), Dialect::Spec),
    }
}

fn detect_frame<S: Source + ?Sized>(
    src: &mut S,
    start: u64,
    rows: u64,
    cols: u64,
    hint: Option<&Hint>,
) -> Result<Dialect> {
    let Ok(count) = usize::try_from(cols) else {
        return Ok(Dialect::Spec);
    };
    // The header: 18 bytes, the codes, then (u16 length, bytes) per label.
    let mut window = src.peek(4096)?.to_vec();
    let mut need = |n: usize, window: &mut Vec<u8>| -> Result<bool> {
        if window.len() < n {
            *window = src.peek(n.max(window.len() * 2))?.to_vec();
        }
        Ok(window.len() >= n)
    };
    let Some(codes_end) = count.checked_add(18) else {
        return Ok(Dialect::Spec);
    };
    if !need(codes_end, &mut window)? {
        return Ok(Dialect::Spec);
    }
    let codes = window[18..codes_end].to_vec();
    if let Some(hint) = hint {
        return by_hint(hint, &codes);
    }
    // From here every position is within the window plus a label: no overflow.
    let mut pos = codes_end;
    let mut utf8_labels = true;
    for _ in 0..count {
        if !need(pos + 2, &mut window)? {
            return Ok(Dialect::Spec);
        }
        let len = usize::from(read_le::<u16>(&window[pos..]));
        if !need(pos + 2 + len, &mut window)? {
            return Ok(Dialect::Spec);
        }
        utf8_labels &= std::str::from_utf8(&window[pos + 2..pos + 2 + len]).is_ok();
        pos += 2 + len;
    }
    if !need(pos + 16, &mut window)? {
        return Ok(Dialect::Spec);
    }
    let (rx, cx): (u64, u64) = (read_le(&window[pos..]), read_le(&window[pos + 8..]));
    let body = pos + 16;
    // A spec body starts with a block header: #r, #c, bt, and a value type unless empty.
    let spec_plausible = utf8_labels
        && codes.iter().all(|&c| ValueType::from_code(c).is_some())
        && need(body + 10, &mut window)?
        && {
            let (block_rows, block_cols, bt) = (
                u64::from(read_le::<u32>(&window[body..])),
                u64::from(read_le::<u32>(&window[body + 4..])),
                window[body + 8],
            );
            bt <= 3
                && rx.checked_add(block_rows).is_some_and(|end| end <= rows)
                && cx.checked_add(block_cols).is_some_and(|end| end <= cols)
                && (bt == 0 || ValueType::from_code(window[body + 9]).is_some())
        };
    let widths: Option<Vec<usize>> = codes.iter().map(|&c| runtime_code_size(c)).collect();
    let runtime_fit = match widths {
        Some(widths) if (rx, cx) == (0, 0) => {
            let width: u128 = widths.iter().map(|&w| w as u128).sum();
            fit(src, start, body as u128 + u128::from(rows) * width)?
        }
        _ => Fit::No,
    };
    match (spec_plausible, runtime_fit) {
        (false, Fit::End | Fit::Next) => Ok(Dialect::Runtime),
        (_, Fit::No) => Ok(Dialect::Spec),
        // Strong runtime evidence: unless the spec reading also parses, it is the runtime's.
        (true, Fit::End) => trial_parse(src, start, 0, Dialect::Runtime),
        // Weak runtime evidence against a plausible spec body: the spec's (whose parser
        // reports any error).
        (true, Fit::Next) => Ok(Dialect::Spec),
    }
}

/// Parses the object both ways; the dialect whose parse succeeds wins, `otherwise` when
/// neither does.
fn trial_parse<S: Source + ?Sized>(
    src: &mut S,
    start: u64,
    len: u128,
    otherwise: Dialect,
) -> Result<Dialect> {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    let bytes = src.peek(len.max(1 << 20))?.to_vec();
    let spec = Object::decode(&mut SliceSource::with_base(&bytes, start)).is_ok();
    let runtime = runtime::decode(&mut SliceSource::with_base(&bytes, start)).is_ok();
    match (spec, runtime) {
        (true, false) => Ok(Dialect::Spec),
        (false, true) => Ok(Dialect::Runtime),
        (true, true) => Err(Error::AmbiguousDialect {
            offset: start,
            message: "both the spec's and the runtime's layout parse in full".into(),
        }),
        (false, false) => Ok(otherwise),
    }
}

/// The most blocks a runtime object may need in this crate's model (blocks are at most
/// `u32::MAX` on a side): the runtime itself cannot represent dimensions of 2^32 or more, so
/// files that would need more are refused rather than expanded.
const MAX_RUNTIME_BLOCKS: u128 = 1 << 12;

/// An object from a decoded runtime object, in blocks this crate's model allows.
fn from_runtime(parts: RuntimeObject, offset: u64, labels: Option<Vec<String>>) -> Result<Object> {
    let (rows, cols) = match &parts {
        RuntimeObject::Dense { rows, cols, .. } | RuntimeObject::Csr { rows, cols, .. } => {
            (*rows, *cols)
        }
        RuntimeObject::Frame {
            rows, value_types, ..
        } => (*rows, value_types.len() as u64),
        RuntimeObject::Scalar(_) => (1, 1),
    };
    let max = u128::from(u32::MAX);
    let tiles = |n: u64| u128::from(n).div_ceil(max).max(1);
    let blocks = if rows == 0 || cols == 0 {
        tiles(rows.max(cols))
    } else {
        tiles(rows) * tiles(cols)
    };
    if blocks > MAX_RUNTIME_BLOCKS {
        return Err(Error::TooLarge {
            offset,
            what: "a runtime-dialect object this large (its dimensions need over 4,096 blocks)",
            bytes: u128::from(rows) * u128::from(cols),
        });
    }
    let fits = |rows: u64, cols: u64| rows <= u64::from(u32::MAX) && cols <= u64::from(u32::MAX);
    let place = |rows: u64, cols: u64| BlockPlace {
        row: 0,
        col: 0,
        rows: rows as u32,
        cols: cols as u32,
    };
    let (header, blocks) = match parts {
        RuntimeObject::Scalar(value) => (
            Header::Scalar {
                value_type: value.value_type(),
            },
            vec![Block {
                place: place(1, 1),
                data: BlockData::Dense({
                    let mut v = Values::new(value.value_type());
                    v.push(value);
                    v
                }),
            }],
        ),
        RuntimeObject::Dense { rows, cols, values } => {
            let header = Header::DenseMatrix {
                rows,
                cols,
                value_type: values.value_type(),
            };
            if fits(rows, cols) {
                let block = Block {
                    place: place(rows, cols),
                    data: BlockData::Dense(values),
                };
                (header, vec![block])
            } else if values.is_empty() {
                (header, empty_blocks(rows, cols))
            } else {
                return reencode(DataType::DenseMatrix, rows, cols, &values, None, offset);
            }
        }
        RuntimeObject::Csr {
            rows,
            cols,
            row_offsets,
            col_indices,
            values,
        } => {
            let header = Header::CsrMatrix {
                rows,
                cols,
                value_type: values.value_type(),
            };
            if fits(rows, cols) {
                let data = BlockData::Sparse {
                    // Moved where usize is u64; converted elsewhere.
                    row_offsets: bytemuck::allocation::try_cast_vec(row_offsets).unwrap_or_else(
                        |(_, offsets)| offsets.iter().map(|&o| o as usize).collect(),
                    ),
                    col_indices: bytemuck::allocation::try_cast_vec(col_indices)
                        .unwrap_or_else(|(_, cols)| cols.iter().map(|&c| c as usize).collect()),
                    values,
                };
                (
                    header,
                    vec![Block {
                        place: place(rows, cols),
                        data,
                    }],
                )
            } else if values.is_empty() {
                (header, empty_blocks(rows, cols))
            } else {
                let csr = (
                    row_offsets.iter().map(|&o| o as usize).collect::<Vec<_>>(),
                    col_indices.iter().map(|&c| c as usize).collect::<Vec<_>>(),
                );
                return reencode(DataType::CsrMatrix, rows, cols, &values, Some(csr), offset);
            }
        }
        RuntimeObject::Frame {
            rows,
            value_types,
            label_lens,
            columns,
        } => {
            // The label bytes are opaque; only an empty label is known from them.
            let labels = labels
                .filter(|l| l.len() == value_types.len())
                .unwrap_or_else(|| {
                    label_lens
                        .iter()
                        .enumerate()
                        .map(|(c, &len)| {
                            if len == 0 {
                                String::new()
                            } else {
                                format!("col_{c}")
                            }
                        })
                        .collect()
                });
            let header = Header::Frame {
                rows,
                columns: labels
                    .into_iter()
                    .zip(&value_types)
                    .map(|(label, &value_type)| Column { label, value_type })
                    .collect(),
            };
            let cols = value_types.len() as u64;
            let blocks = if rows == 0 || cols == 0 {
                empty_blocks(rows, cols)
            } else {
                columns
                    .into_iter()
                    .enumerate()
                    .map(|(c, values)| Block {
                        place: BlockPlace {
                            row: 0,
                            col: c as u64,
                            rows: rows as u32,
                            cols: 1,
                        },
                        data: BlockData::Dense(values),
                    })
                    .collect()
            };
            (header, blocks)
        }
    };
    Ok(Object::read_in(header, blocks, offset, Dialect::Runtime))
}

/// Empty blocks covering an object without values, by the tiling rule.
fn empty_blocks(rows: u64, cols: u64) -> Vec<Block> {
    let max = u64::from(u32::MAX);
    places(rows, cols, (max, max))
        .map(|place| Block {
            place,
            data: BlockData::Empty,
        })
        .collect()
}

/// A runtime object too large for one block: written in the spec's blocks and read back.
fn reencode(
    data_type: DataType,
    rows: u64,
    cols: u64,
    values: &Values,
    csr: Option<(Vec<usize>, Vec<usize>)>,
    offset: u64,
) -> Result<Object> {
    let too_large = || Error::TooLarge {
        offset,
        what: "a matrix",
        bytes: u128::from(rows) * u128::from(cols),
    };
    let (r, c) = (
        usize::try_from(rows).map_err(|_| too_large())?,
        usize::try_from(cols).map_err(|_| too_large())?,
    );
    let mut bytes = Vec::new();
    let mut sink = Sink::new(&mut bytes);
    with_values!(values, v => {
        let layout = match &csr {
            Some((row_offsets, col_indices)) => Layout::Csr {
                row_offsets,
                col_indices,
                values: v,
            },
            None => Layout::Dense(v),
        };
        let matrix = MatrixRef { rows: r, cols: c, layout };
        write_matrix(&mut sink, data_type, &matrix, &Options::new())
    })?;
    sink.finish()?;
    let object = Object::decode(&mut SliceSource::new(&bytes))?;
    let (header, blocks) = object.into_parts();
    Ok(Object::read_in(header, blocks, offset, Dialect::Runtime))
}

/// Writes an object in the runtime dialect.
pub(crate) fn write_runtime<W: Write>(sink: &mut Sink<W>, object: &Object) -> Result<()> {
    let (rows, cols) = object.shape();
    match object.header() {
        Header::Scalar { .. } => {
            let value = object
                .get(0, 0)
                .ok_or_else(|| Error::invalid("a scalar without value"))?;
            runtime::write_scalar(sink, value)
        }
        Header::DenseMatrix { value_type, .. } => with_value_type!(*value_type, T => {
            runtime::write_dense(sink, rows, cols, &object.dense_vec::<T>()?)
        }),
        Header::CsrMatrix { value_type, .. } => with_value_type!(*value_type, T => {
            let parts = object.csr_parts::<T>()?;
            runtime::write_csr(sink, rows, cols, &parts.row_offsets, &parts.col_indices, &parts.values)
        }),
        Header::Frame { columns, .. } => {
            let columns = columns
                .iter()
                .map(|column| column.label.clone())
                .zip(object.columns()?)
                .collect::<Vec<_>>();
            runtime::write_frame(sink, rows, &columns)
        }
    }
}
