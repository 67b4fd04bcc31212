//! scipy's sparse `.npz` files, as `scipy.sparse.save_npz` writes them: a zip of `.npy`
//! arrays, `format` (`csr`, `csc`, `coo`, `bsr` or `dia`), `shape`, `data` and the format's
//! index arrays (`indptr` and `indices`; `row` and `col`; `offsets`).
//!
//! Every format reads into a CSR matrix with the same values: rows whose columns are out of
//! order are sorted (scipy allows them), a BSR matrix's blocks keep their stored zeros (as
//! `bsr.tocsr()` does), a DIA matrix's stored zeros and the parts of its diagonals outside
//! the matrix are dropped (as `dia.tocsr()` does). **A cell given twice is refused**, naming
//! it: scipy keeps duplicates until `sum_duplicates()`, whose sums depend on its order of
//! addition, so summing them here could differ from scipy in the last bit.
//!
//! Written as `save_npz` writes a CSR matrix (members `indices`, `indptr`, `format`,
//! `shape`, `data`; 32-bit indices where they fit, as scipy chooses), stored or deflated
//! ([`WriteOptions::compressed`]); `scipy.sparse.load_npz` reads it back exactly.
//!
//! On the pipe, a CSR archive streams a band of rows at a time: stored members
//! read at positions, deflated ones inflated as the pass reaches them; the other formats
//! are read whole (their entries are not in row order).

mod source;

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

pub(crate) use source::ScipySource;

use crate::driver::DUPLICATES;
use crate::driver::{ConvertOptions, Driver, Format, Input, OptionSpec, Stored, Takes};
use crate::driver::{Duplicates, SUM_HINT};
use crate::input::{checked_sum, index_values, Foreign};
use crate::npy;
use crate::pipe::{Collect, InputMetadata, Sink, Source};
use crate::zip::{members, ZipWriter};
use serde_daphne::lowlevel::CsrFill;
use serde_daphne::lowlevel::RowCounts;
use serde_daphne::with_value_type;
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::Options;
use serde_daphne::ValueType;
use serde_daphne::{DataType, Error, Object, Result};

pub(crate) const SCIPY: Foreign = Foreign("scipy sparse .npz");

/// How an archive is laid out. Plain data, as every format's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Deflated members, as `save_npz` writes them by default (default: stored, as
    /// `save_npz(..., compressed=False)` writes them).
    pub compressed: bool,
}

/// How a scipy format stores the matrix, in Binsparse's names for layouts (the pipe's
/// vocabulary, [`InputMetadata::layout`]); BSR and DIA have none.
pub(crate) fn layout_of(format: &str) -> Option<&'static str> {
    match format {
        "csr" => Some("CSR"),
        "csc" => Some("CSC"),
        "coo" => Some("COO"),
        _ => None,
    }
}

