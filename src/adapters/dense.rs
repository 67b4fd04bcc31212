//! ndarray `Array2<T>` as a DenseMatrix: `#[serde(with = "serde_daphne::dense")]`.
//!
//! Through this crate a contiguous row-major array is written with one copy of its values
//! (no per-element serde calls); other layouts are first made contiguous. Through any other
//! serde format the array is a plain structure `{ rows, cols, values }` with the values
//! row-major.
//!
//! ```
//! use ndarray::array;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Model {
//!     #[serde(with = "serde_daphne::dense")]
//!     weights: ndarray::Array2<f32>,
//! }
//!
//! let model = Model { weights: array![[1.0, 2.0], [3.0, 4.0]] };
//! let bytes = serde_daphne::to_vec(&model)?;
//! assert_eq!(serde_daphne::from_slice::<Model>(&bytes)?, model);
//! // The same struct through JSON:
//! let json = serde_json::to_string(&model).unwrap();
//! assert_eq!(json, r#"{"weights":{"rows":2,"cols":2,"values":[1.0,2.0,3.0,4.0]}}"#);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

use crate::error::ErrorDetails;
use std::fmt;
use std::marker::PhantomData;

use ndarray::{Array2, ArrayBase, ArrayView2, Data, Ix2};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::adapter_protocol;
use crate::error::{Error, Result};
use crate::model::encode::{write_matrix, MatrixRef};
use crate::model::tiled::write_dense_tiles;
use crate::model::Object;
use crate::wire::{DataType, Element};

/// Serializes a 2-D array (owned, view or any storage) as a DenseMatrix.
///
/// # Errors
/// The serializer's errors.
pub fn serialize<T, D, S>(array: &ArrayBase<D, Ix2>, serializer: S) -> Result<S::Ok, S::Error>
where
    T: Element + Serialize,
    D: Data<Elem = T>,
    S: Serializer,
{
    serializer.serialize_newtype_struct(adapter_protocol::DENSE, &Payload(array.view()))
}

/// Deserializes an `Array2<T>` from any matrix object (dense or CSR, any block layout and
/// stored value types that convert exactly to `T`).
///
/// # Errors
/// The deserializer's errors; through this crate, [`crate::ErrorKind::LossyConversion`] and the like.
pub fn deserialize<'de, T, D>(deserializer: D) -> Result<Array2<T>, D::Error>
where
    T: Element + Deserialize<'de>,
    D: Deserializer<'de>,
{
    adapter_protocol::wanting(T::VALUE_TYPE, || {
        deserializer.deserialize_newtype_struct(adapter_protocol::DENSE, ArrayVisitor(PhantomData))
    })
}

/// The array's shape as `usize`.
pub(crate) fn object_to_array<T: Element>(object: Object) -> Result<Array2<T>> {
    let (rows, cols) = object.shape();
    let offset = object.offset();
    let values = object.into_dense_vec::<T>()?;
    Array2::from_shape_vec((rows as usize, cols as usize), values).map_err(|_| {
        Error::from(ErrorDetails::TooLarge {
            offset,
            what: "the matrix",
            bytes: u128::from(rows) * u128::from(cols),
        })
    })
}

struct Payload<'a, T>(ArrayView2<'a, T>);

impl<T: Element + Serialize> Serialize for Payload<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (rows, cols) = self.0.dim();
        if let Some(options) = adapter_protocol::take_capture() {
            let contiguous = self.0.as_standard_layout();
            let data = contiguous
                .as_slice()
                .ok_or_else(|| adapter_protocol::park(Error::invalid("array not contiguous")))?;
            return adapter_protocol::emit(serializer, |sink| {
                let matrix = MatrixRef::dense_unchecked(rows, cols, data);
                if write_dense_tiles(sink, DataType::DenseMatrix, &matrix, &options)? {
                    return Ok(());
                }
                write_matrix(sink, DataType::DenseMatrix, &matrix, &options)
            });
        }
        let mut s = serializer.serialize_struct("Dense", 3)?;
        s.serialize_field("rows", &rows)?;
        s.serialize_field("cols", &cols)?;
        s.serialize_field("values", &RowMajor(&self.0))?;
        s.end()
    }
}

struct RowMajor<'a, 'b, T>(&'a ArrayView2<'b, T>);

impl<T: Serialize> Serialize for RowMajor<'_, '_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// The plain structure other formats hold.
#[derive(Deserialize)]
struct Plain<T> {
    rows: usize,
    cols: usize,
    values: Vec<T>,
}

impl<T> Plain<T> {
    fn into_array<E: de::Error>(self) -> Result<Array2<T>, E> {
        Array2::from_shape_vec((self.rows, self.cols), self.values).map_err(|_| {
            E::custom(format!(
                "a {} x {} matrix needs {} values",
                self.rows,
                self.cols,
                self.rows.saturating_mul(self.cols)
            ))
        })
    }
}

struct ArrayVisitor<T>(PhantomData<T>);

impl<'de, T: Element + Deserialize<'de>> Visitor<'de> for ArrayVisitor<T> {
    type Value = Array2<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dense matrix")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Array2<T>, D::Error> {
        match adapter_protocol::take_object() {
            Some(object) => object_to_array(object).map_err(adapter_protocol::park_de),
            None => Plain::<T>::deserialize(d)?.into_array(),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Array2<T>, A::Error> {
        Plain::<T>::deserialize(de::value::MapAccessDeserializer::new(map))?.into_array()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Array2<T>, A::Error> {
        Plain::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))?.into_array()
    }
}
