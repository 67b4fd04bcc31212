//! Futhark binary data (`tests/data/futhark/`, written by futhark-data 1.0.3): every
//! file reads with the values its manifest lists, writes back bit-exactly, and DAPHNE objects
//! survive the trip through Futhark byte for byte.

use std::path::{Path, PathBuf};

use dbdf::convert::{self, ConvertOptions, Format, FormatOptions};
use dbdf::futhark::WriteOptions;
use serde_daphne::{DataType, Object, Options, Value, ValueType, Values};

fn futhark() -> Format {
    "futhark".parse().unwrap()
}

/// Futhark's bytes of `objects`, written through the pipe with `options`.
fn to_vec(objects: &[Object], options: &WriteOptions) -> serde_daphne::Result<Vec<u8>> {
    let options = ConvertOptions {
        formats: FormatOptions::default().with(options.clone()),
        ..ConvertOptions::default()
    };
    convert::to_vec(objects, futhark(), &options)
}

/// The values of Futhark's `bytes`, read through the pipe.
fn from_slice(bytes: &[u8]) -> serde_daphne::Result<Vec<Object>> {
    convert::from_slice(bytes, futhark(), &ConvertOptions::default())
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/futhark")
}

fn manifest() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(golden_dir().join("MANIFEST.json")).unwrap();
    // Python's json writes infinities as bare words, which JSON does not have.
    let text = text
        .replace("-Infinity", "\"-inf\"")
        .replace("Infinity", "\"inf\"");
    serde_json::from_str(&text).unwrap()
}

fn flatten(value: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match value {
        serde_json::Value::Array(items) => items.iter().for_each(|v| flatten(v, out)),
        v => out.push(v.clone()),
    }
}

/// Whether a cell read from the file equals the manifest's entry (`null` is NaN; floats were
/// listed as f64, bools as true/false).
fn same(cell: Value, expected: &serde_json::Value) -> bool {
    match (cell, expected) {
        (Value::F32(x), serde_json::Value::String(s)) => x == s.parse::<f32>().unwrap(),
        (Value::F32(x), serde_json::Value::Null) => x.is_nan(),
        (Value::F64(x), serde_json::Value::Null) => x.is_nan(),
        (Value::F32(x), e) => e
            .as_f64()
            .is_some_and(|e| x.to_bits() == (e as f32).to_bits()),
        (Value::F64(x), e) => e.as_f64().is_some_and(|e| x.to_bits() == e.to_bits()),
        (Value::U8(x), serde_json::Value::Bool(b)) => x == u8::from(*b),
        (Value::U64(x), e) => e.as_u64() == Some(x),
        (cell, e) => e.as_i64().is_some_and(|e| {
            cell.convert(ValueType::I64)
                .is_some_and(|v| v == Value::I64(e))
        }),
    }
}

/// The DAPHNE value type a Futhark type reads as.
fn read_type(futhark: &str) -> ValueType {
    match futhark {
        "bool" => ValueType::U8,
        "f16" => ValueType::F32,
        name => ValueType::ALL
            .into_iter()
            .find(|vt| vt.name() == name)
            .unwrap(),
    }
}

fn cells(object: &Object) -> Vec<Value> {
    let values = object.dense_values().unwrap();
    (0..values.len()).map(|i| values.get(i).unwrap()).collect()
}