/// A scipy sparse `.npz` archive in memory, read whole as a CSR matrix (see the module's
/// description), with the layout the archive stored the matrix in ([`layout_of`]).
fn from_slice_stored(
    bytes: &[u8],
    duplicates: Duplicates,
) -> Result<(Object, Option<&'static str>)> {
    // Deflated members may inflate to the default allocation limit beyond the archive.
    let members = members(bytes, Options::new().max_alloc)?;
    let array = |name: &str| -> Result<npy::Array<'_>> {
        let member = members
            .iter()
            .find(|m| m.name == format!("{name}.npy"))
            .ok_or_else(|| SCIPY.error(format!("the archive has no {name}.npy")))?;
        npy::parse(&member.data)
            .map_err(|e| SCIPY.error(format!("{name}.npy: {}", e.relocated(None))))
    };
    let format = array("format")?.string()?;
    let shape = indices(&array("shape")?, u64::MAX, "shape")?;
    let (rows, cols) = match shape[..] {
        [n] => (n as u64, 1),
        [r, c] => (r as u64, c as u64),
        _ => return Err(SCIPY.error(format!("a shape of {} dimensions", shape.len()))),
    };
    let data = array("data")?;
    let values = data.values()?;
    let (r, c) = (rows as usize, cols as usize);
    let entries = match format.as_str() {
        "csr" | "csc" => {
            let (major, minor) = if format == "csr" { (r, c) } else { (c, r) };
            let indptr = indices(&array("indptr")?, values.len() as u64 + 1, "indptr")?;
            let index = indices(&array("indices")?, minor as u64, "indices")?;
            check_pointers(&indptr, major, index.len().min(values.len()))?;
            Entries::Compressed {
                indptr,
                index,
                by_rows: format == "csr",
            }
        }
        "coo" => {
            let (row, col) = match array("coords") {
                Ok(coords) => {
                    let flat = indices(&coords, rows.max(cols), "coords")?;
                    let n = flat.len() / shape.len().max(1);
                    match shape.len() {
                        1 => (flat, vec![0; n]),
                        _ => (flat[..n].to_vec(), flat[n..].to_vec()),
                    }
                }
                Err(_) => (
                    indices(&array("row")?, rows, "row")?,
                    indices(&array("col")?, cols, "col")?,
                ),
            };
            Entries::Coordinates { row, col }
        }
        "bsr" => {
            let (blocks, br, bc) = match data.shape[..] {
                [n, br, bc] if br > 0 && bc > 0 => (n as usize, br as usize, bc as usize),
                _ => return Err(SCIPY.error("a BSR matrix's data is not (blocks, R, C)")),
            };
            if r % br != 0 || c % bc != 0 {
                return Err(SCIPY.error(format!("{br} x {bc} blocks do not tile {r} x {c}")));
            }
            let indptr = indices(&array("indptr")?, blocks as u64 + 1, "indptr")?;
            let index = indices(&array("indices")?, (c / bc) as u64, "indices")?;
            check_pointers(&indptr, r / br, blocks.min(index.len()))?;
            Entries::Blocks {
                indptr,
                index,
                block: (br, bc),
            }
        }
        "dia" => {
            let offsets = array("offsets")?.values()?;
            let not_ints = || SCIPY.error("a DIA matrix's offsets are not integers of an i64");
            if matches!(offsets.value_type(), ValueType::F32 | ValueType::F64) {
                return Err(not_ints());
            }
            let offsets = offsets.convert(ValueType::I64).map_err(|_| not_ints())?;
            let offsets = i64::try_from_values(offsets).map_err(|_| not_ints())?;
            let width = match data.shape[..] {
                [n, w] if n as usize == offsets.len() => w as usize,
                _ => return Err(SCIPY.error("a DIA matrix's data is not (offsets, length)")),
            };
            Entries::Diagonals { offsets, width }
        }
        other => return Err(SCIPY.error(format!("the unknown sparse format {other:?}"))),
    };
    let object = with_values!(&values, v => entries.to_csr(rows, cols, v, duplicates))?;
    Ok((object, layout_of(&format)))
}

/// A sparse matrix's stored entries as its format holds them.
enum Entries {
    Compressed {
        indptr: Vec<usize>,
        index: Vec<usize>,
        by_rows: bool,
    },
    Coordinates {
        row: Vec<usize>,
        col: Vec<usize>,
    },
    Blocks {
        indptr: Vec<usize>,
        index: Vec<usize>,
        block: (usize, usize),
    },
    Diagonals {
        offsets: Vec<i64>,
        width: usize,
    },
}

impl Entries {
    /// Calls `f(row, col, k)` for each stored entry `k` of `data` (in any order).
    fn for_each(&self, (rows, cols): (usize, usize), mut f: impl FnMut(usize, usize, usize)) {
        match self {
            Entries::Compressed {
                indptr,
                index,
                by_rows,
            } => {
                for (major, w) in indptr.windows(2).enumerate() {
                    for (k, &minor) in (w[0]..).zip(&index[w[0]..w[1]]) {
                        match by_rows {
                            true => f(major, minor, k),
                            false => f(minor, major, k),
                        }
                    }
                }
            }
            Entries::Coordinates { row, col } => {
                (0..row.len()).for_each(|k| f(row[k], col[k], k));
            }
            Entries::Blocks {
                indptr,
                index,
                block: (br, bc),
            } => {
                for (block_row, w) in indptr.windows(2).enumerate() {
                    for (k, &block_col) in (w[0]..).zip(&index[w[0]..w[1]]) {
                        for i in 0..*br {
                            for j in 0..*bc {
                                f(
                                    block_row * br + i,
                                    block_col * bc + j,
                                    (k * br + i) * bc + j,
                                );
                            }
                        }
                    }
                }
            }
            Entries::Diagonals { offsets, width } => {
                for (d, &offset) in offsets.iter().enumerate() {
                    for col in 0..(*width).min(cols) {
                        let row = col as i64 - offset;
                        if (0..rows as i64).contains(&row) {
                            f(row as usize, col, d * width + col);
                        }
                    }
                }
            }
        }
    }

