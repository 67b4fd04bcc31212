//! A scipy CSR archive on the pipe: each band of rows reads its pointers, then the indices
//! and values they span, from `indptr`, `indices` and `data` in order: at positions in the
//! file where the members are stored (`save_npz(..., compressed=False)`), inflated as the
//! pass reaches them where they are deflated (`save_npz`'s default). The pointers are
//! checked when the archive is opened, each member's CRC-32 after a whole pass. Other
//! formats (CSC, COO, BSR, DIA) are read whole ([`super::from_slice_stored`]).

use std::path::Path;
use std::sync::Arc;

use super::{check_unique, SCIPY};
use crate::driver::Duplicates;
use crate::input::count_nonzero;
use crate::input::decode_values;
use crate::input::index_values;
use crate::npy::{self, Descr};
use crate::pipe::{band_rows, row_bytes, source_in_field, Band, Cells, Held, InputMetadata};
use crate::pipe::{InPlaceOrHeld, Source, BAND_BYTES};
use crate::zip::{entries, Archive, Entry, FileArchive, Inflating, StoredArray};
use serde_daphne::lowlevel::sort_rows;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_values;
use serde_daphne::Header;
use serde_daphne::ReadAt;
use serde_daphne::ValueType;
use serde_daphne::Values;
use serde_daphne::{DataType, Result};

/// A scipy sparse archive: a CSR matrix streamed a band of rows at a time, others whole.
pub struct ScipySource {
    source: InPlaceOrHeld<CsrMembers>,
}

/// A CSR archive's members, read in place.
struct CsrMembers {
    indptr: Member,
    indices: Member,
    data: Member,
    nnz: u64,
    headers: [Header; 1],
    input_len: u64,
}

/// A member read in order, from its first element on each pass.
enum Member {
    Stored(StoredArray, u64),
    Deflated(Deflated),
}

/// A deflated `.npy` member of little-endian numbers, inflated as a pass reads it.
struct Deflated {
    file: Arc<dyn ReadAt>,
    entry: Entry,
    name: &'static str,
    header_len: usize,
    value_type: ValueType,
    inflating: Option<Inflating>,
    /// The next element a pass reads.
    next: u64,
}

impl Member {
    fn value_type(&self) -> ValueType {
        match self {
            Member::Stored(s, _) => s.value_type(),
            Member::Deflated(d) => d.value_type,
        }
    }

    /// Back to the first element, for a new pass.
    fn restart(&mut self) -> Result<()> {
        match self {
            Member::Stored(_, next) => *next = 0,
            Member::Deflated(d) => {
                let mut inflating = Inflating::new(&d.file, d.entry.clone())?;
                inflating.read_exact(&mut vec![0u8; d.header_len])?;
                d.inflating = Some(inflating);
                d.next = 0;
            }
        }
        Ok(())
    }

    /// The next `n` elements.
    fn take(&mut self, n: u64) -> Result<Values> {
        match self {
            Member::Stored(stored, next) => {
                let values = stored.read(*next..*next + n)?;
                *next += n;
                Ok(values)
            }
            Member::Deflated(d) => {
                let inflating = d.inflating.as_mut().expect("restarted");
                let mut bytes = zeroed_vec::<u8>((n * d.value_type.size() as u64) as usize)?;
                inflating.read_exact(&mut bytes)?;
                d.next += n;
                decode_values(d.value_type, &bytes)
            }
        }
    }

    /// The next `n` elements as indices below `bound`.
    fn take_indices(&mut self, n: u64, bound: u64) -> Result<Vec<usize>> {
        let first = match self {
            Member::Stored(_, next) => *next,
            Member::Deflated(d) => d.next,
        };
        let values = self.take(n)?;
        index_values(&values, bound).map_err(|fault| {
            // A float was refused at open.
            let (k, x) = fault.unwrap_or((0, -1));
            let element = first + k as u64;
            let message = format!(
                "{}[{element}] = {x} is out of range (0 to {})",
                self.name(),
                bound.saturating_sub(1)
            );
            match self {
                Member::Stored(s, _) => SCIPY.at(s.offset_of(element) as usize, message),
                Member::Deflated(_) => SCIPY.error(message),
            }
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Member::Stored(s, _) => s.name(),
            Member::Deflated(d) => d.name,
        }
    }

    /// Checks, once a pass read all `len` elements, the member's CRC-32.
    fn finish(&mut self, len: u64) -> Result<()> {
        match self {
            Member::Stored(stored, _) => stored.check_crc(len),
            Member::Deflated(d) => match d.inflating.take() {
                Some(inflating) if d.next == len => inflating.finish(),
                _ => Ok(()),
            },
        }
    }
}

impl ScipySource {
    /// Opens the archive at `path` (a CSR matrix's pointers checked; other formats read).
    ///
    /// # Errors
    /// As [`super::from_slice_stored`]; I/O errors.
    pub(crate) fn open(path: &Path, duplicates: Duplicates) -> Result<ScipySource> {
        ScipySource::open_at(Arc::new(std::fs::File::open(path)?), duplicates)
    }

