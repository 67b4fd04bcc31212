//! The tiling rule: which blocks an object's body holds and when it is complete.
//!
//! An object's body holds at least one block; blocks are read until they cover the object.
//! - An object with cells is covered when the blocks' areas add up to its area; every block
//!   must then have cells, lie inside the object and overlap no other block (checked in
//!   O(n log n) once the body is read; blocks in row-major bands, as writers lay tiles, are
//!   checked as they come and not remembered, so a million tiles cost no memory here).
//! - An object without cells (`0 x c`, `r x 0`, `0 x 0`) is covered by 0-sized blocks laid end
//!   to end along its non-zero dimension, in order, starting at (0, 0); a `0 x 0` object is one
//!   `0 x 0` block. (One block of its own shape, unless the dimension exceeds `u32::MAX`.)
//! - In a frame, every block holding values lies within one column.

use crate::error::ErrorDetails;
use std::collections::BTreeMap;

use crate::error::Result;
use crate::wire::BlockPlace;

/// Tracks the blocks of one object as they are read.
pub(crate) struct Coverage {
    rows: u64,
    cols: u64,
    frame: bool,
    area: u128,
    covered: u128,
    /// For objects without cells: where the next block must start along the non-zero dimension.
    next: u64,
    /// Blocks so far, while they come in row-major bands.
    bands: Option<Bands>,
    /// Blocks placed so far, once they stopped coming in bands (the bands' area first).
    placed: Vec<(Area, u64)>,
    blocks: u64,
}

/// Blocks laid in row-major bands: each band's blocks share its first row and height and
/// follow one another from column 0 to the last; the next band starts below. Such blocks
/// cannot overlap, so only where the next one must go is kept.
#[derive(Clone, Copy, Debug)]
struct Bands {
    /// The current band's first row and height (0 before its first block).
    row: u64,
    rows: u64,
    /// Where the band's next block starts.
    col: u64,
}

/// A rectangle of cells (the area of bands can exceed a block's `u32` dimensions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Area {
    row: u64,
    col: u64,
    rows: u64,
    cols: u64,
}

impl From<BlockPlace> for Area {
    fn from(p: BlockPlace) -> Self {
        Area {
            row: p.row,
            col: p.col,
            rows: u64::from(p.rows),
            cols: u64::from(p.cols),
        }
    }
}

impl Bands {
    /// Whether `place` is the next block of the bands.
    fn takes(&self, place: &BlockPlace, cols: u64) -> bool {
        let (rows, width) = (u64::from(place.rows), u64::from(place.cols));
        if self.col == 0 || self.col >= cols {
            // A new band starts below the last one.
            let next = if self.col >= cols {
                self.row + self.rows
            } else {
                self.row
            };
            place.row == next && place.col == 0 && width <= cols
        } else {
            place.row == self.row
                && rows == self.rows
                && place.col == self.col
                && self.col + width <= cols
        }
    }

    fn add(&mut self, place: &BlockPlace, cols: u64) {
        if self.col >= cols || self.col == 0 {
            if self.col >= cols {
                self.row += self.rows;
            }
            self.rows = u64::from(place.rows);
            self.col = 0;
        }
        self.col += u64::from(place.cols);
    }

    /// The cells the bands cover: whole bands above, then the current band's start.
    fn areas(&self, cols: u64) -> impl Iterator<Item = Area> {
        let (above, current) = match self.col >= cols {
            true => (self.row + self.rows, 0),
            false => (self.row, self.col),
        };
        let whole = Area {
            row: 0,
            col: 0,
            rows: above,
            cols,
        };
        let part = Area {
            row: above,
            col: 0,
            rows: self.rows,
            cols: current,
        };
        [whole, part]
            .into_iter()
            .filter(|a| a.rows > 0 && a.cols > 0)
    }
}

impl Coverage {
    pub fn new(rows: u64, cols: u64, frame: bool) -> Self {
        Coverage {
            rows,
            cols,
            frame,
            area: u128::from(rows) * u128::from(cols),
            covered: 0,
            next: 0,
            bands: Some(Bands {
                row: 0,
                rows: 0,
                col: 0,
            }),
            placed: Vec::new(),
            blocks: 0,
        }
    }

    /// Whether the blocks so far cover the object.
    pub(crate) fn complete(&self) -> bool {
        if self.area == 0 {
            let extent = self.rows.max(self.cols);
            self.blocks > 0 && self.next >= extent
        } else {
            self.covered >= self.area
        }
    }

