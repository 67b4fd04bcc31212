//! Moving matrices between DAPHNE objects and neighbouring formats: Futhark's binary values,
//! NumPy's `.npy` arrays and Binsparse.

pub mod binsparse;
pub mod futhark;
pub mod npy;
mod zip;
