//! A scipy CSR archive on the pipe: where `indptr`, `indices` and `data` are stored (as
//! `save_npz(..., compressed=False)` writes them), each band of rows reads its pointers, then
//! the indices and values they span, at positions in the file; the pointers are checked when
//! the archive is opened and each member's CRC-32 after a whole pass. Other archives are
//! read whole ([`super::read`]).

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use super::{check_unique, SCIPY};
use crate::input::read_exact_at;
use crate::npy::{self, Descr};
use crate::pipe::{band_rows, row_bytes, Band, Cells, Held, Kept, Source, BAND_BYTES};
use crate::zip::{check_stored_crc, entries, Archive, Entry, FileArchive};
use serde_daphne::__private::wire::values::{
    count_nonzero, with_value_type, with_values, zeroed_vec,
};
use serde_daphne::__private::wire::{Element, Header, ValueType, Values};
use serde_daphne::{DataType, Result};

/// A scipy sparse archive, read in place (a stored CSR matrix) or whole.
pub struct ScipySource {
    csr: Option<InPlace>,
    held: Option<Held>,
    headers: [Header; 1],
    input_len: u64,
}

/// The stored members of a CSR archive.
struct InPlace {
    indptr: Stored,
    indices: Stored,
    data: Stored,
    nnz: u64,
}

/// One stored `.npy` member: where its elements start, their type, its zip entry, and
/// the CRC-32 of what a pass has read so far in order.
struct Stored {
    file: File,
    name: &'static str,
    data_at: u64,
    value_type: ValueType,
    entry: Entry,
    /// The running CRC-32 and the next element it needs (`None` once a read skipped).
    crc: Option<(crc32fast::Hasher, u64)>,
}

impl Stored {
    fn new(
        file: File,
        name: &'static str,
        data_at: u64,
        value_type: ValueType,
        entry: Entry,
    ) -> Stored {
        Stored {
            file,
            name,
            data_at,
            value_type,
            entry,
            crc: None,
        }
    }

    /// Elements `range`, in the host's order; a pass reading them in order from the first
    /// computes the member's CRC-32 on the way.
    fn read(&mut self, range: Range<u64>) -> Result<Values> {
        let at = self.data_at + range.start * self.value_type.size() as u64;
        if range.start == 0 {
            // The member's `.npy` header comes first.
            let mut header = vec![0u8; (self.data_at - self.entry.start as u64) as usize];
            read_exact_at(&self.file, &mut header, self.entry.start as u64)?;
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(&header);
            self.crc = Some((hasher, 0));
        }
        let values = with_value_type!(self.value_type, T => {
            let mut values = zeroed_vec::<T>((range.end - range.start) as usize)?;
            read_exact_at(&self.file, bytemuck::cast_slice_mut(&mut values), at)?;
            self.crc = match self.crc.take() {
                Some((mut hasher, next)) if next == range.start => {
                    hasher.update(bytemuck::cast_slice(&values));
                    Some((hasher, range.end))
                }
                _ => None,
            };
            values.iter_mut().for_each(|x| *x = x.to_le());
            T::into_values(values)
        });
        Ok(values)
    }

    /// Elements `range` as indices below `bound`.
    fn indices(&mut self, range: Range<u64>, bound: u64) -> Result<Vec<usize>> {
        let first = range.start;
        let values = self.read(range)?;
        let bad = |k: usize, x: i128| {
            let size = self.value_type.size() as u64;
            SCIPY.at(
                (self.data_at + (first + k as u64) * size) as usize,
                format!(
                    "{}[{}] = {x} is out of range (0 to {})",
                    self.name,
                    first + k as u64,
                    bound.saturating_sub(1)
                ),
            )
        };
        // Integers of any width and sign (a float was refused at open).
        fn checked<T: Copy + Into<i128>>(
            v: &[T],
            bound: u64,
        ) -> std::result::Result<Vec<usize>, (usize, i128)> {
            v.iter()
                .enumerate()
                .map(|(k, &x)| {
                    let x: i128 = x.into();
                    match x >= 0 && x < i128::from(bound) {
                        true => Ok(x as usize),
                        false => Err((k, x)),
                    }
                })
                .collect()
        }
        let got = match &values {
            Values::I32(v) => checked(v, bound),
            Values::I64(v) => checked(v, bound),
            Values::U32(v) => checked(v, bound),
            Values::U64(v) => checked(v, bound),
            Values::I16(v) => checked(v, bound),
            Values::U16(v) => checked(v, bound),
            Values::I8(v) => checked(v, bound),
            Values::U8(v) => checked(v, bound),
            _ => Err((0, -1)),
        };
        got.map_err(|(k, x)| bad(k, x))
    }

