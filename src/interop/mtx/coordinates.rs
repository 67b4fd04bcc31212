//! MatrixMarket coordinate entries, placed into CSR arrays in two passes over the file, each
//! on both cores, in bounded chunks.
//!
//! Memory: the file is read in 32 MiB chunks, never whole. The first pass counts each row's
//! entries (a `u32` per row per thread), which gives the CSR row offsets; the second parses
//! each chunk on two threads and places its entries at their rows' cursors in the final
//! column and value arrays, two threads each placing a half of the rows (so each writes its
//! own part of the arrays, with no cache line shared); then each row is sorted by column.
//! Peak: the CSR arrays, plus about 16 bytes per row and a chunk's entries. (In-place
//! sorting of entries kept in file order, the earlier way, took as much memory and a third
//! more time; placing from both threads into every row shared cache lines and was slower.)
//!
//! Own code rather than a crate: no maintained crate parses MatrixMarket into CSR in place;
//! `str::parse` (exact, Eisel-Lemire) does the numbers, a byte loop the indices.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::interop::text::parse_value;
use crate::io::progress::{Progress, ProgressReader};
use crate::wire::values::zeroed_vec;
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

/// One thread's entries of a chunk, in file order.
#[derive(Default)]
struct Parsed {
    rows: Vec<u32>,
    cols: Vec<u32>,
    /// Each value's bits, zero-extended (two's complement for negative integers).
    values: Vec<u64>,
    /// Entries the file lists (mirrored ones not counted).
    listed: u64,
    /// Where (in the text) the first negative integer is, and the first above `i64::MAX`.
    negative: Option<(usize, i64)>,
    beyond_i64: Option<usize>,
}

impl Parsed {
    fn clear(&mut self) {
        self.rows.clear();
        self.cols.clear();
        self.values.clear();
        self.listed = 0;
        self.negative = None;
        self.beyond_i64 = None;
    }
}

/// A parse error at a byte offset of the data (its line is counted only then).
struct ParseError {
    at: usize,
    message: String,
}

/// Reads the entries of a coordinate file whose data starts at byte `data_at` (line
/// `first_line`) and builds the CSR matrix, in two passes over the file: the first counts
/// each row's entries, the second parses them into their places in the CSR arrays. Both
/// split each chunk of text between two threads; the second also places entries on two
/// threads (each a half of the rows, so each writes its own part of the arrays).
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
    if layout.rows > u64::from(u32::MAX) || layout.cols > u64::from(u32::MAX) {
        return Err(format!(
            "a {} x {} matrix does not fit one CSR block (at most {} rows and columns)",
            layout.rows,
            layout.cols,
            u32::MAX
        ));
    }
    let nrows = layout.rows as usize;
    // Pass 1: each row's entries. Every counted entry is a line of the file (or its mirror),
    // so the arrays below are no larger than the file justifies.
    let offsets = count_rows(path, data_at, layout)?;
    let total = offsets[nrows];
    // Zeroed fresh pages, advised huge: the entries land all over them.
    let mut cols = zeroed_vec::<usize>(total).map_err(|e| e.to_string())?;
    let mut values = zeroed_vec::<u64>(total).map_err(|e| e.to_string())?;
    let mut cursors = offsets[..nrows].to_vec();
    // Pass 2: the entries into place.
    let mid = nrows / 2;
    let (mut a, mut b) = (Parsed::default(), Parsed::default());
    let (mut listed, mut negative, mut beyond_i64) = (0u64, None, None);
    let changed = || "the file changed while it was read".to_string();
    for_each_chunk(path, data_at, progress, |text, consumed| {
        let (split, failure) = parse_in_two(text, layout, (&mut a, &mut b));
        if let Some(e) = failure {
            let n = line_at(path, data_at, consumed + e.at, first_line).unwrap_or(0);
            return Err(format!("line {n}: {}", e.message));
        }
        for (part, shift) in [(&a, 0), (&b, split)] {
            listed += part.listed;
            if let (None, Some((at, x))) = (negative, part.negative) {
                negative = Some((consumed + shift + at, x));
            }
            if let (None, Some(at)) = (beyond_i64, part.beyond_i64) {
                beyond_i64 = Some(consumed + shift + at);
            }
        }
        let (cols_low, cols_high) = cols.split_at_mut(offsets[mid]);
        let (values_low, values_high) = values.split_at_mut(offsets[mid]);
        let (cursors_low, cursors_high) = cursors.split_at_mut(mid);
        let (low, high) = std::thread::scope(|scope| {
            let high = scope.spawn(|| {
                let arrays = (cols_high, values_high, cursors_high);
                place(&[&a, &b], arrays, (mid, nrows), &offsets)
            });
            let low = place(
                &[&a, &b],
                (cols_low, values_low, cursors_low),
                (0, mid),
                &offsets,
            );
            (low, high.join().expect("placing does not panic"))
        });
        low.and(high).map_err(|_| changed())
    })?;
    if listed != layout.entries {
        return Err(format!(
            "line {}: declares {} entries but {listed} follow",
            first_line - 1,
            layout.entries
        ));
    }
    if cursors.iter().zip(&offsets[1..]).any(|(c, end)| c != end) {
        return Err(changed());
    }
    let value_type = match (negative, beyond_i64) {
        (Some((neg, x)), Some(big)) if layout.value_type == ValueType::I64 => {
            let line = |at| line_at(path, data_at, at, first_line).unwrap_or(0);
            return Err(format!(
                "line {}: the negative {x} and line {}'s integer above i64::MAX share no value type",
                line(neg),
                line(big)
            ));
        }
        (_, Some(_)) if layout.value_type == ValueType::I64 => ValueType::U64,
        _ => layout.value_type,
    };
    // Each row by column, on two threads.
    let (cols_low, cols_high) = cols.split_at_mut(offsets[mid]);
    let (values_low, values_high) = values.split_at_mut(offsets[mid]);
    let (dup_low, dup_high) = std::thread::scope(|scope| {
        let high = scope.spawn(|| {
            sort_rows(cols_high, values_high, &offsets[mid..], offsets[mid])
                .map(|(r, c)| (mid + r, c))
        });
        let low = sort_rows(cols_low, values_low, &offsets[..=mid], 0);
        (low, high.join().expect("sorting does not panic"))
    });
    if let Some((r, c)) = dup_low.or(dup_high) {
        let n = duplicate_line(path, data_at, first_line, layout, r, c);
        return Err(format!("line {n}: duplicate entry ({}, {})", r + 1, c + 1));
    }
    let values = typed(values, value_type);
    Object::csr(layout.rows, layout.cols, offsets, cols, values).map_err(|e| e.to_string())
}

