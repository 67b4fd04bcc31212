//! Where bytes go: a buffered writer that passes large value runs straight through.

use crate::error::ErrorDetails;
use std::io::{self, IoSlice, Write};

use super::element::{exact_cast, Element};
use super::sparse_row::encode_sparse_row;
use super::values::{extend_le, with_value_type, write_le};
use crate::codes::ValueType;
use crate::error::{Error, Result};

/// Small writes are gathered up to this many bytes.
const BUFFER_LEN: usize = 256 * 1024;

/// Value runs at least this long bypass the buffer (one `write_all` of the caller's memory).
const BULK_LEN: usize = 64 * 1024;

/// Values converted at a time by [`Sink::values_as`].
const PIECE: usize = 1 << 18;

/// A little-endian writer with its own buffer, or (direct) appending to a vector that is the
/// output itself, which saves the copy out of the buffer where the encoding is built in place.
pub(crate) struct Sink<W: Write> {
    writer: W,
    buf: Vec<u8>,
    kind: Kind,
}

/// What a sink's bytes are for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Gathered in `buf`, then written to `writer`.
    Buffered,
    /// `buf` is the output: never drained, `writer` unused.
    Direct,
    /// Only the length counts (`writer` counts what it is given): encoders that build their
    /// bytes may [`Sink::skip`] them instead.
    Counting,
}

impl<W: Write> Sink<W> {
    pub fn new(writer: W) -> Self {
        Sink {
            writer,
            buf: Vec::new(),
            kind: Kind::Buffered,
        }
    }

    /// A sink whose output is only measured: `writer` counts the bytes it is given, and
    /// encoders may [`Sink::skip`] the bytes they would build.
    pub(crate) fn counting(writer: W) -> Self {
        Sink {
            kind: Kind::Counting,
            ..Sink::new(writer)
        }
    }

    /// A sink that appends everything to `out` (see [`Sink::into_output`]).
    pub(crate) fn direct(writer: W, out: Vec<u8>) -> Self {
        Sink {
            writer,
            buf: out,
            kind: Kind::Direct,
        }
    }

    pub(crate) fn is_direct(&self) -> bool {
        self.kind == Kind::Direct
    }

    /// Whether only the length counts (see [`Sink::counting`]).
    pub(crate) fn is_counting(&self) -> bool {
        self.kind == Kind::Counting
    }

    /// In a counting sink, stands for `len` bytes an encoder would write: the writer is given
    /// that many zeros, which it only counts. An error in any other sink (nothing written).
    pub(crate) fn skip(&mut self, len: usize) -> Result<()> {
        if !self.is_counting() {
            return Err(Error::from(io::Error::other(
                "internal: bytes skipped in a sink that is not counting",
            )));
        }
        // One block of zeros for every write: `io::repeat` would fill a buffer for each.
        static ZEROS: [u8; BULK_LEN] = [0; BULK_LEN];
        self.drain()?;
        let mut left = len;
        while left > 0 {
            let n = left.min(BULK_LEN);
            self.writer.write_all(&ZEROS[..n])?;
            left -= n;
        }
        Ok(())
    }

    /// The output vector of a direct sink, for writers that fill parts of it in parallel.
    pub(crate) fn output_mut(&mut self) -> &mut Vec<u8> {
        debug_assert!(self.is_direct());
        &mut self.buf
    }

    /// The output vector of a direct sink.
    pub(crate) fn into_output(self) -> Vec<u8> {
        debug_assert!(self.is_direct());
        self.buf
    }

