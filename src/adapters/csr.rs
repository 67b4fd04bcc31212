//! sprs `CsMat<T>` as a CSRMatrix: `#[serde(with = "serde_daphne::csr")]`.
//!
//! CSR and CSC matrices (and views) are written as CSR; reading accepts any matrix object.
//! Any sprs index type works (`CsMatI<T, u32>` takes half the index memory of `CsMat<T>`,
//! `CsMatI<T, i64>` is what scipy hands over); reading into an index type the matrix's
//! indices do not fit is [`crate::ErrorKind::LossyConversion`], never a wrapped index.
//! Through any other serde format the matrix is a plain structure
//! `{ rows, cols, indptr, indices, data }` in CSR form.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use sprs::CsMat;
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Graph {
//!     #[serde(with = "serde_daphne::csr")]
//!     adjacency: CsMat<u8>,
//! }
//!
//! let graph = Graph {
//!     adjacency: CsMat::new((3, 3), vec![0, 1, 2, 2], vec![1, 2], vec![1, 1]),
//! };
//! let bytes = serde_daphne::to_vec(&graph)?;
//! assert_eq!(serde_daphne::from_slice::<Graph>(&bytes)?, graph);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use sprs::{CsMatBase, CsMatI};

use crate::adapter_protocol;
use crate::error::{Error, Result};
use crate::model::encode::{MatrixCells, MatrixRef};
use crate::model::sparse_write::{write_whole_sparse, CsrArrays};
use crate::model::{encode::write_matrix, Block, CsrIndex, Object};
use crate::wire::runtime;
use crate::wire::{BlockData, DataType, Element};

/// Serializes a sprs matrix (CSR or CSC, owned or view, any index types) as a CSRMatrix.
/// A matrix written as one sparse block goes out from its arrays as they are, on two cores;
/// otherwise indices narrower than `usize` are widened on a copy.
///
/// # Errors
/// The serializer's errors.
pub fn serialize<T, N, Iptr, P, I, V, S>(
    matrix: &CsMatBase<T, N, P, I, V, Iptr>,
    serializer: S,
) -> Result<S::Ok, S::Error>
where
    T: Element + Serialize,
    N: CsrIndex,
    Iptr: CsrIndex,
    P: Deref<Target = [Iptr]>,
    I: Deref<Target = [N]>,
    V: Deref<Target = [T]>,
    S: Serializer,
{
    if matrix.is_csc() {
        return serialize(&matrix.to_other_storage(), serializer);
    }
    // A view of some rows has offsets that do not start at 0: rebased first.
    let offsets = matrix.indptr();
    let payload = Payload {
        rows: matrix.rows(),
        cols: matrix.cols(),
        row_offsets: offsets.to_proper(),
        col_indices: matrix.indices(),
        values: matrix.data(),
    };
    serializer.serialize_newtype_struct(adapter_protocol::CSR, &payload)
}

/// Indices as `usize`: borrowed when they have its width (a valid sprs matrix holds no
/// negative index), widened into fresh memory faulted in first otherwise.
fn as_usize<N: CsrIndex>(indices: &[N]) -> Cow<'_, [usize]> {
    if std::mem::size_of::<N>() == std::mem::size_of::<usize>() {
        return Cow::Borrowed(bytemuck::cast_slice(indices));
    }
    let mut wide = Vec::with_capacity(indices.len());
    crate::pages::fault_in_spare(&mut wide, indices.len());
    wide.extend(indices.iter().map(|i| i.index_unchecked()));
    Cow::Owned(wide)
}

/// Deserializes a `CsMatI<T, I>` (CSR; `CsMat<T>` is `CsMatI<T, usize>`) from any matrix
/// object: zeros of dense blocks are left out, stored values convert exactly to `T`.
///
/// # Errors
/// The deserializer's errors; through this crate, [`crate::ErrorKind::LossyConversion`] for a value
/// that does not fit `T` or an index that does not fit `I`, and the like.
pub fn deserialize<'de, T, I, D>(deserializer: D) -> Result<CsMatI<T, I>, D::Error>
where
    T: Element + Deserialize<'de>,
    I: CsrIndex,
    D: Deserializer<'de>,
{
    deserializer.deserialize_newtype_struct(adapter_protocol::CSR, MatrixVisitor(PhantomData))
}