/// Calls `each(text, offset of the text in the data)` with the data in chunks of whole lines.
fn for_each_chunk(
    path: &Path,
    data_at: u64,
    progress: Option<&Progress>,
    mut each: impl FnMut(&[u8], usize) -> Result<(), String>,
) -> Result<(), String> {
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(data_at)).map_err(|e| e.to_string())?;
    let mut file = ProgressReader::new(file, len.saturating_sub(data_at), progress);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + 4096);
    let mut carry: Vec<u8> = Vec::new();
    let mut consumed = 0usize; // bytes of data before `buf`
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
            return Ok(());
        }
        // Whole lines only; the rest waits for the next chunk.
        let cut = match buf.iter().rposition(|&b| b == b'\n') {
            _ if end_of_file => buf.len(),
            Some(p) => p + 1,
            None => {
                carry.extend_from_slice(&buf);
                continue;
            }
        };
        carry.extend_from_slice(&buf[cut..]);
        each(&buf[..cut], consumed)?;
        consumed += cut;
        if end_of_file {
            return Ok(());
        }
    }
}

/// The first pass: each row's entries (a mirrored entry counts in its row too), as CSR row
/// offsets. Lines that do not parse are left to the second pass, which says what is wrong.
fn count_rows(path: &Path, data_at: u64, layout: &Layout) -> Result<Vec<usize>, String> {
    let nrows = layout.rows as usize;
    let (mut a, mut b) = (vec![0u32; nrows], vec![0u32; nrows]);
    for_each_chunk(path, data_at, None, |text, _| {
        let (first, second) = text.split_at(split_point(text));
        std::thread::scope(|scope| {
            let other = scope.spawn(|| count_lines(second, layout, &mut b));
            count_lines(first, layout, &mut a);
            other.join().expect("counting does not panic");
        });
        Ok(())
    })?;
    let mut offsets = Vec::with_capacity(nrows + 1);
    offsets.push(0usize);
    let mut sum = 0usize;
    for (x, y) in a.iter().zip(&b) {
        sum += *x as usize + *y as usize;
        offsets.push(sum);
    }
    Ok(offsets)
}

fn count_lines(text: &[u8], layout: &Layout, counts: &mut [u32]) {
    let mirrored = layout.symmetry != Symmetry::General;
    let mut at = 0;
    while at < text.len() {
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |p| at + p);
        let line = &text[at..end];
        let mut i = 0;
        let found = quick_indices(line, &mut i, layout).or_else(|| {
            let line = std::str::from_utf8(line).ok()?;
            let r = index(word(line, &mut i), "row", layout.rows).ok()?;
            Some((r, index(word(line, &mut i), "column", layout.cols).ok()?))
        });
        if let Some((r, c)) = found {
            // Saturating: a count that overflows can only be a file the second pass refuses.
            counts[r as usize] = counts[r as usize].saturating_add(1);
            if mirrored && r > c {
                counts[c as usize] = counts[c as usize].saturating_add(1);
            }
        }
        at = end + 1;
    }
}

