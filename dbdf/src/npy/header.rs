//! The header of a `.npy` array: a Python dict literal (`{'descr': ..., 'fortran_order': ...,
//! 'shape': ...}`), parsed as `numpy.lib.format` parses it (`ast.literal_eval` after dropping
//! Python 2's `L` suffixes), so headers written by Python 2 (`(2L,)`), with either quote,
//! `u''`/`b''` prefixes or any key order read as numpy reads them.
//!
//! `descr` is a type string (`'<f8'`) or, for a record array, a list of fields
//! (`[('id', '<i8'), ('w', '<f8')]`), each `(name, type)` or `((title, name), type)`, with the
//! padding of aligned dtypes as fields named `''` of type `'|Vn'`.

use super::NPY;
use serde_daphne::Result;
use serde_daphne::ValueType;

/// A Python literal of the kinds a `.npy` header holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Literal {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    /// A tuple or a list.
    Seq(Vec<Literal>),
    Dict(Vec<(Literal, Literal)>),
}

impl Literal {
    /// Parses one literal filling `text` (surrounding white space aside).
    pub(crate) fn parse(text: &str) -> std::result::Result<Literal, String> {
        let mut parser = Parser {
            text: text.as_bytes(),
            at: 0,
        };
        let value = parser.value(0)?;
        parser.space();
        match parser.at == parser.text.len() {
            true => Ok(value),
            false => Err(format!("unexpected text at character {}", parser.at)),
        }
    }

    /// The value of `key` in a dict.
    pub(crate) fn get(&self, key: &str) -> Option<&Literal> {
        let Literal::Dict(entries) = self else {
            return None;
        };
        entries
            .iter()
            .find(|(k, _)| matches!(k, Literal::Str(s) if s == key))
            .map(|(_, v)| v)
    }
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

/// Nesting deeper than this is refused (a hostile header cannot exhaust the stack).
const MAX_DEPTH: usize = 32;

impl Parser<'_> {
    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.space();
        self.text.get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Literal, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        match self.peek() {
            Some(b'{') => self.dict(depth),
            Some(b'(') => self.seq(b')', depth),
            Some(b'[') => self.seq(b']', depth),
            Some(b'\'' | b'"') => self.string(),
            // Python 2's u'' and Python 3's b'' (a descr written by Python 2 may be unicode).
            Some(b'u' | b'b' | b'U' | b'B')
                if matches!(self.text.get(self.at + 1), Some(b'\'' | b'"')) =>
            {
                self.at += 1;
                self.string()
            }
            Some(b'-' | b'+' | b'0'..=b'9') => self.int(),
            Some(_) => self.word(),
            None => Err("the header ends early".into()),
        }
    }

    fn dict(&mut self, depth: usize) -> std::result::Result<Literal, String> {
        self.at += 1;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.at += 1;
                return Ok(Literal::Dict(entries));
            }
            let key = self.value(depth + 1)?;
            if self.peek() != Some(b':') {
                return Err(format!("a ':' expected at character {}", self.at));
            }
            self.at += 1;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                _ => return Err(format!("',' or '}}' expected at character {}", self.at)),
            }
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> std::result::Result<Literal, String> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(Literal::Seq(items));
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(c) if c == close => {}
                _ => return Err(format!("',' expected at character {}", self.at)),
            }
        }
    }

    fn string(&mut self) -> std::result::Result<Literal, String> {
        let quote = self.text[self.at];
        self.at += 1;
        let mut out = Vec::new();
        while let Some(&b) = self.text.get(self.at) {
            self.at += 1;
            match b {
                b'\\' => {
                    let escaped = *self.text.get(self.at).ok_or("an unfinished string")?;
                    self.at += 1;
                    out.push(match escaped {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'0' => 0,
                        other => other,
                    });
                }
                b if b == quote => {
                    return String::from_utf8(out)
                        .map(Literal::Str)
                        .map_err(|_| "a string that is not UTF-8".into())
                }
                b => out.push(b),
            }
        }
        Err("an unfinished string".into())
    }

    fn int(&mut self) -> std::result::Result<Literal, String> {
        let start = self.at;
        if matches!(self.text[self.at], b'-' | b'+') {
            self.at += 1;
        }
        while self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = std::str::from_utf8(&self.text[start..self.at]).expect("ASCII");
        // Python 2's long integers: `2L` (numpy drops the suffix before parsing).
        if matches!(self.text.get(self.at), Some(b'L' | b'l')) {
            self.at += 1;
        }
        digits
            .parse()
            .map(Literal::Int)
            .map_err(|_| format!("a malformed number {digits:?}"))
    }

    fn word(&mut self) -> std::result::Result<Literal, String> {
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            self.at += 1;
        }
        match &self.text[start..self.at] {
            b"True" => Ok(Literal::Bool(true)),
            b"False" => Ok(Literal::Bool(false)),
            b"None" => Ok(Literal::None),
            _ => Err(format!("an unexpected value at character {start}")),
        }
    }
}

