//! The formats `convert` reads and writes besides .dbdf, and the number syntax they share.

pub mod csv;
pub mod mtx;

use serde_daphne::{Value, ValueType};

/// A value as text that reads back to the same bits (Rust's shortest round-trip form).
///
/// # Errors
/// A NaN with a payload other than the canonical one, which text cannot hold.
pub fn format_value(value: Value) -> Result<String, String> {
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
pub fn parse_value(text: &str, value_type: ValueType) -> Option<Value> {
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

/// The value type names of DAPHNE's sidecars, with `ui16`/`si16` for the two types DAPHNE
/// lacks.
pub fn type_name(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::U8 => "ui8",
        ValueType::U16 => "ui16",
        ValueType::U32 => "ui32",
        ValueType::U64 => "ui64",
        ValueType::I8 => "si8",
        ValueType::I16 => "si16",
        ValueType::I32 => "si32",
        ValueType::I64 => "si64",
        ValueType::F32 => "f32",
        ValueType::F64 => "f64",
    }
}

/// The value type for a sidecar name (or this crate's Rust-style name).
pub fn type_from_name(name: &str) -> Option<ValueType> {
    ValueType::ALL
        .into_iter()
        .find(|&vt| type_name(vt) == name || vt.name() == name)
}

/// The narrowest of i64 and f64 that holds every field: how untyped text columns are typed.
pub fn infer_type<'a>(fields: impl Iterator<Item = &'a str>) -> Option<ValueType> {
    let mut vt = ValueType::I64;
    for field in fields {
        if vt == ValueType::I64 && field.trim().parse::<i64>().is_err() {
            vt = ValueType::F64;
        }
        if vt == ValueType::F64 && field.trim().parse::<f64>().is_err() {
            return None;
        }
    }
    Some(vt)
}