pub(crate) fn object_to_csr<T: Element, I: CsrIndex>(object: Object) -> Result<CsMatI<T, I>> {
    let (rows, cols) = object.shape();
    let shape = (rows as usize, cols as usize);
    let one_sparse_block = matches!(
        object.blocks(),
        [Block {
            data: BlockData::Sparse { .. },
            ..
        }]
    );
    let parts = object.into_csr_parts_as::<T, I>()?;
    // sprs checks the structure again in a pass over every index (12 % of reading a runtime
    // CSR file, measured). Every build takes this path, so the tests run it; debug builds
    // (the tests) then check the claim below with sprs's own structure check.
    if one_sparse_block {
        // SAFETY: one sparse block covering the object was checked when it was decoded
        // (`wire::block` for the spec, `wire::runtime::check_row_offsets`/`check_columns` for
        // the runtime dialect): offsets start at 0, never decrease and end at the number of
        // entries, which is the length of both the indices and the values; indices lie inside
        // the columns and increase strictly within each row. Moving the arrays and converting
        // the indices to `I` (checked against the largest) keeps all of it: what sprs's
        // checked constructor verifies and what its algorithms rely on.
        #[allow(unsafe_code)]
        let matrix = unsafe {
            CsMatI::new_unchecked(
                sprs::CompressedStorage::CSR,
                shape,
                parts.row_offsets,
                parts.col_indices,
                parts.values,
            )
        };
        debug_assert_eq!(matrix.check_compressed_structure(), Ok(()));
        return Ok(matrix);
    }
    CsMatI::try_new(shape, parts.row_offsets, parts.col_indices, parts.values)
        .map_err(|(.., e)| Error::invalid(format!("sprs rejects the matrix: {e}")))
}

/// A CSR matrix's arrays, ready for this crate's writer or another format. The matrix is
/// valid (sprs checked it when it was made), so it stays so with its indices as usize.
struct Payload<'a, T, N: CsrIndex, P: CsrIndex> {
    rows: usize,
    cols: usize,
    /// Proper (from 0).
    row_offsets: Cow<'a, [P]>,
    col_indices: &'a [N],
    values: &'a [T],
}

impl<T: Element + Serialize, N: CsrIndex, P: CsrIndex> Serialize for Payload<'_, T, N, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(options) = adapter_protocol::take_capture() {
            return adapter_protocol::emit(serializer, |sink| {
                let arrays = CsrArrays {
                    rows: self.rows,
                    cols: self.cols,
                    offsets: &self.row_offsets,
                    indices: self.col_indices,
                    values: self.values,
                };
                // One sparse block (the common case), or DAPHNE's layout, is written from the
                // arrays as they are.
                if let Some(written) = write_whole_sparse(sink, &arrays, &options) {
                    return written;
                }
                if options.runtime_writer()? {
                    let (rows, cols) = (self.rows as u64, self.cols as u64);
                    let (offsets, indices) = (&*self.row_offsets, self.col_indices);
                    return runtime::write_csr(sink, rows, cols, offsets, indices, self.values);
                }
                let matrix = MatrixRef {
                    rows: self.rows,
                    cols: self.cols,
                    layout: MatrixCells::Csr {
                        row_offsets: &as_usize(&self.row_offsets),
                        col_indices: &as_usize(self.col_indices),
                        values: self.values,
                    },
                };
                write_matrix(sink, DataType::CsrMatrix, &matrix, &options)
            });
        }
        let mut s = serializer.serialize_struct("Csr", 5)?;
        s.serialize_field("rows", &self.rows)?;
        s.serialize_field("cols", &self.cols)?;
        s.serialize_field("indptr", &*as_usize(&self.row_offsets))?;
        s.serialize_field("indices", &*as_usize(self.col_indices))?;
        s.serialize_field("data", self.values)?;
        s.end()
    }
}

/// The plain structure other formats hold.
#[derive(Deserialize)]
struct Plain<T> {
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<T>,
}

impl<T> Plain<T> {
    fn into_matrix<I: CsrIndex, E: de::Error>(self) -> Result<CsMatI<T, I>, E> {
        let convert = |v: Vec<usize>| -> Result<Vec<I>, E> {
            v.into_iter()
                .map(|i| {
                    I::try_from_usize(i).ok_or_else(|| {
                        E::custom(format!("the index {i} does not fit {}", I::value_type()))
                    })
                })
                .collect()
        };
        let (indptr, indices) = (convert(self.indptr)?, convert(self.indices)?);
        CsMatI::try_new((self.rows, self.cols), indptr, indices, self.data)
            .map_err(|(.., e)| E::custom(format!("invalid CSR matrix: {e}")))
    }
}

struct MatrixVisitor<T, I>(PhantomData<(T, I)>);

impl<'de, T: Element + Deserialize<'de>, I: CsrIndex> Visitor<'de> for MatrixVisitor<T, I> {
    type Value = CsMatI<T, I>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a CSR matrix")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<CsMatI<T, I>, D::Error> {
        match adapter_protocol::take_object() {
            Some(object) => object_to_csr(object).map_err(adapter_protocol::park_de),
            None => Plain::<T>::deserialize(d)?.into_matrix(),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CsMatI<T, I>, A::Error> {
        Plain::<T>::deserialize(de::value::MapAccessDeserializer::new(map))?.into_matrix()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<CsMatI<T, I>, A::Error> {
        Plain::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))?.into_matrix()
    }
}
