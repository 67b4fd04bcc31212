//! Bands of any height regrouped into bands of a multiple of rows, for sources whose own
//! bands (a file's records, SystemDS's block rows, Arrow's batches) are of another height.

use super::Band;
use serde_daphne::Result;

/// Bands of any height, in order, regrouped into bands a multiple of `multiple` rows high
/// (the last may be shorter), for sources whose own bands are of another height.
pub(crate) struct Regroup {
    multiple: u64,
    pending: Option<Band>,
}

impl Regroup {
    /// Regroups into bands a multiple of `multiple` rows high.
    pub(crate) fn new(multiple: u64) -> Regroup {
        Regroup {
            multiple: multiple.max(1),
            pending: None,
        }
    }

    /// Takes the next band; calls `each` with every whole band it completes. `false` when
    /// `each` asked to stop.
    ///
    /// # Errors
    /// `each`'s errors; bands that do not follow each other.
    pub(crate) fn push(
        &mut self,
        band: Band,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<bool> {
        if self.multiple == 1 {
            return each(band);
        }
        // Room for a whole band first: growing by doubling would hold it twice.
        let pending = match self.pending.take() {
            Some(mut pending) => {
                pending.reserve_rows(self.multiple.max(pending.rows + band.rows));
                pending.append(band)?;
                pending
            }
            None => {
                let mut pending = band;
                pending.reserve_rows(self.multiple);
                pending
            }
        };
        let whole = pending.rows / self.multiple * self.multiple;
        if whole == 0 {
            self.pending = Some(pending);
            return Ok(true);
        }
        let (whole, rest) = pending.split_rows(whole)?;
        if rest.rows > 0 {
            self.pending = Some(rest);
        }
        each(whole)
    }

    /// Gives the last, shorter band, if any.
    ///
    /// # Errors
    /// `each`'s errors.
    pub(crate) fn finish(&mut self, each: &mut dyn FnMut(Band) -> Result<bool>) -> Result<bool> {
        match self.pending.take() {
            Some(band) => each(band),
            None => Ok(true),
        }
    }
}

/// Calls `each` with bands of `step` rows cut from each group of rows in `groups` (row
/// ranges, in order; a source that holds one group at a time), regrouped into multiples of
/// `multiple` rows, until it returns `false`. `band(g, rows)` gives rows `rows` of group `g`,
/// reading the group first when it is not the one held.
///
/// # Errors
/// `band`'s errors and `each`'s.
pub(crate) fn bands_of_groups(
    groups: &[std::ops::Range<u64>],
    step: u64,
    multiple: u64,
    each: &mut dyn FnMut(Band) -> Result<bool>,
    mut band: impl FnMut(usize, std::ops::Range<u64>) -> Result<Band>,
) -> Result<()> {
    let mut regroup = Regroup::new(multiple);
    for (g, rows) in groups.iter().enumerate() {
        for r0 in rows.clone().step_by(step.max(1) as usize) {
            let cut = band(g, r0..(r0 + step.max(1)).min(rows.end))?;
            if !regroup.push(cut, each)? {
                return Ok(());
            }
        }
    }
    regroup.finish(each).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipe::Cells;

    #[test]
    fn regrouped_bands_are_multiples_and_lose_nothing() {
        let values: Vec<i32> = (0..14 * 2).collect();
        let whole = Band {
            first_row: 0,
            first_col: 0,
            rows: 14,
            cols: 2,
            cells: Cells::Dense(serde_daphne::Values::I32(values)),
        };
        for multiple in [1, 2, 3, 5, 20] {
            let mut regroup = Regroup::new(multiple);
            let mut out: Vec<Band> = Vec::new();
            let mut keep = |band: Band| {
                out.push(band);
                Ok(true)
            };
            let mut r0 = 0;
            for height in [3, 1, 4, 1, 5] {
                regroup
                    .push(whole.window(r0..r0 + height, 0..2), &mut keep)
                    .unwrap();
                r0 += height;
            }
            regroup.finish(&mut keep).unwrap();
            let (last, rest) = out.split_last().unwrap();
            assert!(rest.iter().all(|b| b.rows % multiple == 0), "{multiple}");
            assert!(last.rows <= 14, "{multiple}");
            let mut joined = out[0].clone();
            for band in &out[1..] {
                joined.append(band.clone()).unwrap();
            }
            assert_eq!(joined, whole, "{multiple}");
        }
    }
}
