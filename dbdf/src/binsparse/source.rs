//! Binsparse `.npz` archives read by the pipe: CSR and row-major dense matrices (and dense
//! vectors) whose arrays are stored (not deflated) in the types the descriptor gives are read
//! in place, a band of rows at a time, with positional reads; everything else (other
//! formats, deflated members, iso or bint8 values, structures, fill values, HDF5 and Zarr
//! containers) is read whole, as [`super::read`] reads it.
//!
//! The checks are the whole read's: the pointers are checked whole when the archive is
//! opened (they are one per row), the indices and values as each band is read, and each
//! member's CRC-32 once a pass has read it all. A file with several faults may be refused
//! for another of them than the whole read names first.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use super::convert::{check_sorted, indices};
use super::{parse_descriptor, parse_kind, Array, Format};
use crate::input::read_exact_at;
use crate::npy::{self, Descr};
use crate::pipe::{band_rows, row_bytes, Band, Cells, Held, Kept, Source, BAND_BYTES};
use crate::zip::{crc_error, entries, Archive, Entry, FileArchive};
use serde_daphne::__private::wire::values::decode_values;
use serde_daphne::__private::wire::Header;
use serde_daphne::{DataType, Result, ValueType, Values};

/// Elements of an index array read at once when the pointers are checked.
const CHUNK: u64 = 1 << 20;

/// One stored `.npy` member: where its data starts, its element type and length, and its
/// zip entry (for the CRC-32).
struct Member {
    name: &'static str,
    data_at: u64,
    value_type: ValueType,
    entry: Entry,
}

impl Member {
    /// Elements `range`, decoded.
    fn read(&self, file: &File, range: Range<u64>) -> Result<Values> {
        let size = self.value_type.size() as u64;
        let mut bytes = vec![0u8; ((range.end - range.start) * size) as usize];
        read_exact_at(file, &mut bytes, self.data_at + range.start * size)?;
        decode_values(self.value_type, &bytes)
    }

    /// Elements `range` as an [`Array`] for the whole read's checks.
    fn array(&self, file: &File, range: Range<u64>) -> Result<Array> {
        let size = self.value_type.size() as u64;
        Ok(Array {
            values: self.read(file, range.clone())?,
            name: self.name.to_owned(),
            offset: Some((self.data_at + range.start * size) as usize),
            first: range.start as usize,
        })
    }

    /// Checks the member's CRC-32 (its `.npy` header and data), reading it at positions.
    fn check_crc(&self, file: &File) -> Result<()> {
        let mut crc = crc32fast::Hasher::new();
        let (mut at, end) = (
            self.entry.start as u64,
            self.entry.start as u64 + self.entry.size,
        );
        let mut buf = vec![0u8; (4 << 20).min(self.entry.size as usize)];
        while at < end {
            let n = buf.len().min((end - at) as usize);
            read_exact_at(file, &mut buf[..n], at)?;
            crc.update(&buf[..n]);
            at += n as u64;
        }
        match crc.finalize() == self.entry.crc {
            true => Ok(()),
            false => Err(crc_error(&self.entry.name, self.entry.start)),
        }
    }
}

/// How the matrix is stored.
enum Layout {
    Dense(Member),
    Csr {
        pointers: Member,
        indices: Member,
        values: Member,
    },
}

/// A Binsparse archive as a source of the pipe: read in place where it can be, else held.
pub struct BinsparseSource {
    file: Option<File>,
    layout: Option<Layout>,
    held: Option<Held>,
    headers: [Header; 1],
    input_len: u64,
    kept: Kept,
}

impl BinsparseSource {
    /// Opens the Binsparse file at `path`: an `.npz` archive it can read in place is indexed
    /// (descriptor, members, pointers checked); anything else is read whole.
    ///
    /// # Errors
    /// As [`super::read`].
    pub fn open(path: &Path) -> Result<BinsparseSource> {
        let input_len = std::fs::metadata(path)?.len();
        if !super::is_hdf5(path) && !super::is_zarr(path) {
            if let Some(source) = in_place(path, input_len)? {
                return Ok(source);
            }
        }
        let read = super::read(path)?;
        let kept = Kept {
            binsparse: Some((read.format, read.attributes)),
            ..Kept::default()
        };
        let header = read.object.header().clone();
        Ok(BinsparseSource {
            file: None,
            layout: None,
            held: Some(Held::new(vec![read.object], input_len, kept.clone())?),
            headers: [header],
            input_len,
            kept,
        })
    }
}

