//! A [`DbdfFile`] read from a [`ReadAt`] source, with or without a block index.

use std::sync::Arc;

use super::block_index::BlockIndex;
use super::file_reader::FileReader;
use super::lazy::DbdfFile;
use super::sparse_rows::RowStarts;
use crate::error::{Error, ErrorDetails, Result};
use crate::options::Options;
use crate::wire::read_at::ReadAt;

impl Options {
    /// Opens and indexes a file read through `source`: memory, or an object in a store (the
    /// `dbdf` crate's object-store reader), or any [`ReadAt`], with the text of the file's
    /// `.meta` sidecar where it has one (a runtime-dialect frame's labels are there;
    /// [`Options::open`] reads the sidecar beside a local file itself). A source with a
    /// minimum request ([`ReadAt::min_request`]) is read with large read-ahead while its
    /// headers are walked, and each block it reads in one request.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_daphne::{Dense, Options, ReadAt};
    ///
    /// let bytes = serde_daphne::to_vec(&Dense(ndarray::array![[1u8, 2], [3, 4]]))?;
    /// let source: Arc<dyn ReadAt> = Arc::new(bytes);
    /// let mut file = Options::new().open_at(source, None)?;
    /// assert_eq!(file.objects()[0].header.shape(), (2, 2));
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`DbdfFile::open`]; an invalid or disagreeing sidecar.
    pub fn open_at(&self, source: Arc<dyn ReadAt>, sidecar: Option<&str>) -> Result<DbdfFile> {
        let len = source.size()?;
        let positional = local(&source);
        let src = FileReader::source_over(source, len);
        let mut file = DbdfFile::build_from(src, self, super::block_index::hint(sidecar)?)?;
        file.positional = positional;
        Ok(file)
    }

    /// Opens a file read through `source` with its block index: one read of the file's first
    /// header bytes (compared with the index's), none of its other headers. Every later read
    /// that covers header bytes is compared with the index's too.
    ///
    /// # Errors
    /// [`crate::ErrorKind::StaleIndex`] when the file's length or header bytes differ from
    /// the index's, or a walk over the index's bytes fails; I/O errors.
    pub fn open_indexed(
        &self,
        source: Arc<dyn ReadAt>,
        index: Arc<BlockIndex>,
    ) -> Result<DbdfFile> {
        let len = source.size()?;
        if len != index.file_len() {
            return Err(ErrorDetails::StaleIndex {
                offset: len.min(index.file_len()),
                message: format!(
                    "the index was made for a file of {} bytes; this one has {len}",
                    index.file_len()
                ),
            }
            .into());
        }
        let mut src =
            FileReader::source_over(source, len).with_verify(Some(Arc::clone(index.extents())));
        if let Some((at, bytes)) = index.first_run() {
            src.prefetch(at..at + bytes.len() as u64)?;
            let mut first = vec![0; bytes.len()];
            src.read_at(at, &mut first, "the file's first header")?;
        }
        let hint = super::block_index::hint(index.meta())?;
        Ok(DbdfFile {
            src,
            objects: Arc::new(index.objects(self)?),
            options: self.clone(),
            hint,
            positional: None,
            sparse_rows: RowStarts::new(),
            path: None,
        })
    }
}

impl DbdfFile<FileReader> {
    /// Another handle on the same file and index, for reads on another thread: the index is
    /// shared, not read again, and each handle reads at its own offsets (a file opened by
    /// path is opened again).
    ///
    /// # Errors
    /// I/O errors opening the file again; a file whose length changed since it was indexed.
    pub fn try_clone(&self) -> Result<Self> {
        let Some(source) = self.src.reader().source() else {
            let path = self.path.as_deref().ok_or_else(|| {
                Error::invalid("internal: a file neither opened by path nor read through ReadAt")
            })?;
            return self.reopen(path);
        };
        let src = FileReader::source_over(Arc::clone(source), self.src.len());
        Ok(DbdfFile {
            src: src.with_verify(self.src.verify().cloned()),
            objects: Arc::clone(&self.objects),
            options: self.options.clone(),
            hint: self.hint.clone(),
            positional: self.positional.clone(),
            sparse_rows: RowStarts::new(),
            path: None,
        })
    }
}

/// `source` again, for the positional reads on every core that files opened by path get
/// (large blocks, tiles and frame columns read straight into place), when a read costs
/// nothing beyond its bytes: memory, a local file. Not for remote sources, whose every
/// request is a round trip, nor under an index, whose header checks those reads would skip.
fn local(source: &Arc<dyn ReadAt>) -> Option<Arc<dyn ReadAt>> {
    (source.min_request() == 0 && crate::platform::positional_reads()).then(|| Arc::clone(source))
}
