//! Files numpy and scipy wrote (`tests/data/numpy/`, made by its `make.py` in the reference
//! environment; numpy's and scipy's own test files copied): record arrays, Python 2 headers,
//! scipy's sparse `.npz` in every format and numpy's `.npz` archives.

use std::path::PathBuf;

use dbdf::npy;
use serde_daphne::{DataType, Object, ValueType, Values};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/numpy")
        .join(name)
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_numpy_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const TYPES: [&str; 11] = [
    "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8", "b1",
];

/// The column make.py wrote for field `k` (of type `TYPES[k]`), `rows` records.
fn record_column(k: usize, rows: usize) -> Values {
    let int = |r: usize| ((r * 37 + k * 11) % 100) as i64;
    let float = |r: usize| (r as f64 - 2.0) * 0.5 + k as f64;
    let r = 0..rows;
    match TYPES[k] {
        "u1" => Values::U8(r.map(|r| int(r) as u8).collect()),
        "i1" => Values::I8(r.map(|r| (int(r) - 50) as i8).collect()),
        "u2" => Values::U16(r.map(|r| int(r) as u16).collect()),
        "i2" => Values::I16(r.map(|r| (int(r) - 50) as i16).collect()),
        "u4" => Values::U32(r.map(|r| int(r) as u32).collect()),
        "i4" => Values::I32(r.map(|r| (int(r) - 50) as i32).collect()),
        "u8" => Values::U64(r.map(|r| int(r) as u64).collect()),
        "i8" => Values::I64(r.map(|r| int(r) - 50).collect()),
        "f4" => Values::F32(r.map(|r| float(r) as f32).collect()),
        "f8" => Values::F64(r.map(float).collect()),
        _ => Values::U8(r.map(|r| (r % 2) as u8).collect()),
    }
}

fn expected_records() -> Vec<(String, Values)> {
    (0..TYPES.len())
        .map(|k| (format!("f_{}", TYPES[k]), record_column(k, 5)))
        .collect()
}

#[test]
fn record_arrays_of_every_type_order_and_alignment_read_as_frames() {
    let expected = Object::frame(expected_records()).unwrap();
    for name in [
        "records_le_packed.npy",
        "records_le_aligned.npy",
        "records_be_packed.npy",
        "records_be_aligned.npy",
    ] {
        let whole = npy::read(data(name)).unwrap();
        assert_eq!(whole, expected, "{name}");
        let bytes = std::fs::read(data(name)).unwrap();
        assert_eq!(npy::from_slice(&bytes).unwrap(), expected, "{name}");
        // Through the pipe: windows of records, any rows and fields.
        let mut source = npy::source(data(name)).unwrap();
        crate::pipe::same_windows(name, &source, 0, &expected);
        assert_eq!(
            crate::pipe::collected(&mut source),
            std::slice::from_ref(&expected),
            "{name}"
        );
    }
}

#[test]
fn frames_write_as_the_packed_record_arrays_numpy_writes() {
    // numpy's own bytes for the packed little-endian records, header and all, but for the
    // bool field, which a frame holds as u8 (DAPHNE has no bool).
    let frame = Object::frame(expected_records()).unwrap();
    let numpy = std::fs::read(data("records_le_packed.npy")).unwrap();
    let field = b"('f_b1', '|b1')";
    let at = numpy.windows(field.len()).position(|w| w == field).unwrap() + 11;
    let mut numpy = numpy;
    numpy[at] = b'u';
    assert_eq!(npy::to_vec(&frame).unwrap(), numpy);
    let dir = dir("records_sink");
    let out = dir.join("out.npy");
    serde_daphne::__private::io::write_buffered(&out, |w| {
        let mut source =
            dbdf::pipe::Held::new(vec![frame.clone()], 0, Default::default())?.band_rows(2);
        dbdf::pipe::copy(&mut source, Box::new(npy::sink(w))).map(drop)
    })
    .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), numpy);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scipys_record_array_of_nine_fields_reads_as_a_frame() {
    let frame = npy::read(data("stable-loc-scale-sample-data.npy")).unwrap();
    assert_eq!(frame.data_type(), DataType::Frame);
    assert_eq!(frame.shape(), (126, 9));
    let header = frame.header();
    let labels: Vec<&str> = match header {
        serde_daphne::Header::Frame { columns, .. } => {
            assert_eq!(columns[0].value_type, ValueType::I64);
            assert_eq!(columns[1].value_type, ValueType::F64);
            columns.iter().map(|c| c.label.as_str()).collect()
        }
        _ => unreachable!(),
    };
    assert_eq!(
        labels,
        ["param", "x", "alpha", "beta", "gamma", "delta", "pct", "pdf", "cdf"]
    );
}

#[test]
fn string_and_nested_fields_are_refused_by_name() {
    for (name, expected) in [
        ("records_strings.npy", "the field \"name\": strings"),
        ("records_nested.npy", "the field \"pos\": a nested record"),
    ] {
        let message = npy::read(data(name)).unwrap_err().to_string();
        assert!(message.contains(expected), "{name}: {message}");
    }
}

#[test]
fn python_2_headers_read_as_numpy_reads_them() {
    // numpy's test files: `'shape': (2L,)` from Python 2 on Windows, and Python 3's.
    for name in ["win64python2.npy", "python3.npy"] {
        let m = npy::read(data(name)).unwrap();
        assert_eq!(m.shape(), (2, 1), "{name}");
        assert_eq!(m.dense_vec::<f64>().unwrap().len(), 2, "{name}");
    }
    let two = npy::read(data("win64python2.npy")).unwrap();
    let three = npy::read(data("python3.npy")).unwrap();
    assert_eq!(two, three);
}

#[test]
fn matrices_write_the_bytes_numpy_saves() {
    let m = Object::dense(2, 3, Values::F64((0..6).map(|k| k as f64 / 4.0).collect())).unwrap();
    let numpy = std::fs::read(data("matrix_f64.npy")).unwrap();
    assert_eq!(npy::to_vec(&m).unwrap(), numpy);
    assert_eq!(npy::from_slice(&numpy).unwrap(), m);
}
