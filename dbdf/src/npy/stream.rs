//! `.npy` to `.dbdf` and back without holding the matrix: tiles read straight from the
//! `.npy` file into a [`DbdfWriter`], row bands of a [`DbdfFile`] written straight out.

use serde_daphne::__private::error::ErrorImpl;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use ndarray::ArrayView2;

use super::{descr, header_len, parse_header, write_header, Descr, NpyHeader, NPY, PREAMBLE_LEN};
use crate::input::not_convertible;
use serde_daphne::__private::io::progress::Progress;
use serde_daphne::__private::io::{write_buffered, DbdfFile, DbdfWriter};
use serde_daphne::__private::model::encode::{tile_dims, MatrixRef, RowBands};
use serde_daphne::__private::options::{Dialect, Options};
use serde_daphne::__private::wire::values::{with_value_type, write_le, zeroed_vec};
use serde_daphne::__private::wire::{DataType, Element, Header, ValueType};
use serde_daphne::{Error, Result};

/// Bytes per read of whole rows, and per band written out.
const BAND: u64 = 16 << 20;

/// Converts the `.npy` array at `input` to a `.dbdf` file at `output` (atomically), one tile
/// at a time: memory holds one tile (the options' tile size; in the runtime dialect a band of
/// rows), never the matrix. The bytes equal [`serde_daphne::to_vec_with`] of the same matrix with the
/// same options.
///
/// Without a tile size (spec dialect) the matrix is one block, read twice a band of rows at a
/// time: once to choose the block type (stopping at the first non-zero by default), once to
/// write it.
///
/// # Errors
/// As [`super::read`]; [`serde_daphne::DbdfWriter`]'s errors; I/O errors.
pub fn to_dbdf(input: impl AsRef<Path>, output: impl AsRef<Path>, options: &Options) -> Result<()> {
    to_dbdf_reporting(input.as_ref(), output.as_ref(), options, None)
}

/// [`to_dbdf`], telling `progress` of the bytes of values copied.
pub(crate) fn to_dbdf_reporting(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: Option<&Progress>,
) -> Result<()> {
    let (mut file, header, (rows, cols), vt) = open_matrix(input)?;
    let runtime = options.dialect == Some(Dialect::Runtime);
    let (tile_rows, tile_cols) = if runtime {
        // One layout per object: bands of full rows, in order.
        let row_bytes = (cols * vt.size() as u64).max(1);
        ((BAND / row_bytes).max(1), cols.max(1))
    } else if options.tile.is_some() {
        tile_dims(options)
    } else {
        (rows.max(1), cols.max(1))
    };
    let mut writer = DbdfWriter::create_with(output, options)?;
    writer.begin(Header::DenseMatrix {
        rows,
        cols,
        value_type: vt,
    })?;
    let reader = TileReader {
        file: &mut file,
        header: &header,
        rows,
        cols,
        progress,
    };
    let one_block = !runtime && options.tile.is_none() && rows > 0 && cols > 0;
    if one_block && rows <= u64::from(u32::MAX) && cols <= u64::from(u32::MAX) {
        with_value_type!(vt, T => writer.write_untiled(&mut NpyBands::<T> { reader, band: Vec::new() })?);
    } else {
        with_value_type!(vt, T => reader.copy_tiles::<T>(&mut writer, (tile_rows, tile_cols))?);
    }
    writer.finish()
}

/// An `.npy` matrix read in bands of whole rows (16 MiB, or one row), into one buffer.
struct NpyBands<'a, T> {
    reader: TileReader<'a>,
    band: Vec<T>,
}

impl<T: Element> RowBands<T> for NpyBands<'_, T> {
    fn dense(&self) -> bool {
        true
    }

    fn for_each_band(
        &mut self,
        each: &mut dyn FnMut(&MatrixRef<'_, T>) -> Result<bool>,
    ) -> Result<()> {
        let (rows, cols) = (self.reader.rows, self.reader.cols);
        let row_bytes = cols * std::mem::size_of::<T>() as u64;
        let step = (BAND / row_bytes.max(1)).max(1);
        let mut r0 = 0;
        while r0 < rows {
            let nr = step.min(rows - r0);
            self.band.resize((nr * cols) as usize, T::zeroed());
            self.reader.read_tile(r0, 0, nr, cols, &mut self.band)?;
            let band = MatrixRef::dense(nr as usize, cols as usize, &self.band);
            if !each(&band)? {
                return Ok(());
            }
            r0 += nr;
            if let Some(report) = self.reader.progress {
                report(r0 * row_bytes, rows * row_bytes);
            }
        }
        Ok(())
    }
}

