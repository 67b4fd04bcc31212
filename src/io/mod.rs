//! Files: atomic writes and reads sized by the file's length; DAPHNE's `.meta` sidecars.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::de::Deserializer;
use crate::error::Result;
use crate::options::Options;
use crate::wire::IoSource;

mod atomic;
pub(crate) mod block_index;
mod csr_parts;
mod dense_layout;
mod file_reader;
mod file_set;
#[cfg(unix)]
mod frame_columns;
mod index;
mod lazy;
pub mod meta;
mod open_at;
mod parallel_file;
pub use parallel_file::read_file;
pub mod progress;
mod sparse_rows;
mod stream;
mod window;

pub use atomic::{remove_stale_temporaries, scratch_file, temporary_path, write_buffered};
pub(crate) use atomic::{Pending, Writeback};
pub(crate) use block_index::index_path;
pub use block_index::BlockIndex;
pub use dense_layout::DenseLayout;
pub use file_reader::FileReader;
pub use file_set::{replace_directory, FileSet};
pub use index::{BlockInfo, ObjectInfo};
pub use lazy::DbdfFile;
pub use stream::DbdfWriter;

pub use meta::{read_sidecar, sidecar_path};

/// Serializes `value` to the file at `path`, atomically, with the default options
/// ([`Options::to_file`] with others).
///
/// The bytes go to a temporary file in the same folder, which is synced and then renamed
/// over `path`; on any failure the temporary file is removed and `path` is left as it was.
///
/// ```
/// let path = std::env::temp_dir().join("serde_daphne_doc_to_file.dbdf");
/// serde_daphne::to_file(&path, &vec![1.0f64, 2.0])?;
/// let back: Vec<f64> = serde_daphne::from_file(&path)?;
/// assert_eq!(back, vec![1.0, 2.0]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// I/O errors, and the errors of [`crate::to_writer`].
pub fn to_file<P: AsRef<Path>, T: ?Sized + Serialize>(path: P, value: &T) -> Result<()> {
    Options::new().to_file(path, value)
}

impl Options {
    /// Serializes `value` to the file at `path`, atomically, with these options, as
    /// [`to_file`] does with the defaults.
    ///
    /// In the runtime dialect ([`Options::dialect`]) a file holding one matrix or frame also gets
    /// the `.meta` sidecar DAPHNE's `read` kernel needs; a stale sidecar beside `path` (left by an
    /// earlier file there) is removed whenever the new file is not one object DAPHNE reads,
    /// spec-dialect files included, and so is a block index (`.index`) of the old file. The file
    /// and its sidecars change together or not at all ([`crate::lowlevel::FileSet`]).
    ///
    /// # Errors
    /// As [`to_file`].
    pub fn to_file<P: AsRef<Path>, T: ?Sized + Serialize>(&self, path: P, value: &T) -> Result<()> {
        let path = path.as_ref();
        let mut set = FileSet::new(self.sync);
        set.buffered(path, |out| self.to_writer(out, value))?;
        commit_dbdf(set, path, self.writes_runtime())
    }
}

/// Commits `set`, which holds the finished `.dbdf` file for `path`, with that file's
/// sidecars ([`FileSet`]): in the runtime dialect the `.meta` DAPHNE needs, made from the
/// file's own first bytes (none where the file is not one object DAPHNE reads); no sidecar
/// otherwise, since one left by an earlier runtime-dialect file would describe another file;
/// and no block index, since an earlier one describes the old file.
pub(crate) fn commit_dbdf(mut set: FileSet, path: &Path, runtime: bool) -> Result<()> {
    let meta = match set.file_of(path) {
        Some(file) if runtime => meta::runtime_meta_of(file)?,
        _ => None,
    };
    match meta {
        Some(json) => set.bytes(sidecar_path(path), json.as_bytes())?,
        None => set.remove(sidecar_path(path)),
    }
    set.remove(index_path(path));
    set.commit()
}

/// The most bytes handed to the kernel in one write to a file. The page cache takes a write's
/// bytes in folios as large as the write, up to a huge page (2 MiB), and a huge page's folio
/// needs a whole free 2 MiB block: in a virtual machine whose host takes back free memory
/// (free page reporting does so for whole free 2 MiB blocks) that is memory the host must back
/// again, 4 KiB at a time, when the copy touches it. Writes of 1 MiB take smaller folios, from
/// memory freed a moment ago; where nothing is taken back they cost the same.
pub(crate) const MOST_PER_WRITE: usize = 1 << 20;

/// What of `buf` one write passes on (see [`MOST_PER_WRITE`]).
pub(crate) fn one_write(buf: &[u8]) -> &[u8] {
    &buf[..buf.len().min(MOST_PER_WRITE)]
}

