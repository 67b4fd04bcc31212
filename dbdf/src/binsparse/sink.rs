//! Binsparse `.npz` archives written from the pipe: the formats whose arrays follow the rows
//! (CSR, DCSR, COO/COOR, CVEC, and the row-major dense DMAT/DMATR/DVEC) are written from
//! passes over the bands. An object of at most [`SPILL_MOST`] stored bytes takes one pass,
//! each array spilled to an unnamed scratch file (with its CRC-32 and its largest index) and
//! then copied into its zip member; a larger one (or one of unknown size) takes a pass for
//! the arrays' CRC-32s and sizes, then a pass per array written straight into its member, so
//! that the temporary folder holds at most that much (a remote input is fetched once per
//! pass). Memory holds a band. The formats that store columns first (CSC, DCSC, COOC, DMATC)
//! are held whole and written as [`super::to_writer`] writes them. The bytes are the whole
//! write's either way.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

use serde_json::{Map, Value as Json};

use super::{descriptor, npz, type_name, Format, WriteOptions, BINSPARSE};
use crate::input::write_le;
use crate::npy;
use crate::pipe::{Band, Cells, Pieces, Sink};
use crate::zip::ZipWriter;
use serde_daphne::lowlevel::scratch_file;
use serde_daphne::with_value_type;
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::{DataType, Result, Value, ValueType, Values};

/// Where an array's values go as they come (a scratch file, Zarr chunks).
pub(super) trait Put {
    /// Appends values of the array's type.
    ///
    /// # Errors
    /// I/O errors.
    fn put(&mut self, values: &Values) -> Result<()>;
}

/// One array of the output as it grows: its name, element type, length and largest index,
/// its values going to `to`.
pub(super) struct Out<P> {
    pub(super) name: &'static str,
    pub(super) value_type: ValueType,
    pub(super) len: u64,
    max: u64,
    pub(super) to: P,
}

impl<P: Put> Out<P> {
    /// Appends indices, in the array's index type (checked at the end, by their largest).
    fn indices(&mut self, indices: impl Iterator<Item = usize>) -> Result<()> {
        with_value_type!(self.value_type, T => {
            let mut chunk: Vec<T> = Vec::with_capacity(4096);
            for x in indices {
                self.max = self.max.max(x as u64);
                chunk.push(T::from_value(Value::U64(x as u64)).unwrap_or_default());
                if chunk.len() == chunk.capacity() {
                    self.values(&T::into_values(std::mem::take(&mut chunk)))?;
                    chunk.reserve(4096);
                }
            }
            self.values(&T::into_values(chunk))
        })
    }

    /// Appends values of the array's type.
    fn values(&mut self, values: &Values) -> Result<()> {
        self.len += values.len() as u64;
        self.to.put(values)
    }
}

/// An array spilled to an unnamed scratch file, with the CRC-32 of its bytes.
struct Spill {
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
}

impl Spill {
    fn new() -> Result<Spill> {
        let file = scratch_file(&std::env::temp_dir().join("dbdf-binsparse"))?;
        Ok(Spill {
            out: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
        })
    }
}

impl Put for Spill {
    fn put(&mut self, values: &Values) -> Result<()> {
        with_values!(values, v => {
            // A piece at a time in wire order: a band's bytes are never copied whole.
            for piece in v.chunks(1 << 16) {
                let mut bytes = Vec::with_capacity(std::mem::size_of_val(piece));
                write_le(&mut bytes, piece)?;
                self.crc.update(&bytes);
                self.out.write_all(&bytes)?;
            }
        });
        Ok(())
    }
}

/// The most stored bytes of an object whose arrays are spilled to scratch files (tests: a
/// few, so that they take the passes).
const SPILL_MOST: u64 = if cfg!(test) { 64 } else { 32 << 20 };

/// Where an array's values go in one pass of several: nowhere, into its CRC-32 (with its
/// first value's bytes, an iso array's member), or into its member (the first `left`).
enum Pass<'w> {
    Skip,
    Crc {
        crc: crc32fast::Hasher,
        first: Vec<u8>,
    },
    Member {
        out: &'w mut dyn Write,
        left: u64,
    },
}

