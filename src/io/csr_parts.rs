//! Whole matrices read from a [`DbdfFile`] as CSR arrays of any index type.

use std::io::{Read, Seek};

use crate::error::Result;
#[cfg(unix)]
use crate::io::index::{ObjectInfo, StoredBody};
use crate::io::lazy::DbdfFile;
#[cfg(unix)]
use crate::model::runtime_csr_read::read_runtime_csr_at;
use crate::model::{CsrIndex, CsrParts};
#[cfg(unix)]
use crate::options::Dialect;
#[cfg(unix)]
use crate::wire::runtime::RuntimeHead;
use crate::wire::Element;
#[cfg(unix)]
use crate::wire::{BlockType, DataType};

impl<R: Read + Seek> DbdfFile<R> {
    /// Matrix `index` as CSR arrays with indices of type `I` (`u32` to halve the index
    /// memory, `i32` as scipy keeps them, `usize` as sprs does), values converted exactly to
    /// `T` (zeros of dense blocks left out). A spec-dialect matrix stored as one sparse
    /// block of type `T`, in a file opened with plain reads, is read on every core straight
    /// into the arrays, and so is one in DAPHNE's layout (its `u64` indices narrowed as they
    /// are read); any other goes through [`Object::into_csr_parts_as`].
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
    /// [`crate::ErrorKind::LossyConversion`] for a value or index that does not fit its type;
    /// [`crate::ErrorKind::AllocationLimit`] beyond [`Options::max_alloc`]; any malformed block, with the
    /// offset of the first fault in the file.
    ///
    /// [`crate::ErrorKind::LossyConversion`]: crate::ErrorKind::LossyConversion
    /// [`crate::ErrorKind::AllocationLimit`]: crate::ErrorKind::AllocationLimit
    /// [`Options::max_alloc`]: crate::Options::max_alloc
    pub fn read_csr_parts<T: Element, I: CsrIndex>(
        &mut self,
        index: usize,
    ) -> Result<CsrParts<T, I>> {
        let info = self.object(index)?;
        self.check_alloc(index, info.natural_bytes())?;
        #[cfg(unix)]
        if let Some(file) = &self.positional {
            if let Some(body) = one_sparse_block::<T, I>(info) {
                return crate::model::sparse_read::read_sparse_block_at(&**file, body);
            }
            if let Some(head) = runtime_csr::<T, I>(info) {
                // Malformed input goes on to the general reader, which names the fault.
                if let Some(parts) = read_runtime_csr_at(&**file, head)? {
                    return Ok(parts);
                }
            }
        }
        self.object_at(index)?.into_csr_parts_as()
    }
}

/// The head of `info`, when it is a runtime-dialect CSR matrix of `T` values whose entries
/// and columns fit `I`.
#[cfg(unix)]
fn runtime_csr<T: Element, I: CsrIndex>(info: &ObjectInfo) -> Option<&RuntimeHead> {
    let StoredBody::Runtime(head) = &info.layout else {
        return None;
    };
    (head.data_type == DataType::CsrMatrix
        && head.value_types.first() == Some(&T::VALUE_TYPE)
        && fits::<I>(head.nnz?)
        && fits::<I>(head.cols))
    .then_some(head)
}

/// Whether `n` is an `I`.
#[cfg(unix)]
fn fits<I: CsrIndex>(n: u64) -> bool {
    usize::try_from(n)
        .ok()
        .and_then(I::try_from_usize)
        .is_some()
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
    let head = &block.head()?;
    let nnz = block.nnz()?;
    let whole = (u64::from(head.rows), u64::from(head.cols)) == info.header.shape();
    (info.dialect == Dialect::Spec
        && info.header.matrix_value_type().is_some()
        && block.block_type == BlockType::Sparse
        && block.value_type == Some(T::VALUE_TYPE)
        && whole
        && fits::<I>(nnz)
        && fits::<I>(u64::from(head.cols)))
    .then_some(crate::model::sparse_read::SparseBody {
        at: block.body(),
        rows: head.rows,
        cols: head.cols,
        nnz,
        nnz_offset: head.nnz_offset,
    })
}
