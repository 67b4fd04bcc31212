//! The arrays of `.npy` members read in order or in parts: stored members at positions in
//! the archive, each pass in order from the first element computing the CRC-32 on the way;
//! deflated ones inflated as they are read.

use std::io::Read;
use std::ops::Range;
use std::sync::Arc;

use super::{check_stored_crc, crc_error, Entry, ZIP};
use crate::storage::Stream;
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::with_value_type;
use serde_daphne::Element;
use serde_daphne::ReadAt;
use serde_daphne::Result;
use serde_daphne::ValueType;
use serde_daphne::Values;

/// The little-endian numbers of a stored member, from byte `data_at` of the archive (after
/// the member's `.npy` header).
pub(crate) struct StoredArray {
    file: Arc<dyn ReadAt>,
    name: &'static str,
    entry: Entry,
    data_at: u64,
    value_type: ValueType,
    /// The running CRC-32 and the next element it needs (`None` once a read skipped).
    crc: Option<(crc32fast::Hasher, u64)>,
}

impl StoredArray {
    pub(crate) fn new(
        file: Arc<dyn ReadAt>,
        name: &'static str,
        entry: Entry,
        data_at: u64,
        value_type: ValueType,
    ) -> StoredArray {
        StoredArray {
            file,
            name,
            entry,
            data_at,
            value_type,
            crc: None,
        }
    }

    /// The array's name, for messages.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn value_type(&self) -> ValueType {
        self.value_type
    }

    /// Where element `k` lies in the archive.
    pub(crate) fn offset_of(&self, k: u64) -> u64 {
        self.data_at + k * self.value_type.size() as u64
    }

    /// Elements `range`, in the host's order; a pass reading them in order from the first
    /// computes the member's CRC-32 on the way.
    ///
    /// # Errors
    /// I/O errors.
    pub(crate) fn read(&mut self, range: Range<u64>) -> Result<Values> {
        if range.start == 0 {
            // The member's `.npy` header comes first.
            let mut header = vec![0u8; (self.data_at - self.entry.start as u64) as usize];
            self.file
                .read_exact_at(&mut header, self.entry.start as u64)?;
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(&header);
            self.crc = Some((hasher, 0));
        }
        let at = self.offset_of(range.start);
        Ok(with_value_type!(self.value_type, T => {
            let mut values = zeroed_vec::<T>((range.end - range.start) as usize)?;
            self.file.read_exact_at(bytemuck::cast_slice_mut(&mut values), at)?;
            self.crc = match self.crc.take() {
                Some((mut hasher, next)) if next == range.start => {
                    hasher.update(bytemuck::cast_slice(&values));
                    Some((hasher, range.end))
                }
                _ => None,
            };
            // Little-endian on the wire; swapped on big-endian hosts.
            values.iter_mut().for_each(|x| *x = x.to_le());
            T::into_values(values)
        }))
    }

    /// Checks the member's CRC-32: the one a pass computed when it read all `len` elements
    /// in order, else by reading the member again.
    ///
    /// # Errors
    /// I/O errors; a member whose bytes fail its CRC-32.
    pub(crate) fn check_crc(&mut self, len: u64) -> Result<()> {
        match self.crc.take() {
            Some((hasher, next)) if next == len => match hasher.finalize() == self.entry.crc {
                true => Ok(()),
                false => Err(crc_error(&self.entry.name, self.entry.start)),
            },
            _ => check_stored_crc(&self.file, &self.entry),
        }
    }
}

/// A deflated member's bytes, inflated as they are asked for, in order: memory holds the
/// inflater's window and a chunk of compressed input (a remote one's chunks read ahead),
/// never the member.
pub(crate) struct Inflating {
    compressed: Stream,
    entry: Entry,
    state: Box<miniz_oxide::inflate::stream::InflateState>,
    input: Vec<u8>,
    /// The unread part of `input`.
    pending: std::ops::Range<usize>,
    /// Compressed bytes read from the member so far.
    taken: u64,
    produced: u64,
    crc: crc32fast::Hasher,
}

impl Inflating {
    /// The deflated member `entry` of the archive in `file`, from its first byte.
    ///
    /// # Errors
    /// As `file`'s [`ReadAt::size`].
    pub(crate) fn new(file: &Arc<dyn ReadAt>, entry: Entry) -> Result<Inflating> {
        use miniz_oxide::DataFormat;
        let start = entry.start as u64;
        let compressed = Stream::new(Arc::clone(file), start..start + entry.compressed)?;
        Ok(Inflating {
            compressed,
            entry,
            state: miniz_oxide::inflate::stream::InflateState::new_boxed(DataFormat::Raw),
            input: vec![0; 1 << 20],
            pending: 0..0,
            taken: 0,
            produced: 0,
            crc: crc32fast::Hasher::new(),
        })
    }

    /// The member's name.
    pub(crate) fn name(&self) -> &str {
        &self.entry.name
    }

    /// Fills `dst` with the next bytes of the member.
    ///
    /// # Errors
    /// A member that ends early, does not inflate, or runs past its declared size.
    pub(crate) fn read_exact(&mut self, dst: &mut [u8]) -> Result<()> {
        use miniz_oxide::inflate::stream::inflate;
        use miniz_oxide::{MZFlush, MZStatus};
        let broken = |what: &str| {
            ZIP.at(
                self.entry.start,
                format!("the member {:?} {what}", self.entry.name),
            )
        };
        if self.produced + dst.len() as u64 > self.entry.size {
            return Err(broken("is shorter than its array needs"));
        }
        let mut filled = 0;
        while filled < dst.len() {
            if self.pending.is_empty() && self.taken < self.entry.compressed {
                let n = (self.input.len() as u64).min(self.entry.compressed - self.taken) as usize;
                let n = self.compressed.read(&mut self.input[..n])?;
                if n == 0 {
                    return Err(broken("runs past the archive"));
                }
                self.taken += n as u64;
                self.pending = 0..n;
            }
            let input = &self.input[self.pending.clone()];
            let result = inflate(&mut self.state, input, &mut dst[filled..], MZFlush::None);
            self.pending.start += result.bytes_consumed;
            filled += result.bytes_written;
            let more_input = !self.pending.is_empty() || self.taken < self.entry.compressed;
            match result.status {
                Ok(MZStatus::Ok) => {}
                Ok(MZStatus::StreamEnd) if filled == dst.len() => {}
                Ok(MZStatus::StreamEnd) => return Err(broken("ends before its declared size")),
                Ok(MZStatus::NeedDict) => return Err(broken("does not inflate")),
                // No progress without more input: read more, unless there is none.
                Err(miniz_oxide::MZError::Buf) if more_input => {}
                Err(miniz_oxide::MZError::Buf) => {
                    return Err(broken("ends before its declared size"))
                }
                Err(_) => return Err(broken("does not inflate")),
            }
        }
        self.crc.update(dst);
        self.produced += dst.len() as u64;
        Ok(())
    }

    /// Checks, once every byte was read, the member's size and CRC-32.
    ///
    /// # Errors
    /// A member of another size or whose bytes fail its CRC-32.
    pub(crate) fn finish(&self) -> Result<()> {
        if self.produced != self.entry.size {
            return Err(ZIP.at(
                self.entry.start,
                format!("the member {:?} was not read to its end", self.entry.name),
            ));
        }
        match self.crc.clone().finalize() == self.entry.crc {
            true => Ok(()),
            false => Err(crc_error(&self.entry.name, self.entry.start)),
        }
    }
}