impl Put for Pass<'_> {
    fn put(&mut self, values: &Values) -> Result<()> {
        if let Pass::Skip = self {
            return Ok(());
        }
        with_values!(values, v => {
            for piece in v.chunks(1 << 16) {
                let mut bytes = Vec::with_capacity(std::mem::size_of_val(piece));
                match self {
                    Pass::Skip => {}
                    Pass::Crc { crc, first } => {
                        write_le(&mut bytes, piece)?;
                        if first.is_empty() {
                            first.extend_from_slice(&bytes[..std::mem::size_of_val(&piece[0])]);
                        }
                        crc.update(&bytes);
                    }
                    Pass::Member { out, left } => {
                        let n = (*left).min(piece.len() as u64) as usize;
                        write_le(&mut bytes, &piece[..n])?;
                        out.write_all(&bytes)?;
                        *left -= n as u64;
                    }
                }
            }
        });
        Ok(())
    }
}

/// Writes the arrays of the object `pieces` gives into `zip`'s members in passes (see the
/// module's notes): its descriptor's facts.
fn write_in_passes<W: Write>(
    zip: &mut ZipWriter<W>,
    (format, header, options): (Format, &Header, &WriteOptions),
    pieces: &mut Pieces<'_>,
) -> Result<Written> {
    let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
    let crc = |_: &str, _| {
        let (crc, first) = (crc32fast::Hasher::new(), Vec::new());
        Ok(Pass::Crc { crc, first })
    };
    let mut sums = arrays_of(format, vt, options, crc)?;
    let written = write_arrays(format, header, pieces, &mut sums, options)?;
    for (k, array) in sums.into_iter().enumerate() {
        let Pass::Crc { crc, first } = array.to else {
            unreachable!("the first pass sums")
        };
        let (len, data_crc) = match (written.iso, array.name) {
            (true, "values") => {
                let mut one = crc32fast::Hasher::new();
                one.update(&first);
                (1, one)
            }
            _ => (array.len, crc),
        };
        let mut head = Vec::new();
        npy::write_header(&mut head, npy::descr(array.value_type), &[len])?;
        let mut member_crc = crc32fast::Hasher::new();
        member_crc.update(&head);
        member_crc.combine(&data_crc);
        let size = head.len() as u64 + len * array.value_type.size() as u64;
        // The source's error, kept whole: the member's writer takes I/O errors only.
        let mut failed = None;
        let name = format!("{}.npy", array.name);
        let wrote = zip.member_with(&name, size, member_crc.finalize(), |w| {
            w.write_all(&head)?;
            // Array `k` into the member, the others nowhere.
            let made = arrays_of(format, vt, options, |_, _| Ok(Pass::Skip));
            let pass = made.and_then(|mut arrays| {
                arrays[k].to = Pass::Member { out: w, left: len };
                write_arrays(format, header, pieces, &mut arrays, options)
            });
            pass.map(drop).map_err(|e| {
                failed = Some(e);
                std::io::Error::other("a pass failed")
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        wrote?;
    }
    Ok(written)
}

/// The format `options` write a matrix with `header` in: the asked one, else CSR for CSR
/// matrices and DMAT for the others.
pub(super) fn format_for(options: &WriteOptions, header: &Header) -> Format {
    options.format.unwrap_or(match header.data_type() {
        DataType::CsrMatrix => Format::Csr,
        _ => Format::Dmat,
    })
}

/// Whether a matrix with `header` streams as `format`: the format's arrays follow the rows.
pub(super) fn streams(format: Format, header: &Header) -> bool {
    let rows_first = !matches!(
        format,
        Format::Csc | Format::Dcsc | Format::Cooc | Format::Dmatc
    );
    let cols = header.shape().1;
    rows_first && header.data_type() != DataType::Frame && !(format.is_vector() && cols != 1)
}

/// What [`write_arrays`] found: the stored values, the descriptor's data types, whether the
/// values are one iso value.
pub(super) struct Written {
    pub(super) nnz: u64,
    pub(super) shape: Vec<u64>,
    pub(super) data_types: Map<String, Json>,
    pub(super) iso: bool,
}

/// Writes the rows of the object `pieces` gives into `arrays` (one per name of
/// `format.arrays()`, in order), then makes the whole write's checks and choices (index
/// types wide enough, `iso`, `bint8`) now that every value has been seen.
///
/// # Errors
/// The source's errors; an index its type cannot hold; the arrays' I/O errors.
pub(super) fn write_arrays<P: Put>(
    format: Format,
    header: &Header,
    pieces: &mut Pieces<'_>,
    arrays: &mut [Out<P>],
    options: &WriteOptions,
) -> Result<Written> {
    let (rows, cols) = header.shape();
    let mut state = Rows {
        entries: 0,
        first: None,
        equal: true,
        binary: true,
    };
    match format {
        Format::Dcsr => arrays[1].indices(std::iter::once(0))?,
        Format::Csr => arrays[0].indices(std::iter::once(0))?,
        _ => {}
    }
    pieces.for_each(&mut |band| {
        state.band(format, band, arrays)?;
        Ok(true)
    })?;
    let nnz = if format.is_dense() {
        rows * cols
    } else {
        state.entries
    };
    let shape = if format.is_vector() {
        vec![rows]
    } else {
        vec![rows, cols]
    };
    let mut data_types = Map::new();
    let mut iso = false;
    for array in arrays.iter() {
        let mut type_text = type_name(array.value_type).to_string();
        if array.name == "values" {
            if options.bint8 && array.value_type == ValueType::U8 && state.binary {
                type_text = "bint8".into();
            }
            if options.iso && nnz > 0 && state.equal {
                iso = true;
                type_text = format!("iso[{type_text}]");
            }
        } else {
            let fits = Value::U64(array.max).convert(array.value_type).is_some();
            if !fits || matches!(array.value_type, ValueType::F32 | ValueType::F64) {
                let what = match array.name.starts_with("pointers") {
                    true => "pointer",
                    false => "index",
                };
                return Err(BINSPARSE.cannot_hold(
                    format!("the {what} value {}", array.max),
                    format!(
                        "it does not fit the index type {}: choose a wider one",
                        array.value_type
                    ),
                ));
            }
        }
        data_types.insert(array.name.into(), Json::String(type_text));
    }
    Ok(Written {
        nnz,
        shape,
        data_types,
        iso,
    })
}

/// The arrays of `format` for a matrix of `value_type`, each going to `to(name, its type)`.
pub(super) fn arrays_of<P>(
    format: Format,
    value_type: ValueType,
    options: &WriteOptions,
    mut to: impl FnMut(&'static str, ValueType) -> Result<P>,
) -> Result<Vec<Out<P>>> {
    format
        .arrays()
        .iter()
        .map(|&name| {
            let vt = if name == "values" {
                value_type
            } else {
                options.index_type
            };
            Ok(Out {
                name,
                value_type: vt,
                len: 0,
                max: 0,
                to: to(name, vt)?,
            })
        })
        .collect()
}

/// A Binsparse `.npz` archive of one matrix, written to `out`.
pub struct BinsparseSink<'w> {
    out: Option<&'w mut dyn Write>,
    options: WriteOptions,
}

impl<'w> BinsparseSink<'w> {
    /// A sink writing an archive to `out` with `options`.
    pub(crate) fn new(out: &'w mut dyn Write, options: &WriteOptions) -> BinsparseSink<'w> {
        BinsparseSink {
            out: Some(out),
            options: options.clone(),
        }
    }
}

impl Sink for BinsparseSink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("Binsparse")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let out = self.out.take().expect("one object");
        let format = format_for(&self.options, header);
        if !streams(format, header) {
            // The whole write words what it refuses, and transposes what it must.
            return super::to_writer(out, &pieces.collect()?, &self.options);
        }
        if pieces.stored_bytes().is_none_or(|n| n > SPILL_MOST) {
            let mut zip = ZipWriter::new(out);
            let args = (format, header, &self.options);
            let written = write_in_passes(&mut zip, args, pieces)?;
            let Written {
                nnz,
                shape,
                data_types,
                ..
            } = written;
            let descriptor = descriptor(format, shape, nnz, data_types, &self.options);
            return npz::finish(zip, &descriptor);
        }
        let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
        let mut arrays = arrays_of(format, vt, &self.options, |_, _| Spill::new())?;
        let written = write_arrays(format, header, pieces, &mut arrays, &self.options)?;
        let Written {
            nnz,
            shape,
            data_types,
            iso,
        } = written;
        let descriptor = descriptor(format, shape, nnz, data_types, &self.options);
        let mut zip = ZipWriter::new(out);
        for array in arrays {
            let len = match (iso, array.name) {
                (true, "values") => 1,
                _ => array.len,
            };
            copy_member(&mut zip, array, len)?;
        }
        npz::finish(zip, &descriptor)
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// What the values seen so far say: how many entries, and whether they all have the bits of
/// the first (for `iso`) and are all 0 or 1 (for `bint8`).
struct Rows {
    entries: u64,
    first: Option<Vec<u8>>,
    equal: bool,
    binary: bool,
}

impl Rows {
    /// Appends a band's rows to the arrays of `format`.
    fn band<P: Put>(&mut self, format: Format, band: Band, spills: &mut [Out<P>]) -> Result<()> {
        let (r0, band_rows) = (band.first_row as usize, band.rows as usize);
        if format.is_dense() {
            let values = match band.cells {
                Cells::Dense(values) => values,
                _ => band.dense_values()?,
            };
            self.observe(&values);
            return spills[0].values(&values);
        }
        // Entries row by row: a CSR band's as stored, a dense band's non-zeros.
        let value_type = band.value_type().unwrap_or(ValueType::F64);
        let (offsets, columns, values) = match band.cells {
            Cells::Csr {
                row_offsets,
                col_indices,
                values,
            } => (row_offsets, col_indices, values),
            cells => {
                let (rows, cols) = (band.rows, band.cols);
                let dense = Band { cells, ..band };
                let object = dense.into_object(&Header::matrix(
                    DataType::DenseMatrix,
                    rows,
                    cols,
                    value_type,
                ))?;
                with_value_type!(value_type, T => {
                    let parts = object.csr_parts::<T>()?;
                    (parts.row_offsets, parts.col_indices, T::into_values(parts.values))
                })
            }
        };
        self.observe(&values);
        let base = self.entries as usize;
        let rows = 0..band_rows;
        let row_of = |k: usize| offsets.partition_point(|&o| o <= k) - 1;
        let values_at = spills.len() - 1;
        match format {
            Format::Csr => spills[0].indices(rows.map(|r| base + offsets[r + 1]))?,
            Format::Dcsr => {
                let full: Vec<usize> = rows.filter(|&r| offsets[r + 1] > offsets[r]).collect();
                spills[0].indices(full.iter().map(|&r| r0 + r))?;
                spills[1].indices(full.iter().map(|&r| base + offsets[r + 1]))?;
            }
            Format::Coo | Format::Coor | Format::Cvec => {
                spills[0].indices((0..columns.len()).map(|k| r0 + row_of(k)))?;
            }
            _ => unreachable!("rows-first sparse formats"),
        }
        if format != Format::Cvec {
            spills[values_at - 1].indices(columns.iter().copied())?;
        }
        spills[values_at].values(&values)?;
        self.entries += columns.len() as u64;
        Ok(())
    }

    fn observe(&mut self, values: &Values) {
        if let Values::U8(v) = values {
            self.binary &= v.iter().all(|&x| x <= 1);
        }
        with_values!(values, v => {
            if let (None, Some(x)) = (&self.first, v.first()) {
                self.first = Some(bytemuck::bytes_of(x).to_vec());
            }
            if let Some(first) = &self.first {
                self.equal &= v.iter().all(|x| bytemuck::bytes_of(x) == first.as_slice());
            }
        });
    }
}

/// Copies `len` values of a spilled array into its member, after its `.npy` header.
fn copy_member<W: Write>(zip: &mut ZipWriter<W>, array: Out<Spill>, len: u64) -> Result<()> {
    let mut header = Vec::new();
    npy::write_header(&mut header, npy::descr(array.value_type), &[len])?;
    let data_len = len * array.value_type.size() as u64;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header);
    let spill = array.to;
    let mut file = spill.out.into_inner().map_err(|e| e.into_error())?;
    let data_crc = match len == array.len {
        true => spill.crc,
        false => {
            // An iso array keeps its first value only.
            let mut first = vec![0u8; data_len as usize];
            file.seek(SeekFrom::Start(0))?;
            file.read_exact(&mut first)?;
            let mut c = crc32fast::Hasher::new();
            c.update(&first);
            c
        }
    };
    crc.combine(&data_crc);
    file.seek(SeekFrom::Start(0))?;
    let name = format!("{}.npy", array.name);
    zip.member_with(&name, header.len() as u64 + data_len, crc.finalize(), |w| {
        w.write_all(&header)?;
        std::io::copy(&mut (&mut file).take(data_len), w).map(drop)
    })
}
