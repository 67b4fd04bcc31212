//! The files DAPHNE's own C++ runtime wrote (`tests/data/daphne-runtime/`): every one
//! reads with exactly the values `MANIFEST.json` lists, and writing it back in the runtime
//! dialect gives the same bytes, except where the manifest marks bytes as opaque.

use std::path::{Path, PathBuf};

use serde_daphne::lowlevel::{meta_json, read_sidecar};
use serde_daphne::{
    from_file, from_slice, BlockPolicy, DataType, Dense, Dialect, ErrorKind, Object, Options,
    Value, ValueType, Values,
};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime")
}

fn manifest() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(golden_dir().join("MANIFEST.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn field<'a>(entry: &'a serde_json::Value, key: &str) -> &'a str {
    entry[key].as_str().unwrap_or("")
}

fn runtime() -> Options {
    Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    }
}

fn value_type(name: &str) -> Option<ValueType> {
    Some(match name {
        "si8" => ValueType::I8,
        "si32" => ValueType::I32,
        "si64" => ValueType::I64,
        "ui8" => ValueType::U8,
        "ui32" => ValueType::U32,
        "ui64" => ValueType::U64,
        "f32" => ValueType::F32,
        "f64" => ValueType::F64,
        _ => return None,
    })
}

/// A nested list as the manifest writes it (Python's repr: `nan`, `inf`, `-inf` allowed).
#[derive(Debug)]
enum Item {
    List(Vec<Item>),
    Number(String),
}

fn parse_list(text: &str) -> Item {
    fn item(chars: &[char], pos: &mut usize) -> Item {
        while chars[*pos] == ' ' {
            *pos += 1;
        }
        if chars[*pos] == '[' {
            *pos += 1;
            let mut items = Vec::new();
            loop {
                while chars[*pos] == ' ' || chars[*pos] == ',' {
                    *pos += 1;
                }
                if chars[*pos] == ']' {
                    *pos += 1;
                    return Item::List(items);
                }
                items.push(item(chars, pos));
            }
        }
        let start = *pos;
        while !matches!(chars[*pos], ',' | ']' | ' ') {
            *pos += 1;
        }
        Item::Number(chars[start..*pos].iter().collect())
    }
    let chars: Vec<char> = text.trim().chars().collect();
    item(&chars, &mut 0)
}

fn flatten(item: &Item, out: &mut Vec<String>) {
    match item {
        Item::Number(n) => out.push(n.clone()),
        Item::List(items) => items.iter().for_each(|i| flatten(i, out)),
    }
}

/// The list that follows `marker` in `text`, flattened.
fn list_after(text: &str, marker: &str) -> Vec<String> {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} in {text:?}"))
        + marker.len();
    let mut out = Vec::new();
    flatten(&parse_list(&text[start..]), &mut out);
    out
}

/// Whether `value` is exactly the number the manifest writes.
fn same(value: Value, expected: &str) -> bool {
    match value {
        Value::F64(x) => match expected {
            "nan" => x.to_bits() == f64::NAN.to_bits(),
            "inf" => x == f64::INFINITY,
            "-inf" => x == f64::NEG_INFINITY,
            _ => expected.parse::<f64>().unwrap().to_bits() == x.to_bits(),
        },
        Value::F32(x) => match expected {
            "nan" => x.to_bits() == f32::NAN.to_bits(),
            "inf" => x == f32::INFINITY,
            "-inf" => x == f32::NEG_INFINITY,
            _ => expected.parse::<f32>().unwrap().to_bits() == x.to_bits(),
        },
        other => {
            other
                .to::<i64>()
                .map(i128::from)
                .or(other.to::<u64>().map(i128::from))
                == expected.parse::<i128>().ok()
        }
    }
}

