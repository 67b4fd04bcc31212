//! MatrixMarket coordinate entries, parsed on both cores in bounded chunks and placed into
//! CSR arrays in place.
//!
//! Memory: the file is read in 32 MiB chunks, never whole. Entries go straight into what will
//! be the CSR arrays (column indices and values, in file order) plus a `u32` row per entry;
//! an in-place counting sort (American flag sort) then moves them into row order, and each
//! row is sorted by column. Peak: the CSR arrays, 4 bytes per entry and 16 per row.
//!
//! Own code rather than a crate: no maintained crate parses MatrixMarket into CSR in place;
//! `str::parse` (exact, Eisel-Lemire) does the numbers.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::interop::text::parse_value;
use crate::io::progress::{Progress, ProgressReader};
use crate::{Object, Value, ValueType, Values};

/// Bytes of the file parsed at a time (split between the two threads).
const CHUNK: usize = 32 << 20;

/// How the entries' symmetry expands them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Symmetry {
    General,
    Symmetric,
    Skew,
}

/// What the header says about the entries.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub rows: u64,
    pub cols: u64,
    pub entries: u64,
    /// The values' type (`I64` for `integer` files: `U64` is chosen after reading when a
    /// value exceeds `i64::MAX`).
    pub value_type: ValueType,
    /// Whether the type came from this tool's type comment (no widening to `u64` then).
    pub typed_by_comment: bool,
    pub pattern: bool,
    pub symmetry: Symmetry,
}

/// One thread's entries, in file order.
#[derive(Default)]
struct Parsed {
    rows: Vec<u32>,
    cols: Vec<usize>,
    /// Each value's bits, zero-extended (two's complement for negative integers).
    values: Vec<u64>,
    negative: Option<usize>,
    beyond_i64: Option<usize>,
}

/// A parse error at a byte offset of the data (its line is counted only then).
struct ParseError {
    at: usize,
    message: String,
}

/// Reads the entries of a coordinate file whose data starts at byte `data_at` (line
/// `first_line`) and builds the CSR matrix.
///
/// # Errors
/// A message naming the line and what is wrong.
pub fn read(
    path: &Path,
    data_at: u64,
    first_line: usize,
    layout: &Layout,
    progress: Option<&Progress>,
) -> Result<Object, String> {
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(data_at)).map_err(|e| e.to_string())?;
    let mut file = ProgressReader::new(file, len - data_at, progress);
    if layout.rows > u64::from(u32::MAX) || layout.cols > u64::from(u32::MAX) {
        return Err(format!(
            "a {} x {} matrix does not fit one CSR block (at most {} rows and columns)",
            layout.rows,
            layout.cols,
            u32::MAX
        ));
    }
    // Every entry takes at least 4 bytes ("1 1\n"): never reserve more than the file holds.
    let bound = (len - data_at) / 4 + 1;
    let expected = layout.entries.min(bound) as usize;
    let mirrored = layout.symmetry != Symmetry::General;
    let mut all = Parsed {
        rows: Vec::with_capacity(expected),
        cols: Vec::with_capacity(expected),
        values: Vec::with_capacity(expected),
        ..Parsed::default()
    };
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + 4096);
    let mut carry: Vec<u8> = Vec::new();
    let mut consumed = 0usize; // bytes of data before `buf`
    let mut entries = 0u64;
    loop {
        buf.clear();
        buf.extend_from_slice(&carry);
        carry.clear();
        let start = buf.len();
        buf.resize(start + CHUNK, 0);
        let got = read_full(&mut file, &mut buf[start..]).map_err(|e| e.to_string())?;
        buf.truncate(start + got);
        let end_of_file = got == 0;
        if buf.is_empty() {
            break;
        }
        // Whole lines only; the rest waits for the next chunk.
        let cut = if end_of_file {
            buf.len()
        } else {
            match buf.iter().rposition(|&b| b == b'\n') {
                Some(p) => p + 1,
                None => {
                    if got == 0 {
                        buf.len()
                    } else {
                        carry.extend_from_slice(&buf);
                        continue;
                    }
                }
            }
        };
        carry.extend_from_slice(&buf[cut..]);
        let text = &buf[..cut];
        let (parts, failure) = parse_in_two(text, layout);
        if let Some(e) = failure {
            let at = consumed + e.at;
            let n = line_at(path, data_at, at, first_line).unwrap_or(0);
            return Err(format!("line {n}: {}", e.message));
        }
        for mut part in parts {
            entries += part.values.len() as u64;
            let shift = all.values.len();
            if let Some(k) = part.negative {
                all.negative.get_or_insert(shift + k);
            }
            if let Some(k) = part.beyond_i64 {
                all.beyond_i64.get_or_insert(shift + k);
            }
            all.rows.append(&mut part.rows);
            all.cols.append(&mut part.cols);
            all.values.append(&mut part.values);
        }
        consumed += cut;
        if end_of_file {
            break;
        }
    }
    let stored = if mirrored {
        // Mirrored entries were added after each off-diagonal one.
        entries_in_file(&all)
    } else {
        entries
    };
    if stored != layout.entries {
        return Err(format!(
            "line {}: declares {} entries but {stored} follow",
            first_line - 1,
            layout.entries
        ));
    }
    let value_type = match (all.negative, all.beyond_i64) {
        (Some(neg), Some(big)) if layout.value_type == ValueType::I64 => {
            let entry_line = |k| line_of_entry(path, data_at, first_line, k, mirrored, &all);
            return Err(format!(
                "line {}: the negative {} and line {}'s integer above i64::MAX share no value type",
                entry_line(neg),
                all.values[neg] as i64,
                entry_line(big)
            ));
        }
        (_, Some(_)) if layout.value_type == ValueType::I64 => ValueType::U64,
        _ => layout.value_type,
    };
    build(all, layout, value_type, path, data_at, first_line)
}

