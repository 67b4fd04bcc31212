//! Moving matrices between DAPHNE objects and neighbouring formats: MatrixMarket, CSV,
//! Futhark's binary values, NumPy's `.npy` arrays, Binsparse and SystemDS binary blocks; and
//! [`convert`], file to file between any two of them.

pub mod binsparse;
#[cfg(feature = "convert")]
pub mod convert;
#[cfg(feature = "convert")]
pub mod csv;
pub mod futhark;
mod input;
pub mod mtx;
pub mod npy;
pub mod systemds;
mod text;
mod zip;