    /// The CSR matrix of the entries of `data`, rows sorted, a cell given twice refused or
    /// summed in the order of the entries.
    fn to_csr<T: Element>(
        &self,
        rows: u64,
        cols: u64,
        data: &[T],
        duplicates: Duplicates,
    ) -> Result<Object> {
        let (r, c) = (rows as usize, cols as usize);
        let expected = match self {
            Entries::Compressed { indptr, .. } => indptr.last().copied().unwrap_or(0),
            Entries::Coordinates { row, col } => row.len().max(col.len()),
            Entries::Blocks { indptr, block, .. } => {
                indptr.last().copied().unwrap_or(0) * block.0 * block.1
            }
            Entries::Diagonals { offsets, width } => offsets.len() * width,
        };
        if let Entries::Coordinates { row, col } = self {
            if row.len() != col.len() {
                return Err(SCIPY.error(format!("{} rows but {} columns", row.len(), col.len())));
            }
        }
        if expected != data.len() {
            return Err(SCIPY.error(format!(
                "the index arrays give {expected} values, data has {}",
                data.len()
            )));
        }
        // DIA's stored zeros are not entries (scipy drops them too).
        let keep = |k: usize| !matches!(self, Entries::Diagonals { .. }) || !data[k].is_zero();
        let mut counts = RowCounts::new(r)?;
        self.for_each((r, c), |row, _, k| {
            if keep(k) {
                counts.add(row)
            }
        });
        let mut fill = CsrFill::new(counts.into_offsets())?;
        self.for_each((r, c), |row, col, k| {
            if keep(k) {
                fill.push(row, col, data[k]);
            }
        });
        let (mut offsets, mut columns, mut values) = fill
            .finish()
            .ok_or_else(|| SCIPY.error("the entries did not add up"))?;
        match duplicates {
            Duplicates::Refuse => check_unique(&offsets, &columns, 0)?,
            Duplicates::Sum => sum_duplicates(&mut offsets, &mut columns, &mut values)?,
        }
        Object::csr(rows, cols, offsets, columns, T::into_values(values))
    }
}

/// Refuses a cell given twice: the first, by row and column (from 0; the rows of `offsets`
/// start at row `first`).
pub(crate) fn check_unique(offsets: &[usize], columns: &[usize], first: usize) -> Result<()> {
    for (row, w) in (first..).zip(offsets.windows(2)) {
        if let Some(p) = columns[w[0]..w[1]].windows(2).find(|p| p[0] == p[1]) {
            return Err(SCIPY.error(format!(
                "the cell ({row}, {}) is given twice (scipy keeps duplicates until \
                 sum_duplicates(); call it before save_npz, or {SUM_HINT})",
                p[0]
            )));
        }
    }
    Ok(())
}

/// Sums each cell's entries (adjacent in each sorted row, in the order they came), closing
/// the gaps; an integer sum beyond its type is refused, naming the cell.
fn sum_duplicates<T: Element>(
    offsets: &mut [usize],
    columns: &mut Vec<usize>,
    values: &mut Vec<T>,
) -> Result<()> {
    let mut kept = 0;
    let mut start = 0;
    for row in 0..offsets.len() - 1 {
        let (end, first) = (offsets[row + 1], kept);
        for k in start..end {
            let (c, v) = (columns[k], values[k]);
            if kept > first && columns[kept - 1] == c {
                let sum = checked_sum(values[kept - 1].into_value(), v.into_value());
                values[kept - 1] = sum.and_then(T::from_value).ok_or_else(|| {
                    SCIPY.error(format!(
                        "the entries of the cell ({row}, {c}) sum beyond {}",
                        T::VALUE_TYPE
                    ))
                })?;
                continue;
            }
            columns[kept] = c;
            values[kept] = v;
            kept += 1;
        }
        start = end;
        offsets[row + 1] = kept;
    }
    columns.truncate(kept);
    values.truncate(kept);
    Ok(())
}

/// Pointers into `len` entries for `major` rows (or columns): `major + 1` of them, from 0,
/// never decreasing, the last `len`.
fn check_pointers(indptr: &[usize], major: usize, len: usize) -> Result<()> {
    let ok = indptr.len() == major + 1
        && indptr.first() == Some(&0)
        && indptr.windows(2).all(|w| w[0] <= w[1])
        && indptr.last() == Some(&len);
    match ok {
        true => Ok(()),
        false => Err(SCIPY.error(format!(
            "indptr is not {} non-decreasing pointers from 0 to {len}",
            major + 1
        ))),
    }
}

/// An integer array's elements as `usize`, each below `bound`.
pub(crate) fn indices(array: &npy::Array<'_>, bound: u64, what: &str) -> Result<Vec<usize>> {
    index_values(&array.values()?, bound).map_err(|fault| match fault {
        Some((k, x)) => SCIPY.error(format!(
            "{what}[{k}] = {x} is out of range (0 to {})",
            i128::from(bound) - 1
        )),
        None => SCIPY.error(format!("{what} holds floating-point values, not integers")),
    })
}