    /// Records a block read at `offset`; `has_values` is whether it stores any value.
    pub fn add(&mut self, offset: u64, place: BlockPlace, has_values: bool) -> Result<()> {
        let row_end = u128::from(place.row) + u128::from(place.rows);
        let col_end = u128::from(place.col) + u128::from(place.cols);
        if row_end > u128::from(self.rows) || col_end > u128::from(self.cols) {
            return Err(ErrorDetails::BlockOutsideObject {
                offset,
                row: place.row,
                row_end,
                col: place.col,
                col_end,
                object_rows: self.rows,
                object_cols: self.cols,
            }
            .into());
        }
        if self.frame && has_values && place.cols > 1 {
            return Err(ErrorDetails::FrameBlockSpansColumns {
                offset,
                col: place.col,
                cols: place.cols,
            }
            .into());
        }
        if self.area == 0 {
            self.add_without_cells(offset, place)?;
        } else {
            if place.rows == 0 || place.cols == 0 {
                return Err(ErrorDetails::ZeroSizedBlock {
                    offset,
                    rows: place.rows,
                    cols: place.cols,
                }
                .into());
            }
            self.covered += u128::from(place.rows) * u128::from(place.cols);
            self.place(offset, place);
        }
        self.blocks += 1;
        Ok(())
    }

    /// Remembers a block with cells: nothing while the blocks come in bands.
    fn place(&mut self, offset: u64, place: BlockPlace) {
        if let Some(bands) = &mut self.bands {
            if bands.takes(&place, self.cols) {
                bands.add(&place, self.cols);
                return;
            }
            // Out of band order: from here on every block is kept, after the bands' area (which
            // comes first, so an overlap is reported at a kept block, the later one).
            self.placed = bands.areas(self.cols).map(|area| (area, 0)).collect();
            self.bands = None;
        }
        self.placed.push((place.into(), offset));
    }

    fn add_without_cells(&mut self, offset: u64, place: BlockPlace) -> Result<()> {
        let along_rows = self.cols == 0 && self.rows > 0;
        let expected = if along_rows {
            (self.next, 0)
        } else {
            (0, self.next)
        };
        let length = if along_rows { place.rows } else { place.cols };
        let extent = self.rows.max(self.cols);
        let well_placed = (place.row, place.col) == expected
            && place.rows.min(place.cols) == 0
            && (length > 0 || extent == 0);
        if !well_placed {
            return Err(ErrorDetails::MisplacedBlock {
                offset,
                expected,
                found: (place.row, place.col),
            }
            .into());
        }
        self.next += u64::from(length);
        Ok(())
    }

    /// Checks that no two blocks overlap (once complete).
    pub fn finish(self) -> Result<()> {
        self.check_overlaps()
    }

    /// Cells covered so far (counting overlaps twice).
    pub(crate) fn covered(&self) -> u128 {
        self.covered
    }

