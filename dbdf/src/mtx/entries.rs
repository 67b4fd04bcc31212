//! One MatrixMarket coordinate entry per line: its syntax, parsed a chunk of lines at a time
//! into row, column and value bits, with the header's symmetry applied.

use crate::text::parse_value;
use serde_daphne::{Value, ValueType};

/// How the entries' symmetry expands them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Symmetry {
    General,
    Symmetric,
    Skew,
}

/// What the header says about the entries.
#[derive(Clone, Copy, Debug)]
pub struct MtxHeader {
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
pub(super) struct Parsed {
    pub(super) rows: Vec<u32>,
    pub(super) cols: Vec<u32>,
    /// Each value's bits, zero-extended (two's complement for negative integers).
    pub(super) values: Vec<u64>,
    /// Entries the file lists (mirrored ones not counted).
    pub(super) listed: u64,
    /// Where (in the text) the first negative integer is, and the first above `i64::MAX`.
    pub(super) negative: Option<(usize, i64)>,
    pub(super) beyond_i64: Option<usize>,
}

impl Parsed {
    pub(super) fn clear(&mut self) {
        self.rows.clear();
        self.cols.clear();
        self.values.clear();
        self.listed = 0;
        self.negative = None;
        self.beyond_i64 = None;
    }
}

/// A parse error at a byte offset of the data (its line is counted only then).
pub(super) struct ParseError {
    pub(super) at: usize,
    pub(super) message: String,
}

/// The number (from 0) at `*at` of `line` when it is a plain number in `1..=max` ending at
/// whitespace or the end, leaving `*at` after it; `None` (and `*at` unchanged) otherwise.
#[inline]
pub(super) fn quick_index(line: &[u8], at: &mut usize, max: u64) -> Option<u64> {
    let mut i = *at;
    while i < line.len() && matches!(line[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    let start = i;
    let mut x: u64 = 0;
    if let Some((digits, n)) = line.get(i..i + 8).and_then(short_number) {
        (x, i) = (digits, i + n);
    }
    while i < line.len() && line[i].is_ascii_digit() {
        if i - start == 19 {
            return None; // might overflow: the checked path decides
        }
        x = x * 10 + u64::from(line[i] - b'0');
        i += 1;
    }
    let ended = i == line.len() || line[i].is_ascii_whitespace();
    let x = (i > start && ended && (1..=max).contains(&x)).then(|| x - 1)?;
    *at = i;
    Some(x)
}

/// The number that the digits starting `eight` spell, and how many there are, when 1 to 7
/// digits are followed by another byte: all eight at once, not a digit at a time.
#[inline]
fn short_number(eight: &[u8]) -> Option<(u64, usize)> {
    let word = u64::from_le_bytes(eight.try_into().ok()?);
    // A byte's top bit is set here when it is below b'0' or above b'9'. Borrows and carries
    // only run towards later bytes, so the first byte flagged is the first non-digit.
    let flags = (word.wrapping_sub(0x3030_3030_3030_3030)
        | word.wrapping_add(0x4646_4646_4646_4646))
        & 0x8080_8080_8080_8080;
    let n = (flags.trailing_zeros() / 8) as usize;
    if n == 0 || n == 8 {
        return None;
    }
    // The digits moved to the top bytes behind zeros (leading zeros), then combined in
    // pairs, fours and eights, each step one multiplication.
    let digits = (word << (8 * (8 - n))) & 0x0F0F_0F0F_0F0F_0F0F;
    let pairs = digits.wrapping_mul(10 << 8 | 1) >> 8 & 0x00FF_00FF_00FF_00FF;
    let fours = pairs.wrapping_mul(100 << 16 | 1) >> 16 & 0x0000_FFFF_0000_FFFF;
    Some((fours.wrapping_mul(10_000 << 32 | 1) >> 32, n))
}

/// The row and column (from 0) of the line at `*at` when both are plain numbers in range,
/// leaving `*at` after the column; `None` (and `*at` unchanged) otherwise.
#[inline]
fn quick_indices(line: &[u8], at: &mut usize, layout: &MtxHeader) -> Option<(u64, u64)> {
    let mut i = *at;
    let r = quick_index(line, &mut i, layout.rows)?;
    let c = quick_index(line, &mut i, layout.cols)?;
    *at = i;
    Some((r, c))
}

pub(super) fn parse_lines(
    text: &[u8],
    layout: &MtxHeader,
    out: &mut Parsed,
) -> Result<(), ParseError> {
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
        at = next_line(text.as_bytes(), at);
    }
    Ok(())
}

/// Where the line after the one holding byte `at` starts (the end, after the last).
#[inline]
pub(super) fn next_line(text: &[u8], at: usize) -> usize {
    // Most lines end right after their last word: no search for those.
    match text.get(at) {
        Some(b'\n') => at + 1,
        _ => memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |p| at + p + 1),
    }
}

/// Calls `each` with where every line of `text` starts (none for empty text).
#[inline]
pub(super) fn for_each_line(text: &[u8], mut each: impl FnMut(usize)) {
    if text.is_empty() {
        return;
    }
    each(0);
    for p in memchr::memchr_iter(b'\n', text) {
        if p + 1 < text.len() {
            each(p + 1);
        }
    }
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

/// The row and column (from 0) of the entry on the line at `*at` of `text`, leaving `*at`
/// after the column; `None` for a blank line. Plain numbers in range (nearly every line) are
/// read by [`quick_indices`], the rest checked word by word, which words the error.
pub(super) fn entry_indices(
    text: &str,
    at: &mut usize,
    layout: &MtxHeader,
) -> Result<Option<(u64, u64)>, String> {
    if let Some(indices) = quick_indices(text.as_bytes(), at, layout) {
        return Ok(Some(indices));
    }
    let Some(first) = word(text, at) else {
        return Ok(None);
    };
    let r = index(Some(first), "row", layout.rows)?;
    Ok(Some((r, index(word(text, at), "column", layout.cols)?)))
}

/// Parses the entry on the line at `*at`, leaving `*at` after its last word.
pub(super) fn parse_entry(
    line: &str,
    at: &mut usize,
    layout: &MtxHeader,
    out: &mut Parsed,
    start: usize,
) -> Result<(), String> {
    let Some((r, c)) = entry_indices(line, at, layout)? else {
        return Ok(()); // a blank line
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
pub(super) fn value_bits(
    text: &str,
    layout: &MtxHeader,
    out: &mut Parsed,
    start: usize,
) -> Result<u64, String> {
    let malformed = || format!("malformed {} number {text:?}", layout.value_type);
    match layout.value_type {
        ValueType::F64 => fast_float2::parse::<f64, _>(text)
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

pub(super) fn bits_of(value: Value) -> u64 {
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
pub(super) fn negate(bits: u64, vt: ValueType) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_are_read_as_their_digits_spell() {
        for text in ["7 ", "10\n", "1234567\t", "0012 3", "999999 8", "5x"] {
            let mut eight = [b' '; 8];
            eight[..text.len()].copy_from_slice(text.as_bytes());
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            let expected = text[..digits].parse::<u64>().unwrap();
            assert_eq!(short_number(&eight), Some((expected, digits)), "{text:?}");
        }
        // No digit first, or eight of them: the byte-at-a-time reading decides.
        for eight in [
            b" 1234567",
            b"12345678",
            b"/1234567",
            b":1234567",
            b"\xff1234567",
        ] {
            assert_eq!(short_number(eight), None);
        }
        // Bytes just outside '0'..='9', and non-ASCII bytes, end a number.
        for end in [b'/', b':', 0x80, 0xBA, 0xFF, 0] {
            let eight = [b'4', b'2', end, b'1', b'1', b'1', b'1', b'1'];
            assert_eq!(short_number(&eight), Some((42, 2)), "{end:#x}");
        }
    }

    /// The values are read with `fast-float2` for speed: the same bits as the standard
    /// library's exact parse (and so `strtod`'s), for every form writers print and the
    /// edge cases, accepting and refusing the same words.
    #[test]
    fn values_read_as_the_standard_library_reads_them() {
        let words = [
            "inf",
            "-Infinity",
            "NaN",
            "-nan",
            "1.",
            ".5",
            "+.5",
            "1e+5",
            "1E5",
            "1e",
            "e5",
            ".",
            "",
            "+",
            "0x10",
            "1_0",
            " 1",
            "1.5e-400",
            "1e400",
            "-0.0",
            "00012",
            "4.9e-324",
            "2.2250738585072014E-308",
            "1.7976931348623157e308",
            "1d5",
            "1e5.5",
            "+-1",
            "infx",
        ];
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut printed: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_finite() {
                printed.extend([format!("{f}"), format!("{f:E}"), format!("{f:.8e}")]);
                printed.push(format!("{:.17}", f64::from(x as u32) / 1e9));
            }
        }
        for word in &printed {
            let std = word.parse::<f64>().ok().map(f64::to_bits);
            let fast = fast_float2::parse::<f64, _>(word).ok().map(f64::to_bits);
            assert_eq!(fast, std, "{word:?}");
        }
    }

    #[test]
    fn quick_indices_agree_with_the_checked_reading() {
        let layout = MtxHeader {
            rows: 10_000_000_000,
            cols: 10_000_000_000,
            entries: 1,
            value_type: ValueType::F64,
            typed_by_comment: false,
            pattern: false,
            symmetry: Symmetry::General,
        };
        for line in [
            "1 1",
            "12345678 9 1.5",
            "  3\t4 0",
            "9999999999 1 0",
            "7 12345670\n",
        ] {
            let (mut quick, mut checked) = (0, 0);
            let q = quick_indices(line.as_bytes(), &mut quick, &layout);
            let r = index(word(line, &mut checked), "row", layout.rows).unwrap();
            let c = index(word(line, &mut checked), "column", layout.cols).unwrap();
            assert_eq!((q, quick), (Some((r, c)), checked), "{line:?}");
        }
        for line in ["0 1", "1 0", "1x 2", "10000000001 1", "1"] {
            assert_eq!(
                quick_indices(line.as_bytes(), &mut 0, &layout),
                None,
                "{line:?}"
            );
        }
    }
}