    /// Checks the member's CRC-32: the one a pass computed when it read every element in
    /// order, else by reading the member again.
    fn check_crc(&mut self, len: u64) -> Result<()> {
        match self.crc.take() {
            Some((hasher, next)) if next == len => match hasher.finalize() == self.entry.crc {
                true => Ok(()),
                false => Err(crate::zip::crc_error(&self.entry.name, self.entry.start)),
            },
            _ => check_stored_crc(&self.file, &self.entry),
        }
    }
}

impl ScipySource {
    /// Opens the archive at `path`: in place when it is a stored CSR matrix of numbers.
    ///
    /// # Errors
    /// As [`super::read`].
    pub fn open(path: &Path) -> Result<ScipySource> {
        let input_len = std::fs::metadata(path)?.len();
        if let Some(source) = in_place(path, input_len)? {
            return Ok(source);
        }
        let object = super::read(path)?;
        let headers = [object.header().clone()];
        Ok(ScipySource {
            csr: None,
            held: Some(Held::new(vec![object], input_len, Kept::default())?),
            headers,
            input_len,
        })
    }

    /// Whether the archive is read in place (else it was read whole).
    pub fn reads_in_place(&self) -> bool {
        self.csr.is_some()
    }
}

/// The archive read in place, or `None` where the whole read will do (and word any fault).
fn in_place(path: &Path, input_len: u64) -> Result<Option<ScipySource>> {
    let archive = FileArchive::open(path)?;
    let Ok(entries) = entries(&archive) else {
        return Ok(None);
    };
    let find = |name: &str| entries.iter().find(|e| e.name == format!("{name}.npy"));
    // The small members, whole (each checked against its CRC-32).
    let small = |name: &str| -> Option<Vec<u8>> {
        let e = find(name).filter(|e| e.method == 0 && e.size < 4096)?;
        let bytes = archive.read(e.start, e.size as usize)?.into_owned();
        (crc32fast::hash(&bytes) == e.crc).then_some(bytes)
    };
    let (Some(format), Some(shape)) = (small("format"), small("shape")) else {
        return Ok(None);
    };
    let Ok(format) = npy::parse(&format).and_then(|a| a.string()) else {
        return Ok(None);
    };
    let shape = npy::parse(&shape).and_then(|a| super::indices(&a, u64::MAX, "shape"));
    let (rows, cols) = match (format.as_str(), shape.as_deref()) {
        ("csr", Ok([r, c])) => (*r as u64, *c as u64),
        _ => return Ok(None),
    };
    let stored = |name: &'static str, index: bool| -> Option<(Stored, u64)> {
        let entry = find(name).filter(|e| e.method == 0)?.clone();
        let head = archive.read(entry.start, (entry.size as usize).min(64 << 10))?;
        let header = npy::parse_header(&head).ok()?;
        let Descr::Number(vt, false) = header.descr else {
            return None;
        };
        let [len] = header.shape[..] else {
            return None;
        };
        let float = matches!(vt, ValueType::F32 | ValueType::F64);
        let fits =
            index != float && header.data_offset as u64 + len * vt.size() as u64 == entry.size;
        fits.then(|| {
            let file = archive.file.try_clone().ok()?;
            let data_at = entry.start as u64 + header.data_offset as u64;
            Some((Stored::new(file, name, data_at, vt, entry), len))
        })?
    };
    let (Some((mut indptr, np)), Some((indices, ni)), Some((data, nd))) = (
        stored("indptr", true),
        stored("indices", true),
        stored("data", false),
    ) else {
        return Ok(None);
    };
    if np != rows + 1 || ni != nd || rows > u64::from(u32::MAX) || cols > u64::from(u32::MAX) {
        return Ok(None);
    }
    // The pointers, a chunk at a time: from 0, never decreasing, the last the entries'.
    let mut last = 0usize;
    for start in (0..=rows).step_by(1 << 20) {
        let end = (start + (1 << 20)).min(rows + 1);
        let p = indptr.indices(start..end, nd + 1)?;
        let previous = std::iter::once(last).chain(p.iter().copied());
        let bad = (start == 0 && p[0] != 0)
            || previous.zip(&p).any(|(a, &b)| b < a)
            || (end == rows + 1 && p[p.len() - 1] as u64 != nd);
        if bad {
            return Err(SCIPY.at(
                indptr.data_at as usize,
                format!(
                    "indptr is not {} non-decreasing pointers from 0 to {nd}",
                    rows + 1
                ),
            ));
        }
        last = p[p.len() - 1];
    }
    indptr.check_crc(np)?;
    let value_type = data.value_type;
    Ok(Some(ScipySource {
        csr: Some(InPlace {
            indptr,
            indices,
            data,
            nnz: nd,
        }),
        held: None,
        headers: [Header::matrix(DataType::CsrMatrix, rows, cols, value_type)],
        input_len,
    }))
}

