//! Where an output of several files goes (a Zarr group, SystemDS part files and their
//! `.mtd`), the same way for a folder of this file system and the objects under a prefix:
//! each file written as a stream and in place when finished, and the whole set visible to
//! readers only when the writer's caller commits it (the old set until then, whole).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_daphne::Result;

/// A file of an output, written as a stream: in place when [`FileOut::finish`]ed, gone if
/// dropped before.
pub trait FileOut: Write + Send {
    /// Writes out what is buffered and puts the file in place (under its output).
    ///
    /// # Errors
    /// I/O or request errors.
    fn finish(self: Box<Self>) -> Result<()>;

    /// How many first bytes the file holds back for [`FileOut::finish_with_head`] (one from
    /// [`OutputFiles::whole_head_last`]); the bytes written go after them. 0 (the default):
    /// none, the file is written in order.
    fn head(&self) -> u64 {
        0
    }

    /// [`FileOut::finish`], with `head` put first: [`FileOut::head`] bytes, or, when no byte
    /// followed, the whole file.
    ///
    /// # Errors
    /// I/O or request errors; a file that holds no head.
    fn finish_with_head(self: Box<Self>, head: &[u8]) -> Result<()> {
        let _ = head;
        Err(serde_daphne::Error::invalid(
            "internal: a file without a head",
        ))
    }
}

/// The files of one output being written: the output itself as one file, or the files
/// under it as a folder (keys with `/`: `values/c/0`), and its sidecars.
pub trait OutputFiles: Sync {
    /// The output written as one file (SystemDS's single file).
    ///
    /// # Errors
    /// I/O or request errors.
    fn whole(&self) -> Result<Box<dyn FileOut + '_>>;

    /// The file `key` of the output written as a folder.
    ///
    /// # Errors
    /// I/O or request errors.
    fn create(&self, key: &str) -> Result<Box<dyn FileOut + '_>>;

    /// The bytes of the file `key` written before.
    ///
    /// # Errors
    /// I/O or request errors.
    fn read(&self, key: &str) -> Result<Vec<u8>>;

    /// Removes the file `key` written before.
    ///
    /// # Errors
    /// I/O or request errors.
    fn remove(&self, key: &str) -> Result<()>;

    /// The sidecar named with `suffix` (`.mtd`), put in place with the output.
    ///
    /// # Errors
    /// I/O or request errors.
    fn sidecar(&self, suffix: &'static str, bytes: Vec<u8>) -> Result<()>;

    /// The output as one file whose first bytes are written last ([`FileOut::head`]: a
    /// header that points past the body, as HDF5's superblock); `None` where the output
    /// does not hold them back (a local file, which its writer seeks in).
    ///
    /// # Errors
    /// I/O or request errors.
    fn whole_head_last(&self) -> Result<Option<Box<dyn FileOut + '_>>> {
        Ok(None)
    }

    /// Writes the file `key` of the folder whole.
    ///
    /// # Errors
    /// As [`OutputFiles::create`].
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let mut file = self.create(key)?;
        file.write_all(bytes)?;
        file.finish()
    }
}

/// A folder of this file system written file by file, as a replacing write sees the folder
/// it fills before swapping it into place; it has no whole file and no sidecars (its
/// writer's file set has them).
pub(crate) struct LocalFolder(pub(crate) PathBuf);

impl LocalFolder {
    fn path(&self, key: &str) -> PathBuf {
        self.0.join(key)
    }
}

impl FileOut for BufWriter<File> {
    fn finish(mut self: Box<Self>) -> Result<()> {
        self.flush()?;
        Ok(())
    }
}

impl OutputFiles for LocalFolder {
    fn whole(&self) -> Result<Box<dyn FileOut + '_>> {
        Err(serde_daphne::Error::invalid(
            "internal: a local folder's output written as one file",
        ))
    }

    fn create(&self, key: &str) -> Result<Box<dyn FileOut + '_>> {
        let path = self.path(key);
        if let Some(parent) = path.parent().filter(|p| *p != Path::new("")) {
            std::fs::create_dir_all(parent)?;
        }
        Ok(Box::new(BufWriter::with_capacity(
            1 << 20,
            File::create(path)?,
        )))
    }

    fn read(&self, key: &str) -> Result<Vec<u8>> {
        Ok(std::fs::read(self.path(key))?)
    }

    fn remove(&self, key: &str) -> Result<()> {
        Ok(std::fs::remove_file(self.path(key))?)
    }

    fn sidecar(&self, _: &'static str, _: Vec<u8>) -> Result<()> {
        Err(serde_daphne::Error::invalid(
            "internal: a local folder's sidecar written by its file set",
        ))
    }
}