#[test]
fn every_golden_file_reads_with_its_manifest_values_and_writes_back_bit_exactly() {
    let mut checked = 0;
    for entry in manifest() {
        let name = entry["file"].as_str().unwrap();
        let bytes = std::fs::read(golden_dir().join(name)).unwrap();
        let expected = entry["values"].as_array().unwrap();
        if name.ends_with(".txt") {
            continue;
        }
        let result = from_slice(&bytes);
        if name == "mixed_text_binary.dat" {
            // Text values are refused where they start: the first byte here.
            let err = result.unwrap_err();
            assert_error!(
                err,
                ForeignInput {
                    offset: Some(0),
                    ..
                }
            );
            assert!(err.to_string().contains("text format"), "{err}");
            continue;
        }
        if expected.iter().any(|v| v["rank"].as_u64().unwrap() > 2) {
            let err = result.unwrap_err();
            assert_error!(
                err,
                ForeignInput {
                    offset: Some(2),
                    ..
                }
            );
            assert!(err.to_string().contains("rank-3"), "{err}");
            continue;
        }
        let objects = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(objects.len(), expected.len(), "{name}");
        for (object, value) in objects.iter().zip(expected) {
            let shape: Vec<u64> = value["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            let dims = match shape[..] {
                [] => (1, 1),
                [n] => (n, 1),
                [r, c] => (r, c),
                _ => unreachable!(),
            };
            assert_eq!(object.data_type(), DataType::DenseMatrix, "{name}");
            assert_eq!(object.shape(), dims, "{name}");
            let futhark_type = value["type"].as_str().unwrap();
            assert_eq!(
                object.header().matrix_value_type(),
                Some(read_type(futhark_type)),
                "{name}"
            );
            let mut listed = Vec::new();
            flatten(&value["values"], &mut listed);
            let got = cells(object);
            assert_eq!(got.len(), listed.len(), "{name}");
            for (cell, e) in got.iter().zip(&listed) {
                assert!(same(*cell, e), "{name}: {cell:?} vs {e}");
            }
        }
        // Written back with the options the types ask for: the same bytes.
        let types: Vec<&str> = expected
            .iter()
            .map(|v| v["type"].as_str().unwrap())
            .collect();
        let options = WriteOptions {
            bools: types.contains(&"bool"),
            f16: types.contains(&"f16"),
            ..Default::default()
        };
        assert_eq!(to_vec(&objects, &options).unwrap(), bytes, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 16);
}

#[test]
fn daphne_objects_come_back_from_futhark_byte_identical() {
    let objects = [
        Object::dense(3, 4, Values::F64((0..12).map(|x| x as f64 * 0.5).collect())).unwrap(),
        Object::dense(1, 1, Values::I8(vec![-7])).unwrap(),
        Object::dense(5, 1, Values::U64(vec![0, 1, u64::MAX, 3, 4])).unwrap(),
        Object::dense(0, 3, Values::F32(vec![])).unwrap(),
        Object::dense(
            2,
            2,
            Values::F32(vec![f32::NAN, -0.0, f32::INFINITY, 1e-40]),
        )
        .unwrap(),
        Object::csr(
            3,
            3,
            vec![0, 1, 1, 3],
            vec![2, 0, 1],
            Values::I32(vec![5, -6, 7]),
        )
        .unwrap(),
    ];
    for options in [
        Options::new(),
        Options {
            tile: Some((2, 2)),
            ..Options::new()
        },
        Options {
            dialect: Some(serde_daphne::Dialect::Runtime),
            ..Options::new()
        },
    ] {
        let bytes = to_vec(&objects, &WriteOptions::default()).unwrap();
        let back = from_slice(&bytes).unwrap();
        assert_eq!(back.len(), objects.len());
        for (original, back) in objects.iter().zip(back) {
            // Futhark arrays are dense; the data type is the converter's choice.
            let back = back.with_data_type(original.data_type()).unwrap();
            let mut a = Vec::new();
            let mut b = Vec::new();
            original.write_with(&mut a, &options).unwrap();
            back.write_with(&mut b, &options).unwrap();
            assert_eq!(a, b);
        }
        // As 2-D arrays, also 1 x 1 and n x 1 keep their shapes.
        let bytes = to_vec(
            &objects,
            &WriteOptions {
                matrices: true,
                ..Default::default()
            },
        )
        .unwrap();
        let shapes: Vec<_> = from_slice(&bytes)
            .unwrap()
            .iter()
            .map(Object::shape)
            .collect();
        let expected: Vec<_> = objects.iter().map(Object::shape).collect();
        assert_eq!(shapes, expected);
    }
}

#[test]
fn what_futhark_or_daphne_cannot_hold_is_refused_by_name() {
    let frame = Object::frame(vec![("a".into(), Values::F64(vec![1.0]))]).unwrap();
    let err = to_vec(&[frame], &WriteOptions::default()).unwrap_err();
    assert_error!(err, NotConvertible);
    assert!(err.to_string().contains("Frame"), "{err}");

    let two = Object::dense(2, 1, Values::U8(vec![1, 2])).unwrap();
    let err = to_vec(
        std::slice::from_ref(&two),
        &WriteOptions {
            bools: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("u8 value 2"), "{err}");
    // Without the option it is a u8 array.
    assert_eq!(
        &to_vec(&[two], &WriteOptions::default()).unwrap()[..7],
        b"b\x02\x01  u8"
    );

    let third = Object::dense(1, 1, Values::F32(vec![1.0 / 3.0])).unwrap();
    let err = to_vec(
        &[third],
        &WriteOptions {
            f16: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("f16 cannot hold"), "{err}");
}

#[test]
fn malformed_input_is_refused_with_its_offset() {
    let cases: [(&[u8], u64, &str); 7] = [
        (b"b\x01\x00 i32\x00\x00\x00\x00", 1, "version 1"),
        (b"b\x02\x00 c64\x00\x00\x00\x00", 3, "unknown type"),
        (
            b"b\x02\x01 f64\x02\x00\x00\x00\x00\x00\x00\x00\x00",
            15,
            "needs more bytes",
        ),
        (b"b\x02\x01 f64\x01\x00\x00", 7, "the dimensions"),
        (
            b"b\x02\x01bool\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00\x02",
            17,
            "neither 0 nor 1",
        ),
        (b"  \n-- a comment\n", 3, "text format"),
        (
            b"b\x02\x02  u8\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            23,
            "needs more bytes",
        ),
    ];
    for (bytes, offset, message) in cases {
        let err = from_slice(bytes).unwrap_err();
        assert_eq!(err.offset(), Some(offset), "{err}");
        assert_error!(err, ForeignInput);
        assert!(err.to_string().contains(message), "{err}");
    }
    // Whitespace around values is fine; nothing at all is no values.
    assert_eq!(from_slice(b" \n\t").unwrap(), []);
    let spaced = from_slice(b"\n b\x02\x00  i8\xff \n").unwrap();
    assert_eq!(spaced[0].get(0, 0), Some(Value::I8(-1)));
}

#[test]
fn mutated_files_give_errors_or_values() {
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "bin") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                if let Ok(objects) = from_slice(&bad) {
                    // What reads, writes back and reads the same.
                    let options = WriteOptions {
                        matrices: true,
                        ..Default::default()
                    };
                    let again = from_slice(&to_vec(&objects, &options).unwrap()).unwrap();
                    assert_eq!(again, objects);
                }
            }
        }
    }
}

