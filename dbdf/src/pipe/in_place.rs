//! Sources that read their input in place where they can, else hold it whole: the one place
//! that chooses between the two, for every format whose files come in layouts it streams and
//! layouts it reads whole (Binsparse, scipy's sparse `.npz`, SystemDS).

use super::{Held, Source};

/// A source reading its input in place (`S`), or the objects read whole and held.
pub(crate) enum InPlaceOrHeld<S> {
    /// Read in place, band by band.
    InPlace(S),
    /// Read whole: a layout the format's source does not stream.
    Held(Held),
}

impl<S: Source> InPlaceOrHeld<S> {
    /// The source that does the work.
    pub(crate) fn source(&self) -> &dyn Source {
        match self {
            InPlaceOrHeld::InPlace(s) => s,
            InPlaceOrHeld::Held(h) => h,
        }
    }

    /// The source that does the work.
    pub(crate) fn source_mut(&mut self) -> &mut dyn Source {
        match self {
            InPlaceOrHeld::InPlace(s) => s,
            InPlaceOrHeld::Held(h) => h,
        }
    }
}

/// Implements [`Source`] for a public source type `$type` whose field `$field` chooses the
/// source that does the work (its `source` and `source_mut`, as [`InPlaceOrHeld`]'s): every
/// method is the chosen source's.
macro_rules! source_in_field {
    ($type:ty, $field:tt) => {
        impl $crate::pipe::Source for $type {
            fn headers(&self) -> &[serde_daphne::Header] {
                self.$field.source().headers()
            }

            fn for_each_band(
                &mut self,
                index: usize,
                multiple: u64,
                each: &mut dyn FnMut($crate::pipe::Band) -> serde_daphne::Result<bool>,
            ) -> serde_daphne::Result<()> {
                self.$field
                    .source_mut()
                    .for_each_band(index, multiple, each)
            }

            fn for_each_tile(
                &mut self,
                index: usize,
                each: &mut dyn FnMut($crate::pipe::Band) -> serde_daphne::Result<bool>,
            ) -> Option<serde_daphne::Result<()>> {
                self.$field.source_mut().for_each_tile(index, each)
            }

            fn own_tiles(&self, index: usize) -> Option<(u32, u32)> {
                self.$field.source().own_tiles(index)
            }

            fn windows(&self) -> Option<&dyn $crate::pipe::Windows> {
                self.$field.source().windows()
            }

            fn prefers_bands(&self) -> bool {
                self.$field.source().prefers_bands()
            }

            fn input_len(&self) -> u64 {
                self.$field.source().input_len()
            }

            fn stored_bytes(&self, index: usize) -> Option<u64> {
                self.$field.source().stored_bytes(index)
            }

            fn nonzero(&self, index: usize) -> Option<bool> {
                self.$field.source().nonzero(index)
            }

            fn count_nonzero(&mut self, index: usize) -> serde_daphne::Result<Option<u64>> {
                self.$field.source_mut().count_nonzero(index)
            }

            fn metadata(&self) -> $crate::pipe::InputMetadata {
                self.$field.source().metadata()
            }

            fn reads_in_place(&self) -> bool {
                self.$field.source().reads_in_place()
            }
        }
    };
}
pub(crate) use source_in_field;