/// The expected row-major values of a matrix entry.
fn expected_matrix(entry: &serde_json::Value, rows: u64, cols: u64) -> Option<Vec<String>> {
    let (values, notes) = (field(entry, "values"), field(entry, "notes"));
    let file = field(entry, "file");
    if values.starts_with("nnz=0 (all zero)") || values.starts_with("(no values") {
        return None;
    }
    if values.contains("all values in dense_f64_100x7.values.txt") {
        let text =
            std::fs::read_to_string(golden_dir().join("dense_f64_100x7.values.txt")).unwrap();
        return Some(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .flat_map(|l| l.split_whitespace().map(str::to_owned))
                .collect(),
        );
    }
    let cell = |f: &dyn Fn(u64, u64) -> f64| {
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .map(|(r, c)| f(r, c).to_string())
            .collect::<Vec<_>>()
    };
    if values.starts_with("v[r][c] = r*257 + c (as double)") {
        return Some(cell(&|r, c| (r * 257 + c) as f64));
    }
    if values.contains("(r,c) is non-zero iff (r*7+c)%8 != 0; value = r*1000 + c + 0.5") {
        let f = |r: u64, c: u64| {
            if !(r * 7 + c).is_multiple_of(8) {
                (r * 1000 + c) as f64 + 0.5
            } else {
                0.0
            }
        };
        return Some(cell(&f));
    }
    if file.contains("_BUG") {
        return Some(list_after(
            values,
            "BYTES ACTUALLY WRITTEN (row-major, 4x2) = ",
        ));
    }
    if values.starts_with("nnz=") {
        return Some(list_after(values, "dense view: "));
    }
    assert!(
        values.starts_with('['),
        "unparsed manifest values for {file}: {values} ({notes})"
    );
    Some(list_after(values, ""))
}

/// Frame columns as the manifest lists them: (label, type, values).
fn expected_frame(values: &str) -> Vec<(String, String, Vec<String>)> {
    if let Some(rest) = values.strip_prefix("column '' (empty label) ") {
        let (vt, list) = rest.split_once(" = ").unwrap();
        return vec![(String::new(), vt.to_owned(), list_after(list, ""))];
    }
    let rest = values
        .strip_prefix("columns (label:type = values): ")
        .unwrap_or(values);
    rest.split(" | ")
        .map(|column| {
            let (label, rest) = column.split_once(':').unwrap();
            let (vt, list) = rest.split_once('=').unwrap();
            (label.to_owned(), vt.to_owned(), list_after(list, ""))
        })
        .collect()
}

/// Inclusive byte ranges the manifest marks as opaque (`a..b` or a single offset).
fn opaque_ranges(text: &str) -> Vec<(usize, usize)> {
    text.split([',', ' '])
        .filter_map(|part| match part.split_once("..") {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => part.parse().ok().map(|a| (a, a)),
        })
        .collect()
}

