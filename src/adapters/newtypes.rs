//! Newtypes that serialize ndarray, sprs and record values at the top level.

use std::ops::{Deref, DerefMut};

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sprs::{CsMatI, CsMatViewI};

use super::{csr, dense, frame};
use crate::model::CsrIndex;
use crate::wire::Element;

/// An owned `Array2<T>` that serializes as a DenseMatrix.
///
/// ```
/// use ndarray::array;
/// use serde_daphne::Dense;
///
/// let m = Dense(array![[1u16, 2, 3], [4, 5, 6]]);
/// let bytes = serde_daphne::to_vec(&m)?;
/// let back: Dense<u16> = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(back, m);
/// // Read the same object into a wider type:
/// let wide: Dense<f64> = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(wide.0, array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Dense<T>(pub Array2<T>);

/// A borrowed `ArrayView2<T>` that serializes as a DenseMatrix without copying (write only).
#[derive(Clone, Copy, Debug)]
pub struct DenseView<'a, T>(pub ArrayView2<'a, T>);

/// An owned `CsMat<T>` (or `CsMatI<T, I>` with another sprs index type, such as `u32`)
/// that serializes as a CSRMatrix.
///
/// ```
/// use serde_daphne::Csr;
/// use sprs::CsMat;
///
/// let m = Csr(CsMat::new((2, 3), vec![0, 1, 1], vec![2], vec![-1.5f64]));
/// let bytes = serde_daphne::to_vec(&m)?;
/// assert_eq!(serde_daphne::from_slice::<Csr<f64>>(&bytes)?, m);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<T, I: CsrIndex = usize>(pub CsMatI<T, I>);

/// A borrowed `CsMatView<T>` (or `CsMatViewI<T, I>`; CSR or CSC) that serializes as a
/// CSRMatrix (write only).
#[derive(Clone, Debug)]
pub struct CsrView<'a, T, I: CsrIndex = usize>(pub CsMatViewI<'a, T, I>);

impl<'a, T, I: CsrIndex> CsrView<'a, T, I> {
    /// A CSR view of borrowed arrays (numpy's, say), checked as sprs's `CsMatViewI::try_new`
    /// checks them but on every core: `rows + 1` row offsets from 0, never decreasing, ending
    /// at the number of indices and values; each row's column indices strictly increasing
    /// and inside `0..cols`. sprs's own check took a fifth of writing 1e7 entries.
    ///
    /// ```
    /// use serde_daphne::CsrView;
    ///
    /// let (indptr, indices, data) = ([0i32, 1, 2], [2i32, 0], [1.5f64, -2.0]);
    /// let view = CsrView::try_from_arrays((2, 3), &indptr, &indices, &data)?;
    /// let bytes = serde_daphne::to_vec(&view)?;
    /// assert!(CsrView::try_from_arrays((2, 3), &indptr, &[0i32, 3], &data).is_err());
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] naming the first fault.
    pub fn try_from_arrays(
        shape: (usize, usize),
        indptr: &'a [I],
        indices: &'a [I],
        data: &'a [T],
    ) -> crate::Result<Self> {
        crate::model::csr::check_arrays(shape, indptr, indices, data.len())?;
        // SAFETY: `check_arrays` verified what sprs's checked constructor verifies and its
        // algorithms rely on: `rows + 1` offsets from 0, non-decreasing, ending at the number
        // of indices, which equals the number of values, and each row's indices strictly
        // increasing inside the columns.
        #[allow(unsafe_code)]
        let view = unsafe {
            CsMatViewI::new_unchecked(sprs::CompressedStorage::CSR, shape, indptr, indices, data)
        };
        Ok(CsrView(view))
    }
}

/// Records that serialize as a Frame, one row per record; see [`crate::frame`].
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Frame<R>(pub Vec<R>);

macro_rules! newtype_impls {
    ($($name:ident<$($lt:lifetime,)? $t:ident> => $inner:ty),*) => {$(
        impl<$($lt,)? $t> Deref for $name<$($lt,)? $t> {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.0
            }
        }
        impl<$($lt,)? $t> DerefMut for $name<$($lt,)? $t> {
            fn deref_mut(&mut self) -> &mut $inner {
                &mut self.0
            }
        }
        impl<$($lt,)? $t> From<$inner> for $name<$($lt,)? $t> {
            fn from(inner: $inner) -> Self {
                $name(inner)
            }
        }
    )*};
}
newtype_impls!(Dense<T> => Array2<T>, DenseView<'a, T> => ArrayView2<'a, T>, Frame<R> => Vec<R>);

impl<T, I: CsrIndex> Deref for Csr<T, I> {
    type Target = CsMatI<T, I>;
    fn deref(&self) -> &CsMatI<T, I> {
        &self.0
    }
}
impl<T, I: CsrIndex> DerefMut for Csr<T, I> {
    fn deref_mut(&mut self) -> &mut CsMatI<T, I> {
        &mut self.0
    }
}
impl<T, I: CsrIndex> From<CsMatI<T, I>> for Csr<T, I> {
    fn from(inner: CsMatI<T, I>) -> Self {
        Csr(inner)
    }
}
impl<'a, T, I: CsrIndex> Deref for CsrView<'a, T, I> {
    type Target = CsMatViewI<'a, T, I>;
    fn deref(&self) -> &CsMatViewI<'a, T, I> {
        &self.0
    }
}
impl<T, I: CsrIndex> DerefMut for CsrView<'_, T, I> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}
impl<'a, T, I: CsrIndex> From<CsMatViewI<'a, T, I>> for CsrView<'a, T, I> {
    fn from(inner: CsMatViewI<'a, T, I>) -> Self {
        CsrView(inner)
    }
}

impl<T: Element + Serialize> Serialize for Dense<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        dense::serialize(&self.0, serializer)
    }
}

impl<'de, T: Element + Deserialize<'de>> Deserialize<'de> for Dense<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        dense::deserialize(deserializer).map(Dense)
    }
}

impl<T: Element + Serialize> Serialize for DenseView<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        dense::serialize(&self.0, serializer)
    }
}

impl<T: Element + Serialize, I: CsrIndex> Serialize for Csr<T, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        csr::serialize(&self.0, serializer)
    }
}

impl<'de, T: Element + Deserialize<'de>, I: CsrIndex> Deserialize<'de> for Csr<T, I> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        csr::deserialize(deserializer).map(Csr)
    }
}

impl<T: Element + Serialize, I: CsrIndex> Serialize for CsrView<'_, T, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        csr::serialize(&self.0, serializer)
    }
}

impl<R: Serialize> Serialize for Frame<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        frame::serialize(&self.0, serializer)
    }
}

impl<'de, R: Deserialize<'de>> Deserialize<'de> for Frame<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        frame::deserialize(deserializer).map(Frame)
    }
}