    fn drain(&mut self) -> Result<()> {
        if !self.is_direct() && !self.buf.is_empty() {
            self.writer.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    #[inline]
    fn after_push(&mut self) -> Result<()> {
        if self.buf.len() >= BUFFER_LEN {
            self.drain()?;
        }
        Ok(())
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() >= BULK_LEN && !self.is_direct() {
            self.drain()?;
            self.writer.write_all(bytes)?;
            return Ok(());
        }
        self.buf.extend_from_slice(bytes);
        self.after_push()
    }

    #[inline]
    pub(crate) fn u8(&mut self, x: u8) -> Result<()> {
        self.buf.push(x);
        self.after_push()
    }

    #[inline]
    pub(crate) fn u32(&mut self, x: u32) -> Result<()> {
        self.buf.extend_from_slice(&x.to_le_bytes());
        self.after_push()
    }

    #[inline]
    pub(crate) fn u64(&mut self, x: u64) -> Result<()> {
        self.buf.extend_from_slice(&x.to_le_bytes());
        self.after_push()
    }

    #[inline]
    pub(crate) fn value<T: Element>(&mut self, x: T) -> Result<()> {
        self.buf.extend_from_slice(bytemuck::bytes_of(&x.to_le()));
        self.after_push()
    }

    /// Writes `x` stored as `vt`; the caller guarantees the conversion is exact (narrowing).
    #[inline]
    pub(crate) fn value_as<T: Element>(&mut self, x: T, vt: ValueType) -> Result<()> {
        if vt == T::VALUE_TYPE {
            return self.value(x);
        }
        self.values_as(std::slice::from_ref(&x), vt)
    }

    /// Writes a run of values stored as `vt`: in bulk when `vt` is `T`'s own type, otherwise
    /// converted in cache-sized chunks. The caller guarantees every conversion is exact.
    pub(crate) fn values_as<T: Element>(&mut self, values: &[T], vt: ValueType) -> Result<()> {
        if vt == T::VALUE_TYPE {
            return self.values(values);
        }
        if self.is_counting() {
            return self.skip(values.len() * vt.size());
        }
        // Converted into a typed piece, then written as a run (past the writer's buffer): a
        // byte copy per value into this buffer measured slower, for a DAPHNE-layout write
        // whose `int32` indices are widened.
        with_value_type!(vt, U => {
            let mut piece: Vec<U> = Vec::with_capacity(values.len().min(PIECE));
            for chunk in values.chunks(PIECE) {
                piece.clear();
                piece.extend(chunk.iter().map(|&x| exact_cast::<T, U>(x)));
                self.values(&piece)?;
            }
        });
        Ok(())
    }

    /// Writes rows of a sparse block: per row its count, then `(column - first, value as vt)`
    /// pairs, built in place. `len` is the bytes the rows take. The caller guarantees the values
    /// are non-zero, the shifted columns fit `u32`, and the conversions are exact.
    pub(crate) fn sparse_rows<'a, T: Element>(
        &mut self,
        rows: impl Iterator<Item = (&'a [usize], &'a [T])>,
        len: usize,
        first: usize,
        vt: ValueType,
    ) -> Result<()> {
        with_value_type!(vt, U => self.sparse_rows_as::<T, U>(rows, len, first))
    }

    fn sparse_rows_as<'a, T: Element, U: Element>(
        &mut self,
        rows: impl Iterator<Item = (&'a [usize], &'a [T])>,
        len: usize,
        first: usize,
    ) -> Result<()> {
        if self.is_counting() {
            return self.skip(len);
        }
        let entry = 4 + std::mem::size_of::<U>();
        // The room is zero-filled once (the whole block when direct, else the buffer), not once
        // per row; `pos` is where the built bytes end.
        let mut pos = self.buf.len();
        let room = if self.is_direct() {
            pos + len
        } else {
            pos.max(BUFFER_LEN)
        };
        self.buf.resize(room, 0);
        let built = (|| {
            for (cols, values) in rows {
                let need = 4 + cols.len() * entry;
                if pos + need > self.buf.len() {
                    if !self.is_direct() {
                        self.writer.write_all(&self.buf[..pos])?;
                        pos = 0;
                    }
                    let grown = (pos + need).max(self.buf.len());
                    self.buf.resize(grown, 0);
                }
                let out = &mut self.buf[pos..pos + need];
                encode_sparse_row::<T, U, usize>(out, cols, values, |c| (c - first) as u32);
                pos += need;
            }
            Ok(())
        })();
        self.buf.truncate(pos);
        built
    }

    /// Writes a run of values: copied into the buffer when short, written directly when long.
    pub(crate) fn values<T: Element>(&mut self, values: &[T]) -> Result<()> {
        let len = std::mem::size_of_val(values);
        if len >= BULK_LEN && !self.is_direct() {
            self.drain()?;
            write_le(&mut self.writer, values)?;
            return Ok(());
        }
        if self.is_direct() && self.buf.capacity() - self.buf.len() < len {
            // The output grows into fresh memory: faulted in before its first touch.
            self.buf.reserve(len);
            crate::pages::fault_in_spare(&mut self.buf, len);
        }
        extend_le(&mut self.buf, values);
        self.after_push()
    }