/// Every interop module has the same shape: `read`/`write` on paths (atomic), and
/// `from_slice`/`to_writer`/`to_vec` in memory; the two agree byte for byte.
#[test]
fn interop_modules_read_and_write_paths_as_they_do_bytes() {
    use dbdf::binsparse;
    use serde_daphne::{Object, Values};
    let dir = std::env::temp_dir().join(format!("serde_daphne_interop_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = Object::dense(2, 3, Values::I32(vec![1, 0, -3, 4, 0, 6])).unwrap();

    let fut = dir.join("m.fut");
    let options = ConvertOptions::default();
    convert::write(&fut, std::slice::from_ref(&m), futhark(), &options).unwrap();
    let bytes = std::fs::read(&fut).unwrap();
    assert_eq!(
        bytes,
        to_vec(std::slice::from_ref(&m), &WriteOptions::default()).unwrap()
    );
    let read = convert::read(&fut, futhark(), &options).unwrap();
    assert_eq!(read, std::slice::from_ref(&m));

    let npy_path = dir.join("m.npy");
    crate::whole::write(&npy_path, &m, "npy").unwrap();
    assert_eq!(
        std::fs::read(&npy_path).unwrap(),
        crate::whole::to_vec(&m, "npy").unwrap()
    );
    assert_eq!(crate::whole::read(&npy_path, "npy").unwrap(), m);

    let bsp = dir.join("m.bsp.npz");
    crate::whole::write(&bsp, &m, "binsparse").unwrap();
    let options = binsparse::WriteOptions::default();
    assert_eq!(
        std::fs::read(&bsp).unwrap(),
        crate::whole::to_vec_with(
            &m,
            "binsparse",
            dbdf::convert::FormatOptions::default().with(options.clone())
        )
        .unwrap()
    );
    assert_eq!(crate::whole::read_binsparse(&bsp).unwrap().object, m);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A value of 2^32 - 1 rows and no columns (23 bytes, the most rows an object holds) reads
/// and writes back at once, in one band of all its rows copied as one run (a copy per row
/// took minutes).
#[test]
fn a_value_of_many_rows_and_no_columns_is_one_band() {
    let mut bytes = b"b\x02\x02  i8".to_vec();
    bytes.extend_from_slice(&u64::from(u32::MAX).to_le_bytes());
    bytes.extend_from_slice(&0u64.to_le_bytes());
    let objects = from_slice(&bytes).unwrap();
    assert_eq!(objects[0].shape(), (u64::from(u32::MAX), 0));
    let matrices = WriteOptions {
        matrices: true,
        ..Default::default()
    };
    assert_eq!(to_vec(&objects, &matrices).unwrap(), bytes);
}
