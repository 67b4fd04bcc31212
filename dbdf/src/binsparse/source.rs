//! Binsparse files read by the pipe: CSR and row-major dense matrices (and dense vectors)
//! whose arrays hold the types the descriptor gives are read in place, a band of rows at a
//! time: from `.npz` archives whose members are stored (not deflated) with positional
//! reads, from Zarr groups a chunk at a time (`zarr/source.rs`). Everything else (other
//! formats, deflated members, iso or bint8 values, structures, fill values, HDF5) is read
//! whole, as [`super::read`] reads it.
//!
//! The checks are the whole read's: the pointers are checked whole when the archive is
//! opened (they are one per row), the indices and values as each band is read, and each
//! member's CRC-32 once a pass has read it all. A file with several faults may be refused
//! for another of them than the whole read names first.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::convert::{check_sorted, indices};
use super::{parse_descriptor, parse_kind, Array, Descriptor, Format, ReadOptions};
use crate::npy::{self, Descr};
use crate::pipe::{band_rows, row_bytes, source_in_field, Band, Cells, Held, InputMetadata};
use crate::pipe::{InPlaceOrHeld, Source, BAND_BYTES};
use crate::zip::{crc_error, entries, Archive, Entry, FileArchive, StoredArray};
use serde_daphne::Header;
use serde_daphne::{DataType, ReadAt, Result, ValueType};

/// Elements of an index array read at once when the pointers are checked.
const CHUNK: u64 = 1 << 20;

/// Elements of one array of the matrix, read a range at a time.
pub(super) trait Elements: Send {
    /// Elements `range`, as an [`Array`] for the whole read's checks.
    ///
    /// # Errors
    /// I/O errors; what the container finds wrong.
    fn array(&mut self, range: Range<u64>) -> Result<Array>;

    /// Checks what only a whole pass can (a CRC-32), once every element has been read.
    ///
    /// # Errors
    /// What the check finds.
    fn whole_pass_read(&mut self) -> Result<()> {
        Ok(())
    }
}

/// How the matrix is stored: its arrays.
pub(super) enum StoredArrays {
    Dense(Box<dyn Elements>),
    Csr {
        pointers: Box<dyn Elements>,
        indices: Box<dyn Elements>,
        values: Box<dyn Elements>,
    },
}

impl StoredArrays {
    /// The layout of the matrix `d` describes (which [`readable`] reads), each array from
    /// `array(name, length, type)` (`None` for the index arrays' any integer type); `None`
    /// when an array cannot be read in place.
    pub(super) fn of(
        d: &Descriptor,
        mut array: impl FnMut(&'static str, u64, Option<ValueType>) -> Option<Box<dyn Elements>>,
    ) -> Option<StoredArrays> {
        let (rows, cols, value_type) = readable(d)?;
        Some(match d.format {
            Format::Csr => StoredArrays::Csr {
                pointers: array("pointers_to_1", rows + 1, None)?,
                indices: array("indices_1", d.nnz, None)?,
                values: array("values", d.nnz, Some(value_type))?,
            },
            _ => StoredArrays::Dense(array("values", rows * cols, Some(value_type))?),
        })
    }
}

/// One stored `.npy` member of `len` elements (its CRC-32 computed as a pass reads it in
/// order).
struct Member {
    array: StoredArray,
    len: u64,
}

impl Elements for Member {
    fn array(&mut self, range: Range<u64>) -> Result<Array> {
        Ok(Array {
            offset: Some(self.array.offset_of(range.start) as usize),
            first: range.start as usize,
            name: self.array.name().to_owned(),
            values: self.array.read(range)?,
        })
    }

    fn whole_pass_read(&mut self) -> Result<()> {
        self.array.check_crc(self.len)
    }
}

/// A Binsparse archive as a source of the pipe: read in place where it can be, else held.
pub struct BinsparseSource {
    source: InPlaceOrHeld<ArraysInPlace>,
}

source_in_field!(BinsparseSource, source);

/// A Binsparse matrix whose arrays are read in place.
struct ArraysInPlace {
    layout: StoredArrays,
    headers: [Header; 1],
    input_len: u64,
    /// Stored entries (CSR).
    nnz: u64,
    metadata: InputMetadata,
}

impl BinsparseSource {
    /// Opens a Binsparse `.npz` or HDF5 file at `path` (a Zarr group is `zarr/source.rs`'s):
    /// an `.npz` archive it can read in place is indexed (descriptor, members, pointers
    /// checked); anything else is read whole.
    ///
    /// # Errors
    /// As [`super::read`].
    pub(super) fn open_file(path: &Path, options: &ReadOptions) -> Result<BinsparseSource> {
        if super::is_hdf5(path) {
            return BinsparseSource::read_whole(path, std::fs::metadata(path)?.len(), options);
        }
        let file: Arc<dyn ReadAt> = Arc::new(std::fs::File::open(path)?);
        let input_len = file.size()?;
        match in_place(&file, input_len)? {
            Some(source) => Ok(source),
            None => BinsparseSource::read_whole(path, input_len, options),
        }
    }

