//! Adapters: ndarray, sprs and record types as DAPHNE objects, usable with
//! `#[serde(with = "...")]` or through the newtypes at the top level.

mod columns;
pub mod csr;
pub mod dense;
pub mod frame;
mod newtypes;
mod object;

pub use columns::{Columns, ColumnsView};
pub use newtypes::{Csr, CsrView, Dense, DenseView, Frame};