    /// [`ScipySource::open`] for an archive read at positions (an object's ranges): a CSR
    /// archive's members in place (unless duplicates are summed), any other archive read
    /// whole into memory, as the whole read reads it.
    ///
    /// # Errors
    /// As [`super::from_slice_stored`]; request errors.
    pub(crate) fn open_at(file: Arc<dyn ReadAt>, duplicates: Duplicates) -> Result<ScipySource> {
        let input_len = file.size()?;
        // Duplicates summed shorten rows: the whole read sums them.
        if duplicates == Duplicates::Refuse {
            if let Some(source) = in_place(&file, input_len)? {
                return Ok(source);
            }
        }
        let mut bytes = zeroed_vec::<u8>(input_len as usize)?;
        file.read_exact_at(&mut bytes, 0)?;
        let (object, layout) = super::from_slice_stored(&bytes, duplicates)?;
        let metadata = InputMetadata {
            layout,
            ..InputMetadata::default()
        };
        let held = Held::new(vec![object], input_len, metadata)?;
        Ok(ScipySource {
            source: InPlaceOrHeld::Held(held),
        })
    }
}

source_in_field!(ScipySource, source);

/// The archive read in place, or `None` where the whole read will do (and word any fault).
fn in_place(file: &Arc<dyn ReadAt>, input_len: u64) -> Result<Option<ScipySource>> {
    let archive = FileArchive::open_at(Arc::clone(file))?;
    let Ok(entries) = entries(&archive) else {
        return Ok(None);
    };
    let find = |name: &str| entries.iter().find(|e| e.name == format!("{name}.npy"));
    // The small members, whole (each checked against its CRC-32).
    let small = |name: &str| -> Option<Vec<u8>> {
        let e = find(name).filter(|e| e.size < 4096 && e.compressed < 4096)?;
        let bytes = archive.read(e.start, e.compressed as usize)?.into_owned();
        match e.method {
            0 => (crc32fast::hash(&bytes) == e.crc).then_some(bytes),
            _ => crate::zip::inflate(e, &bytes, (input_len, 4096)).ok(),
        }
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
    // Each array 1-D, of little-endian numbers (integers for the indices), as long as its
    // member.
    let member = |name: &'static str, index: bool| -> Result<Option<(Member, u64)>> {
        let Some(entry) = find(name).cloned() else {
            return Ok(None);
        };
        let file = Arc::clone(&archive.file);
        let header = match entry.method {
            0 => match archive.read(entry.start, (entry.size as usize).min(64 << 10)) {
                Some(head) => npy::parse_header(&head).ok(),
                None => None,
            },
            _ => crate::npz::deflated_header(&file, &entry).ok(),
        };
        let Some(header) = header else {
            return Ok(None);
        };
        let Descr::Number(vt, false) = header.descr.clone() else {
            return Ok(None);
        };
        let [len] = header.shape[..] else {
            return Ok(None);
        };
        let float = matches!(vt, ValueType::F32 | ValueType::F64);
        let fits =
            index != float && header.data_offset as u64 + len * vt.size() as u64 == entry.size;
        if !fits {
            return Ok(None);
        }
        Ok(Some((
            match entry.method {
                0 => {
                    let data_at = entry.start as u64 + header.data_offset as u64;
                    Member::Stored(StoredArray::new(file, name, entry, data_at, vt), 0)
                }
                _ => Member::Deflated(Deflated {
                    file,
                    entry,
                    name,
                    header_len: header.data_offset,
                    value_type: vt,
                    inflating: None,
                    next: 0,
                }),
            },
            len,
        )))
    };
    let (Some((mut indptr, np)), Some((indices, ni)), Some((data, nd))) = (
        member("indptr", true)?,
        member("indices", true)?,
        member("data", false)?,
    ) else {
        return Ok(None);
    };
    if np != rows + 1 || ni != nd || rows > u64::from(u32::MAX) || cols > u64::from(u32::MAX) {
        return Ok(None);
    }
    // The pointers, a chunk at a time: from 0, never decreasing, the last the entries'.
    indptr.restart()?;
    let mut last = 0usize;
    for start in (0..=rows).step_by(1 << 20) {
        let end = (start + (1 << 20)).min(rows + 1);
        let p = indptr.take_indices(end - start, nd + 1)?;
        let previous = std::iter::once(last).chain(p.iter().copied());
        let bad = (start == 0 && p[0] != 0)
            || previous.zip(&p).any(|(a, &b)| b < a)
            || (end == rows + 1 && p[p.len() - 1] as u64 != nd);
        if bad {
            return Err(SCIPY.error(format!(
                "indptr is not {} non-decreasing pointers from 0 to {nd}",
                rows + 1
            )));
        }
        last = p[p.len() - 1];
    }
    indptr.finish(np)?;
    let value_type = data.value_type();
    Ok(Some(ScipySource {
        source: InPlaceOrHeld::InPlace(CsrMembers {
            indptr,
            indices,
            data,
            nnz: nd,
            headers: [Header::matrix(DataType::CsrMatrix, rows, cols, value_type)],
            input_len,
        }),
    }))
}

impl Source for CsrMembers {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let csr = self;
        let header = &csr.headers[0];
        let (rows, cols) = header.shape();
        // Per entry in memory while a band is made: its index as stored and as `usize`, and
        // its value.
        let value = csr.data.value_type().size() as u64;
        let stored = csr
            .nnz
            .saturating_mul(8 + csr.indices.value_type().size() as u64 + value);
        let step = band_rows(
            header,
            row_bytes(header, Some(stored)),
            multiple,
            BAND_BYTES,
        );
        for member in [&mut csr.indptr, &mut csr.indices, &mut csr.data] {
            member.restart()?;
        }
        let mut last = csr.indptr.take_indices(1, 1)?[0];
        for r0 in (0..rows).step_by(step as usize) {
            let r1 = (r0 + step).min(rows);
            let p = csr.indptr.take_indices(r1 - r0, csr.nnz + 1)?;
            let first = last;
            last = p.last().copied().unwrap_or(first);
            // Checked at open: the pointers never decrease (unless the file changed since).
            let previous = std::iter::once(first).chain(p.iter().copied());
            if previous.zip(&p).any(|(a, &b)| b < a) {
                return Err(changed());
            }
            let n = (last - first) as u64;
            let mut col_indices = csr.indices.take_indices(n, cols)?;
            let mut values = csr.data.take(n)?;
            let row_offsets: Vec<usize> = std::iter::once(0)
                .chain(p.iter().map(|&k| k - first))
                .collect();
            // scipy allows rows whose columns are out of order.
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
        csr.indptr.finish(rows + 1)?;
        csr.indices.finish(csr.nnz)?;
        csr.data.finish(csr.nnz)
    }

    fn count_nonzero(&mut self, _: usize) -> Result<Option<u64>> {
        // The values alone, where they are stored (deflated ones would be inflated twice), a
        // chunk at a time (their CRC-32 computed on the way).
        let CsrMembers {
            data: Member::Stored(data, _),
            nnz: len,
            ..
        } = self
        else {
            return Ok(None);
        };
        let mut nnz = 0u64;
        for start in (0..*len).step_by(1 << 20) {
            let values = data.read(start..(start + (1 << 20)).min(*len))?;
            nnz += with_values!(&values, v => count_nonzero(v)) as u64;
        }
        data.check_crc(*len)?;
        Ok(Some(nnz))
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn stored_bytes(&self, _: usize) -> Option<u64> {
        Some(self.input_len)
    }

    fn metadata(&self) -> InputMetadata {
        InputMetadata {
            layout: super::layout_of("csr"),
            ..InputMetadata::default()
        }
    }
}

fn changed() -> serde_daphne::Error {
    SCIPY.error("the pointers changed while the archive was read")
}
