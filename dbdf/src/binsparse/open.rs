//! Opening any Binsparse container as a pipe source: Zarr groups through `zarr/source.rs`,
//! `.npz` and HDF5 files through `source.rs`. Apart from both, so that neither imports the
//! other.

use std::path::Path;

use super::source::BinsparseSource;
use serde_daphne::Result;

impl BinsparseSource {
    /// Opens the Binsparse file or Zarr group at `path`: what can be read in place (an
    /// `.npz` archive's stored arrays, a Zarr group's chunks) is indexed, with its descriptor
    /// and pointers checked; anything else is read whole.
    ///
    /// # Errors
    /// As [`super::read`].
    pub(crate) fn open(path: &Path) -> Result<BinsparseSource> {
        if !super::is_zarr(path) {
            return BinsparseSource::open_file(path);
        }
        #[cfg(feature = "zarr")]
        {
            use super::zarr::Store;
            let stored = super::zarr::Directory(path.to_owned()).stored_bytes()?;
            if let Some(source) = super::zarr::source::in_place(path, stored)? {
                return Ok(source);
            }
        }
        BinsparseSource::read_whole(path, std::fs::metadata(path)?.len())
    }
}