impl BinsparseSource {
    /// Whether the archive is read in place (else it was read whole).
    pub fn reads_in_place(&self) -> bool {
        self.held.is_none()
    }
}

/// The archive at `path` read in place, or `None` where only the whole read will do.
fn in_place(path: &Path, input_len: u64) -> Result<Option<BinsparseSource>> {
    let archive = FileArchive::open(path)?;
    let Ok(entries) = entries(&archive) else {
        return Ok(None); // the whole read words the fault
    };
    let find = |name: &str| entries.iter().find(|e| e.name == format!("{name}.npy"));
    let Some(descriptor) = find("binsparse").filter(|e| e.method == 0) else {
        return Ok(None);
    };
    let Some(text) = archive.read(descriptor.start, descriptor.size as usize) else {
        return Ok(None);
    };
    let Ok(text) = npy::parse(&text).and_then(|a| a.string()) else {
        return Ok(None);
    };
    let Ok(d) = parse_descriptor(&text) else {
        return Ok(None);
    };
    let plain = d.structure.is_none() && !d.fill;
    let format_reads = matches!(
        d.format,
        Format::Csr | Format::Dmat | Format::Dmatr | Format::Dvec
    );
    let values_type = d.data_types.get("values").and_then(|t| t.as_str());
    let kind = values_type.and_then(|t| parse_kind("values", t).ok());
    let Some(kind) = kind.filter(|k| !k.iso && !k.bint8 && plain && format_reads) else {
        return Ok(None);
    };
    let (rows, cols) = (
        d.shape.first().copied().unwrap_or(1),
        d.shape.get(1).copied().unwrap_or(1),
    );
    if rows > u64::from(u32::MAX) || cols > u64::from(u32::MAX) {
        return Ok(None);
    }
    // Each member stored, 1-D, little-endian numbers of its own type, of the length the
    // descriptor implies.
    let member = |name: &'static str, len: u64, value_type: Option<ValueType>| -> Option<Member> {
        let entry = find(name).filter(|e| e.method == 0)?.clone();
        let head = archive.read(entry.start, (entry.size as usize).min(64 << 10))?;
        let header = npy::parse_header(&head).ok()?;
        let Descr::Number(vt, false) = header.descr else {
            return None;
        };
        let fits = header.shape == [len]
            && value_type.is_none_or(|t| t == vt)
            && header.data_offset as u64 + len * vt.size() as u64 == entry.size;
        fits.then(|| Member {
            name,
            data_at: entry.start as u64 + header.data_offset as u64,
            value_type: vt,
            entry,
        })
    };
    let integer =
        |m: Member| (!matches!(m.value_type, ValueType::F32 | ValueType::F64)).then_some(m);
    let layout = if d.format == Format::Csr {
        let arrays = (
            member("pointers_to_1", rows + 1, None).and_then(integer),
            member("indices_1", d.nnz, None).and_then(integer),
            member("values", d.nnz, Some(kind.value_type)),
        );
        let (Some(pointers), Some(indices), Some(values)) = arrays else {
            return Ok(None);
        };
        Layout::Csr {
            pointers,
            indices,
            values,
        }
    } else {
        if rows * cols != d.nnz {
            return Ok(None);
        }
        let Some(values) = member("values", d.nnz, Some(kind.value_type)) else {
            return Ok(None);
        };
        Layout::Dense(values)
    };
    let file = archive.file;
    if let Layout::Csr { pointers, .. } = &layout {
        check_pointers(&file, pointers, rows, d.nnz)?;
        pointers.check_crc(&file)?;
    }
    descriptor_crc(&file, descriptor)?;
    let data_type = match d.format {
        Format::Csr => DataType::CsrMatrix,
        _ => DataType::DenseMatrix,
    };
    Ok(Some(BinsparseSource {
        file: Some(file),
        layout: Some(layout),
        held: None,
        headers: [Header::matrix(data_type, rows, cols, kind.value_type)],
        input_len,
        kept: Kept {
            binsparse: Some((d.format, d.attributes)),
            ..Kept::default()
        },
    }))
}