    /// Makes room for `bytes` more in a direct sink's output, faulted in on every core
    /// (nothing for a buffered sink).
    pub fn reserve(&mut self, bytes: u64) -> Result<()> {
        let additional = usize::try_from(bytes).map_err(|_| {
            Error::from(ErrorDetails::OutOfMemory {
                bytes: u128::from(bytes),
            })
        })?;
        if self.is_direct() && self.buf.capacity() - self.buf.len() < additional {
            self.buf.try_reserve(additional).map_err(|_| {
                Error::from(ErrorDetails::OutOfMemory {
                    bytes: u128::from(bytes),
                })
            })?;
            crate::pages::fault_in_spare(&mut self.buf, additional);
        }
        Ok(())
    }

    /// Writes rows of values of `T`'s own type, `len` values in all (a dense tile's rows):
    /// appended to a direct sink's output, otherwise written from the caller's memory in one
    /// vectored write when they are long enough (no copy through the buffer), else buffered.
    pub(crate) fn rows<'a, T: Element>(
        &mut self,
        rows: impl Iterator<Item = &'a [T]>,
        len: usize,
    ) -> Result<()> {
        let bytes = len * std::mem::size_of::<T>();
        if self.is_direct() {
            if self.buf.capacity() - self.buf.len() < bytes {
                self.buf.reserve(bytes);
                crate::pages::fault_in_spare(&mut self.buf, bytes);
            }
            rows.for_each(|row| extend_le(&mut self.buf, row));
            return Ok(());
        }
        if bytes < BULK_LEN || cfg!(target_endian = "big") {
            return rows.into_iter().try_for_each(|row| self.values(row));
        }
        self.drain()?;
        let mut slices: Vec<IoSlice<'_>> = rows
            .map(|row| IoSlice::new(bytemuck::cast_slice(row)))
            .collect();
        write_all_vectored(&mut self.writer, &mut slices)?;
        Ok(())
    }

    /// The writer, and the bytes buffered for it.
    pub(crate) fn writer(&self) -> (&W, usize) {
        (
            &self.writer,
            if self.is_direct() { 0 } else { self.buf.len() },
        )
    }

    /// The writer (what is buffered for it not yet written).
    pub(crate) fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    /// Flushes the buffer and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.drain()?;
        Ok(self.writer)
    }
}

/// `Write::write_all_vectored`, which is not stable yet: writes every slice, retrying after
/// partial writes.
pub(crate) fn write_all_vectored<W: Write + ?Sized>(
    writer: &mut W,
    mut slices: &mut [IoSlice<'_>],
) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match writer.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most 5,000 bytes per call, cutting slices anywhere.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(5000);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A counting sink gives its writer as many bytes as it skips; any other sink refuses to
    /// skip and writes nothing.
    #[test]
    fn only_counting_sinks_skip() {
        let mut counting = Sink::counting(Vec::new());
        counting.u8(1).unwrap();
        counting.skip(3 * BULK_LEN + 5).unwrap();
        assert_eq!(counting.finish().unwrap().len(), 1 + 3 * BULK_LEN + 5);
        let mut plain = Sink::new(Vec::new());
        plain.u8(1).unwrap();
        assert_eq!(plain.skip(7).unwrap_err().kind(), crate::ErrorKind::Io);
        assert_eq!(plain.finish().unwrap(), [1]);
        let mut direct = Sink::direct(io::sink(), vec![2]);
        assert!(direct.skip(7).is_err());
        assert_eq!(direct.into_output(), [2]);
    }

    /// Rows go out whole and in order through a writer that takes a part of each write,
    /// buffered or vectored, and appended by a direct sink.
    #[test]
    fn rows_are_written_whole_through_partial_writes() {
        let data: Vec<u32> = (0..40_000).collect();
        for width in [7, 4000] {
            let rows = || data.chunks(width).take(9);
            let len = rows().map(<[u32]>::len).sum();
            let expected: Vec<u8> = rows().flatten().flat_map(|x| x.to_le_bytes()).collect();
            let mut sink = Sink::new(Trickle(Vec::new()));
            sink.u8(0xAB).unwrap();
            sink.rows(rows(), len).unwrap();
            let written = sink.finish().unwrap().0;
            assert_eq!(written[0], 0xAB);
            assert_eq!(&written[1..], &expected[..]);
            let mut direct = Sink::direct(io::sink(), vec![0xCD]);
            direct.rows(rows(), len).unwrap();
            assert_eq!(&direct.into_output()[1..], &expected[..]);
        }
    }
}