impl Source for ScipySource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        if let Some(held) = &mut self.held {
            return held.for_each_band(index, multiple, each);
        }
        let csr = self.csr.as_mut().expect("in place");
        let header = &self.headers[0];
        let (rows, cols) = header.shape();
        // Per entry in memory while a band is made: its index as stored and as `usize`, and
        // its value.
        let value = csr.data.value_type.size() as u64;
        let stored = csr
            .nnz
            .saturating_mul(8 + csr.indices.value_type.size() as u64 + value);
        let step = band_rows(
            header,
            row_bytes(header, Some(stored)),
            multiple,
            BAND_BYTES,
        );
        for r0 in (0..rows).step_by(step as usize) {
            let r1 = (r0 + step).min(rows);
            let p = csr.indptr.indices(r0..r1 + 1, csr.nnz + 1)?;
            let entries = p[0] as u64..p[p.len() - 1] as u64;
            let mut col_indices = csr.indices.indices(entries.clone(), cols)?;
            let mut values = csr.data.read(entries)?;
            let row_offsets: Vec<usize> = p.iter().map(|&k| k - p[0]).collect();
            with_values!(&mut values, v => sort_rows(&row_offsets, &mut col_indices, v));
            check_unique(&row_offsets, &col_indices, r0 as usize)?;
            let band = Band {
                first_row: r0,
                first_col: 0,
                rows: r1 - r0,
                cols,
                cells: Cells::Csr {
                    row_offsets,
                    col_indices,
                    values,
                },
            };
            if !each(band)? {
                return Ok(());
            }
        }
        csr.indices.check_crc(csr.nnz)?;
        csr.data.check_crc(csr.nnz)
    }

    fn count_nonzero(&mut self, _: usize) -> Result<Option<u64>> {
        let Some(csr) = &mut self.csr else {
            return Ok(None);
        };
        // The values alone, a chunk at a time (their CRC-32 computed on the way).
        let mut nnz = 0u64;
        for start in (0..csr.nnz).step_by(1 << 20) {
            let values = csr.data.read(start..(start + (1 << 20)).min(csr.nnz))?;
            nnz += with_values!(&values, v => count_nonzero(v)) as u64;
        }
        csr.data.check_crc(csr.nnz)?;
        Ok(Some(nnz))
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn stored_bytes(&self, _: usize) -> Option<u64> {
        Some(self.input_len)
    }
}

/// Sorts the rows whose columns are out of order (scipy allows them), values alongside.
fn sort_rows<T: Element>(offsets: &[usize], columns: &mut [usize], values: &mut [T]) {
    for w in offsets.windows(2) {
        let (a, b) = (w[0], w[1]);
        if columns[a..b].windows(2).all(|p| p[0] < p[1]) {
            continue;
        }
        let mut row: Vec<(usize, T)> = columns[a..b]
            .iter()
            .copied()
            .zip(values[a..b].iter().copied())
            .collect();
        row.sort_by_key(|&(c, _)| c);
        for (k, (c, x)) in row.into_iter().enumerate() {
            columns[a + k] = c;
            values[a + k] = x;
        }
    }
}
