//! Opening any Binsparse container as a pipe source: Zarr groups through `zarr/source.rs`,
//! `.npz` and HDF5 files through `source.rs`. Apart from both, so that neither imports the
//! other.

use std::path::Path;

use super::source::BinsparseSource;
use super::ReadOptions;
use serde_daphne::Result;

impl BinsparseSource {
    /// Opens the Binsparse file or Zarr group at `path`: what can be read in place (an
    /// `.npz` archive's stored arrays, a Zarr group's chunks) is indexed, with its descriptor
    /// and pointers checked; anything else is read whole.
    ///
    /// # Errors
    /// As [`super::read`].
    pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<BinsparseSource> {
        if !super::is_zarr(path) {
            return BinsparseSource::open_file(path, options);
        }
        #[cfg(feature = "zarr")]
        if path.is_dir() {
            return BinsparseSource::open_group(&crate::storage::Input::local(path)?, options);
        }
        BinsparseSource::read_whole(path, std::fs::metadata(path)?.len(), options)
    }

    /// Opens the Zarr group `input` (a folder wherever it is kept): its chunks read in place
    /// where the pipe can, else the group read whole, a key at a time.
    ///
    /// # Errors
    /// As [`super::read`]; request errors.
    #[cfg(feature = "zarr")]
    pub(crate) fn open_group(
        input: &crate::storage::Input,
        options: &ReadOptions,
    ) -> Result<BinsparseSource> {
        use super::zarr::{FolderStore, Store};
        let store = FolderStore(input.clone());
        let stored = store.stored_bytes()?;
        if let Some(source) = super::zarr::source::in_place(input, stored)? {
            return Ok(source);
        }
        let read = super::zarr::read_store(&store, options)?;
        BinsparseSource::held(read, stored)
    }
}
