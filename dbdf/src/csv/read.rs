//! Reading a whole CSV file into an object.

use std::io::Read;

use super::records::{Field, Inference, Number, Records, Start, CSV};
use serde_daphne::lowlevel::Meta;
use serde_daphne::{Object, Result, Value, ValueType, Values};

/// A column (or a whole matrix, row-major) of numbers without a sidecar's type: integers
/// while every field is one, then floats (its [`Inference`] refuses the mix that would
/// change a value).
#[derive(Default)]
struct Numbers {
    floats: Option<Vec<f64>>,
    ints: Vec<i64>,
}

impl Numbers {
    fn push(&mut self, number: Number) {
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

/// Reads CSV whole from `input`, typed by `sidecar` (a `.meta` sidecar's hint) if given.
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] naming the line (and column) and what is wrong.
pub(super) fn from_reader(input: impl Read, sidecar: Option<&Meta>) -> Result<Object> {
    read_text(input, sidecar).map_err(|message| CSV.error(message))
}

fn read_text(input: impl Read, sidecar: Option<&Meta>) -> Result<Object, String> {
    let mut records = Records::new(input);
    let mut start = Start::read(&mut records, sidecar)?;
    let mut columns = match &start.types {
        Some(types) => Columns::Typed((0..start.lanes()).map(|c| Values::new(types[c])).collect()),
        None => Columns::Inferred((0..start.lanes()).map(|_| Numbers::default()).collect()),
    };
    let mut inference = vec![Inference::default(); start.lanes()];
    let mut rows = 0u64;
    let mut record = start.first.take();
    while let Some(fields) = record {
        start.read_record(&fields, &mut inference, |lane, field| match &mut columns {
            Columns::Typed(values) => {
                // Typed as the sidecar says: the push cannot fail.
                let vt = values[lane].value_type();
                values[lane].push(field.value(vt));
            }
            Columns::Inferred(numbers) => {
                if let Field::Untyped(number) = field {
                    numbers[lane].push(number);
                }
            }
        })?;
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

    /// A column read from `fields` as the whole read reads an untyped one.
    fn column(fields: &[&str]) -> Result<Values, &'static str> {
        let (mut inference, mut numbers) = (Inference::default(), Numbers::default());
        for field in fields {
            numbers.push(inference.observe(field)?);
        }
        Ok(numbers.into_values())
    }

    #[test]
    fn integer_columns_become_floats_only_exactly() {
        assert_eq!(
            column(&["1", " -2 ", "0.5"]).unwrap(),
            Values::F64(vec![1.0, -2.0, 0.5])
        );
        for big in [i64::MAX, (1 << 53) + 1] {
            let big = big.to_string();
            assert!(column(&[&big, "0.5"]).is_err(), "{big} became a float");
            // Regression: the other way round, the integer was silently rounded.
            assert!(column(&["0.5", &big]).is_err(), "{big} was rounded");
        }
        let exact = (1i64 << 60).to_string();
        assert_eq!(
            column(&[&exact, "1.5"]).unwrap(),
            Values::F64(vec![2f64.powi(60), 1.5])
        );
        assert!(column(&["x"]).is_err());
        // An integer among floats is the float holding it: -0 is +0.0, as before the decimal.
        let Values::F64(floats) = column(&["1.5", "-0"]).unwrap() else {
            panic!("not floats")
        };
        assert_eq!(floats[1].to_bits(), 0.0f64.to_bits());
    }
}
