//! `.npy` on the pipe: a source of any rectangle, read with positional reads straight from
//! the file (C order: whole rows in one read; Fortran order: each column's part; record
//! arrays: whole records, split into a frame's columns), and a sink that writes the header,
//! then each band's rows. Memory holds a band, never the matrix.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::records::{decode_columns, encode_records, frame_descr, frame_header};
use super::{
    descr, header_len, parse_header, write_header, Descr, NpyHeader, Record, NPY, PREAMBLE_LEN,
};
use crate::input::write_le;
use crate::pipe::{Band, Cells, Pieces, Sink, Windows};
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_value_type;
use serde_daphne::with_values;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::ReadAt;
use serde_daphne::ValueType;
use serde_daphne::{Error, Result};

/// The matrix of an `.npy` file, read band by band or window by window.
pub struct NpySource {
    file: Arc<dyn ReadAt>,
    header: NpyHeader,
    headers: [Header; 1],
    input_len: u64,
}

impl NpySource {
    /// Opens the `.npy` file at `path` and checks its header.
    ///
    /// # Errors
    /// As [`super::read`], for a malformed header.
    pub(crate) fn open(path: &Path) -> Result<NpySource> {
        let (file, header, object) = open_array(path)?;
        let input_len = file.metadata()?.len();
        Ok(NpySource {
            file: Arc::new(file),
            header,
            headers: [object],
            input_len,
        })
    }

    /// The `.npy` array behind `reader` (a remote object's ranges): its header read and
    /// checked, its cells read when asked for.
    ///
    /// # Errors
    /// As [`NpySource::open`].
    pub(crate) fn open_at(reader: Arc<dyn ReadAt>) -> Result<NpySource> {
        let input_len = reader.size()?;
        let header = read_header(&*reader, input_len)?;
        let object = object_header(&header)?;
        Ok(NpySource {
            file: reader,
            header,
            headers: [object],
            input_len,
        })
    }

    /// The array stored (not deflated) in a zip member of `file` whose `.npy` bytes start at
    /// `start`, with `header` parsed from them and its data's length checked.
    pub(crate) fn in_member(
        file: Arc<dyn ReadAt>,
        mut header: NpyHeader,
        start: u64,
    ) -> Result<NpySource> {
        let object = object_header(&header)?;
        header.data_offset += start as usize;
        let input_len = file.size()?;
        Ok(NpySource {
            file,
            header,
            headers: [object],
            input_len,
        })
    }

    fn reader(&self) -> TileReader<'_> {
        let (rows, cols) = self.headers[0].shape();
        TileReader {
            file: &*self.file,
            header: &self.header,
            rows,
            cols,
        }
    }
}

crate::pipe::windowed_source!(NpySource);

impl Windows for NpySource {
    fn window(&self, _: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        if let Descr::Record(record) = &self.header.descr {
            let at = self.header.data_offset as u64 + rows.start * record.size as u64;
            let mut bytes =
                zeroed_vec::<u8>(((rows.end - rows.start) * record.size as u64) as usize)?;
            self.file.read_exact_at(&mut bytes, at)?;
            return record_band(record, rows, cols, &bytes, at);
        }
        let (nr, nc) = (rows.end - rows.start, cols.end - cols.start);
        let vt = self.headers[0]
            .matrix_value_type()
            .unwrap_or(ValueType::F64);
        let values = with_value_type!(vt, T => {
            let mut out = zeroed_vec::<T>((nr * nc) as usize)?;
            if nr * nc > 0 {
                self.reader().read_tile(rows.start, cols.start, nr, nc, &mut out)?;
            }
            T::into_values(out)
        });
        Ok(Band::dense(rows, cols, values))
    }
}

/// Writes one matrix as a C-order `.npy` array: the header, then each band's rows (CSR
/// bands with their zeros); a frame as a record array.
pub struct NpySink<'w> {
    out: &'w mut dyn Write,
}