/// How many entries the file lists (mirrored ones not counted).
fn entries_in_file(all: &Parsed) -> u64 {
    // Files list the lower triangle; mirrors lie above the diagonal.
    all.rows
        .iter()
        .zip(&all.cols)
        .filter(|&(&r, &c)| r as usize >= c)
        .count() as u64
}

/// Fills `dst` from `file` as far as it goes; 0 only at the end.
fn read_full(file: &mut dyn Read, dst: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < dst.len() {
        match file.read(&mut dst[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Parses whole lines of `text` on two threads (split at a line break near the middle).
fn parse_in_two(text: &[u8], layout: &Layout) -> (Vec<Parsed>, Option<ParseError>) {
    let middle = text.len() / 2;
    let split = text[middle..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |p| middle + p + 1);
    let (first, second) = text.split_at(split);
    let (a, b) = std::thread::scope(|scope| {
        let other = scope.spawn(|| parse_lines(second, layout));
        let mine = parse_lines(first, layout);
        (mine, other.join().expect("the parser does not panic"))
    });
    let mut failure = None;
    let mut parts = Vec::with_capacity(2);
    match a {
        Ok(p) => parts.push(p),
        Err(e) => failure = Some(e),
    }
    match b {
        Ok(p) if failure.is_none() => parts.push(p),
        Err(mut e) if failure.is_none() => {
            e.at += split;
            failure = Some(e);
        }
        _ => {}
    }
    (parts, failure)
}

fn parse_lines(text: &[u8], layout: &Layout) -> Result<Parsed, ParseError> {
    // Checked once for the chunk (vectorised), so that words need no check of their own.
    let text = std::str::from_utf8(text).map_err(|e| ParseError {
        at: e.valid_up_to(),
        message: "not text: a byte here is not UTF-8".into(),
    })?;
    let mut out = Parsed::default();
    let guess = text.len() / 24;
    out.rows.reserve(guess);
    out.cols.reserve(guess);
    out.values.reserve(guess);
    let mut at = 0;
    while at < text.len() {
        let start = at;
        parse_entry(text, &mut at, layout, &mut out)
            .map_err(|message| ParseError { at: start, message })?;
        // Words after the value are ignored, as by other readers; then the next line.
        at = text.as_bytes()[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |p| at + p + 1);
    }
    Ok(out)
}

/// The next word of the line at `*at` (words end at whitespace; the line at `\n`).
fn word<'a>(line: &'a str, at: &mut usize) -> Option<&'a str> {
    let bytes = line.as_bytes();
    while *at < bytes.len() && matches!(bytes[*at], b' ' | b'\t' | b'\r') {
        *at += 1;
    }
    let start = *at;
    while *at < bytes.len() && !bytes[*at].is_ascii_whitespace() {
        *at += 1;
    }
    // ASCII whitespace never sits inside a character: these are character boundaries.
    (*at > start).then(|| &line[start..*at])
}

fn index(word: Option<&str>, what: &str, max: u64) -> Result<u64, String> {
    let word = word.ok_or_else(|| format!("missing {what} index"))?;
    let mut i: u64 = 0;
    for &b in word.as_bytes() {
        if !b.is_ascii_digit() || i > u64::MAX / 10 {
            return Err(format!("malformed {what} index {word:?}"));
        }
        i = i * 10 + u64::from(b - b'0');
    }
    if i == 0 || i > max {
        return Err(format!("{what} index {i} is outside 1..={max}"));
    }
    Ok(i - 1)
}

/// Parses the entry on the line at `*at`, leaving `*at` after its last word.
fn parse_entry(
    line: &str,
    at: &mut usize,
    layout: &Layout,
    out: &mut Parsed,
) -> Result<(), String> {
    let Some(first) = word(line, at) else {
        return Ok(()); // a blank line
    };
    let r = index(Some(first), "row", layout.rows)?;
    let c = index(word(line, at), "column", layout.cols)?;
    let bits = if layout.pattern {
        1
    } else {
        let w = word(line, at).ok_or("missing value")?;
        value_bits(w, layout, out)?
    };
    let zero = bits == 0 || (layout.value_type.is_float() && f64::from_bits(bits) == 0.0);
    match layout.symmetry {
        Symmetry::General => {}
        _ if r == c && layout.symmetry == Symmetry::Skew && !zero => {
            return Err("a skew-symmetric matrix has a zero diagonal".into())
        }
        _ if c > r => return Err("a symmetric file lists the lower triangle only".into()),
        _ => {}
    }
    out.rows.push(r as u32);
    out.cols.push(c as usize);
    out.values.push(bits);
    if layout.symmetry != Symmetry::General && r != c {
        let mirrored = match layout.symmetry {
            Symmetry::Skew => negate(bits, layout.value_type)
                .ok_or_else(|| "the value has no negative in its type".to_string())?,
            _ => bits,
        };
        out.rows.push(c as u32);
        out.cols.push(r as usize);
        out.values.push(mirrored);
    }
    Ok(())
}

/// A value's bits in the layout's type.
fn value_bits(text: &str, layout: &Layout, out: &mut Parsed) -> Result<u64, String> {
    let malformed = || format!("malformed {} number {text:?}", layout.value_type);
    match layout.value_type {
        ValueType::F64 => text
            .parse::<f64>()
            .map(f64::to_bits)
            .map_err(|_| malformed()),
        ValueType::I64 if !layout.typed_by_comment => {
            if let Ok(x) = text.parse::<i64>() {
                if x < 0 {
                    out.negative.get_or_insert(out.values.len());
                }
                Ok(x as u64)
            } else {
                let x = text.parse::<u64>().map_err(|_| malformed())?;
                out.beyond_i64.get_or_insert(out.values.len());
                Ok(x)
            }
        }
        vt => parse_value(text, vt).map(bits_of).ok_or_else(malformed),
    }
}

fn bits_of(value: Value) -> u64 {
    match value {
        Value::F64(x) => x.to_bits(),
        Value::F32(x) => u64::from(x.to_bits()),
        Value::U8(x) => u64::from(x),
        Value::U16(x) => u64::from(x),
        Value::U32(x) => u64::from(x),
        Value::U64(x) => x,
        Value::I8(x) => x as u8 as u64,
        Value::I16(x) => x as u16 as u64,
        Value::I32(x) => x as u32 as u64,
        Value::I64(x) => x as u64,
    }
}

/// The negative of a value's bits in its type, if the type has one.
fn negate(bits: u64, vt: ValueType) -> Option<u64> {
    Some(match vt {
        ValueType::F64 => (-f64::from_bits(bits)).to_bits(),
        ValueType::F32 => u64::from((-f32::from_bits(bits as u32)).to_bits()),
        ValueType::I8 => (bits as i8).checked_neg()? as u8 as u64,
        ValueType::I16 => (bits as i16).checked_neg()? as u16 as u64,
        ValueType::I32 => (bits as i32).checked_neg()? as u32 as u64,
        ValueType::I64 => (bits as i64).checked_neg()? as u64,
        _ if bits == 0 => 0,
        _ => return None,
    })
}

/// The line of the file where entry `k` (counting mirrored ones) is, for error messages.
fn line_of_entry(
    path: &Path,
    data_at: u64,
    first_line: usize,
    k: usize,
    mirrored: bool,
    all: &Parsed,
) -> usize {
    // Entries in the file before k (a mirrored copy follows its original).
    let in_file = if mirrored {
        all.rows[..=k]
            .iter()
            .zip(&all.cols[..=k])
            .filter(|&(&r, &c)| r as usize >= c)
            .count()
            - 1
    } else {
        k
    };
    nth_entry_line(path, data_at, first_line, in_file).unwrap_or(0)
}

/// The line of the `n`th non-blank line after `data_at` (from 0).
fn nth_entry_line(path: &Path, data_at: u64, first_line: usize, n: usize) -> Option<usize> {
    let bytes = std::fs::read(path).ok()?;
    let data = bytes.get(data_at as usize..)?;
    let mut seen = 0;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            if seen == n {
                return Some(first_line + i);
            }
            seen += 1;
        }
    }
    None
}