/// What an array's `descr` says its elements are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Descr {
    /// A number of a DAPHNE value type; `true` for big-endian.
    Number(ValueType, bool),
    /// NumPy's `bool` (`|b1`): one byte, 0 or 1.
    Bool,
    /// A fixed-length unicode string of this many UTF-32 code units; `true` for big-endian.
    Unicode(usize, bool),
    /// A fixed-length byte string (`|S3`: how scipy stores its `format`).
    Bytes(usize),
    /// A record: named fields of numbers at offsets within records of `size` bytes.
    Record(Record),
}

/// The fields of a record array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) fields: Vec<Field>,
    /// Bytes per record (padding included).
    pub(crate) size: usize,
}

/// One field of a record: its name, where it lies in a record and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) offset: usize,
    /// A number (`Descr::Number`) or a bool.
    pub(crate) descr: Descr,
}

impl Field {
    /// The frame column's value type (`bool` as `u8`).
    pub(crate) fn value_type(&self) -> ValueType {
        match self.descr {
            Descr::Number(vt, _) => vt,
            _ => ValueType::U8,
        }
    }
}

impl Descr {
    /// A type string (`'<f8'`, `'|b1'`, `'<U3'`, `'|S3'`).
    pub(crate) fn parse(text: &str) -> Option<Descr> {
        let (order, code) = text.split_at_checked(1)?;
        let big = match order {
            "<" | "|" | "=" => false,
            ">" => true,
            _ => return None,
        };
        if let Some(n) = code.strip_prefix('U') {
            return n.parse().ok().map(|n| Descr::Unicode(n, big));
        }
        if let Some(n) = code.strip_prefix('S') {
            return n.parse().ok().map(Descr::Bytes);
        }
        let vt = match code {
            "b1" => return Some(Descr::Bool),
            "u1" => ValueType::U8,
            "i1" => ValueType::I8,
            "u2" => ValueType::U16,
            "i2" => ValueType::I16,
            "u4" => ValueType::U32,
            "i4" => ValueType::I32,
            "u8" => ValueType::U64,
            "i8" => ValueType::I64,
            "f4" => ValueType::F32,
            "f8" => ValueType::F64,
            _ => return None,
        };
        Some(Descr::Number(vt, big))
    }

    /// A header's `descr`: a type string or a record's list of fields.
    ///
    /// # Errors
    /// A message naming what is not supported (a field by name).
    pub(crate) fn of_literal(descr: &Literal) -> std::result::Result<Descr, String> {
        match descr {
            Literal::Str(text) => Descr::parse(text).ok_or_else(|| {
                format!("the dtype {text:?} (numbers of DAPHNE's types, bool and strings only)")
            }),
            Literal::Seq(fields) => record(fields).map(Descr::Record),
            _ => Err("a 'descr' that is neither a type nor a list of fields".into()),
        }
    }

    pub(crate) fn item_size(&self) -> usize {
        match self {
            Descr::Number(vt, _) => vt.size(),
            Descr::Bool => 1,
            Descr::Unicode(n, _) => 4 * n,
            Descr::Bytes(n) => *n,
            Descr::Record(record) => record.size,
        }
    }
}

/// The fields of a record array's `descr` list.
fn record(fields: &[Literal]) -> std::result::Result<Record, String> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for field in fields {
        let Literal::Seq(parts) = field else {
            return Err("a record field that is not a (name, type) pair".into());
        };
        let name = match parts.first() {
            Some(Literal::Str(name)) => name.clone(),
            // (title, name): numpy's titled fields.
            Some(Literal::Seq(titled)) => match titled.get(1) {
                Some(Literal::Str(name)) => name.clone(),
                _ => return Err("a record field with a malformed (title, name)".into()),
            },
            _ => return Err("a record field without a name".into()),
        };
        let size_of = |what: String| format!("the field {name:?}: {what}");
        if parts.len() > 2 {
            return Err(size_of(
                "an array in each record (sub-array fields have no frame column)".into(),
            ));
        }
        let descr = match parts.get(1) {
            Some(Literal::Str(text)) => {
                match text.strip_prefix('|').and_then(|t| t.strip_prefix('V')) {
                    // Padding between fields of an aligned dtype.
                    Some(n) if name.is_empty() => {
                        offset += n
                            .parse::<usize>()
                            .map_err(|_| size_of("malformed padding".into()))?;
                        continue;
                    }
                    _ => Descr::parse(text).ok_or_else(|| size_of(format!("the type {text:?}")))?,
                }
            }
            Some(Literal::Seq(_)) => {
                return Err(size_of("a nested record (frames have flat columns)".into()))
            }
            _ => return Err(size_of("no type".into())),
        };
        match descr {
            Descr::Number(..) | Descr::Bool => {}
            Descr::Unicode(..) | Descr::Bytes(..) => {
                return Err(size_of(
                    "strings (DAPHNE's binary format has numbers only)".into(),
                ))
            }
            Descr::Record(_) => unreachable!("parsed from a type string"),
        }
        let size = descr.item_size();
        out.push(Field {
            name,
            offset,
            descr,
        });
        offset += size;
    }
    // A record without fields (numpy's `dtype([])`) is a frame of no columns.
    Ok(Record {
        fields: out,
        size: offset,
    })
}

