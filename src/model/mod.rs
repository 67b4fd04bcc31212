//! The object model: whole objects (header plus blocks), the tiling rule, typed access to
//! values, and the writer's choices (tiling, block policy, narrowing).

pub mod dialect;
pub(crate) mod encode;
pub mod object;
pub(crate) mod tiling;

pub use dialect::{Dialect, Hint};
pub use object::{Block, CsrParts, Object};
