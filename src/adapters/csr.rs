//! sprs `CsMat<T>` as a CSRMatrix: `#[serde(with = "serde_daphne::csr")]`.
//!
//! CSR and CSC matrices (and views) are written as CSR; reading accepts any matrix object.
//! Any sprs index type works (`CsMatI<T, u32>` takes half the index memory of `CsMat<T>`,
//! `CsMatI<T, i64>` is what scipy hands over); reading into an index type the matrix's
//! indices do not fit is [`Error::LossyConversion`], never a wrapped index.
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
use sprs::{CsMatBase, CsMatI, CsMatView};

use crate::error::{Error, Result};
use crate::handoff;
use crate::model::encode::{Layout, MatrixRef};
use crate::model::{encode::write_matrix, CsrIndex, Object};
use crate::wire::{DataType, Element};

/// Serializes a sprs matrix (CSR or CSC, owned or view, any index types) as a CSRMatrix.
/// Indices of `usize`'s width are written as they are; narrower ones are widened on a copy.
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
    // A view of some rows has offsets that do not start at 0: rebased first.
    let offsets = matrix.indptr();
    let offsets = offsets.to_proper();
    let indptr = as_usize(&offsets);
    let indices = as_usize(matrix.indices());
    let (shape, data) = (matrix.shape(), matrix.data());
    let view = if matrix.is_csr() {
        CsMatView::try_new(shape, &indptr[..], &indices[..], data)
    } else {
        CsMatView::try_new_csc(shape, &indptr[..], &indices[..], data)
    };
    // The matrix was valid with its own indices, so it is with the same ones as usize.
    let view = view.map_err(|(.., e)| serde::ser::Error::custom(format!("sprs: {e}")))?;
    serializer.serialize_newtype_struct(handoff::CSR, &Payload(view))
}

/// Indices as `usize`: borrowed when they have its width (a valid sprs matrix holds no
/// negative index), widened otherwise.
fn as_usize<N: CsrIndex>(indices: &[N]) -> Cow<'_, [usize]> {
    if std::mem::size_of::<N>() == std::mem::size_of::<usize>() {
        Cow::Borrowed(bytemuck::cast_slice(indices))
    } else {
        Cow::Owned(indices.iter().map(|i| i.index()).collect())
    }
}

/// Deserializes a `CsMatI<T, I>` (CSR; `CsMat<T>` is `CsMatI<T, usize>`) from any matrix
/// object: zeros of dense blocks are left out, stored values convert exactly to `T`.
///
/// # Errors
/// The deserializer's errors; through this crate, [`Error::LossyConversion`] for a value
/// that does not fit `T` or an index that does not fit `I`, and the like.
pub fn deserialize<'de, T, I, D>(deserializer: D) -> Result<CsMatI<T, I>, D::Error>
where
    T: Element + Deserialize<'de>,
    I: CsrIndex,
    D: Deserializer<'de>,
{
    deserializer.deserialize_newtype_struct(handoff::CSR, MatrixVisitor(PhantomData))
}

pub(crate) fn object_to_csr<T: Element, I: CsrIndex>(object: Object) -> Result<CsMatI<T, I>> {
    let (rows, cols) = object.shape();
    let parts = object.into_csr_parts_as::<T, I>()?;
    CsMatI::try_new(
        (rows as usize, cols as usize),
        parts.row_offsets,
        parts.col_indices,
        parts.values,
    )
    .map_err(|(.., e)| Error::invalid(format!("sprs rejects the matrix: {e}")))
}

struct Payload<'a, T>(CsMatView<'a, T>);

impl<T: Element + Serialize> Serialize for Payload<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let converted;
        let csr = if self.0.is_csr() {
            self.0.view()
        } else {
            converted = self.0.to_other_storage();
            converted.view()
        };
        let indptr = csr.indptr();
        let row_offsets = indptr.to_proper();
        if let Some(options) = handoff::take_capture() {
            let matrix = MatrixRef {
                rows: csr.rows(),
                cols: csr.cols(),
                layout: Layout::Csr {
                    row_offsets: &row_offsets,
                    col_indices: csr.indices(),
                    values: csr.data(),
                },
            };
            return handoff::emit(serializer, |sink| {
                write_matrix(sink, DataType::CsrMatrix, &matrix, &options)
            });
        }
        let mut s = serializer.serialize_struct("Csr", 5)?;
        s.serialize_field("rows", &csr.rows())?;
        s.serialize_field("cols", &csr.cols())?;
        s.serialize_field("indptr", &*row_offsets)?;
        s.serialize_field("indices", csr.indices())?;
        s.serialize_field("data", csr.data())?;
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
        match handoff::take_object() {
            Some(object) => object_to_csr(object).map_err(handoff::park_de),
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