/// The row and column (from 0) of the line at `*at` when both are plain numbers in range
/// (nearly every line), leaving `*at` after the column; `None` (and `*at` unchanged) sends
/// the line to the checked path, which words the error.
#[inline]
fn quick_indices(line: &[u8], at: &mut usize, layout: &Layout) -> Option<(u64, u64)> {
    let mut i = *at;
    let mut number = |max: u64| -> Option<u64> {
        while i < line.len() && matches!(line[i], b' ' | b'\t' | b'\r') {
            i += 1;
        }
        let start = i;
        let mut x: u64 = 0;
        while i < line.len() && line[i].is_ascii_digit() {
            if i - start == 19 {
                return None; // might overflow: the checked path decides
            }
            x = x * 10 + u64::from(line[i] - b'0');
            i += 1;
        }
        let ended = i == line.len() || line[i].is_ascii_whitespace();
        (i > start && ended && (1..=max).contains(&x)).then(|| x - 1)
    };
    let r = number(layout.rows)?;
    let c = number(layout.cols)?;
    *at = i;
    Some((r, c))
}

/// Places the parsed entries of rows `rows.0..rows.1` at their rows' cursors (the arrays
/// and cursors are those rows' parts); `Err` for a row with more entries than counted.
fn place(
    parts: &[&Parsed],
    (cols, values, cursors): (&mut [usize], &mut [u64], &mut [usize]),
    (first, end): (usize, usize),
    offsets: &[usize],
) -> Result<(), ()> {
    let base = offsets[first];
    for part in parts {
        for ((&r, &c), &v) in part.rows.iter().zip(&part.cols).zip(&part.values) {
            let r = r as usize;
            if r < first || r >= end {
                continue;
            }
            let k = cursors[r - first];
            if k >= offsets[r + 1] {
                return Err(());
            }
            cols[k - base] = c as usize;
            values[k - base] = v;
            cursors[r - first] = k + 1;
        }
    }
    Ok(())
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

/// Where to split `text` between two threads: after a line break near the middle.
fn split_point(text: &[u8]) -> usize {
    let middle = text.len() / 2;
    text[middle..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |p| middle + p + 1)
}

/// Parses whole lines of `text` on two threads into `a` and `b`; returns where `b`'s text
/// starts, and the first error.
fn parse_in_two(
    text: &[u8],
    layout: &Layout,
    (a, b): (&mut Parsed, &mut Parsed),
) -> (usize, Option<ParseError>) {
    let split = split_point(text);
    let (first, second) = text.split_at(split);
    let (ra, rb) = std::thread::scope(|scope| {
        let other = scope.spawn(|| parse_lines(second, layout, b));
        let mine = parse_lines(first, layout, a);
        (mine, other.join().expect("the parser does not panic"))
    });
    let failure = match (ra, rb) {
        (Err(e), _) => Some(e),
        (Ok(()), Err(e)) => Some(ParseError {
            at: e.at + split,
            ..e
        }),
        _ => None,
    };
    (split, failure)
}

fn parse_lines(text: &[u8], layout: &Layout, out: &mut Parsed) -> Result<(), ParseError> {
    out.clear();
    // Checked once for the chunk (vectorised), so that words need no check of their own.
    let text = std::str::from_utf8(text).map_err(|e| ParseError {
        at: e.valid_up_to(),
        message: "not text: a byte here is not UTF-8".into(),
    })?;
    let mut at = 0;
    while at < text.len() {
        let start = at;
        parse_entry(text, &mut at, layout, out, start)
            .map_err(|message| ParseError { at: start, message })?;
        // Words after the value are ignored, as by other readers; then the next line.
        at = text.as_bytes()[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |p| at + p + 1);
    }
    Ok(())
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
    start: usize,
) -> Result<(), String> {
    let (r, c) = match quick_indices(line.as_bytes(), at, layout) {
        Some(indices) => indices,
        None => {
            let Some(first) = word(line, at) else {
                return Ok(()); // a blank line
            };
            let r = index(Some(first), "row", layout.rows)?;
            (r, index(word(line, at), "column", layout.cols)?)
        }
    };
    let bits = if layout.pattern {
        1
    } else {
        let w = word(line, at).ok_or("missing value")?;
        value_bits(w, layout, out, start)?
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
    out.listed += 1;
    out.rows.push(r as u32);
    out.cols.push(c as u32);
    out.values.push(bits);
    if layout.symmetry != Symmetry::General && r != c {
        let mirrored = match layout.symmetry {
            Symmetry::Skew => negate(bits, layout.value_type)
                .ok_or_else(|| "the value has no negative in its type".to_string())?,
            _ => bits,
        };
        out.rows.push(c as u32);
        out.cols.push(r as u32);
        out.values.push(mirrored);
    }
    Ok(())
}

/// A value's bits in the layout's type.
fn value_bits(text: &str, layout: &Layout, out: &mut Parsed, start: usize) -> Result<u64, String> {
    let malformed = || format!("malformed {} number {text:?}", layout.value_type);
    match layout.value_type {
        ValueType::F64 => text
            .parse::<f64>()
            .map(f64::to_bits)
            .map_err(|_| malformed()),
        ValueType::I64 if !layout.typed_by_comment => {
            if let Ok(x) = text.parse::<i64>() {
                if x < 0 {
                    out.negative.get_or_insert((start, x));
                }
                Ok(x as u64)
            } else {
                let x = text.parse::<u64>().map_err(|_| malformed())?;
                out.beyond_i64.get_or_insert(start);
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