impl<'w> NpySink<'w> {
    /// A sink writing to `out`.
    pub(crate) fn new(out: &'w mut dyn Write) -> NpySink<'w> {
        NpySink { out }
    }
}

impl Sink for NpySink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some(".npy")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        if let Header::Frame { rows, columns } = header {
            // A record array: a field per column.
            write_header(&mut *self.out, &frame_descr(columns), &[*rows])?;
            let out = &mut *self.out;
            let mut records = Vec::new();
            return pieces.for_each(&mut |band| {
                let Cells::Frame(columns) = &band.cells else {
                    return Err(Error::invalid("a matrix band for a frame"));
                };
                records.clear();
                encode_records(columns, &mut records);
                out.write_all(&records)?;
                Ok(true)
            });
        }
        let (rows, cols) = header.shape();
        let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
        write_header(&mut *self.out, descr(vt), &[rows, cols])?;
        let out = &mut *self.out;
        pieces.for_each(&mut |band| {
            match &band.cells {
                Cells::Dense(values) => with_values!(values, v => write_le(&mut *out, v))?,
                _ => with_values!(&band.dense_values()?, v => write_le(&mut *out, v))?,
            }
            Ok(true)
        })
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Opens the `.npy` array at `path`: its file, checked header, and the object it is (a
/// dense matrix, `bool` as `u8`; a frame for a record array).
pub(crate) fn open_array(path: &Path) -> Result<(File, NpyHeader, Header)> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let header = read_header(&file, len)?;
    let object = object_header(&header)?;
    Ok((file, header, object))
}

/// The object an array with `header` is.
pub(crate) fn object_header(header: &NpyHeader) -> Result<Header> {
    let value_type = match &header.descr {
        Descr::Number(vt, _) => *vt,
        Descr::Bool => ValueType::U8,
        Descr::Record(record) => {
            let rows = match header.shape[..] {
                [] => 1,
                [n] => n,
                _ => {
                    return Err(NPY.at(
                        0,
                        format!(
                            "a {}-D record array (a frame is 1-D: a record per row)",
                            header.shape.len()
                        ),
                    ))
                }
            };
            return Ok(frame_header(rows, record));
        }
        Descr::Unicode(..) | Descr::Bytes(..) => {
            return Err(NPY.at(
                header.data_offset,
                "an array of strings where numbers were expected",
            ))
        }
    };
    let (rows, cols) = header.matrix_shape()?;
    Ok(Header::DenseMatrix {
        rows,
        cols,
        value_type,
    })
}

/// Reads the header of an `.npy` file of `len` bytes and checks its data length.
fn read_header(file: &dyn ReadAt, len: u64) -> Result<NpyHeader> {
    let mut preamble = vec![0; PREAMBLE_LEN.min(len as usize)];
    file.read_exact_at(&mut preamble, 0)?;
    let total = header_len(&preamble)?;
    if total as u64 > len {
        return Err(NPY.at(0, "the header runs past the end of the array"));
    }
    let mut bytes = vec![0; total];
    file.read_exact_at(&mut bytes, 0)?;
    let header = parse_header(&bytes)?;
    header.check_data_len(len - total as u64)?;
    Ok(header)
}

/// Reads rectangles of an `.npy` file's matrix.
pub(crate) struct TileReader<'a> {
    pub(crate) file: &'a dyn ReadAt,
    pub(crate) header: &'a NpyHeader,
    pub(crate) rows: u64,
    pub(crate) cols: u64,
}

impl TileReader<'_> {
    /// Fills `out` (row-major, `nr x nc`) with the tile at (`r0`, `c0`).
    pub(crate) fn read_tile<T: Element>(
        &self,
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
            self.read_lines(base, (c0, nc), self.rows, (r0, nr), |c, column| {
                for (r, &x) in column.iter().enumerate() {
                    out[r * nc as usize + c] = x;
                }
            })?;
        } else if nc == self.cols {
            let at = base + r0 * self.cols * size;
            self.read_at(at, bytemuck::cast_slice_mut(out))?;
        } else {
            self.read_lines(base, (r0, nr), self.cols, (c0, nc), |r, row| {
                out[r * nc as usize..][..nc as usize].copy_from_slice(row);
            })?;
        }
        self.fix_values(out)
    }

    /// Hands `visit` the part `(start, take)` of each of the lines `(first, n)` (rows in C
    /// order, columns in Fortran order) of `line_len` values, the data starting at `base`: a
    /// read per line from a local file; from a remote one, the lines' span in requests of at
    /// most 64 MiB (a request per line would cost a round trip each).
    fn read_lines<T: Element>(
        &self,
        base: u64,
        (first, n): (u64, u64),
        line_len: u64,
        (start, take): (u64, u64),
        mut visit: impl FnMut(usize, &[T]),
    ) -> Result<()> {
        let size = std::mem::size_of::<T>() as u64;
        let per = match self.file.min_request() {
            0 => 1,
            _ => ((64 << 20) / (line_len * size)).max(1),
        };
        let mut buffer = zeroed_vec::<T>(((per.min(n).max(1) - 1) * line_len + take) as usize)?;
        let mut line = 0;
        while line < n {
            let lines = per.min(n - line);
            let span = &mut buffer[..((lines - 1) * line_len + take) as usize];
            let at = base + ((first + line) * line_len + start) * size;
            self.read_at(at, bytemuck::cast_slice_mut(span))?;
            for k in 0..lines {
                visit(
                    (line + k) as usize,
                    &span[(k * line_len) as usize..][..take as usize],
                );
            }
            line += lines;
        }
        Ok(())
    }

    fn read_at(&self, at: u64, dst: &mut [u8]) -> Result<()> {
        Ok(self.file.read_exact_at(dst, at)?)
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
            _ => Ok(()),
        }
    }
}

/// The rows `rows` of an array with `header` (the object `object`) from their bytes as the
/// file holds them (C order; records): for sources that get the bytes in order.
pub(crate) fn band_of_bytes(
    header: &NpyHeader,
    object: &Header,
    rows: Range<u64>,
    bytes: &[u8],
) -> Result<Band> {
    let cols = match object {
        Header::Frame { columns, .. } => columns.len() as u64,
        _ => object.shape().1,
    };
    if let Descr::Record(record) = &header.descr {
        return record_band(record, rows, 0..cols, bytes, 0);
    }
    let array = super::Array {
        descr: header.descr.clone(),
        shape: Vec::new(),
        fortran: false,
        data: bytes,
        data_offset: 0,
    };
    Ok(Band::dense(rows, 0..cols, array.values()?))
}

/// Fields `cols` of the records `rows`, from their bytes (which start at byte `at` of the
/// input, for errors), as a frame's band.
fn record_band(
    record: &Record,
    rows: Range<u64>,
    cols: Range<u64>,
    bytes: &[u8],
    at: u64,
) -> Result<Band> {
    let columns = decode_columns(bytes, record, cols.start as usize..cols.end as usize, at)?;
    Ok(Band {
        first_row: rows.start,
        first_col: cols.start,
        rows: rows.end - rows.start,
        cols: cols.end - cols.start,
        cells: Cells::Frame(columns),
    })
}