/// What a `.npy` header says: element type, shape, order and where the data starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NpyHeader {
    pub(crate) descr: Descr,
    pub(crate) shape: Vec<u64>,
    pub(crate) fortran: bool,
    pub(crate) data_offset: usize,
}

/// Parses the header dict's text (the part after the preamble).
pub(crate) fn parse_dict(text: &str, at: usize, data_offset: usize) -> Result<NpyHeader> {
    let bad = |what: &str| NPY.at(at, format!("{what} in the header {text:?}"));
    let dict = Literal::parse(text.trim_end_matches(['\n', ' ', '\0']))
        .map_err(|e| bad(&format!("a header that is not a Python dict ({e})")))?;
    let descr = dict
        .get("descr")
        .ok_or_else(|| bad("no 'descr'"))
        .and_then(|d| Descr::of_literal(d).map_err(|e| bad(&format!("unsupported: {e}"))))?;
    let fortran = match dict.get("fortran_order") {
        Some(Literal::Bool(b)) => *b,
        _ => return Err(bad("no 'fortran_order'")),
    };
    let shape = match dict.get("shape") {
        Some(Literal::Seq(dims)) => dims
            .iter()
            .map(|d| match d {
                Literal::Int(n) => u64::try_from(*n).map_err(|_| bad("a malformed 'shape'")),
                _ => Err(bad("a malformed 'shape'")),
            })
            .collect::<Result<_>>()?,
        _ => return Err(bad("no 'shape'")),
    };
    Ok(NpyHeader {
        descr,
        shape,
        fortran,
        data_offset,
    })
}

/// The `descr` literal for a record of `fields` (label and type string), packed.
pub(crate) fn record_descr<'a>(fields: impl Iterator<Item = (&'a str, &'static str)>) -> String {
    let fields: Vec<String> = fields
        .map(|(name, ty)| format!("({}, '{ty}')", python_str(name)))
        .collect();
    format!("[{}]", fields.join(", "))
}

/// A Python string literal of `text`, as `repr` writes it (single quotes unless the text has
/// them and no double quotes).
fn python_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_two_and_three_headers_read_as_numpy_reads_them() {
        let cases = [
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2L,), }",
                vec![2],
            ),
            (
                "{'descr': u'<f8', 'fortran_order': False, 'shape': (3L, 4L)}",
                vec![3, 4],
            ),
            (
                "{\"shape\": (), \"fortran_order\": False, \"descr\": \"<f8\"}",
                vec![],
            ),
            (
                "{'shape': (5,  6 ,), 'descr':'|u1','fortran_order':True}",
                vec![5, 6],
            ),
        ];
        for (text, shape) in cases {
            let header = parse_dict(text, 10, 64).unwrap();
            assert_eq!(header.shape, shape, "{text}");
        }
    }

    #[test]
    fn record_fields_take_their_offsets_and_padding() {
        let text = "{'descr': [('a', '|u1'), ('', '|V7'), (('t', 'b'), '>f8'), ('c', '|b1')], \
                    'fortran_order': False, 'shape': (2,)}";
        let Descr::Record(record) = parse_dict(text, 10, 64).unwrap().descr else {
            panic!("a record");
        };
        let got: Vec<(&str, usize)> = record
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.offset))
            .collect();
        assert_eq!(got, [("a", 0), ("b", 8), ("c", 16)]);
        assert_eq!(record.size, 17);
        assert_eq!(record.fields[1].descr, Descr::Number(ValueType::F64, true));
    }

    #[test]
    fn unsupported_fields_are_named() {
        let cases = [
            ("[('id', '<i8'), ('name', '<U10')]", "\"name\": strings"),
            ("[('pos', [('x', '<f8')])]", "\"pos\": a nested record"),
            ("[('v', '<f8', (3,))]", "\"v\": an array in each record"),
            ("[('c', '<c16')]", "\"c\": the type \"<c16\""),
        ];
        for (descr, expected) in cases {
            let text = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (1,)}}");
            let message = parse_dict(&text, 10, 64).unwrap_err().to_string();
            assert!(message.contains(expected), "{descr}: {message}");
        }
    }

    #[test]
    fn hostile_headers_are_refused_not_overflowed() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let text = format!("{{'descr': {deep}, 'fortran_order': False, 'shape': (1,)}}");
        assert!(parse_dict(&text, 10, 64).is_err());
        assert!(parse_dict(
            "{'descr': '<f8', 'shape': (-1,), 'fortran_order': False}",
            10,
            64
        )
        .is_err());
    }

    #[test]
    fn labels_are_written_as_python_writes_them() {
        let descr = record_descr([("a", "<f8"), ("it's", "<i4"), ("b\\", "|u1")].into_iter());
        assert_eq!(descr, r#"[('a', '<f8'), ("it's", '<i4'), ('b\\', '|u1')]"#);
    }
}
