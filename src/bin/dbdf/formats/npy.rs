//! NumPy `.npy`: 2-D (and 1-D, as a column) arrays of the numeric types; little- and big-endian,
//! C and Fortran order on input; version 1.0, little-endian, C order on output.

use std::io::Write;

use serde_daphne::{Object, Value, ValueType, Values};

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::U8 => "|u1",
        ValueType::I8 => "|i1",
        ValueType::U16 => "<u2",
        ValueType::I16 => "<i2",
        ValueType::U32 => "<u4",
        ValueType::I32 => "<i4",
        ValueType::U64 => "<u8",
        ValueType::I64 => "<i8",
        ValueType::F32 => "<f4",
        ValueType::F64 => "<f8",
    }
}

/// The value type and byte order (`true` for big-endian) of a descr such as `<f8`.
fn parse_descr(text: &str) -> Option<(ValueType, bool)> {
    let (order, code) = text.split_at(1);
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return None,
    };
    let vt = match code {
        "u1" | "b1" => ValueType::U8,
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
    Some((vt, big))
}

/// The text between the quotes (or parentheses) after `key` in the header dict.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let rest = &header[header.find(&format!("'{key}'"))? + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = rest.strip_prefix('\'') {
        return Some(&quoted[..quoted.find('\'')?]);
    }
    if let Some(tuple) = rest.strip_prefix('(') {
        return Some(&tuple[..tuple.find(')')?]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// Reads a `.npy` file.
///
/// # Errors
/// A message naming the byte offset and what is wrong.
pub fn read(bytes: &[u8]) -> Result<Object, String> {
    if !bytes.starts_with(MAGIC) || bytes.len() < 10 {
        return Err("byte 0: not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("byte 6: unsupported .npy version {v}")),
    };
    let header = bytes.get(start..start + header_len).ok_or(format!(
        "byte {start}: the header runs past the end of the file"
    ))?;
    let header = String::from_utf8_lossy(header);
    let bad = |what: &str| format!("byte {start}: {what} in the header {header:?}");
    let (vt, big) = dict_value(&header, "descr")
        .and_then(parse_descr)
        .ok_or_else(|| bad("an unsupported or missing 'descr' (numeric types only)"))?;
    let fortran = match dict_value(&header, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        _ => return Err(bad("no 'fortran_order'")),
    };
    let shape: Vec<u64> = dict_value(&header, "shape")
        .ok_or_else(|| bad("no 'shape'"))?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().map_err(|_| bad("a malformed 'shape'")))
        .collect::<Result<_, _>>()?;
    let (rows, cols) = match shape[..] {
        [] => (1, 1),
        [n] => (n, 1),
        [r, c] => (r, c),
        _ => {
            return Err(format!(
                "{}-D arrays have no DAPHNE form (1-D and 2-D only)",
                shape.len()
            ))
        }
    };
    let data = &bytes[start + header_len..];
    let size = vt.size() as u128;
    let expected = u128::from(rows) * u128::from(cols) * size;
    if data.len() as u128 != expected {
        return Err(format!(
            "byte {}: a {rows} x {cols} array of {vt} needs {expected} bytes of data, the file has {}",
            start + header_len,
            data.len()
        ));
    }
    let (r, c) = (rows as usize, cols as usize);
    let mut values = Values::zeros(vt, r * c).map_err(|e| e.to_string())?;
    for (k, chunk) in data.chunks_exact(vt.size()).enumerate() {
        let mut le = chunk.to_vec();
        if big {
            le.reverse();
        }
        let value = decode(&le, vt);
        // Fortran order lists columns first.
        let at = if fortran {
            (k % r.max(1)) * c + k / r.max(1)
        } else {
            k
        };
        values.set(at, value);
    }
    Object::dense(rows, cols, values).map_err(|e| e.to_string())
}

fn decode(le: &[u8], vt: ValueType) -> Value {
    let mut b = [0u8; 8];
    b[..le.len()].copy_from_slice(le);
    let x = u64::from_le_bytes(b);
    match vt {
        ValueType::U8 => Value::U8(x as u8),
        ValueType::I8 => Value::I8(x as u8 as i8),
        ValueType::U16 => Value::U16(x as u16),
        ValueType::I16 => Value::I16(x as u16 as i16),
        ValueType::U32 => Value::U32(x as u32),
        ValueType::I32 => Value::I32(x as u32 as i32),
        ValueType::U64 => Value::U64(x),
        ValueType::I64 => Value::I64(x as i64),
        ValueType::F32 => Value::F32(f32::from_bits(x as u32)),
        ValueType::F64 => Value::F64(f64::from_bits(x)),
    }
}

/// Writes a matrix as a version 1.0 `.npy` array.
///
/// # Errors
/// Frames (columns of different types have no one dtype here), and memory.
pub fn write(object: &Object, out: &mut dyn Write) -> Result<(), String> {
    let vt = object.header().matrix_value_type().ok_or_else(|| {
        "a Frame cannot be written as .npy (its columns have their own types and labels)"
            .to_string()
    })?;
    let (rows, cols) = object.shape();
    let values = object.dense_values().map_err(|e| e.to_string())?;
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}",
        descr(vt)
    );
    // Pad so that the data starts on a 64-byte boundary, ending with a newline.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let io = |e: std::io::Error| e.to_string();
    out.write_all(MAGIC).map_err(io)?;
    out.write_all(&[1, 0]).map_err(io)?;
    out.write_all(&(header.len() as u16).to_le_bytes())
        .map_err(io)?;
    out.write_all(header.as_bytes()).map_err(io)?;
    let mut bytes = Vec::with_capacity(values.len() * vt.size());
    for i in 0..values.len() {
        let v = values.get(i).ok_or("internal: value out of range")?;
        bytes.extend_from_slice(&v.bits().to_le_bytes()[..vt.size()]);
    }
    out.write_all(&bytes).map_err(io)
}