/// The line holding byte `at` of the data.
fn line_at(path: &Path, data_at: u64, at: usize, first_line: usize) -> Option<usize> {
    let bytes = std::fs::read(path).ok()?;
    let data = bytes.get(data_at as usize..)?;
    Some(
        first_line
            + data[..at.min(data.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
    )
}

/// Moves the entries into row order in place, sorts each row by column, checks for
/// duplicates and builds the object.
fn build(
    all: Parsed,
    layout: &Layout,
    value_type: ValueType,
    path: &Path,
    data_at: u64,
    first_line: usize,
) -> Result<Object, String> {
    let Parsed {
        mut rows,
        mut cols,
        mut values,
        ..
    } = all;
    let nrows = layout.rows as usize;
    let mut offsets = vec![0usize; nrows + 1];
    for &r in &rows {
        offsets[r as usize + 1] += 1;
    }
    for r in 0..nrows {
        offsets[r + 1] += offsets[r];
    }
    // In-place radix partition by row, in two levels so that each level's write cursors
    // stay in cache: first by the row's high bits (at most 1024 buckets), then within each
    // bucket by the rest.
    let bits = usize::BITS - nrows.max(1).leading_zeros();
    let shift = bits.saturating_sub(10);
    let high = partition(
        &mut rows,
        &mut cols,
        &mut values,
        |r| (r >> shift) as usize,
        (nrows >> shift) + 1,
    );
    // The second level and the rows' sorting, on two threads: halves of the buckets.
    let half = high
        .partition_point(|&start| start < rows.len() / 2)
        .min(high.len() - 1);
    let split = high[half];
    let (rows_a, rows_b) = rows.split_at_mut(split);
    let (cols_a, cols_b) = cols.split_at_mut(split);
    let (values_a, values_b) = values.split_at_mut(split);
    let (first_row, last_row) = ((half << shift).min(nrows), nrows);
    let finish = |rows: &mut [u32],
                  cols: &mut [usize],
                  values: &mut [u64],
                  buckets: &[usize],
                  row_range: (usize, usize)| {
        let base = buckets[0];
        for w in buckets.windows(2) {
            let (a, b) = (w[0] - base, w[1] - base);
            let low = |r: u32| (r & ((1u32 << shift) - 1)) as usize;
            partition(
                &mut rows[a..b],
                &mut cols[a..b],
                &mut values[a..b],
                low,
                1 << shift,
            );
        }
        sort_rows(cols, values, &offsets[row_range.0..=row_range.1], base)
            .map(|(r, c)| (row_range.0 + r, c))
    };
    let (dup_a, dup_b) = std::thread::scope(|scope| {
        let other = scope.spawn(|| {
            finish(
                rows_b,
                cols_b,
                values_b,
                &high[half..],
                (first_row, last_row),
            )
        });
        let mine = finish(rows_a, cols_a, values_a, &high[..=half], (0, first_row));
        (mine, other.join().expect("sorting does not panic"))
    });
    drop(rows);
    if let Some((r, c)) = dup_a.or(dup_b) {
        let n = duplicate_line(path, data_at, first_line, layout, r, c);
        return Err(format!("line {n}: duplicate entry ({}, {})", r + 1, c + 1));
    }
    let values = typed(values, value_type);
    Object::csr(layout.rows, layout.cols, offsets, cols, values).map_err(|e| e.to_string())
}

/// Sorts each row's entries by column (rows given by `offsets`, shifted by `base`); returns
/// the first cell given twice, as (row within `offsets`, column) from 0.
fn sort_rows(
    cols: &mut [usize],
    values: &mut [u64],
    offsets: &[usize],
    base: usize,
) -> Option<(usize, usize)> {
    let mut scratch: Vec<(usize, u64)> = Vec::new();
    for (k, w) in offsets.windows(2).enumerate() {
        let (a, b) = (w[0] - base, w[1] - base);
        if cols[a..b].windows(2).all(|p| p[0] < p[1]) {
            continue;
        }
        scratch.clear();
        scratch.extend(cols[a..b].iter().copied().zip(values[a..b].iter().copied()));
        scratch.sort_unstable_by_key(|&(c, _)| c);
        if let Some(p) = scratch.windows(2).find(|p| p[0].0 == p[1].0) {
            return Some((k, p[0].0));
        }
        for (i, (c, v)) in scratch.iter().enumerate() {
            cols[a + i] = *c;
            values[a + i] = *v;
        }
    }
    None
}

/// Moves entries into buckets by `key` (below `buckets`), in place (American flag sort);
/// returns where each bucket starts, and the end.
fn partition(
    rows: &mut [u32],
    cols: &mut [usize],
    values: &mut [u64],
    key: impl Fn(u32) -> usize,
    buckets: usize,
) -> Vec<usize> {
    let mut starts = vec![0usize; buckets + 1];
    for &r in rows.iter() {
        starts[key(r) + 1] += 1;
    }
    for b in 0..buckets {
        starts[b + 1] += starts[b];
    }
    let mut next = starts[..buckets].to_vec();
    for bucket in 0..buckets {
        let end = starts[bucket + 1];
        while next[bucket] < end {
            let i = next[bucket];
            let home = key(rows[i]);
            if home == bucket {
                next[bucket] += 1;
                continue;
            }
            let j = next[home];
            next[home] += 1;
            rows.swap(i, j);
            cols.swap(i, j);
            values.swap(i, j);
        }
    }
    starts
}

/// The bits as values of their type (truncated to its width).
fn typed(bits: Vec<u64>, vt: ValueType) -> Values {
    match vt {
        ValueType::F64 => Values::F64(bytemuck::allocation::cast_vec(bits)),
        ValueType::U64 => Values::U64(bits),
        ValueType::I64 => Values::I64(bytemuck::allocation::cast_vec(bits)),
        ValueType::F32 => Values::F32(bits.iter().map(|&b| f32::from_bits(b as u32)).collect()),
        ValueType::U8 => Values::U8(bits.iter().map(|&b| b as u8).collect()),
        ValueType::U16 => Values::U16(bits.iter().map(|&b| b as u16).collect()),
        ValueType::U32 => Values::U32(bits.iter().map(|&b| b as u32).collect()),
        ValueType::I8 => Values::I8(bits.iter().map(|&b| b as i8).collect()),
        ValueType::I16 => Values::I16(bits.iter().map(|&b| b as i16).collect()),
        ValueType::I32 => Values::I32(bits.iter().map(|&b| b as i32).collect()),
    }
}

/// The line of the second entry at (`row`, `col`) (0-based), or of its mirror.
fn duplicate_line(
    path: &Path,
    data_at: u64,
    first_line: usize,
    layout: &Layout,
    row: usize,
    col: usize,
) -> usize {
    let Ok(bytes) = std::fs::read(path) else {
        return 0;
    };
    let Some(data) = bytes.get(data_at as usize..) else {
        return 0;
    };
    let mut seen = 0;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(line);
        let mut at = 0;
        let r = index(word(&line, &mut at), "row", layout.rows);
        let c = index(word(&line, &mut at), "column", layout.cols);
        if let (Ok(r), Ok(c)) = (r, c) {
            let hit = (r as usize, c as usize) == (row, col)
                || (layout.symmetry != Symmetry::General && (c as usize, r as usize) == (row, col));
            if hit {
                seen += 1;
                if seen == 2 {
                    return first_line + i;
                }
            }
        }
    }
    0
}
