//! Reading CSV records, for the whole read and the two-pass conversion alike: blank lines
//! skipped, the header (a sidecar's labels, or a first record that is not all numbers), the
//! width, and how fields without a sidecar's type become numbers.

use std::io::Read;

use crate::input::Foreign;
use crate::text::parse_value;
use serde_daphne::lowlevel::Meta;
use serde_daphne::{Value, ValueType};

pub(super) const CSV: Foreign = Foreign("CSV");

/// The records of a CSV input, blank lines left out, errors as messages.
pub(super) struct Records<R: Read> {
    inner: csv::StringRecordsIntoIter<R>,
}

impl<R: Read> Records<R> {
    pub(super) fn new(input: R) -> Self {
        let reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(input);
        Records {
            inner: reader.into_records(),
        }
    }

    /// The next record, or `None` at the end.
    pub(super) fn next_record(&mut self) -> Result<Option<csv::StringRecord>, String> {
        for record in self.inner.by_ref() {
            let record = record.map_err(|e| format!("not CSV: {e}"))?;
            // A line of blanks is no record (the csv crate skips empty lines itself; `""`, a
            // lone empty field, stays).
            let blank = record.len() == 1 && !record[0].is_empty() && record[0].trim().is_empty();
            if !blank {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }
}

/// The line a record starts on.
pub(super) fn line_of(record: &csv::StringRecord) -> u64 {
    record.position().map_or(0, |p| p.line())
}

/// What the first records say: the labels of a frame, the width, the sidecar's value types,
/// and the first record of values.
pub(super) struct Start {
    pub labels: Option<Vec<String>>,
    pub width: usize,
    /// One per column of a frame, one for a matrix; `None` without a sidecar.
    pub types: Option<Vec<ValueType>>,
    pub first: Option<csv::StringRecord>,
}

impl Start {
    /// Reads the header, if any: the sidecar's labels (whose record, if present, must match)
    /// or a first record that is not all numbers.
    pub(super) fn read<R: Read>(
        records: &mut Records<R>,
        sidecar: Option<&Meta>,
    ) -> Result<Start, String> {
        let types: Option<Vec<ValueType>> = match sidecar {
            Some(hint) => Some(
                hint.value_types
                    .iter()
                    .map(|vt| vt.ok_or("the sidecar names a value type this tool cannot read"))
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
        let mut first = records.next_record()?;
        let labels: Option<Vec<String>> = match (sidecar, &first) {
            (Some(hint), Some(record))
                if hint
                    .labels
                    .as_ref()
                    .is_some_and(|l| record.iter().eq(l.iter().map(String::as_str)))
                    || !is_numeric(record) =>
            {
                if let Some(labels) = &hint.labels {
                    let found: Vec<&str> = record.iter().collect();
                    if found != *labels {
                        return Err(format!(
                            "line {}: the header row {found:?} differs from the sidecar's labels {labels:?}",
                            line_of(record)
                        ));
                    }
                }
                first = records.next_record()?;
                hint.labels.clone()
            }
            (Some(hint), _) => hint.labels.clone(),
            (None, Some(record)) if !is_numeric(record) => {
                let labels = record.iter().map(str::to_owned).collect();
                first = records.next_record()?;
                Some(labels)
            }
            (None, _) => None,
        };
        let width = match (sidecar, &labels, &first) {
            (Some(hint), _, _) => hint.cols as usize,
            (None, Some(labels), _) => labels.len(),
            (None, None, Some(record)) => record.len(),
            (None, None, None) => 0,
        };
        let start = Start {
            labels,
            width,
            types,
            first,
        };
        if let Some(types) = &start.types {
            if types.len() < start.lanes() {
                return Err(format!(
                    "the sidecar gives {} value types for {} columns",
                    types.len(),
                    start.lanes()
                ));
            }
        }
        Ok(start)
    }

    /// Values go to one lane per column of a frame, or to one row-major lane for a matrix.
    pub(super) fn lanes(&self) -> usize {
        match self.labels {
            Some(_) => self.width,
            None => 1,
        }
    }

    /// The lane of column `c`.
    pub(super) fn lane(&self, c: usize) -> usize {
        match self.labels {
            Some(_) => c,
            None => 0,
        }
    }

    /// Checks a record's field count.
    pub(super) fn check_width(&self, fields: &csv::StringRecord) -> Result<(), String> {
        if fields.len() != self.width {
            return Err(format!(
                "line {}: {} fields, expected {}",
                line_of(fields),
                fields.len(),
                self.width
            ));
        }
        Ok(())
    }
}

impl Start {
    /// Reads a record as the whole read does: its width, then each field typed by the
    /// sidecar or, without one, noted in its column's `inference`; `each(lane, field)` gets
    /// every field. Errors name the line and column.
    pub(super) fn read_record(
        &self,
        fields: &csv::StringRecord,
        inference: &mut [Inference],
        mut each: impl FnMut(usize, Field),
    ) -> Result<(), String> {
        self.check_width(fields)?;
        let line = line_of(fields);
        for (c, field) in fields.iter().enumerate() {
            let lane = self.lane(c);
            let at = |message: &str| format!("line {line}, column {}: {message}", c + 1);
            let read = match &self.types {
                Some(types) => {
                    let vt = types[lane];
                    let value = parse_value(field, vt)
                        .ok_or_else(|| at(&format!("malformed {vt} number {field:?}")))?;
                    Field::Typed(value)
                }
                None => Field::Untyped(inference[lane].observe(field).map_err(at)?),
            };
            each(lane, read);
        }
        Ok(())
    }
}

/// A field as read: typed by the sidecar, or a number whose column's type is inferred.
#[derive(Clone, Copy, Debug)]
pub(super) enum Field {
    Typed(Value),
    Untyped(Number),
}

impl Field {
    /// The field as a value of its column's type `vt`.
    pub(super) fn value(self, vt: ValueType) -> Value {
        match self {
            Field::Typed(value) => value,
            Field::Untyped(number) => number.value(vt),
        }
    }

    /// Whether the field is stored as a zero (bitwise: `-0.0` is not; `-0` is, in either
    /// column type).
    pub(super) fn is_zero(self) -> bool {
        self.value(ValueType::F64).is_zero()
    }
}

fn is_numeric(record: &csv::StringRecord) -> bool {
    record.iter().all(|f| f.trim().parse::<f64>().is_ok())
}

/// A field read without a sidecar's type: an integer where it is one, else a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Number {
    Int(i64),
    /// An integer above `i64::MAX` that `u64` holds.
    Big(u64),
    Float(f64),
}

/// Why a column without a sidecar's type cannot be read without changing a value.
const MIXED: &str = "integers too large for f64 share a column with decimals; give a sidecar";
/// The same, for integers no one type holds.
const SIGNS: &str = "integers above i64's range share a column with negative ones; give a sidecar";

/// Reads a field without a type: an integer where it is one, else a float.
fn parse_untyped(field: &str) -> Result<Number, &'static str> {
    let field = field.trim();
    match (field.parse::<i64>(), field.parse::<u64>()) {
        (Ok(i), _) => Ok(Number::Int(i)),
        (_, Ok(u)) => Ok(Number::Big(u)),
        _ => field.parse().map(Number::Float).map_err(|_| "not a number"),
    }
}

impl Number {
    /// The number as a value of `vt` (`I64`, `U64` or `F64`, as [`Inference`] types the
    /// column, which holds it exactly); an integer in a float column becomes the float that
    /// holds it exactly.
    pub(super) fn value(self, vt: ValueType) -> Value {
        match (self, vt) {
            (Number::Int(i), ValueType::I64) => Value::I64(i),
            (Number::Int(i), ValueType::U64) => Value::U64(i as u64),
            (Number::Big(u), ValueType::U64) => Value::U64(u),
            (Number::Int(i), _) => Value::F64(i as f64),
            (Number::Big(u), _) => Value::F64(u as f64),
            (Number::Float(f), _) => Value::F64(f),
        }
    }

    /// An integer that `f64` cannot hold exactly.
    fn is_wide(self) -> bool {
        // `i as f64` rounds; back to i64 it saturates, so 2^63 needs its own check.
        match self {
            Number::Int(i) => {
                let f = i as f64;
                f == 2f64.powi(63) || f as i64 != i
            }
            Number::Big(u) => {
                let f = u as f64;
                f == 2f64.powi(64) || f as u64 != u
            }
            Number::Float(_) => false,
        }
    }
}

/// How a column without a sidecar's type is typed: `i64` while every field is an integer
/// (`u64` where one is above `i64::MAX` and none is negative), `f64` once one is not. An
/// integer that `f64` cannot hold exactly in a column with a decimal is an error ([`MIXED`]),
/// as are integers above `i64::MAX` beside negative ones ([`SIGNS`]), whichever comes first,
/// so that no value changes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Inference {
    float: bool,
    wide: bool,
    big: bool,
    negative: bool,
}

impl Inference {
    /// Reads one field and notes its kind.
    pub(super) fn observe(&mut self, field: &str) -> Result<Number, &'static str> {
        let number = parse_untyped(field)?;
        self.wide |= number.is_wide();
        self.float |= matches!(number, Number::Float(_));
        self.big |= matches!(number, Number::Big(_));
        self.negative |= matches!(number, Number::Int(i) if i < 0);
        if self.float && self.wide {
            return Err(MIXED);
        }
        if self.big && self.negative {
            return Err(SIGNS);
        }
        Ok(number)
    }

    /// Whether the column holds what no one type holds exactly.
    pub(super) fn conflicts(&self) -> bool {
        self.float && self.wide || self.big && self.negative
    }

    /// What another part of the same column held, noted too.
    pub(super) fn merge(&mut self, other: Inference) {
        self.float |= other.float;
        self.wide |= other.wide;
        self.big |= other.big;
        self.negative |= other.negative;
    }

    /// The column's value type.
    pub(super) fn value_type(&self) -> ValueType {
        match (self.float, self.big) {
            (true, _) => ValueType::F64,
            (false, true) => ValueType::U64,
            (false, false) => ValueType::I64,
        }
    }
}