/// Reads the `.npy` file at `path` whole: its values go from the file straight into the
/// matrix's vector (fresh pages, advised huge), so memory holds the matrix once.
///
/// # Errors
/// As [`super::read`].
pub(crate) fn read_whole(path: &Path) -> Result<serde_daphne::__private::model::Object> {
    let (mut file, header, (rows, cols), vt) = open_matrix(path)?;
    // The header checked the data's length against the file's: the vector is justified.
    let cells = usize::try_from(rows * cols).map_err(|_| {
        Error::from(ErrorImpl::OutOfMemory {
            bytes: u128::from(rows * cols) * vt.size() as u128,
        })
    })?;
    let mut reader = TileReader {
        file: &mut file,
        header: &header,
        rows,
        cols,
        progress: None,
    };
    let values = with_value_type!(vt, T => {
        let mut values = zeroed_vec::<T>(cells)?;
        if cells > 0 {
            reader.read_tile(0, 0, rows, cols, &mut values)?;
        }
        T::into_values(values)
    });
    serde_daphne::__private::model::Object::dense(rows, cols, values)
}

/// The `.npy` file at `path` opened for reading rows of `f64` in place: its file, where its
/// data starts, and its shape; `None` unless it holds little-endian `f64` in row order (C
/// order, or one row or column), where rows can be read as they are.
///
/// # Errors
/// As [`super::read`], for a malformed header.
pub(crate) fn open_f64_rows(path: &Path) -> Result<Option<(File, u64, u64, u64)>> {
    let (file, header, (rows, cols), _) = open_matrix(path)?;
    let row_order = !header.fortran || rows <= 1 || cols <= 1;
    let native = cfg!(target_endian = "little");
    if header.descr != Descr::Number(ValueType::F64, false) || !row_order || !native {
        return Ok(None);
    }
    Ok(Some((file, header.data_offset as u64, rows, cols)))
}

/// Opens the `.npy` matrix at `path`: its file, checked header, shape and value type
/// (`bool` as `u8`).
fn open_matrix(path: &Path) -> Result<(File, NpyHeader, (u64, u64), ValueType)> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let header = read_header(&mut file, len)?;
    let (rows, cols) = header.matrix_shape()?;
    let vt = match header.descr {
        Descr::Number(vt, _) => vt,
        Descr::Bool => ValueType::U8,
        Descr::Unicode(..) => {
            return Err(NPY.at(
                header.data_offset,
                "an array of strings where numbers were expected",
            ))
        }
    };
    Ok((file, header, (rows, cols), vt))
}

/// Reads the header of an `.npy` file of `len` bytes and checks its data length.
fn read_header(file: &mut File, len: u64) -> Result<NpyHeader> {
    let mut preamble = vec![0; PREAMBLE_LEN.min(len as usize)];
    file.read_exact(&mut preamble)?;
    let total = header_len(&preamble)?;
    if total as u64 > len {
        return Err(NPY.at(0, "the header runs past the end of the array"));
    }
    let mut bytes = vec![0; total];
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut bytes)?;
    let header = parse_header(&bytes)?;
    header.check_data_len(len - total as u64)?;
    Ok(header)
}

/// Reads rectangles of an `.npy` file's matrix.
struct TileReader<'a> {
    file: &'a mut File,
    header: &'a NpyHeader,
    rows: u64,
    cols: u64,
    progress: Option<&'a Progress>,
}