    /// Checks that no two blocks placed so far overlap.
    pub(crate) fn check_overlaps(&self) -> Result<()> {
        if self.area == 0 || self.placed.len() < 2 {
            // Blocks in bands never overlap.
            return Ok(());
        }
        // Sweep over rows; at each row, the active blocks' column ranges must be disjoint.
        let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(self.placed.len() * 2);
        for (index, (area, _)) in self.placed.iter().enumerate() {
            events.push((area.row, true, index));
            events.push((area.row + area.rows, false, index));
        }
        // Removals (false) sort before insertions (true) at the same row.
        events.sort_unstable();
        let mut active: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
        for (_, insert, index) in events {
            let (area, _) = self.placed[index];
            let (start, end) = (area.col, area.col + area.cols);
            if !insert {
                active.remove(&start);
                continue;
            }
            let before = active.range(..=start).next_back().map(|(_, &v)| v);
            let after = active.range(start..).next().map(|(&s, &v)| (s, v));
            let clash = before
                .filter(|&(before_end, _)| before_end > start)
                .map(|(_, other)| other)
                .or(after.filter(|&(s, _)| s < end).map(|(_, (_, other))| other));
            if let Some(other) = clash {
                let later = index.max(other);
                let (area, offset) = self.placed[later];
                return Err(ErrorDetails::OverlappingBlocks {
                    offset,
                    row: area.row,
                    col: area.col,
                }
                .into());
            }
            active.insert(start, (end, index));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorDetails};

    fn place(row: u64, col: u64, rows: u32, cols: u32) -> BlockPlace {
        BlockPlace {
            row,
            col,
            rows,
            cols,
        }
    }

    #[test]
    fn a_grid_of_tiles_covers_exactly() {
        let mut c = Coverage::new(3, 4, false);
        for (i, p) in [place(0, 0, 2, 2), place(0, 2, 2, 2), place(2, 0, 1, 4)]
            .into_iter()
            .enumerate()
        {
            assert!(!c.complete());
            c.add(i as u64, p, true).unwrap();
        }
        assert!(c.complete());
        c.finish().unwrap();
    }

    #[test]
    fn blocks_in_bands_are_not_kept() {
        // Three bands of uneven heights, uneven widths within each.
        let mut c = Coverage::new(5, 4, false);
        let blocks = [
            place(0, 0, 2, 3),
            place(0, 3, 2, 1),
            place(2, 0, 1, 4),
            place(3, 0, 2, 1),
            place(3, 1, 2, 3),
        ];
        for (i, p) in blocks.into_iter().enumerate() {
            c.add(i as u64, p, true).unwrap();
        }
        assert!(c.complete());
        assert!(c.placed.is_empty(), "{:?}", c.placed);
        c.finish().unwrap();
    }

    #[test]
    fn a_block_out_of_band_order_overlapping_the_bands_is_found() {
        // One band and a half, then a block back over the first band.
        let mut c = Coverage::new(3, 4, false);
        c.add(10, place(0, 0, 1, 4), true).unwrap();
        c.add(20, place(1, 0, 1, 2), true).unwrap();
        c.add(30, place(0, 2, 2, 2), true).unwrap();
        c.add(40, place(2, 0, 1, 2), true).unwrap();
        assert!(c.complete());
        let got = c.finish();
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::OverlappingBlocks {
                    offset: 30,
                    row: 0,
                    col: 2
                })
            ),
            "{got:?}"
        );
    }

    #[test]
    fn blocks_out_of_band_order_that_tile_are_accepted() {
        // Column-major order: the second block leaves the bands.
        let mut c = Coverage::new(2, 2, false);
        for (i, p) in [
            place(0, 0, 1, 1),
            place(1, 0, 1, 1),
            place(0, 1, 1, 1),
            place(1, 1, 1, 1),
        ]
        .into_iter()
        .enumerate()
        {
            c.add(i as u64, p, true).unwrap();
        }
        assert!(c.complete());
        c.finish().unwrap();
    }

    #[test]
    fn overlaps_are_found_even_when_areas_add_up() {
        let mut c = Coverage::new(2, 2, false);
        c.add(10, place(0, 0, 1, 2), true).unwrap();
        c.add(20, place(0, 1, 1, 1), true).unwrap();
        c.add(30, place(1, 0, 1, 1), true).unwrap();
        assert!(c.complete());
        let got = c.finish();
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::OverlappingBlocks { offset: 20, .. })
            ),
            "{got:?}"
        );
    }

    #[test]
    fn objects_without_cells_take_zero_sized_blocks_in_order() {
        let mut c = Coverage::new(0, 10, false);
        c.add(0, place(0, 0, 0, 4), false).unwrap();
        assert!(!c.complete());
        let got = c.add(1, place(0, 5, 0, 5), false);
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::MisplacedBlock { .. })
            ),
            "{got:?}"
        );
        c.add(2, place(0, 4, 0, 6), false).unwrap();
        assert!(c.complete());
        let mut c = Coverage::new(0, 0, false);
        c.add(0, place(0, 0, 0, 0), false).unwrap();
        assert!(c.complete());
    }

    #[test]
    fn blocks_outside_or_without_cells_are_rejected() {
        let mut c = Coverage::new(2, 2, false);
        let got = c.add(5, place(1, 1, 2, 1), true);
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::BlockOutsideObject { offset: 5, .. })
            ),
            "{got:?}"
        );
        let got = c.add(6, place(0, 0, 0, 2), false);
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::ZeroSizedBlock { offset: 6, .. })
            ),
            "{got:?}"
        );
        let mut f = Coverage::new(2, 2, true);
        let got = f.add(7, place(0, 0, 2, 2), true);
        assert!(
            matches!(
                got.as_ref().map_err(Error::details),
                Err(ErrorDetails::FrameBlockSpansColumns { offset: 7, .. })
            ),
            "{got:?}"
        );
        f.add(8, place(0, 0, 2, 2), false).unwrap();
    }
}