/// Writes a matrix (its non-zeros, for a dense one) as a scipy CSR `.npz` archive.
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for a frame; I/O errors.
fn to_writer<W: Write>(out: W, object: &Object, options: &WriteOptions) -> Result<()> {
    if object.data_type() == DataType::Frame {
        return Err(SCIPY.cannot_hold(
            "a Frame",
            "a sparse matrix has one dtype; convert each column on its own",
        ));
    }
    let (rows, cols) = object.shape();
    let vt = object
        .header()
        .matrix_value_type()
        .unwrap_or(ValueType::F64);
    let (offsets, columns, values) = with_value_type!(vt, T => {
        let parts = object.csr_parts::<T>()?;
        (parts.row_offsets, parts.col_indices, T::into_values(parts.values))
    });
    let mut zip = ZipWriter::new(out);
    // scipy's choice: 32-bit indices while the columns and the entries fit.
    let narrow = cols <= i32::MAX as u64 && (values.len() as u64) <= i32::MAX as u64;
    let index_array = |v: &[usize]| -> Vec<u8> {
        match narrow {
            true => v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect(),
            false => v.iter().flat_map(|&x| (x as i64).to_le_bytes()).collect(),
        }
    };
    let index = if narrow { "<i4" } else { "<i8" };
    let shape = [rows as i64, cols as i64].map(i64::to_le_bytes).concat();
    // Each member's `.npy` header and its data (the values' bytes borrowed where the host
    // is little-endian).
    let members: [Member<'_>; 5] = [
        (
            "indices",
            index,
            &[columns.len() as u64],
            index_array(&columns).into(),
        ),
        (
            "indptr",
            index,
            &[offsets.len() as u64],
            index_array(&offsets).into(),
        ),
        ("format", "|S3", &[], Cow::Borrowed(b"csr")),
        ("shape", "<i8", &[2], shape.into()),
        (
            "data",
            npy::descr(values.value_type()),
            &[values.len() as u64],
            values.le_bytes(),
        ),
    ];
    for (name, descr, dims, data) in &members {
        let mut header = Vec::new();
        npy::write_header(&mut header, descr, dims)?;
        let name = format!("{name}.npy");
        match options.compressed {
            true => zip.deflated(&name, &[&header[..], data].concat())?,
            false => zip.member(&name, &[&header[..], data])?,
        }
    }
    zip.finish()?;
    Ok(())
}

/// A member to write: its name, its `.npy` header's descr and shape, and its data.
type Member<'a> = (&'a str, &'a str, &'a [u64], Cow<'a, [u8]>);

/// A sink of the pipe writing one matrix as a scipy CSR archive to `out` (held whole: the
/// arrays come before the values they index).
pub(crate) fn sink<'w>(out: &'w mut dyn Write, options: &WriteOptions) -> Collect<'w> {
    let options = options.clone();
    let write = move |objects: Vec<Object>, _: InputMetadata| {
        let object = objects
            .first()
            .ok_or_else(|| Error::invalid("no matrix to write"))?;
        to_writer(out, object, &options)?;
        Ok(Vec::new())
    };
    Collect::new(Some("a scipy sparse .npz"), write)
}

/// scipy's sparse `.npz` archives' entry in the registry.
pub(crate) struct Scipy;

impl Driver for Scipy {
    fn names(&self) -> &'static [&'static str] {
        &["scipy"]
    }

    fn description(&self) -> &'static str {
        "scipy.sparse.save_npz archives (.npz, told by its members)"
    }

    /// A `.npz` archive holding `format.npy` and `shape.npy`.
    fn identify(&self, path: &Path, _: Option<Format>) -> bool {
        crate::npz::has_extension(path)
            && crate::npz::Kind::of(path) == Some(crate::npz::Kind::Scipy)
    }

    fn identify_at(&self, input: &Input, name: &Path) -> bool {
        let archive = || crate::zip::FileArchive::open_at(Arc::clone(&input.data)).ok();
        crate::npz::has_extension(name)
            && archive().and_then(|a| crate::npz::Kind::of_archive(&a))
                == Some(crate::npz::Kind::Scipy)
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    /// A CSR archive's members in place (stored ones by ranges, deflated ones streamed);
    /// any other held whole in memory, as the whole read holds it.
    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>> {
        let duplicates = options.formats.get::<Duplicates>();
        Ok(Box::new(source::ScipySource::open_at(
            input.data, duplicates,
        )?))
    }

    fn options(&self) -> &'static [OptionSpec] {
        &[
            DUPLICATES,
            OptionSpec {
                flag: "compressed",
                keyword: "compressed",
                help: "scipy and npz output: deflated members (save_npz's default, \
                   savez_compressed).",
                takes: Takes::Flag,
                set: |o, v| {
                    o.formats.get_mut::<WriteOptions>().compressed = v.flag()?;
                    Ok(())
                },
            },
        ]
    }

    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
        let duplicates = options.formats.get::<Duplicates>();
        Ok(Box::new(ScipySource::open(path, duplicates)?))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>> {
        Ok(Box::new(sink(out, &options.formats.get::<WriteOptions>())))
    }
}
