//! A [`DbdfFile`] read from a [`ReadAt`] source, with or without a block index.

use std::sync::Arc;

use super::block_index::BlockIndex;
use super::file_reader::FileReader;
use super::lazy::DbdfFile;
use super::sparse_rows::RowStarts;
use crate::error::{Error, ErrorDetails, Result};
use crate::options::Options;
use crate::wire::read_at::ReadAt;

impl DbdfFile<FileReader> {
    /// Opens and indexes a file read through `source`: memory, or an object in a store (the
    /// `dbdf` crate's object-store reader), or any [`ReadAt`]. A source with a minimum
    /// request ([`ReadAt::min_request`]) is read with large read-ahead while its headers
    /// are walked, and each block it reads in one request.
    ///
    /// # Errors
    /// As [`DbdfFile::open`].
    pub fn from_read_at(source: Arc<dyn ReadAt>, options: &Options) -> Result<Self> {
        DbdfFile::from_read_at_with_meta(source, options, None)
    }

    /// [`DbdfFile::from_read_at`] with the text of the file's `.meta` sidecar, which a
    /// runtime-dialect file needs for its frame labels (and [`DbdfFile::open`] reads beside a
    /// local file).
    ///
    /// # Errors
    /// As [`DbdfFile::from_read_at`]; an invalid or disagreeing sidecar.
    pub fn from_read_at_with_meta(
        source: Arc<dyn ReadAt>,
        options: &Options,
        meta: Option<&str>,
    ) -> Result<Self> {
        let len = source.size()?;
        let positional = local(&source);
        let src = FileReader::source_over(source, len);
        let mut file = DbdfFile::build_from(src, options, super::block_index::hint(meta)?)?;
        file.positional = positional;
        Ok(file)
    }

    /// Another handle on the same [`ReadAt`] source and index, for reads on another thread
    /// ([`DbdfFile::reopen`] for files opened by path).
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] for a file not opened with
    /// [`DbdfFile::from_read_at`].
    pub fn try_clone(&self) -> Result<Self> {
        let source = self.src.reader().source().ok_or_else(|| {
            Error::invalid("a file opened by path is cloned with DbdfFile::reopen")
        })?;
        let src = FileReader::source_over(Arc::clone(source), self.src.len());
        Ok(DbdfFile {
            src: src.with_verify(self.src.verify().cloned()),
            objects: Arc::clone(&self.objects),
            options: self.options.clone(),
            hint: self.hint.clone(),
            positional: self.positional.clone(),
            sparse_rows: RowStarts::new(),
        })
    }

    /// Opens a file read through `source` with its block index: one read of the file's first
    /// header bytes (compared with the index's), none of its other headers. Every later read
    /// that covers header bytes is compared with the index's too.
    ///
    /// # Errors
    /// [`crate::ErrorKind::StaleIndex`] when the file's length or header bytes differ from
    /// the index's, or a walk over the index's bytes fails; I/O errors.
    pub fn from_read_at_indexed(
        source: Arc<dyn ReadAt>,
        options: &Options,
        index: Arc<BlockIndex>,
    ) -> Result<Self> {
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
            objects: Arc::new(index.objects(options)?),
            options: options.clone(),
            hint,
            positional: None,
            sparse_rows: RowStarts::new(),
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
