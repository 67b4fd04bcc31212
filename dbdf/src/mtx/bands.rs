//! Bands of rows: the unit the coordinate reader orders its entries by. The first pass's
//! fine bands are joined into bands of a few thousand entries (a band's arrays stay in a
//! core's cache while it is ordered) and bands into groups (the rows held at once).
//!
//! After the second pass, each band holds its entries in file order, each with its row as a
//! `u16` (its offset from the band's first row). Ordering a band into CSR is a counting sort
//! by row (stable: a row's entries keep their file order), then each row sorted by column
//! (stable too), so that a cell given twice is found, or summed in file order as scipy's
//! `tocsr()` sums it. The build does not depend on the order of the entries in the file.

use std::ops::Range;
use std::sync::Mutex;

use super::entries::bits_of;
use super::passes::{Counted, BAND_ROWS};
use super::Duplicates;
use crate::input::checked_sum;
use serde_daphne::{Value, ValueType};

/// The most entries a band of several fine bands takes (a fine band with more is a band of
/// its own; tests: a few, so that small files make many bands).
const BAND_ENTRIES: u64 = if cfg!(test) { 3 } else { 1 << 15 };

/// Bands and groups of the first pass's fine bands.
pub(super) struct Plan {
    /// Each band's first fine band, and the end of the last.
    pub(super) band_fine: Vec<usize>,
    /// Each fine band's band.
    pub(super) band_of: Vec<u32>,
    /// Each group's bands, in order.
    pub(super) groups: Vec<Range<usize>>,
}

impl Plan {
    /// Bands of at most [`BAND_ENTRIES`] and [`BAND_ROWS`] (or one fine band), in groups of
    /// at most `group_entries` entries (or one band).
    pub(super) fn new(counted: &Counted, group_entries: u64) -> Plan {
        let fine_rows = 1u64 << counted.shift;
        let mut band_fine = vec![0];
        let mut band_of = Vec::with_capacity(counted.fine_bands());
        let (mut entries, mut band_entries) = (Vec::new(), 0);
        for f in 0..counted.fine_bands() {
            let n = counted.fine(f);
            let start = *band_fine.last().expect("a first band");
            let span = (f - start) as u64 * fine_rows;
            let fits = band_entries + n <= BAND_ENTRIES && span + fine_rows <= BAND_ROWS;
            if f > start && !fits {
                band_fine.push(f);
                entries.push(band_entries);
                band_entries = 0;
            }
            band_of.push((band_fine.len() - 1) as u32);
            band_entries += n;
        }
        band_fine.push(counted.fine_bands());
        entries.push(band_entries);
        if counted.fine_bands() == 0 {
            (band_fine, entries) = (vec![0], Vec::new());
        }
        let mut groups = Vec::new();
        let (mut start, mut held) = (0, 0);
        for (b, &n) in entries.iter().enumerate() {
            if b > start && held + n > group_entries {
                groups.push(start..b);
                (start, held) = (b, 0);
            }
            held += n;
        }
        groups.push(start..entries.len());
        Plan {
            band_fine,
            band_of,
            groups,
        }
    }

    /// The rows of bands `bands` (of a matrix of `rows` rows).
    pub(super) fn rows(&self, bands: &Range<usize>, shift: u32, rows: u64) -> Range<u64> {
        let row = |b: usize| ((self.band_fine[b] as u64) << shift).min(rows);
        match bands.is_empty() {
            true => 0..0,
            false => row(bands.start)..row(bands.end),
        }
    }
}

/// A band's arrays after the second pass: its entries in file order, and its rows' counts
/// (zeros, to be filled).
pub(super) struct BandArrays<'a> {
    pub(super) rows: &'a [u16],
    pub(super) cols: &'a mut [u32],
    pub(super) values: &'a mut [u64],
    pub(super) counts: &'a mut [usize],
}

/// A cell that stops a band being ordered: given twice (duplicates refused), or whose
/// entries' sum has no value in the type. Row within the band, column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cell {
    Twice(usize, u32),
    SumOverflows(usize, u32),
}

/// Orders each band (on `threads` threads), leaving each row's entries at the start of its
/// band and each row's count in its `counts`; returns each band's entries kept (fewer than
/// it had where duplicates were summed), or the first band's (in row order) cell refused.
pub(super) fn order_bands(
    bands: Vec<BandArrays>,
    threads: usize,
    duplicates: Duplicates,
    value_type: ValueType,
) -> Result<Vec<usize>, (usize, Cell)> {
    let count = bands.len();
    let queue = Mutex::new(bands.into_iter().enumerate());
    let results: Vec<Vec<(usize, Result<usize, Cell>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let (mut scratch, mut cursors, mut done) = (Vec::new(), Vec::new(), Vec::new());
                    loop {
                        let next = queue.lock().expect("no thread panics").next();
                        let Some((b, band)) = next else {
                            return done;
                        };
                        let kept =
                            order_band(band, &mut scratch, &mut cursors, duplicates, value_type);
                        done.push((b, kept));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("ordering does not panic"))
            .collect()
    });
    let mut kept = vec![0; count];
    let mut refused = None;
    for (b, result) in results.into_iter().flatten() {
        match result {
            Ok(n) => kept[b] = n,
            Err(cell) if refused.is_none_or(|(first, _)| b < first) => refused = Some((b, cell)),
            Err(_) => {}
        }
    }
    refused.map_or(Ok(kept), Err)
}