fn check_entry(entry: &serde_json::Value) -> Result<(), String> {
    let file = field(entry, "file");
    let path = golden_dir().join(field(entry, "path"));
    let vt_name = field(entry, "vt");
    let result = from_file::<_, Object>(&path);
    if vt_name == "str" || vt_name == "fixedstr16" {
        return match result.as_ref().map_err(|e| (e.kind(), e.offset())) {
            Err((ErrorKind::StringValueType, Some(18))) => Ok(()),
            other => Err(format!(
                "{file}: expected a string-type error, got {other:?}"
            )),
        };
    }
    let object = result.map_err(|e| format!("{file}: {e}"))?;
    if object.dialect() != Dialect::Runtime {
        return Err(format!("{file}: read as {:?}", object.dialect()));
    }
    let shape = field(entry, "shape");
    if shape == "scalar" {
        if object.data_type() != DataType::Scalar {
            return Err(format!("{file}: {:?}", object.data_type()));
        }
        let value = object.get(0, 0).unwrap();
        if Some(value.value_type()) != value_type(vt_name) || !same(value, field(entry, "values")) {
            return Err(format!("{file}: {value:?} vs {}", field(entry, "values")));
        }
        return Ok(());
    }
    let (rows, cols) = shape.split_once('x').unwrap();
    let (rows, cols): (u64, u64) = (rows.parse().unwrap(), cols.parse().unwrap());
    if object.shape() != (rows, cols) {
        return Err(format!(
            "{file}: shape {:?}, manifest {shape}",
            object.shape()
        ));
    }
    if field(entry, "object") == "Frame" {
        let expected = expected_frame(field(entry, "values"));
        for (c, (label, vt, values)) in expected.iter().enumerate() {
            let column = object.column(c as u64).unwrap();
            if Some(column.value_type()) != value_type(vt) {
                return Err(format!("{file}: column {c} is {}", column.value_type()));
            }
            // Labels come from the sidecar, or are the defaults (empty labels are known).
            let has_meta = !field(entry, "meta").is_empty();
            let known = has_meta || label.is_empty() || label == &format!("col_{c}");
            if known && object.labels()[c] != label {
                return Err(format!(
                    "{file}: label {:?}, manifest {label:?}",
                    object.labels()[c]
                ));
            }
            for (r, v) in values.iter().enumerate() {
                if !same(column.get(r).unwrap(), v) {
                    return Err(format!(
                        "{file}: ({r}, {c}) = {:?}, manifest {v}",
                        column.get(r)
                    ));
                }
            }
        }
        return Ok(());
    }
    let data_type = if field(entry, "object").starts_with("CSRMatrix") {
        DataType::CsrMatrix
    } else {
        DataType::DenseMatrix
    };
    if object.data_type() != data_type || object.header().matrix_value_type() != value_type(vt_name)
    {
        return Err(format!("{file}: {:?}", object.header()));
    }
    match expected_matrix(entry, rows, cols) {
        None => {
            if object.nnz() != 0 {
                return Err(format!("{file}: {} non-zeros", object.nnz()));
            }
        }
        Some(expected) => {
            let values = object.dense_values().map_err(|e| format!("{file}: {e}"))?;
            if values.len() != expected.len() {
                return Err(format!(
                    "{file}: {} values, manifest {}",
                    values.len(),
                    expected.len()
                ));
            }
            for (i, v) in expected.iter().enumerate() {
                if !same(values.get(i).unwrap(), v) {
                    return Err(format!(
                        "{file}: value {i} = {:?}, manifest {v}",
                        values.get(i)
                    ));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn every_golden_file_reads_with_the_manifests_values() {
    let entries = manifest();
    assert_eq!(entries.len(), 49);
    let failures: Vec<String> = entries
        .iter()
        .filter_map(|e| check_entry(e).err())
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn written_back_in_the_runtime_dialect_the_bytes_are_the_same() {
    let mut compared = 0;
    for entry in manifest() {
        let file = field(&entry, "file");
        let vt = field(&entry, "vt");
        if vt == "str" || vt == "fixedstr16" {
            continue;
        }
        let original = std::fs::read(golden_dir().join(field(&entry, "path"))).unwrap();
        let object: Object = from_file(golden_dir().join(field(&entry, "path"))).unwrap();
        let written = runtime().to_vec(&object);
        if file.contains("_TRUNC") {
            // The runtime would truncate these dimensions; we refuse to.
            assert_error!(written, NotInDialect);
            continue;
        }
        let mut written = written.unwrap();
        assert_eq!(written.len(), original.len(), "{file}");
        let mut masked = original.clone();
        for (a, b) in opaque_ranges(field(&entry, "opaque_bytes")) {
            masked[a..=b].fill(0);
            written[a..=b].fill(0);
        }
        assert_eq!(written, masked, "{file}");
        compared += 1;
    }
    assert_eq!(compared, 45);
}

#[test]
fn sidecars_are_written_byte_identically_and_checked_on_reading() {
    let dir = std::env::temp_dir().join(format!("serde_daphne_meta_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    for entry in manifest() {
        let expected = field(&entry, "meta_content");
        if expected.is_empty()
            || field(&entry, "vt") == "str"
            || field(&entry, "file").contains("_TRUNC")
        {
            continue;
        }
        let object: Object = from_file(golden_dir().join(field(&entry, "path"))).unwrap();
        let written = meta_json(object.header(), None).unwrap().unwrap();
        assert_eq!(written, expected);
        // DAPHNE's write kernel leaves numNonZeros out; ours adds it to CSR sidecars
        // (DaphneDSL types readMatrix as CSR only with it), where DAPHNE's MetaDataParser
        // puts it (the golden csr_f64_5x6_nnz.dbdf.meta below has the same layout).
        let csr = object.data_type() == DataType::CsrMatrix;
        let expected = match csr {
            true => expected.replace(
                "\"numRows\"",
                &format!("\"numNonZeros\":{},\"numRows\"", object.nnz()),
            ),
            false => expected.to_owned(),
        };
        let path = dir.join(field(&entry, "file"));
        runtime().to_file(&path, &object).unwrap();
        let meta = std::fs::read_to_string(format!("{}.meta", path.display())).unwrap();
        assert_eq!(meta, expected, "{}", field(&entry, "file"));
        // Our own file and sidecar read back to the same object.
        assert_eq!(from_file::<_, Object>(&path).unwrap(), object);
        checked += 1;
    }
    assert_eq!(checked, 14);
    // The TRUNC sidecar is correct even where the file is not: reading agrees with it.
    let trunc: Object = from_file(golden_dir().join("dense_f64_4294967301x0_TRUNC.dbdf")).unwrap();
    assert_eq!(trunc.shape(), (4_294_967_301, 0));
    // A sidecar with numNonZeros, and one that disagrees with the file.
    let csr = std::fs::read(golden_dir().join("csr_f64_5x6.dbdf")).unwrap();
    let nnz_meta = std::fs::read_to_string(golden_dir().join("csr_f64_5x6_nnz.dbdf.meta")).unwrap();
    let path = dir.join("csr.dbdf");
    // Ours, byte for byte what DAPHNE's MetaDataParser writes with a non-zero count.
    let object: Object = from_file(golden_dir().join("csr_f64_5x6.dbdf")).unwrap();
    runtime().to_file(&path, &object).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("csr.dbdf.meta")).unwrap(),
        nnz_meta
    );
    std::fs::write(&path, &csr).unwrap();
    std::fs::write(dir.join("csr.dbdf.meta"), &nnz_meta).unwrap();
    assert_eq!(from_file::<_, Object>(&path).unwrap().nnz(), 7);
    std::fs::write(
        dir.join("csr.dbdf.meta"),
        nnz_meta.replace("\"numNonZeros\":7", "\"numNonZeros\":8"),
    )
    .unwrap();
    assert_error!(from_file::<_, Object>(&path), Sidecar);
    std::fs::write(
        dir.join("csr.dbdf.meta"),
        "{\"numCols\":6,\"numRows\":5,\"valueType\":\"si8\"}",
    )
    .unwrap();
    assert_error!(from_file::<_, Object>(&path), Sidecar);
    std::fs::write(
        dir.join("csr.dbdf.meta"),
        " { \"valueType\" : \"f64\", \"numRows\": 5,\n \"numCols\": 6 } ",
    )
    .unwrap();
    let hint = read_sidecar(&path).unwrap().expect("a sidecar");
    assert_eq!(
        (hint.rows, hint.cols, hint.value_types.clone()),
        (5, 6, vec![Some(ValueType::F64)])
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn typed_reads_of_runtime_files() {
    let bytes = std::fs::read(golden_dir().join("dense_f64_3x4.dbdf")).unwrap();
    let m: Dense<f64> = from_slice(&bytes).unwrap();
    assert_eq!(m.0[[2, 3]], 23.0);
    let csr = std::fs::read(golden_dir().join("csr_si32_5x6.dbdf")).unwrap();
    let m: serde_daphne::Csr<i64> = from_slice(&csr).unwrap();
    assert_eq!(m.0.nnz(), 7);
    let scalar = std::fs::read(golden_dir().join("scalar_si64.bin")).unwrap();
    assert_eq!(from_slice::<i64>(&scalar).unwrap(), -1_234_567_890_123);
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Row {
        col_0: i32,
        col_1: f32,
    }
    let frame = std::fs::read(golden_dir().join("frame_si32_f32_2x2_defaultlabels.dbdf")).unwrap();
    let rows: serde_daphne::Frame<Row> = from_slice(&frame).unwrap();
    assert_eq!(
        rows.0[0],
        Row {
            col_0: -1,
            col_1: 1.5
        }
    );
    // Without its sidecar a dense matrix without cells reads as the spec's (only the
    // meaning of its value type code differs, and DAPHNE always writes the sidecar): code 7
    // is i32 there. Typed reads give the same empty matrix either way.
    let empty = std::fs::read(golden_dir().join("dense_f64_0x4.dbdf")).unwrap();
    let spec: Object = from_slice(&empty).unwrap();
    assert_eq!(
        (
            spec.dialect(),
            spec.shape(),
            spec.header().matrix_value_type()
        ),
        (Dialect::Spec, (0, 4), Some(ValueType::I32))
    );
    let typed: ndarray::Array2<f64> = from_slice::<serde_daphne::Dense<f64>>(&empty).unwrap().0;
    assert_eq!(typed.dim(), (0, 4));
    let forced: Object = runtime().from_slice(&empty).unwrap();
    assert_eq!(forced.header().matrix_value_type(), Some(ValueType::F64));
}

/// Regression: a spec file holding a `0 x 2` i16 DenseMatrix as one `0 x 2` dense block (as
/// an independent spec writer wrote it) was refused as ambiguous with default options.
#[test]
fn a_spec_matrix_without_cells_reads_with_default_options() {
    // Header: version 1, DenseMatrix, 0 x 2, i16 (spec code 6); one dense 0 x 2 block of i16.
    let mut bytes = vec![1u8, 1];
    bytes.extend(0u64.to_le_bytes());
    bytes.extend(2u64.to_le_bytes());
    bytes.push(6);
    bytes.extend([0u8; 16]);
    bytes.extend(0u32.to_le_bytes());
    bytes.extend(2u32.to_le_bytes());
    bytes.extend([1, 6]);
    let object: Object = from_slice(&bytes).unwrap();
    assert_eq!(
        (
            object.dialect(),
            object.shape(),
            object.header().matrix_value_type()
        ),
        (Dialect::Spec, (0, 2), Some(ValueType::I16))
    );
    let typed = from_slice::<serde_daphne::Dense<i16>>(&bytes).unwrap().0;
    assert_eq!(typed.dim(), (0, 2));
}

/// Regression (found by dbdf's conformance kit): a spec-dialect frame whose bytes also parse
/// in full in the runtime's layout (two u8 columns of 6 rows: the spec's two blocks take as
/// many bytes as 6 rows of two runtime si32s) was refused as ambiguous with default options.
/// Without a sidecar it is the spec's: DAPHNE writes every frame with one.
#[test]
fn a_spec_frame_that_also_parses_as_the_runtimes_reads_as_the_specs() {
    use serde_daphne::Values;
    let frame = Object::frame(vec![
        ("a".to_owned(), Values::U8((0..6).collect())),
        ("b".to_owned(), Values::U8((10..16).collect())),
    ])
    .unwrap();
    let bytes = serde_daphne::to_vec(&frame).unwrap();
    // Both readings parse: the runtime's, forced, gives another frame.
    let runtime: Object = runtime().from_slice(&bytes).unwrap();
    assert_ne!(runtime.header(), frame.header());
    let read: Object = from_slice(&bytes).unwrap();
    assert_eq!((read.dialect(), &read), (Dialect::Spec, &frame));
}

#[test]
fn writing_for_daphne() {
    use ndarray::array;
    // Runtime codes, CSR as three arrays, scalars as data type 4.
    let dense = runtime().to_vec(&Dense(array![[1.0f64, 2.0]])).unwrap();
    assert_eq!((dense[18], dense[44], dense.len()), (7, 7, 45 + 16));
    let scalar = runtime().to_vec(&200u8).unwrap();
    assert_eq!(scalar, [&[1u8, 4][..], &[0; 16], &[3, 200]].concat());
    // Types and sizes the runtime cannot hold are errors, never converted or truncated.
    let err = runtime().to_vec(&vec![1u16, 2]).unwrap_err();
    assert_error!(err, NotInDialect);
    let wide = Dense(ndarray::Array2::<f64>::zeros((0, 5_000_000_000)));
    assert_error!(runtime().to_vec(&wide), NotInDialect);
    // Spec files our tests write still read as spec.
    let spec = serde_daphne::to_vec(&Dense(array![[1.0f64, 0.0], [0.0, 0.0]])).unwrap();
    assert_eq!(
        from_slice::<Object>(&spec).unwrap().dialect(),
        Dialect::Spec
    );
}

#[test]
fn the_runtimes_defects_are_not_inherited() {
    use ndarray::{array, s};
    // A column slice of a 4 x 4 matrix (DAPHNE writes the wrong elements: D15).
    let m = array![
        [0.0f64, 1.0, 2.0, 3.0],
        [10.0, 11.0, 12.0, 13.0],
        [20.0, 21.0, 22.0, 23.0],
        [30.0, 31.0, 32.0, 33.0]
    ];
    let view = serde_daphne::DenseView(m.slice(s![.., 1..3]));
    let bytes = runtime().to_vec(&view).unwrap();
    let values: Vec<f64> = bytes[45..]
        .chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, [1.0, 2.0, 11.0, 12.0, 21.0, 22.0, 31.0, 32.0]);
    // Real label text (D6), and no undefined bytes in scalars (D9).
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Row {
        price: f64,
        qty: i32,
    }
    let rows = serde_daphne::Frame(vec![Row { price: 0.5, qty: 7 }]);
    let bytes = runtime().to_vec(&rows).unwrap();
    assert_eq!(&bytes[18..20], &[7, 1]); // runtime codes f64, si32
    assert_eq!(&bytes[20..27], &[5, 0, b'p', b'r', b'i', b'c', b'e']);
    // Without a sidecar, runtime label bytes are never trusted as text.
    assert_eq!(
        from_slice::<Object>(&bytes).unwrap().labels(),
        ["col_0", "col_1"]
    );
    // Through a file, the sidecar carries the labels.
    let path = std::env::temp_dir().join(format!("serde_daphne_frame_{}.dbdf", std::process::id()));
    runtime().to_file(&path, &rows).unwrap();
    assert_eq!(
        from_file::<_, serde_daphne::Frame<Row>>(&path).unwrap(),
        rows
    );
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(format!("{}.meta", path.display())).unwrap();
}

/// What the runtime dialect cannot express is refused, not ignored: it writes one block per
/// object, of the object's value type.
#[test]
fn runtime_options_it_cannot_express_are_refused() {
    let m = Dense(ndarray::array![[1.0f64, 0.0], [0.0, 2.0]]);
    for (name, options) in [
        (
            "tile",
            serde_daphne::Options {
                tile: Some((1, 1)),
                ..runtime()
            },
        ),
        (
            "block policy",
            serde_daphne::Options {
                block_policy: BlockPolicy::Sparse,
                ..runtime()
            },
        ),
        (
            "narrow",
            serde_daphne::Options {
                narrow: true,
                ..runtime()
            },
        ),
    ] {
        let err = options.to_vec(&m).unwrap_err();
        assert_error!(err, NotInDialect);
        assert!(err.to_string().contains(name), "{err}");
        let object: Object = serde_daphne::from_slice(&Options::new().to_vec(&m).unwrap()).unwrap();
        let err = object.write_with(Vec::new(), &options).unwrap_err();
        assert_error!(err, NotInDialect);
        assert!(err.to_string().contains(name), "{err}");
    }
    // The defaults stay fine.
    assert!((serde_daphne::Options {
        block_policy: BlockPolicy::Auto,
        ..runtime()
    })
    .to_vec(&m)
    .is_ok());
}

/// DAPHNE's frame reader overflows its heap on a label longer than 32 bytes times the
/// columns from it to the last (`max_daphne_label_len`): such files are never written,
/// unless asked for.
#[test]
fn labels_that_overflow_daphnes_reader_are_refused() {
    let frame = |first: usize, second: usize| {
        Object::frame(vec![
            ("a".repeat(first), Values::F64(vec![1.0])),
            ("b".repeat(second), Values::I32(vec![2])),
        ])
        .unwrap()
    };
    // Column 0 of 2 survives 64 bytes, column 1 of 2 survives 32.
    assert!(runtime().to_vec(&frame(64, 32)).is_ok());
    for (first, second, column) in [(65, 1, "column 0"), (1, 33, "column 1")] {
        let err = runtime().to_vec(&frame(first, second)).unwrap_err();
        assert_error!(err, NotInDialect);
        assert!(err.to_string().contains(column), "{err}");
        let unguarded = serde_daphne::Options {
            guard_daphne_labels: false,
            ..runtime()
        };
        assert!(unguarded.to_vec(&frame(first, second)).is_ok());
        // The spec has no such limit.
        assert!(Options::new().to_vec(&frame(first, second)).is_ok());
    }
}
