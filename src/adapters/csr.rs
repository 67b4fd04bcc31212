//! sprs `CsMat<T>` as a CSRMatrix: `#[serde(with = "serde_daphne::csr")]`.
//!
//! CSR and CSC matrices (and views) are written as CSR; reading accepts any matrix object.
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

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsMatBase, CsMatView};

use crate::error::{Error, Result};
use crate::handoff;
use crate::model::encode::{Layout, MatrixRef};
use crate::model::{encode::write_matrix, Object};
use crate::wire::{DataType, Element};

/// Serializes a sprs matrix (CSR or CSC, owned or view, `usize` indices) as a CSRMatrix.
///
/// # Errors
/// The serializer's errors.
pub fn serialize<T, P, I, V, S>(
    matrix: &CsMatBase<T, usize, P, I, V, usize>,
    serializer: S,
) -> Result<S::Ok, S::Error>
where
    T: Element + Serialize,
    P: Deref<Target = [usize]>,
    I: Deref<Target = [usize]>,
    V: Deref<Target = [T]>,
    S: Serializer,
{
    serializer.serialize_newtype_struct(handoff::CSR, &Payload(matrix.view()))
}

/// Deserializes a `CsMat<T>` (CSR) from any matrix object: zeros of dense blocks are left
/// out, stored values convert exactly to `T`.
///
/// # Errors
/// The deserializer's errors; through this crate, [`Error::LossyConversion`] and the like.
pub fn deserialize<'de, T, D>(deserializer: D) -> Result<CsMat<T>, D::Error>
where
    T: Element + Deserialize<'de>,
    D: Deserializer<'de>,
{
    deserializer.deserialize_newtype_struct(handoff::CSR, MatrixVisitor(PhantomData))
}

pub(crate) fn object_to_csr<T: Element>(object: Object) -> Result<CsMat<T>> {
    let (rows, cols) = object.shape();
    let parts = object.into_csr_parts::<T>()?;
    CsMat::try_new(
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
    fn into_matrix<E: de::Error>(self) -> Result<CsMat<T>, E> {
        CsMat::try_new((self.rows, self.cols), self.indptr, self.indices, self.data)
            .map_err(|(.., e)| E::custom(format!("invalid CSR matrix: {e}")))
    }
}

struct MatrixVisitor<T>(PhantomData<T>);

impl<'de, T: Element + Deserialize<'de>> Visitor<'de> for MatrixVisitor<T> {
    type Value = CsMat<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a CSR matrix")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<CsMat<T>, D::Error> {
        match handoff::take_object() {
            Some(object) => object_to_csr(object).map_err(handoff::park_de),
            None => Plain::<T>::deserialize(d)?.into_matrix(),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CsMat<T>, A::Error> {
        Plain::<T>::deserialize(de::value::MapAccessDeserializer::new(map))?.into_matrix()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<CsMat<T>, A::Error> {
        Plain::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))?.into_matrix()
    }
}