    /// A Binsparse `.npz` archive read at positions (an object's ranges): in place where
    /// [`BinsparseSource::open_file`] reads a file in place, else whole, from memory.
    ///
    /// # Errors
    /// As [`super::read`]; request errors.
    pub(crate) fn open_at(file: Arc<dyn ReadAt>, options: &ReadOptions) -> Result<BinsparseSource> {
        let input_len = file.size()?;
        if let Some(source) = in_place(&file, input_len)? {
            return Ok(source);
        }
        let mut bytes = serde_daphne::lowlevel::zeroed_vec::<u8>(input_len as usize)?;
        file.read_exact_at(&mut bytes, 0)?;
        BinsparseSource::held(super::from_slice_with(&bytes, options)?, input_len)
    }

    /// The matrix at `path` read whole, for formats and files not read in place.
    ///
    /// # Errors
    /// As [`super::read`].
    /// A Binsparse HDF5 file read by position (a remote object's ranges), named `name`,
    /// with no local copy: read whole into memory, as a local one.
    ///
    /// # Errors
    /// As [`super::read`]; request errors.
    #[cfg(feature = "hdf5")]
    pub(crate) fn open_hdf5_at(
        file: Arc<dyn ReadAt>,
        name: &Path,
        options: &ReadOptions,
    ) -> Result<BinsparseSource> {
        let input_len = file.size()?;
        let read = super::hdf5::read_at(file, name, options.max_alloc)?;
        BinsparseSource::held(read, input_len)
    }

    pub(super) fn read_whole(
        path: &Path,
        input_len: u64,
        options: &ReadOptions,
    ) -> Result<BinsparseSource> {
        BinsparseSource::held(super::read_with(path, options)?, input_len)
    }

    /// A matrix read whole, held.
    pub(super) fn held(read: super::Binsparse, input_len: u64) -> Result<BinsparseSource> {
        let metadata = InputMetadata {
            layout: Some(read.format.name()),
            attributes: read.attributes,
            ..InputMetadata::default()
        };
        let held = Held::new(vec![read.object], input_len, metadata)?;
        Ok(BinsparseSource {
            source: InPlaceOrHeld::Held(held),
        })
    }
}

/// The descriptor's matrix, when its format and values can be read in place: the format,
/// shape and values' type.
pub(super) fn readable(d: &Descriptor) -> Option<(u64, u64, ValueType)> {
    let plain = d.structure.is_none() && !d.fill;
    let format_reads = matches!(
        d.format,
        Format::Csr | Format::Dmat | Format::Dmatr | Format::Dvec
    );
    let values_type = d.data_types.get("values").and_then(|t| t.as_str());
    let kind = values_type.and_then(|t| parse_kind("values", t).ok())?;
    let (rows, cols) = (
        d.shape.first().copied().unwrap_or(1),
        d.shape.get(1).copied().unwrap_or(1),
    );
    let fits = rows <= u64::from(u32::MAX) && cols <= u64::from(u32::MAX);
    let dense_fits = d.format == Format::Csr || rows * cols == d.nnz;
    (!kind.iso && !kind.bint8 && plain && format_reads && fits && dense_fits).then_some((
        rows,
        cols,
        kind.value_type,
    ))
}

impl BinsparseSource {
    /// A source reading `layout` in place: the matrix `d` describes, its pointers checked.
    ///
    /// # Errors
    /// The pointers' faults, as the whole read words them.
    pub(super) fn in_place(
        d: Descriptor,
        mut layout: StoredArrays,
        input_len: u64,
    ) -> Result<Self> {
        let (rows, cols, value_type) = readable(&d).expect("checked readable");
        if let StoredArrays::Csr { pointers, .. } = &mut layout {
            check_pointers(pointers.as_mut(), rows, d.nnz)?;
            pointers.whole_pass_read()?;
        }
        let data_type = match d.format {
            Format::Csr => DataType::CsrMatrix,
            _ => DataType::DenseMatrix,
        };
        Ok(BinsparseSource {
            source: InPlaceOrHeld::InPlace(ArraysInPlace {
                layout,
                headers: [Header::matrix(data_type, rows, cols, value_type)],
                input_len,
                nnz: d.nnz,
                metadata: InputMetadata {
                    layout: Some(d.format.name()),
                    attributes: d.attributes,
                    ..InputMetadata::default()
                },
            }),
        })
    }
}

/// The archive at `path` read in place, or `None` where only the whole read will do.
fn in_place(file: &Arc<dyn ReadAt>, input_len: u64) -> Result<Option<BinsparseSource>> {
    let archive = FileArchive::open_at(Arc::clone(file))?;
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
    // Each member stored, 1-D, little-endian numbers of its own type, of the length the
    // descriptor implies.
    let member =
        |name: &'static str, len: u64, wanted: Option<ValueType>| -> Option<Box<dyn Elements>> {
            let entry = find(name).filter(|e| e.method == 0)?.clone();
            let head = archive.read(entry.start, (entry.size as usize).min(64 << 10))?;
            let header = npy::parse_header(&head).ok()?;
            let Descr::Number(vt, false) = header.descr else {
                return None;
            };
            let index = !matches!(vt, ValueType::F32 | ValueType::F64);
            let fits = header.shape == [len]
                && wanted.map_or(index, |t| t == vt)
                && header.data_offset as u64 + len * vt.size() as u64 == entry.size;
            let file = Arc::clone(&archive.file);
            let data_at = entry.start as u64 + header.data_offset as u64;
            fits.then(|| -> Box<dyn Elements> {
                let array = StoredArray::new(file, name, entry, data_at, vt);
                Box::new(Member { array, len })
            })
        };
    let Some(layout) = StoredArrays::of(&d, member) else {
        return Ok(None);
    };
    descriptor_crc(&archive.file, descriptor)?;
    BinsparseSource::in_place(d, layout, input_len).map(Some)
}

