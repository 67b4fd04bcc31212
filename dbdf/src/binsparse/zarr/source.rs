//! Binsparse Zarr groups read by the pipe: the arrays of a CSR or row-major dense matrix are
//! read a range of elements at a time, a chunk decoded when the range reaches it (the last
//! one kept for the next range), so memory holds a chunk per array and a band.

use std::ops::Range;

use super::super::source::{readable, BinsparseSource, Elements, StoredArrays};
use super::super::{parse_descriptor, Array};
use super::array::ArrayMeta;
use super::{descriptor, FolderStore};
use crate::storage::Input;
use serde_daphne::with_values;
use serde_daphne::{Result, ValueType, Values};

/// One array of a group, read a range at a time.
struct Chunked {
    store: FolderStore,
    name: &'static str,
    meta: ArrayMeta,
    /// The last chunk decoded: its number and values (`None` for a missing chunk of zeros).
    last: Option<(usize, Option<Values>)>,
}

impl Elements for Chunked {
    fn array(&mut self, range: Range<u64>) -> Result<Array> {
        let chunk = self.meta.chunk;
        let mut values = Values::new(self.meta.value_type);
        values.reserve((range.end - range.start) as usize);
        let mut at = range.start;
        while at < range.end {
            let i = (at / chunk) as usize;
            if self.last.as_ref().is_none_or(|(k, _)| *k != i) {
                let decoded = self.meta.read_chunk(&self.store, self.name, i)?;
                self.last = Some((i, decoded));
            }
            let (start, end) = (
                at - i as u64 * chunk,
                (range.end - i as u64 * chunk).min(chunk),
            );
            let part = match &self.last {
                Some((_, Some(chunk_values))) => with_values!(chunk_values, v => {
                    serde_daphne::Element::into_values(v[start as usize..end as usize].to_vec())
                }),
                _ => Values::zeros(self.meta.value_type, (end - start) as usize)?,
            };
            values.append(part);
            at = i as u64 * chunk + end;
        }
        Ok(Array {
            values,
            name: self.name.to_owned(),
            offset: None,
            first: range.start as usize,
        })
    }
}

/// The group `input` (a folder wherever it is kept) read in place, a chunk at a time, or
/// `None` where only the whole read will do.
///
/// # Errors
/// The pointers' faults, as the whole read words them; I/O and request errors.
pub(in crate::binsparse) fn in_place(
    input: &Input,
    input_len: u64,
) -> Result<Option<BinsparseSource>> {
    let store = FolderStore(input.clone());
    let Ok((v2, text)) = descriptor(&store) else {
        return Ok(None);
    };
    let Ok(d) = parse_descriptor(&text) else {
        return Ok(None);
    };
    if readable(&d).is_none() {
        return Ok(None);
    }
    let array =
        |name: &'static str, len: u64, wanted: Option<ValueType>| -> Option<Box<dyn Elements>> {
            let meta = ArrayMeta::read(&store, name, v2).ok()?;
            let index =
                !matches!(meta.value_type, ValueType::F32 | ValueType::F64) && !meta.boolean;
            let fits =
                meta.len == len && wanted.map_or(index, |t| t == meta.value_type && !meta.boolean);
            // A missing chunk of another fill value than 0 is for the whole read.
            let zero_fill = meta.fill.is_none_or(|f| f.is_zero());
            (fits && zero_fill).then(|| -> Box<dyn Elements> {
                Box::new(Chunked {
                    store: store.clone(),
                    name,
                    meta,
                    last: None,
                })
            })
        };
    let Some(layout) = StoredArrays::of(&d, array) else {
        return Ok(None);
    };
    BinsparseSource::in_place(d, layout, input_len).map(Some)
}
