//! The object model: whole objects (header plus blocks), the tiling rule, typed access to
//! values, and the writer's choices (tiling, block policy, narrowing).

pub(crate) mod assemble;
pub mod csr;
pub mod detect;
pub mod encode;
pub(crate) mod matrix_ref;
pub(crate) mod narrow;
pub mod object;
pub(crate) mod runtime;
#[cfg(unix)]
pub(crate) mod runtime_csr_read;
#[cfg(unix)]
pub(crate) mod sparse_read;
pub(crate) mod sparse_write;
pub(crate) mod tiled;
pub(crate) mod tiling;
mod write;

pub use assemble::CsrParts;
pub use csr::CsrIndex;
pub use detect::Meta;
pub use object::{Block, Object};
