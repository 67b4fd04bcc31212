//! Futhark binary values on the pipe: a source that finds each value's header with small
//! positional reads and reads any rectangle of its values in place (of a local file or a
//! remote object's ranges), and a sink that writes each object's header, then its bands.
//! Memory holds a band, never a value.

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::{in_object, refused_frame, Head, Kind, WriteOptions, FUTHARK};
use crate::input::Cursor;
use crate::pipe::{Band, Cells, Pieces, Sink, Windows};
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_value_type;
use serde_daphne::DataType;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::{ReadAt, Result, Values};

/// Most bytes a value's header takes: `b`, version, rank, type, 255 dimensions.
const HEAD_MAX: u64 = 7 + 8 * 255;

/// The values of a Futhark binary data file, each an object.
pub struct FutharkSource {
    file: Arc<dyn ReadAt>,
    headers: Vec<Header>,
    /// Each value's header and where its values start.
    values: Vec<(Head, u64)>,
    input_len: u64,
}

impl FutharkSource {
    /// Opens the file at `path` and reads the header of every value (jumping over the
    /// values), checking each.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::ForeignInput`] with the byte offset for a text-format
    /// value, another version, an unknown type, a rank above 2 or a file that ends early; I/O
    /// errors.
    pub(crate) fn open(path: &Path) -> Result<FutharkSource> {
        FutharkSource::open_at(Arc::new(std::fs::File::open(path)?))
    }

    /// The values behind `file` (a local file, or a remote object's ranges: a request per
    /// value's header, then the rows each band or window needs).
    ///
    /// # Errors
    /// As [`FutharkSource::open`].
    pub(crate) fn open_at(file: Arc<dyn ReadAt>) -> Result<FutharkSource> {
        let len = file.size()?;
        let (mut at, mut values, mut headers) = (0u64, Vec::new(), Vec::new());
        let mut buf = vec![0u8; HEAD_MAX as usize];
        while at < len {
            let n = HEAD_MAX.min(len - at) as usize;
            file.read_exact_at(&mut buf[..n], at)?;
            let space = buf[..n]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            if space == n {
                at += n as u64;
                continue;
            }
            at += space as u64;
            if buf[space] != b'b' {
                return Err(FUTHARK.at(
                    at as usize,
                    "a value in Futhark's text format starts here; only the binary format is \
                     read (convert with `futhark dataset --binary`)",
                ));
            }
            let n = HEAD_MAX.min(len - at) as usize;
            file.read_exact_at(&mut buf[..n], at)?;
            let mut cursor = Cursor::at_base(&buf[..n], at, FUTHARK);
            let head = Head::read(&mut cursor, |pos| len - at - pos as u64)?;
            let data_at = at + cursor.pos as u64;
            headers.push(Header::matrix(
                DataType::DenseMatrix,
                head.rows,
                head.cols,
                head.kind.value_type(),
            ));
            values.push((head, data_at));
            at = data_at + head.len;
        }
        Ok(FutharkSource {
            file,
            headers,
            values,
            input_len: len,
        })
    }
}

crate::pipe::windowed_source!(FutharkSource);

impl Windows for FutharkSource {
    fn window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        let (head, data_at) = self.values[index];
        let size = head.kind.size() as u64;
        let (nr, nc) = (rows.end - rows.start, cols.end - cols.start);
        if nc == head.cols {
            // Whole rows: one read, straight into the values where the kind is DAPHNE's.
            let first = data_at + rows.start * head.cols * size;
            let values = match head.kind {
                Kind::Plain(vt) => with_value_type!(vt, T => {
                    let mut values = zeroed_vec::<T>((nr * nc) as usize)?;
                    self.file
                        .read_exact_at(bytemuck::cast_slice_mut(&mut values), first)?;
                    values.iter_mut().for_each(|x| *x = x.to_le());
                    T::into_values(values)
                }),
                kind => {
                    let mut bytes = vec![0u8; (nr * head.cols * size) as usize];
                    self.file.read_exact_at(&mut bytes, first)?;
                    kind.decode(&bytes, first)?
                }
            };
            return Ok(Band::dense(rows, cols, values));
        }
        // Each row's part of the window: memory holds the window, not its rows.
        let mut values = Values::new(head.kind.value_type());
        values.reserve((nr * nc) as usize);
        let mut bytes = vec![0u8; (nc * size) as usize];
        for r in rows.clone() {
            let at = data_at + (r * head.cols + cols.start) * size;
            self.file.read_exact_at(&mut bytes, at)?;
            values.append(head.kind.decode(&bytes, at)?);
        }
        Ok(Band::dense(rows, cols, values))
    }
}

/// Writes objects as Futhark binary values, one after another: each value's header, then
/// its bands (CSR bands with their zeros).
pub struct FutharkSink<'w> {
    out: &'w mut dyn Write,
    options: WriteOptions,
    objects: usize,
}

impl<'w> FutharkSink<'w> {
    /// A sink writing to `out` with `options`.
    pub(crate) fn new(out: &'w mut dyn Write, options: &WriteOptions) -> FutharkSink<'w> {
        FutharkSink {
            out,
            options: options.clone(),
            objects: 0,
        }
    }
}

impl Sink for FutharkSink<'_> {
    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let index = self.objects;
        self.objects += 1;
        let Some(value_type) = header.matrix_value_type() else {
            return Err(in_object(refused_frame(), index));
        };
        let kind = Kind::of(value_type, &self.options);
        self.out
            .write_all(&kind.head(header.shape(), &self.options))?;
        let out = &mut *self.out;
        pieces.for_each(&mut |band| {
            let values = match band.cells {
                Cells::Dense(values) => values,
                _ => band.dense_values()?,
            };
            kind.write(out, &values).map_err(|e| in_object(e, index))?;
            Ok(true)
        })
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}
