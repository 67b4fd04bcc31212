//! Moving matrices between DAPHNE objects and neighbouring formats: Futhark's binary values,
//! NumPy's `.npy` arrays, Binsparse and SystemDS binary blocks.

pub mod binsparse;
pub mod futhark;
mod input;
pub mod npy;
pub mod systemds;
mod zip;