/// Where `bufs` do not fit one write (see [`MOST_PER_WRITE`]), the first non-empty one, for
/// the writer to write alone, as [`Write::write_vectored`]'s default does.
pub(crate) fn over_one_write<'a>(bufs: &'a [std::io::IoSlice<'a>]) -> Option<&'a [u8]> {
    let total = bufs.iter().map(|b| b.len()).sum::<usize>();
    (total > MOST_PER_WRITE).then(|| {
        bufs.iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b)
    })
}

/// A writer that counts the bytes it passes on: the file offset of what comes next.
pub(crate) struct Counted<W> {
    pub(crate) inner: W,
    pub(crate) written: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // In pieces: a buffered writer passes a piece as large as its buffer on to the file.
        let n = self.inner.write(one_write(buf))?;
        self.written += n as u64;
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        if let Some(first) = over_one_write(bufs) {
            return self.write(first);
        }
        let n = self.inner.write_vectored(bufs)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Once a file reaches this many bytes, its disk space is reserved ahead of the writes.
const PREALLOCATE_FROM: u64 = 1 << 20;

/// A file writer that reserves disk space ahead of its writes (`fallocate` keeping the file
/// size, as numpy's `tofile` does for its one write): ext4 and XFS then copy into allocated
/// extents instead of allocating delayed blocks page by page, which measured markedly faster
/// into the page cache. A write of 1 MiB or more reserves its own bytes;
/// smaller ones (a buffered writer's, say) reserve ahead of themselves by a quarter of what
/// was written (1 to 64 MiB), and what that reserved past the end is released when the
/// writer is dropped. Best effort: where the file system cannot (tmpfs, other systems), the
/// writes go on as they would have.
pub struct Preallocating<'f> {
    file: &'f mut File,
    position: u64,
    /// Disk reserved up to here.
    reserved: u64,
}

impl<'f> Preallocating<'f> {
    /// Writes to `file`, which is at its start.
    pub fn new(file: &'f mut File) -> Self {
        Preallocating {
            file,
            position: 0,
            reserved: 0,
        }
    }

    /// Reserves ahead of a write of `len` bytes.
    fn reserve(&mut self, len: usize) {
        let end = self.position + len as u64;
        if end > self.reserved && end >= PREALLOCATE_FROM {
            // A large write reserves what it needs; small ones reserve ahead of themselves.
            let ahead = match len as u64 >= PREALLOCATE_FROM {
                true => 0,
                false => (end / 4).clamp(1 << 20, 64 << 20),
            };
            let from = self.reserved.max(self.position);
            preallocate(self.file, from, end + ahead - from);
            self.reserved = end + ahead;
        }
    }
}

impl Write for Preallocating<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let buf = one_write(buf);
        self.reserve(buf.len());
        let n = self.file.write(buf)?;
        self.position += n as u64;
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        if let Some(first) = over_one_write(bufs) {
            return self.write(first);
        }
        self.reserve(bufs.iter().map(|b| b.len()).sum());
        let n = self.file.write_vectored(bufs)?;
        self.position += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Preallocating<'_> {
    /// Releases the space reserved past the end: setting the file's length to what it is
    /// frees the blocks beyond it, and changes neither its length nor its bytes.
    fn drop(&mut self) {
        if self.reserved > self.position {
            if let Ok(meta) = self.file.metadata() {
                let _ = self.file.set_len(meta.len());
            }
        }
    }
}

/// Reserves `len` bytes of disk from `offset` without changing the file's size.
#[cfg(target_os = "linux")]
fn preallocate(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    if crate::platform::portable() {
        return;
    }
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return;
    };
    // SAFETY: `fallocate` reads no memory of ours; the descriptor belongs to `file`, which is
    // open for writing and outlives the call. KEEP_SIZE leaves the file's length and
    // contents as they are; an error (unsupported file system) changes nothing and is
    // ignored, the write that follows being correct either way.
    #[allow(unsafe_code)]
    unsafe {
        libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len);
    }
}

#[cfg(not(target_os = "linux"))]
fn preallocate(_: &File, _: u64, _: u64) {}

/// Enough for any header this crate writes short of frames with megabytes of labels.
pub(crate) const PREFIX_LEN: usize = 1 << 20;

