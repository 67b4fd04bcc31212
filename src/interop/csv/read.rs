//! Reading a whole CSV file into an object.

use std::io::Read;

use super::records::{line_of, Inference, Number, Records, Start, CSV};
use crate::interop::text::parse_value;
use crate::model::Hint;
use crate::{Object, Result, Value, ValueType, Values};

/// A column (or a whole matrix, row-major) of numbers without a sidecar's type: integers
/// while every field is one, then floats.
#[derive(Default)]
struct Numbers {
    inference: Inference,
    floats: Option<Vec<f64>>,
    ints: Vec<i64>,
}

impl Numbers {
    fn push(&mut self, field: &str) -> Result<(), &'static str> {
        let number = self.inference.observe(field)?;
        match (&mut self.floats, number) {
            (None, Number::Int(i)) => self.ints.push(i),
            (floats, number) => {
                // Exact: the inference refuses integers f64 cannot hold beside decimals.
                let floats = floats.get_or_insert_with(|| {
                    std::mem::take(&mut self.ints)
                        .iter()
                        .map(|&i| i as f64)
                        .collect()
                });
                if let Value::F64(f) = number.value(ValueType::F64) {
                    floats.push(f);
                }
            }
        }
        Ok(())
    }

    fn into_values(self) -> Values {
        match self.floats {
            Some(floats) => Values::F64(floats),
            None => Values::I64(self.ints),
        }
    }
}

/// Where the values of a CSV go while it is read.
enum Columns {
    /// Typed by a sidecar: one vector per column (frames) or one row-major vector.
    Typed(Vec<Values>),
    /// Untyped: one per column (frames) or one row-major (matrices).
    Inferred(Vec<Numbers>),
}

/// Reads CSV, with the sidecar beside it if there is one ([`crate::io::read_sidecar`]).
///
/// # Errors
/// [`crate::Error::ForeignInput`] naming the line (and column) and what is wrong.
pub fn read(input: impl Read, sidecar: Option<&Hint>) -> Result<Object> {
    read_text(input, sidecar).map_err(|message| CSV.error(message))
}

fn read_text(input: impl Read, sidecar: Option<&Hint>) -> Result<Object, String> {
    let mut records = Records::new(input);
    let mut start = Start::read(&mut records, sidecar)?;
    let mut columns = match &start.types {
        Some(types) => Columns::Typed((0..start.lanes()).map(|c| Values::new(types[c])).collect()),
        None => Columns::Inferred((0..start.lanes()).map(|_| Numbers::default()).collect()),
    };
    let mut rows = 0u64;
    let mut record = start.first.take();
    while let Some(fields) = record {
        let n = line_of(&fields);
        start.check_width(&fields)?;
        for (c, field) in fields.iter().enumerate() {
            let lane = start.lane(c);
            let at = |message: String| format!("line {n}, column {}: {message}", c + 1);
            match &mut columns {
                Columns::Typed(values) => {
                    let vt = values[lane].value_type();
                    let value = parse_value(field, vt)
                        .ok_or_else(|| at(format!("malformed {vt} number {field:?}")))?;
                    values[lane].push(value);
                }
                Columns::Inferred(numbers) => numbers[lane]
                    .push(field)
                    .map_err(|message| at(message.into()))?,
            }
        }
        rows += 1;
        record = records.next_record()?;
    }
    if let Some(hint) = sidecar {
        if rows != hint.rows {
            return Err(format!(
                "the sidecar says {} rows but {rows} follow",
                hint.rows
            ));
        }
    }
    let values: Vec<Values> = match columns {
        Columns::Typed(values) => values,
        Columns::Inferred(numbers) => numbers.into_iter().map(Numbers::into_values).collect(),
    };
    match start.labels {
        Some(labels) => Object::frame(labels.into_iter().zip(values).collect()),
        None => {
            let values = values.into_iter().next().unwrap_or(Values::F64(Vec::new()));
            Object::dense(rows, start.width as u64, values)
        }
    }
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_columns_become_floats_only_exactly() {
        let mut column = Numbers::default();
        for field in ["1", " -2 ", "0.5"] {
            column.push(field).unwrap();
        }
        assert_eq!(column.into_values(), Values::F64(vec![1.0, -2.0, 0.5]));
        for big in [i64::MAX, (1 << 53) + 1] {
            let mut column = Numbers::default();
            column.push(&big.to_string()).unwrap();
            assert!(column.push("0.5").is_err(), "{big} became a float");
            // Regression: the other way round, the integer was silently rounded.
            let mut column = Numbers::default();
            column.push("0.5").unwrap();
            assert!(column.push(&big.to_string()).is_err(), "{big} was rounded");
        }
        let mut exact = Numbers::default();
        exact.push(&(1i64 << 60).to_string()).unwrap();
        exact.push("1.5").unwrap();
        assert_eq!(exact.into_values(), Values::F64(vec![2f64.powi(60), 1.5]));
        assert!(Numbers::default().push("x").is_err());
        // An integer among floats is the float holding it: -0 is +0.0, as before the decimal.
        let mut zero = Numbers::default();
        zero.push("1.5").unwrap();
        zero.push("-0").unwrap();
        let Values::F64(floats) = zero.into_values() else {
            panic!("not floats")
        };
        assert_eq!(floats[1].to_bits(), 0.0f64.to_bits());
    }
}
