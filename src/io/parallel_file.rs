//! A file whose large reads are split between the cores: for a big block's values, the
//! kernel's copy out of the page cache (and the zeroing of the fresh pages it copies into)
//! was the whole of the read, on one core. Each core reads its share with positional reads
//! and takes the page faults of what it fills, so such buffers need no prefaulting.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::wire::read_at::ReadAt;
use crate::wire::values::zeroed_vec;

/// Reads of at least this many bytes are split between the cores (on Unix).
#[cfg_attr(not(unix), allow(dead_code))]
const IN_PARALLEL_FROM: usize = 32 << 20;

/// A [`File`] read from its position, large reads on every core (on Unix; plain reads
/// elsewhere).
#[derive(Debug)]
pub(crate) struct ParallelFile(pub(crate) File);

/// Whether a read into `len` bytes is split between the cores.
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) fn splits(len: usize) -> bool {
    crate::platform::positional_reads() && len >= IN_PARALLEL_FROM && crate::threads::workers() > 1
}

impl ParallelFile {
    /// A second handle on the file for positional reads on every core (they leave this
    /// handle's offset alone), where files are read so.
    pub(crate) fn positional_handle(&self) -> io::Result<Option<Arc<dyn ReadAt>>> {
        match crate::platform::positional_reads() {
            true => Ok(Some(Arc::new(self.0.try_clone()?))),
            false => Ok(None),
        }
    }

    /// Fills `buf` from `at` on every core; `Ok(false)` if the file ends first.
    #[cfg(unix)]
    fn read_exact_at_on_every_core(&self, buf: &mut [u8], at: u64) -> io::Result<bool> {
        match crate::wire::read_at::read_exact_at_on_every_core(&self.0, buf, at) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Read for ParallelFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        if splits(buf.len()) {
            let at = self.0.stream_position()?;
            if self.read_exact_at_on_every_core(buf, at)? {
                self.0.seek(SeekFrom::Start(at + buf.len() as u64))?;
                return Ok(buf.len());
            }
            // The file is shorter than the buffer (it shrank): read what is there, in order.
        }
        self.0.read(buf)
    }

    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        self.0.read_vectored(bufs)
    }
}

/// The whole file at `path` in a new vector, as `std::fs::read` gives it, but read on
/// every core into fresh memory (see `pages`): `std::fs::read` of a 168 MB archive spent as long in
/// page faults on one core as in the copy. A file that grows or shrinks while it is read is
/// read to its new end.
///
/// # Errors
/// I/O errors; [`crate::ErrorKind::OutOfMemory`].
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let mut file = ParallelFile(File::open(path)?);
    let len = usize::try_from(file.0.metadata()?.len()).unwrap_or(usize::MAX);
    let mut out = zeroed_vec::<u8>(len)?;
    let mut filled = 0;
    while filled < len {
        match file.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    out.truncate(filled);
    file.read_to_end(&mut out)?;
    Ok(out)
}

impl Seek for ParallelFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.0.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_reads_on_every_core_give_the_files_bytes_and_position() {
        let path = std::env::temp_dir().join(format!("serde_daphne_pfile_{}", std::process::id()));
        let bytes: Vec<u8> = (0..(IN_PARALLEL_FROM + 12_345) as u32)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let mut file = ParallelFile(File::open(&path).unwrap());
        let mut head = [0u8; 7];
        file.read_exact(&mut head).unwrap();
        let mut big = vec![0u8; IN_PARALLEL_FROM + 1];
        file.read_exact(&mut big).unwrap();
        assert_eq!(&big[..], &bytes[7..7 + big.len()]);
        let mut rest = Vec::new();
        file.read_to_end(&mut rest).unwrap();
        assert_eq!(&rest[..], &bytes[7 + big.len()..]);
        // A buffer longer than what is left reads what is left, from where the file was.
        file.seek(SeekFrom::Start(100)).unwrap();
        let mut longer = vec![0u8; bytes.len()];
        let got = file.read(&mut longer).unwrap();
        assert!(got > 0 && got <= bytes.len() - 100);
        assert_eq!(&longer[..got], &bytes[100..100 + got]);
        std::fs::remove_file(&path).unwrap();
    }
}