/// `path` with `suffix` appended to its last component (`x.dbdf` -> `x.dbdf.meta`): how
/// DAPHNE names sidecars and SystemDS its `.mtd` files.
pub fn appended(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Deserializes a `T` from the file at `path`, which must hold exactly its objects.
///
/// ```
/// use serde_daphne::Dense;
///
/// let path = std::env::temp_dir().join("serde_daphne_doc_from_file.dbdf");
/// serde_daphne::to_file(&path, &Dense(ndarray::array![[1u8, 2], [3, 4]]))?;
/// let m: Dense<u8> = serde_daphne::from_file(&path)?;
/// assert_eq!(m.0, ndarray::array![[1, 2], [3, 4]]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// I/O errors, and the errors of [`crate::from_slice`].
pub fn from_file<P: AsRef<Path>, T: DeserializeOwned>(path: P) -> Result<T> {
    Options::new().from_file(path)
}

impl Options {
    /// Deserializes a `T` from the file at `path` with these options (such as
    /// [`Options::max_bytes`]), as [`from_file`] does with the defaults.
    ///
    /// A `.meta` sidecar beside the file (as DAPHNE writes them) is used for the first object:
    /// it settles the dialect, gives runtime frames their labels, and must agree with the file.
    ///
    /// # Errors
    /// As [`from_file`]; [`crate::ErrorKind::Sidecar`] when the sidecar is invalid or disagrees.
    #[allow(clippy::wrong_self_convention)]
    pub fn from_file<P: AsRef<Path>, T: DeserializeOwned>(&self, path: P) -> Result<T> {
        let path = path.as_ref();
        let hint = read_sidecar(path)?;
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let file = parallel_file::ParallelFile(file);
        let positional = file.positional_handle()?;
        let src = IoSource::new(file, self.max_bytes)
            .with_known_len(len)
            .with_parallel_reads(true)
            .seekable();
        let mut de = Deserializer::from_source_with(src, self);
        if let Some(positional) = positional {
            de = de.with_file(positional, len);
        }
        if let Some(hint) = hint {
            de = de.with_hint(hint);
        }
        let value = T::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::BufWriter;

    /// Reserving space never changes what the file holds or its length.
    #[test]
    fn preallocated_writes_keep_the_files_length_and_bytes() {
        let path =
            std::env::temp_dir().join(format!("serde_daphne_prealloc_{}", std::process::id()));
        let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        {
            let mut file = File::create(&path).unwrap();
            let mut w = Preallocating::new(&mut file);
            w.write_all(b"head").unwrap();
            // One write hands the kernel at most MOST_PER_WRITE bytes, vectored or not.
            assert_eq!(w.write(&big).unwrap(), MOST_PER_WRITE);
            let halves = [
                std::io::IoSlice::new(&[]),
                std::io::IoSlice::new(&big[MOST_PER_WRITE..]),
            ];
            assert_eq!(w.write_vectored(&halves).unwrap(), MOST_PER_WRITE);
            w.write_all(&big[2 * MOST_PER_WRITE..]).unwrap();
            // Small writes past 1 MiB reserve ahead of themselves.
            for piece in big.chunks(100_000) {
                w.write_all(piece).unwrap();
            }
            w.write_all(b"tail").unwrap();
            w.flush().unwrap();
        }
        // What was reserved past the end was released.
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = fs::metadata(&path).unwrap();
            assert!(meta.blocks() * 512 < meta.len() + (64 << 10), "{meta:?}");
        }
        let back = fs::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        assert_eq!(back.len(), 4 + 2 * big.len() + 4);
        assert_eq!(&back[..4], b"head");
        assert_eq!(&back[4..4 + big.len()], &big[..]);
        assert_eq!(&back[4 + big.len()..4 + 2 * big.len()], &big[..]);
        assert_eq!(&back[4 + 2 * big.len()..], b"tail");
    }

    /// The lengths of the writes it was handed, and their bytes.
    #[derive(Default)]
    struct Recorded(Vec<usize>, Vec<u8>);

    impl Write for Recorded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.len());
            self.1.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_large_write_reaches_the_file_in_pieces_of_at_most_most_per_write() {
        let big: Vec<u8> = (0..(5 << 20) + 7).map(|i: u32| (i % 251) as u8).collect();
        let mut counted = Counted {
            inner: BufWriter::with_capacity(1 << 20, Recorded::default()),
            written: 0,
        };
        counted.write_all(b"head").unwrap();
        counted.write_all(&big).unwrap();
        let two = [std::io::IoSlice::new(&big), std::io::IoSlice::new(b"tail")];
        let n = counted.write_vectored(&two).unwrap();
        assert_eq!(n, MOST_PER_WRITE);
        counted.write_all(&big[n..]).unwrap();
        counted.write_all(b"tail").unwrap();
        counted.flush().unwrap();
        let recorded = counted.inner.into_inner().map_err(|_| ()).unwrap();
        assert!(
            recorded.0.iter().all(|&n| n <= MOST_PER_WRITE),
            "{:?}",
            recorded.0
        );
        assert_eq!(counted.written as usize, recorded.1.len());
        assert_eq!(recorded.1, [&b"head"[..], &big, &big, b"tail"].concat());
    }
}