/// Checks the descriptor member's CRC-32.
fn descriptor_crc(file: &File, entry: &Entry) -> Result<()> {
    let mut bytes = vec![0u8; entry.size as usize];
    read_exact_at(file, &mut bytes, entry.start as u64)?;
    match crc32fast::hash(&bytes) == entry.crc {
        true => Ok(()),
        false => Err(crc_error(&entry.name, entry.start)),
    }
}

/// The whole read's checks of CSR pointers, a chunk at a time: each a position in `nnz`
/// entries, the first 0, never decreasing, the last `nnz`.
fn check_pointers(file: &File, pointers: &Member, rows: u64, nnz: u64) -> Result<()> {
    let mut last = 0usize;
    for start in (0..=rows).step_by(CHUNK as usize) {
        let end = (start + CHUNK).min(rows + 1);
        let array = pointers.array(file, start..end)?;
        let p = indices(&array, nnz + 1, "position")?;
        if start == 0 && p[0] != 0 {
            return Err(array.error_at(0, "the first pointer is not 0"));
        }
        let previous = std::iter::once(last).chain(p.iter().copied());
        if let Some(k) = previous.zip(&p).position(|(a, &b)| b < a) {
            return Err(array.error_at(k, "pointers decrease"));
        }
        last = p[p.len() - 1];
        if end == rows + 1 && last as u64 != nnz {
            return Err(array.error_at(p.len() - 1, format!("the last pointer is not {nnz}")));
        }
    }
    Ok(())
}

impl Source for BinsparseSource {
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
        let (file, layout) = (
            self.file.as_ref().expect("in place"),
            self.layout.as_ref().expect("in place"),
        );
        let header = &self.headers[0];
        let (rows, cols) = header.shape();
        let stored = match layout {
            Layout::Dense(_) => None,
            Layout::Csr {
                indices, values, ..
            } => Some(indices.entry.size + values.entry.size),
        };
        let step = band_rows(header, row_bytes(header, stored), multiple, BAND_BYTES);
        for r0 in (0..rows).step_by(step as usize) {
            let band_rows = r0..(r0 + step).min(rows);
            let band = match layout {
                Layout::Dense(values) => Band::dense(
                    band_rows.clone(),
                    0..cols,
                    values.read(file, band_rows.start * cols..band_rows.end * cols)?,
                ),
                Layout::Csr {
                    pointers,
                    indices: index_member,
                    values,
                } => {
                    let p = pointers.array(file, band_rows.start..band_rows.end + 1)?;
                    let p = indices(&p, u64::MAX, "position")?;
                    let entries = p[0] as u64..p[p.len() - 1] as u64;
                    let columns = index_member.array(file, entries.clone())?;
                    let row_offsets: Vec<usize> = p.iter().map(|&k| k - p[0]).collect();
                    let col_indices = indices(&columns, cols, "index")?;
                    check_sorted(&columns, &row_offsets, &col_indices)?;
                    Band {
                        first_row: band_rows.start,
                        first_col: 0,
                        rows: band_rows.end - band_rows.start,
                        cols,
                        cells: Cells::Csr {
                            row_offsets,
                            col_indices,
                            values: values.read(file, entries)?,
                        },
                    }
                }
            };
            if !each(band)? {
                return Ok(());
            }
        }
        // A whole pass read every member: now their CRC-32s can be checked.
        match layout {
            Layout::Dense(values) => values.check_crc(file),
            Layout::Csr {
                indices, values, ..
            } => {
                indices.check_crc(file)?;
                values.check_crc(file)
            }
        }
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn stored_bytes(&self, _: usize) -> Option<u64> {
        Some(self.input_len)
    }

    fn kept(&self) -> Kept {
        self.kept.clone()
    }
}
