//! Encodings of a known length: measured without being built, then written once into memory
//! another allocator gave (a Python `bytes` object being built, a shared-memory segment).

use std::io::{self, Write};
use std::mem::MaybeUninit;

use serde::Serialize;

use super::Serializer;
use crate::error::Result;
use crate::options::Options;

impl Options {
    /// The number of bytes `value` encodes to with these options, without building the
    /// encoding (dense values, sparse rows and converted values are counted, not copied or
    /// encoded).
    ///
    /// ```
    /// let value = vec![1.5f64, 2.5];
    /// let len = serde_daphne::Options::new().serialized_len(&value)?;
    /// assert_eq!(len, serde_daphne::to_vec(&value)?.len() as u64);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Options::to_writer`], but never an I/O error.
    pub fn serialized_len<T: ?Sized + Serialize>(&self, value: &T) -> Result<u64> {
        // Sparse rows and converted values are counted, not built: a CSR matrix's length took
        // as long as its encoding.
        let mut counter = Counter(0);
        value.serialize(&mut Serializer::counting(&mut counter, self.clone()))?;
        Ok(counter.0)
    }

    /// Serializes `value` with these options into `out`, memory that need not be
    /// initialized, from its start; returns the number of bytes written, which are then
    /// initialized. Size `out` with [`Options::serialized_len`] to write the encoding exactly
    /// once, into its final place. Large buffers are faulted in on every core first, in huge
    /// pages where they fault in faster, as this crate's own new buffers are.
    ///
    /// ```
    /// use std::mem::MaybeUninit;
    ///
    /// let value = vec![1.5f64, 2.5];
    /// let options = serde_daphne::Options::new();
    /// let len = options.serialized_len(&value)? as usize;
    /// let mut out = vec![MaybeUninit::<u8>::uninit(); len];
    /// assert_eq!(options.to_uninit_slice(&mut out, &value)?, len);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Options::to_writer`]; an I/O error of kind `WriteZero` when the encoding is longer
    /// than `out`.
    pub fn to_uninit_slice<T: ?Sized + Serialize>(
        &self,
        out: &mut [MaybeUninit<u8>],
        value: &T,
    ) -> Result<usize> {
        crate::pages::fault_in_fresh(out);
        let mut slice = UninitSlice { out, at: 0 };
        self.to_writer(&mut slice, value)?;
        Ok(slice.at)
    }
}

/// A writer that only counts.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer into memory that need not be initialized.
struct UninitSlice<'a> {
    out: &'a mut [MaybeUninit<u8>],
    /// Bytes written so far.
    at: usize,
}

impl Write for UninitSlice<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = &mut self.out[self.at..];
        let n = buf.len().min(room.len());
        // The compiler turns this into a vectorized copy.
        for (to, &from) in room[..n].iter_mut().zip(buf) {
            *to = MaybeUninit::new(from);
        }
        self.at += n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