/// Orders one band into CSR (see the module's description); returns its entries kept.
fn order_band(
    band: BandArrays,
    scratch: &mut Vec<(u32, u64)>,
    cursors: &mut Vec<usize>,
    duplicates: Duplicates,
    value_type: ValueType,
) -> Result<usize, Cell> {
    let BandArrays {
        rows,
        cols,
        values,
        counts,
    } = band;
    for &r in rows {
        counts[r as usize] += 1;
    }
    cursors.clear();
    let mut sum = 0;
    for &n in counts.iter() {
        cursors.push(sum);
        sum += n;
    }
    scratch.clear();
    scratch.resize(rows.len(), (0, 0));
    for ((&r, &c), &v) in rows.iter().zip(cols.iter()).zip(values.iter()) {
        let at = &mut cursors[r as usize];
        scratch[*at] = (c, v);
        *at += 1;
    }
    let (mut kept, mut start) = (0, 0);
    for (r, count) in counts.iter_mut().enumerate() {
        let row = &mut scratch[start..start + *count];
        start += *count;
        if !row.windows(2).all(|p| p[0].0 < p[1].0) {
            row.sort_by_key(|&(c, _)| c);
        }
        let first = kept;
        for &(c, v) in row.iter() {
            if kept > first && cols[kept - 1] == c {
                if duplicates == Duplicates::Refuse {
                    return Err(Cell::Twice(r, c));
                }
                values[kept - 1] =
                    add(values[kept - 1], v, value_type).ok_or(Cell::SumOverflows(r, c))?;
                continue;
            }
            cols[kept] = c;
            values[kept] = v;
            kept += 1;
        }
        *count = kept - first;
    }
    Ok(kept)
}

/// The sum of two values' bits in their type ([`crate::input::checked_sum`]).
fn add(a: u64, b: u64, vt: ValueType) -> Option<u64> {
    let value = |bits: u64| match vt {
        ValueType::F64 => Value::F64(f64::from_bits(bits)),
        ValueType::F32 => Value::F32(f32::from_bits(bits as u32)),
        ValueType::U64 => Value::U64(bits),
        ValueType::I64 => Value::I64(bits as i64),
        ValueType::U32 => Value::U32(bits as u32),
        ValueType::I32 => Value::I32(bits as i32),
        ValueType::U16 => Value::U16(bits as u16),
        ValueType::I16 => Value::I16(bits as i16),
        ValueType::U8 => Value::U8(bits as u8),
        ValueType::I8 => Value::I8(bits as i8),
    };
    checked_sum(value(a), value(b)).map(bits_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row's count, and the columns and values kept.
    type Ordered = (Vec<usize>, Vec<u32>, Vec<u64>);

    fn ordered(
        entries: &[(u16, u32, u64)],
        rows: usize,
        duplicates: Duplicates,
    ) -> Result<Ordered, Cell> {
        let r: Vec<u16> = entries.iter().map(|e| e.0).collect();
        let mut c: Vec<u32> = entries.iter().map(|e| e.1).collect();
        let mut v: Vec<u64> = entries.iter().map(|e| e.2).collect();
        let mut counts = vec![0; rows];
        let band = BandArrays {
            rows: &r,
            cols: &mut c,
            values: &mut v,
            counts: &mut counts,
        };
        let kept = order_band(
            band,
            &mut Vec::new(),
            &mut Vec::new(),
            duplicates,
            ValueType::I64,
        )?;
        c.truncate(kept);
        v.truncate(kept);
        Ok((counts, c, v))
    }

    #[test]
    fn a_band_is_ordered_by_row_then_column_and_duplicates_sum_in_file_order() {
        let entries = [
            (2, 5, 1),
            (0, 3, 2),
            (2, 1, 3),
            (0, 0, 4),
            (2, 5, 10),
            (2, 5, 100),
        ];
        let refused = ordered(&entries, 3, Duplicates::Refuse);
        assert_eq!(refused, Err(Cell::Twice(2, 5)));
        let (counts, cols, values) = ordered(&entries, 3, Duplicates::Sum).unwrap();
        assert_eq!(counts, [2, 0, 2]);
        assert_eq!(cols, [0, 3, 1, 5]);
        assert_eq!(values, [4, 2, 3, 111]);
        let over = [(0, 1, i64::MAX as u64), (0, 1, 1)];
        assert_eq!(
            ordered(&over, 1, Duplicates::Sum),
            Err(Cell::SumOverflows(0, 1))
        );
    }

    #[test]
    fn sums_are_in_each_type() {
        let third = 0.1f64;
        let summed = add(
            add(third.to_bits(), 0.2f64.to_bits(), ValueType::F64).unwrap(),
            0.3f64.to_bits(),
            ValueType::F64,
        );
        assert_eq!(summed.map(f64::from_bits), Some(0.1 + 0.2 + 0.3));
        assert_eq!(add(250, 5, ValueType::U8), Some(255));
        assert_eq!(add(250, 6, ValueType::U8), None);
        assert_eq!(
            add((-3i8) as u8 as u64, 1, ValueType::I8),
            Some((-2i8) as u8 as u64)
        );
        assert_eq!(add(u64::MAX, 0, ValueType::U64), Some(u64::MAX));
    }
}