/// Checks the descriptor member's CRC-32.
fn descriptor_crc(file: &Arc<dyn ReadAt>, entry: &Entry) -> Result<()> {
    let mut bytes = vec![0u8; entry.size as usize];
    file.read_exact_at(&mut bytes, entry.start as u64)?;
    match crc32fast::hash(&bytes) == entry.crc {
        true => Ok(()),
        false => Err(crc_error(&entry.name, entry.start)),
    }
}

/// The whole read's checks of CSR pointers, a chunk at a time: each a position in `nnz`
/// entries, the first 0, never decreasing, the last `nnz`.
fn check_pointers(pointers: &mut dyn Elements, rows: u64, nnz: u64) -> Result<()> {
    let mut last = 0usize;
    for start in (0..=rows).step_by(CHUNK as usize) {
        let end = (start + CHUNK).min(rows + 1);
        let array = pointers.array(start..end)?;
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

impl Source for ArraysInPlace {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let layout = &mut self.layout;
        let header = &self.headers[0];
        let (rows, cols) = header.shape();
        // A CSR band takes, per entry, its index as stored and as `usize`, and its value
        // (the input's bytes would undercount compressed chunks).
        let stored = match layout {
            StoredArrays::Dense(_) => None,
            StoredArrays::Csr { .. } => {
                let value = header.matrix_value_type().map_or(8, |vt| vt.size() as u64);
                Some(self.nnz.saturating_mul(16 + value))
            }
        };
        let step = band_rows(header, row_bytes(header, stored), multiple, BAND_BYTES);
        for r0 in (0..rows).step_by(step as usize) {
            let band_rows = r0..(r0 + step).min(rows);
            let band = match layout {
                StoredArrays::Dense(values) => {
                    let cells = band_rows.start * cols..band_rows.end * cols;
                    Band::dense(band_rows, 0..cols, values.array(cells)?.values)
                }
                StoredArrays::Csr {
                    pointers,
                    indices: index_array,
                    values,
                } => {
                    let p = pointers.array(band_rows.start..band_rows.end + 1)?;
                    let p = indices(&p, u64::MAX, "position")?;
                    let entries = p[0] as u64..p[p.len() - 1] as u64;
                    let columns = index_array.array(entries.clone())?;
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
                            values: values.array(entries)?.values,
                        },
                    }
                }
            };
            if !each(band)? {
                return Ok(());
            }
        }
        // A whole pass read every array: now what needs all of it can be checked.
        match layout {
            StoredArrays::Dense(values) => values.whole_pass_read(),
            StoredArrays::Csr {
                indices, values, ..
            } => {
                indices.whole_pass_read()?;
                values.whole_pass_read()
            }
        }
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn stored_bytes(&self, _: usize) -> Option<u64> {
        Some(self.input_len)
    }

    fn metadata(&self) -> InputMetadata {
        self.metadata.clone()
    }
}
