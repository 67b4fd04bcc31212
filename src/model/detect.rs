//! Which dialect an object is in, told from its bytes (and a `.meta` sidecar's hint).
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
//! [`crate::ErrorKind::AmbiguousDialect`] rather than guess; a dense matrix without cells and without a
//! sidecar, whose readings differ only in the meaning of its value type code, is the spec's,
//! and so is a frame without a sidecar (DAPHNE writes every frame with one: its labels).
//!
//! The byte positions of the fields read here are `wire/probe.rs`'s.

use crate::error::ErrorDetails;
use crate::error::{Error, Result};
use crate::model::object::Object;
use crate::model::runtime::from_runtime;
use crate::options::Dialect;
use crate::wire::probe::{self, MatrixProbe};
use crate::wire::runtime::{self, runtime_code_size};
use crate::wire::source::SliceSource;
use crate::wire::{DataType, Header, Source, ValueType};

/// What a `.meta` sidecar says about the object beside it ([`crate::lowlevel::read_sidecar`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Meta {
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
    /// Where a segmented object's segments are (`hdfs.HDFSFilename` in the local sidecar of
    /// DAPHNE's segmented layout, when `isHDFS`).
    pub hdfs: Option<String>,
}

impl Meta {
    fn mismatch(&self, message: String) -> Error {
        Error::from(ErrorDetails::Sidecar {
            path: self.path.clone(),
            message,
        })
    }
}

/// Reads the next object in `dialect`, or in the dialect detected from its bytes.
pub(crate) fn read_object<S: Source + ?Sized>(
    src: &mut S,
    dialect: Option<Dialect>,
    hint: Option<&Meta>,
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

fn check_hint(object: &Object, hint: &Meta) -> Result<()> {
    check_hint_header(object.header(), hint)?;
    if let Some(nnz) = hint.nnz {
        let held = object.entries();
        if held != nnz {
            return Err(hint.mismatch(format!("says {nnz} non-zeros but the file holds {held}")));
        }
    }
    Ok(())
}

/// Checks that a sidecar agrees with an object's header (shape and value types).
pub(crate) fn check_hint_header(header: &Header, hint: &Meta) -> Result<()> {
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
    Ok(())
}

/// Tells the dialect of the next object from its bytes (and the sidecar, if any).
pub(crate) fn detect<S: Source + ?Sized>(src: &mut S, hint: Option<&Meta>) -> Result<Dialect> {
    let start = src.offset();
    let head = src.peek(probe::MATRIX_PROBE_LEN)?.to_vec();
    let Some((data_type, rows, cols)) = probe::fixed(&head) else {
        return Ok(Dialect::Spec);
    };
    match data_type {
        4 => Ok(Dialect::Runtime),
        1 | 2 => match MatrixProbe::read(&head) {
            Some(matrix) => detect_matrix(src, start, &matrix, hint),
            None => Ok(Dialect::Spec),
        },
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
    Ok(match src.peek_ahead(end as u64, 2)? {
        None => Fit::No,
        Some(bytes) => match bytes.len() {
            0 => Fit::End,
            1 => Fit::No,
            _ if bytes[0] == 1 && (1..=4).contains(&bytes[1]) => Fit::Next,
            _ => Fit::No,
        },
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
fn by_hint(hint: &Meta, codes: &[u8]) -> Result<Dialect> {
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
    matrix: &MatrixProbe,
    hint: Option<&Meta>,
) -> Result<Dialect> {
    if !matrix.runtime_shaped() {
        return Ok(Dialect::Spec);
    }
    if let Some(hint) = hint {
        return by_hint(hint, &[matrix.code]);
    }
    if matrix.rows > u64::from(u32::MAX) || matrix.cols > u64::from(u32::MAX) {
        // Only the runtime writes a block smaller than the object it claims to cover.
        return Ok(Dialect::Runtime);
    }
    let (spec_type, runtime_size) = match (
        ValueType::from_code(matrix.code),
        runtime_code_size(matrix.code),
    ) {
        (Some(s), Some(r)) => (s, r),
        (None, Some(_)) => return Ok(Dialect::Runtime),
        _ => return Ok(Dialect::Spec),
    };
    if !matrix.csr && u128::from(matrix.rows) * u128::from(matrix.cols) == 0 {
        // No cells: both readings hold nothing, and only the value type code means
        // different things. DAPHNE always writes a .meta beside its files (a hint decided
        // above), so without one the bytes are taken as the spec's.
        return Ok(Dialect::Spec);
    }
    let (Some(spec_len), Some(runtime_len)) =
        (matrix.spec_len(spec_type), matrix.runtime_len(runtime_size))
    else {
        return Ok(Dialect::Spec);
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
    hint: Option<&Meta>,
) -> Result<Dialect> {
    let Ok(count) = usize::try_from(cols) else {
        return Ok(Dialect::Spec);
    };
    if let Some(hint) = hint {
        // The codes alone decide.
        return match probe::frame_codes(src, count)? {
            Some(codes) => by_hint(hint, &codes),
            None => Ok(Dialect::Spec),
        };
    }
    let Some(frame) = probe::frame(src, count)? else {
        return Ok(Dialect::Spec);
    };
    // A spec body starts with a block header: #r, #c, bt, and a value type unless empty.
    let spec_plausible = frame.utf8_labels
        && frame
            .codes
            .iter()
            .all(|&c| ValueType::from_code(c).is_some())
        && frame
            .block
            .is_some_and(|(block_rows, block_cols, bt, code)| {
                bt <= 3
                    && frame
                        .row
                        .checked_add(u64::from(block_rows))
                        .is_some_and(|end| end <= rows)
                    && frame
                        .col
                        .checked_add(u64::from(block_cols))
                        .is_some_and(|end| end <= cols)
                    && (bt == 0 || ValueType::from_code(code).is_some())
            });
    let widths: Option<Vec<usize>> = frame.codes.iter().map(|&c| runtime_code_size(c)).collect();
    let runtime_fit = match widths {
        Some(widths) if (frame.row, frame.col) == (0, 0) => {
            let width: u128 = widths.iter().map(|&w| w as u128).sum();
            fit(src, start, frame.body as u128 + u128::from(rows) * width)?
        }
        _ => Fit::No,
    };
    match (spec_plausible, runtime_fit) {
        (false, Fit::End | Fit::Next) => Ok(Dialect::Runtime),
        (_, Fit::No) => Ok(Dialect::Spec),
        // Strong runtime evidence: unless the spec reading also parses, it is the runtime's.
        // Where both parse, the spec's: DAPHNE writes each frame with the `.meta` sidecar
        // that holds its labels and types (its reader needs it), so a frame without one is
        // not DAPHNE's to read, and the spec-dialect frames this crate writes would
        // otherwise not read back.
        (true, Fit::End) => match trial_parse(src, start, 0, Dialect::Runtime) {
            Err(e) if e.kind() == crate::ErrorKind::AmbiguousDialect => Ok(Dialect::Spec),
            other => other,
        },
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
        (true, true) => Err(ErrorDetails::AmbiguousDialect {
            offset: start,
            message: "both the spec's and the runtime's layout parse in full".into(),
        }
        .into()),
        (false, false) => Ok(otherwise),
    }
}