impl TileReader<'_> {
    fn copy_tiles<T: Element>(
        mut self,
        writer: &mut DbdfWriter,
        (tr, tc): (u64, u64),
    ) -> Result<()> {
        let mut tile: Vec<T> = Vec::new();
        for r0 in (0..self.rows).step_by(tr as usize) {
            for c0 in (0..self.cols).step_by(tc as usize) {
                let (nr, nc) = (tr.min(self.rows - r0), tc.min(self.cols - c0));
                tile.clear();
                tile.resize((nr * nc) as usize, T::zeroed());
                self.read_tile(r0, c0, nr, nc, &mut tile)?;
                let view = ArrayView2::from_shape((nr as usize, nc as usize), &tile)
                    .map_err(|e| Error::invalid(e.to_string()))?;
                writer.write_dense_tile(r0, c0, view)?;
            }
            if let Some(report) = self.progress {
                let row = self.cols * std::mem::size_of::<T>() as u64;
                report((r0 + tr).min(self.rows) * row, self.rows * row);
            }
        }
        Ok(())
    }

    /// Fills `out` (row-major, `nr x nc`) with the tile at (`r0`, `c0`).
    fn read_tile<T: Element>(
        &mut self,
        r0: u64,
        c0: u64,
        nr: u64,
        nc: u64,
        out: &mut [T],
    ) -> Result<()> {
        let size = std::mem::size_of::<T>() as u64;
        let base = self.header.data_offset as u64;
        if self.header.fortran && self.rows > 1 && self.cols > 1 {
            // Column-major: each column's rows are contiguous.
            let mut column = vec![T::zeroed(); nr as usize];
            for c in 0..nc {
                let at = base + ((c0 + c) * self.rows + r0) * size;
                self.read_at(at, bytemuck::cast_slice_mut(&mut column))?;
                for (r, &x) in column.iter().enumerate() {
                    out[r * nc as usize + c as usize] = x;
                }
            }
        } else if nc == self.cols {
            let at = base + r0 * self.cols * size;
            self.read_at(at, bytemuck::cast_slice_mut(out))?;
        } else {
            for (r, row) in out.chunks_mut(nc as usize).enumerate() {
                let at = base + ((r0 + r as u64) * self.cols + c0) * size;
                self.read_at(at, bytemuck::cast_slice_mut(row))?;
            }
        }
        self.fix_values(out)
    }

    fn read_at(&mut self, at: u64, dst: &mut [u8]) -> Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(&*self.file, dst, at)?;
        }
        #[cfg(not(unix))]
        {
            self.file.seek(SeekFrom::Start(at))?;
            self.file.read_exact(dst)?;
        }
        Ok(())
    }

    /// Byte order (the file's to the host's) and the bool check.
    fn fix_values<T: Element>(&self, values: &mut [T]) -> Result<()> {
        match self.header.descr {
            Descr::Number(_, big) => {
                let swap = big != cfg!(target_endian = "big");
                if swap && std::mem::size_of::<T>() > 1 {
                    for x in values.iter_mut() {
                        bytemuck::bytes_of_mut(x).reverse();
                    }
                }
                Ok(())
            }
            Descr::Bool => match bytemuck::cast_slice::<T, u8>(values)
                .iter()
                .find(|&&b| b > 1)
            {
                Some(b) => Err(NPY.at(
                    self.header.data_offset,
                    format!("the bool value {b} is neither 0 nor 1"),
                )),
                None => Ok(()),
            },
            Descr::Unicode(..) => Ok(()),
        }
    }
}

/// Writes matrix `index` of the `.dbdf` file at `input` as a C-order `.npy` array at `output`
/// (atomically), a band of rows at a time: memory holds one band (16 MiB, or one row), read
/// through [`DbdfFile::read_window`] (only the bytes of those rows).
///
/// # Errors
/// [`serde_daphne::ErrorKind::NotConvertible`] for frames; [`DbdfFile`]'s errors; I/O errors.
pub fn from_dbdf(input: impl AsRef<Path>, index: usize, output: impl AsRef<Path>) -> Result<()> {
    from_dbdf_reporting(input.as_ref(), index, output.as_ref(), None)
}

/// [`from_dbdf`], telling `progress` of the bytes of values copied.
pub(crate) fn from_dbdf_reporting(
    input: &Path,
    index: usize,
    output: &Path,
    progress: Option<&Progress>,
) -> Result<()> {
    // Plain reads (the default): a memory map would count the whole file as resident.
    let mut file = DbdfFile::open(input)?;
    let Some(object) = file.objects().get(index) else {
        return Err(Error::invalid(format!(
            "object {index} does not exist: the file holds {} objects",
            file.objects().len()
        )));
    };
    let header = object.header.clone();
    if header.data_type() == DataType::Frame {
        return Err(not_convertible(
            "a Frame",
            "NumPy .npy",
            "an array has one dtype; convert each column on its own",
        ));
    }
    let (rows, cols) = header.shape();
    let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
    let band = (BAND / (cols * vt.size() as u64).max(1)).max(1);
    write_buffered(output, |out| {
        write_header(out, descr(vt), &[rows, cols])?;
        with_value_type!(vt, T => {
            // One buffer for every band: fresh pages per band would cost a fault each.
            let mut buf: Vec<T> = Vec::new();
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + band).min(rows);
                buf.resize(((r1 - r0) * cols) as usize, T::default());
                file.read_window_into::<T>(index, r0..r1, 0..cols, &mut buf)?;
                write_le(&mut *out as &mut dyn Write, &buf)?;
                if let Some(report) = progress {
                    let row = cols * vt.size() as u64;
                    report(r1 * row, rows * row);
                }
                r0 = r1;
            }
        });
        Ok(())
    })
}
