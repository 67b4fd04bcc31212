//! Whole matrices read from a [`DbdfFile`] as CSR arrays of any index type.

use std::io::{Read, Seek};

use crate::error::Result;
use crate::io::index::ObjectInfo;
use crate::io::lazy::DbdfFile;
use crate::model::{CsrIndex, CsrParts};
use crate::options::Dialect;
use crate::wire::{BlockType, Element};

impl<R: Read + Seek> DbdfFile<R> {
    /// Matrix `index` as CSR arrays with indices of type `I` (`u32` to halve the index
    /// memory, `i32` as scipy keeps them, `usize` as sprs does), values converted exactly to
    /// `T` (zeros of dense blocks left out). A spec-dialect matrix stored as one sparse
    /// block of type `T`, in a file opened with plain reads, is read on every core straight
    /// into the arrays; any other goes through [`Object::into_csr_parts_as`].
    ///
    /// ```
    /// use serde_daphne::{Csr, DbdfFile};
    ///
    /// let path = std::env::temp_dir().join("serde_daphne_doc_read_csr_parts.dbdf");
    /// let m = sprs::CsMat::new((2, 3), vec![0, 1, 2], vec![2, 0], vec![1.5f64, -2.0]);
    /// serde_daphne::to_file(&path, &Csr(m))?;
    /// let parts = DbdfFile::open(&path)?.read_csr_parts::<f64, i32>(0)?;
    /// assert_eq!(parts.row_offsets, [0, 1, 2]);
    /// assert_eq!(parts.col_indices, [2, 0]);
    /// assert_eq!(parts.values, [1.5, -2.0]);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// [`Object::into_csr_parts_as`]: crate::Object::into_csr_parts_as
    ///
    /// # Errors
    /// [`Error::LossyConversion`] for a value or index that does not fit its type;
    /// [`Error::AllocationLimit`] beyond [`Options::max_alloc`]; any malformed block, with the
    /// offset of the first fault in the file.
    ///
    /// [`Error::LossyConversion`]: crate::Error::LossyConversion
    /// [`Error::AllocationLimit`]: crate::Error::AllocationLimit
    /// [`Options::max_alloc`]: crate::Options::max_alloc
    pub fn read_csr_parts<T: Element, I: CsrIndex>(
        &mut self,
        index: usize,
    ) -> Result<CsrParts<T, I>> {
        #[cfg(unix)]
        {
            let info = self.object(index)?;
            if let (Some(body), Some(file)) = (one_sparse_block::<T, I>(info), &self.positional) {
                self.check_alloc(index, info.natural_bytes())?;
                return crate::model::sparse_read::read_sparse_block_at(file, body);
            }
        }
        self.object_checked(index)?.into_csr_parts_as()
    }
}

/// Where the rows of `info` are, when it is a spec-dialect matrix stored as one sparse block
/// of `T` values whose entries and columns fit `I`.
#[cfg(unix)]
fn one_sparse_block<T: Element, I: CsrIndex>(
    info: &ObjectInfo,
) -> Option<crate::model::sparse_read::SparseBody> {
    let [block] = info.blocks.as_slice() else {
        return None;
    };
    let head = block.head.as_ref()?;
    let nnz = block.nnz?;
    let fits = |n: u64| {
        usize::try_from(n)
            .ok()
            .and_then(I::try_from_usize)
            .is_some()
    };
    let whole = (u64::from(head.rows), u64::from(head.cols)) == info.header.shape();
    (info.dialect == Dialect::Spec
        && info.header.matrix_value_type().is_some()
        && block.block_type == BlockType::Sparse
        && block.value_type == Some(T::VALUE_TYPE)
        && whole
        && fits(nnz)
        && fits(u64::from(head.cols)))
    .then_some(crate::model::sparse_read::SparseBody {
        at: block.body,
        rows: head.rows,
        cols: head.cols,
        nnz,
        nnz_offset: head.nnz_offset,
    })
}
