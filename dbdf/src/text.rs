//! Numbers as text, the syntax MatrixMarket and CSV share: written in the shortest form that
//! reads back to the same bits, read exactly.

use serde_daphne::{Value, ValueType};

/// A value as text that reads back to the same bits (Rust's shortest round-trip form).
///
/// # Errors
/// A NaN with a payload other than the canonical one, which text cannot hold.
pub(crate) fn format_value(value: Value) -> Result<String, String> {
    Ok(match value {
        Value::F64(x) if x.is_nan() && x.to_bits() != f64::NAN.to_bits() => {
            return Err(format!(
                "the NaN {:#x} has a payload text cannot hold",
                x.to_bits()
            ))
        }
        Value::F32(x) if x.is_nan() && x.to_bits() != f32::NAN.to_bits() => {
            return Err(format!(
                "the NaN {:#x} has a payload text cannot hold",
                x.to_bits()
            ))
        }
        Value::F64(x) => format!("{x:?}"),
        Value::F32(x) => format!("{x:?}"),
        Value::U8(x) => x.to_string(),
        Value::U16(x) => x.to_string(),
        Value::U32(x) => x.to_string(),
        Value::U64(x) => x.to_string(),
        Value::I8(x) => x.to_string(),
        Value::I16(x) => x.to_string(),
        Value::I32(x) => x.to_string(),
        Value::I64(x) => x.to_string(),
    })
}

/// Parses `text` as a value of `value_type`.
pub(crate) fn parse_value(text: &str, value_type: ValueType) -> Option<Value> {
    let t = text.trim();
    Some(match value_type {
        ValueType::F64 => Value::F64(t.parse().ok()?),
        ValueType::F32 => Value::F32(t.parse().ok()?),
        ValueType::U8 => Value::U8(t.parse().ok()?),
        ValueType::U16 => Value::U16(t.parse().ok()?),
        ValueType::U32 => Value::U32(t.parse().ok()?),
        ValueType::U64 => Value::U64(t.parse().ok()?),
        ValueType::I8 => Value::I8(t.parse().ok()?),
        ValueType::I16 => Value::I16(t.parse().ok()?),
        ValueType::I32 => Value::I32(t.parse().ok()?),
        ValueType::I64 => Value::I64(t.parse().ok()?),
    })
}
