//! The `dbdf` binary, run for real on files the library writes and on DAPHNE's golden files.
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ndarray::array;
use serde_daphne::{
    from_file, to_file, BlockPolicy, Dense, Dialect, Object, Options, Value, Values,
};

pub(crate) fn dbdf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbdf"))
        .args(args)
        .output()
        .expect("dbdf runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh directory for one test.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn golden(name: &str) -> PathBuf {
    // The DAPHNE runtime's golden files are the format crate's, beside this one.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/daphne-runtime")
        .join(name)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The bits of every cell of a matrix, or of every column of a frame.
fn cells(object: &Object) -> Vec<u64> {
    let (rows, cols) = object.shape();
    let mut out = Vec::new();
    for c in 0..cols {
        for r in 0..rows {
            let v = object.get(r, c).unwrap();
            out.push(
                v.convert(object.header().value_type_of(c).unwrap())
                    .unwrap_or(v)
                    .bits(),
            );
        }
    }
    out
}

/// Asserts a failure: exit code 1, one line on stderr naming `file`, no panic.
fn assert_fails(output: &Output, file: &str, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("dbdf: ") && err.contains(file), "{err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Writing values of different types through one loop.
mod erased {
    pub trait Write {
        fn write(&self, path: &std::path::Path, options: &serde_daphne::Options);
    }
    impl<T: serde::Serialize> Write for T {
        fn write(&self, path: &std::path::Path, options: &serde_daphne::Options) {
            options.to_file(path, self).unwrap();
        }
    }
}

#[test]
fn info_describes_objects_and_blocks() {
    let out = dbdf(&["info", s(&golden("csr_f64_5x6.dbdf"))]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("213 bytes, 1 object(s), 7 stored values (30.43 bytes each)"),
        "{text}"
    );
    let counted = stdout(&dbdf(&["info", "--nnz", s(&golden("csr_f64_5x6.dbdf"))]));
    assert!(
        counted.contains("7 stored values, 7 non-zeros"),
        "{counted}"
    );
    assert!(text.contains("CSRMatrix 5 x 6, daphne dialect"), "{text}");
    let out = dbdf(&["info", "--json", s(&golden("frame_mixed_3x8.dbdf"))]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let object = &json["objects"][0];
    assert_eq!(object["data_type"], "Frame");
    assert_eq!(object["dialect"], "daphne");
    assert_eq!(object["labels"][5], "quantity_total");
    assert_eq!(object["value_types"][5], "u64");
    assert_eq!(json["size"], 230);
    // A tiled spec file: every block with its place, type, offset and length.
    let dir = scratch("info");
    let path = dir.join("tiled.dbdf");
    let m = Dense(array![[1.0f64, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 2.0]]);
    Options {
        tile: Some((2, 2)),
        block_policy: BlockPolicy::Smallest,
        ..Options::new()
    }
    .to_file(&path, &m)
    .unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&dbdf(&["info", "--json", s(&path)]).stdout).unwrap();
    let blocks = json["objects"][0]["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 4);
    assert_eq!(
        (
            blocks[0]["offset"].as_u64(),
            blocks[0]["block_type"].as_str()
        ),
        (Some(19), Some("ultra-sparse"))
    );
    let total: u64 = 19
        + blocks
            .iter()
            .map(|b| b["length"].as_u64().unwrap())
            .sum::<u64>();
    assert_eq!(total, std::fs::metadata(&path).unwrap().len());
    assert_eq!(blocks[1]["block_type"], "empty");
}

#[test]
fn validate_accepts_what_the_library_writes_and_rejects_corruption() {
    let dir = scratch("validate");
    let path = dir.join("m.dbdf");
    let m = Dense(array![[1.5f64, 0.0], [0.0, -2.0], [3.0, 0.0]]);
    for options in [
        Options::new(),
        Options {
            tile: Some((1, 1)),
            narrow: true,
            ..Options::new()
        },
        Options {
            dialect: Some(Dialect::Runtime),
            ..Options::new()
        },
    ] {
        options.to_file(&path, &m).unwrap();
        let out = dbdf(&["validate", s(&path)]);
        assert_eq!(
            (out.status.code(), stdout(&out).as_str()),
            (Some(0), "ok\n")
        );
    }
    // Every kind of file the library writes: each data type, block policy, tiling, narrowing
    // and dialect, and several objects in one file.
    #[derive(serde::Serialize)]
    struct Row {
        x: f64,
        n: i16,
    }
    let frame = serde_daphne::Frame(vec![Row { x: 0.5, n: -1 }, Row { x: 0.0, n: 0 }]);
    let csr = serde_daphne::Csr(sprs::CsMat::csr_from_dense(m.0.view(), 0.0));
    let mut kinds = 0;
    for policy in [
        serde_daphne::BlockPolicy::Auto,
        serde_daphne::BlockPolicy::Dense,
        serde_daphne::BlockPolicy::Sparse,
        serde_daphne::BlockPolicy::UltraSparse,
    ] {
        for options in [
            Options {
                block_policy: policy,
                ..Options::new()
            },
            Options {
                block_policy: policy,
                tile: Some((2, 1)),
                narrow: true,
                ..Options::new()
            },
        ] {
            options
                .to_file(&path, &(&m, &csr, &frame, vec![1u8, 2], 7i64))
                .unwrap();
            let out = dbdf(&["validate", s(&path)]);
            assert_eq!(stdout(&out), "ok\n", "{options:?}");
            kinds += 1;
        }
    }
    for value in [&m as &dyn erased::Write, &csr] {
        value.write(
            &path,
            &Options {
                dialect: Some(Dialect::Runtime),
                ..Options::new()
            },
        );
        assert_eq!(stdout(&dbdf(&["validate", s(&path)])), "ok\n");
        kinds += 1;
    }
    assert_eq!(kinds, 10);
    to_file(&path, &m).unwrap();
    let _ = std::fs::remove_file(dir.join("m.dbdf.meta"));
    let good = std::fs::read(&path).unwrap();
    // Every truncation and a byte flip in every header and block field.
    let bad = dir.join("bad.dbdf");
    for cut in 0..good.len() {
        std::fs::write(&bad, &good[..cut]).unwrap();
        let out = dbdf(&["validate", s(&bad)]);
        assert_eq!(out.status.code(), Some(1), "cut at {cut}");
        assert!(stdout(&out).contains("byte"), "{}", stdout(&out));
    }
    let mut trailing = good.clone();
    trailing.push(0);
    std::fs::write(&bad, &trailing).unwrap();
    let out = dbdf(&["validate", s(&bad)]);
    assert!(
        stdout(&out).contains("trailing bytes at byte 93"),
        "{}",
        stdout(&out)
    );
    // Every golden file DAPHNE wrote, except the string matrices we refuse by name.
    for entry in std::fs::read_dir(golden("")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !(name.ends_with(".dbdf") || name.ends_with(".bin")) {
            continue;
        }
        let out = dbdf(&["validate", s(&path)]);
        let refused = name.contains("str_") || name.contains("fixedstr");
        assert_eq!(
            out.status.code(),
            Some(if refused { 1 } else { 0 }),
            "{name}: {}",
            stdout(&out)
        );
    }
}

#[test]
fn dbdf_to_mtx_and_back_is_exact_for_every_golden_matrix() {
    let dir = scratch("mtx");
    let mut converted = 0;
    for entry in std::fs::read_dir(golden("")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.ends_with(".dbdf") || !(name.starts_with("dense_") || name.starts_with("csr_")) {
            continue;
        }
        if name.contains("str_") || name.contains("fixedstr") || name.contains("TRUNC") {
            continue;
        }
        let original: Object = from_file(&path).unwrap();
        let mtx = dir.join(format!("{name}.mtx"));
        let back = dir.join(format!("{name}.back.dbdf"));
        let out = dbdf(&["convert", s(&path), s(&mtx)]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let data_type = if name.starts_with("csr_") {
            "csr"
        } else {
            "dense"
        };
        let out = dbdf(&["convert", s(&mtx), s(&back), "--data-type", data_type]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let read: Object = from_file(&back).unwrap();
        assert_eq!(read.header(), original.header(), "{name}");
        assert_eq!(cells(&read), cells(&original), "{name}");
        converted += 1;
    }
    assert_eq!(converted, 35);
}

#[test]
fn matrix_market_input_forms() {
    let dir = scratch("mtx_forms");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let symmetric = write(
        "sym.mtx",
        "%%MatrixMarket matrix coordinate integer symmetric\n% a comment\n3 3 3\n1 1 5\n3 1 -2\n3 2 7\n",
    );
    let out_path = dir.join("sym.dbdf");
    assert!(dbdf(&["convert", s(&symmetric), s(&out_path)])
        .status
        .success());
    let m: Dense<i64> = from_file(&out_path).unwrap();
    assert_eq!(m.0, array![[5, 0, -2], [0, 0, 7], [-2, 7, 0]]);
    let object: Object = from_file(&out_path).unwrap();
    assert_eq!(object.data_type(), serde_daphne::DataType::CsrMatrix);
    let skew = write(
        "skew.mtx",
        "%%MatrixMarket matrix array real skew-symmetric\n2 2\n1.5\n",
    );
    assert!(dbdf(&["convert", s(&skew), s(&out_path)]).status.success());
    let m: Dense<f64> = from_file(&out_path).unwrap();
    assert_eq!(m.0, array![[0.0, -1.5], [1.5, 0.0]]);
    let pattern = write(
        "p.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n",
    );
    assert!(dbdf(&["convert", s(&pattern), s(&out_path)])
        .status
        .success());
    let m: Dense<u8> = from_file(&out_path).unwrap();
    assert_eq!(m.0, array![[0, 0, 1], [1, 0, 0]]);
    let array = write(
        "a.mtx",
        "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
    );
    assert!(dbdf(&["convert", s(&array), s(&out_path)]).status.success());
    let m: Dense<f64> = from_file(&out_path).unwrap();
    assert_eq!(m.0, array![[1.0, 3.0], [2.0, 4.0]]);
}

#[test]
fn frames_go_to_csv_and_back_with_labels_and_types() {
    let dir = scratch("csv");
    let csv = dir.join("f.csv");
    let back = dir.join("f.dbdf");
    let golden_frame = golden("frame_mixed_3x8.dbdf");
    assert!(dbdf(&["convert", s(&golden_frame), s(&csv)])
        .status
        .success());
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("id,price,qty,flag,"));
    assert!(dbdf(&["convert", s(&csv), s(&back)]).status.success());
    let (original, read): (Object, Object) =
        (from_file(&golden_frame).unwrap(), from_file(&back).unwrap());
    assert_eq!(read.header(), original.header());
    assert_eq!(cells(&read), cells(&original));
    // Without the sidecar: a header row makes a frame, columns typed i64 or f64, and u64
    // where integers pass i64's range (column 5, u64 in the file), each value exactly.
    std::fs::remove_file(dir.join("f.csv.meta")).unwrap();
    assert!(dbdf(&["convert", s(&csv), s(&back)]).status.success());
    let read: Object = from_file(&back).unwrap();
    assert_eq!(read.labels()[1], "price");
    let types: Vec<_> = (0..8)
        .map(|c| read.header().value_type_of(c).unwrap().name())
        .collect();
    assert_eq!(
        types,
        ["i64", "f64", "i64", "i64", "f64", "u64", "i64", "i64"]
    );
    for r in 0..3 {
        assert_eq!(read.get(r, 5), original.get(r, 5), "row {r}");
    }
    // For DAPHNE: no header row, labels in the sidecar.
    assert!(
        dbdf(&["convert", s(&golden_frame), s(&csv), "--dialect", "daphne"])
            .status
            .success()
    );
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("1,0.5,7,0,"));
    assert!(dbdf(&["convert", s(&csv), s(&back)]).status.success());
    assert_eq!(
        from_file::<_, Object>(&back).unwrap().header(),
        original.header()
    );
    // A matrix with a sidecar written by DAPHNE's conventions.
    let matrix_csv = dir.join("m.csv");
    std::fs::write(&matrix_csv, "1,2\n3,4\n").unwrap();
    std::fs::write(
        dir.join("m.csv.meta"),
        r#"{"numCols":2,"numRows":2,"valueType":"ui8"}"#,
    )
    .unwrap();
    let out = dir.join("m.dbdf");
    assert!(dbdf(&["convert", s(&matrix_csv), s(&out)]).status.success());
    assert_eq!(
        from_file::<_, Dense<u8>>(&out).unwrap().0,
        array![[1u8, 2], [3, 4]]
    );
}

/// Regressions: a label holding a line break (quoted by the writer) did not read back, since
/// lines were split before quotes were undone; a frame whose only column has an empty label
/// got an empty header line, which readers skip as blank.
#[test]
fn csv_labels_with_line_breaks_and_a_lone_empty_label_read_back() {
    let dir = scratch("csv-labels");
    for (name, columns) in [
        (
            "newline",
            vec![("a\nb, \"c\"", vec![1i64, 2]), ("d", vec![3, 4])],
        ),
        ("empty", vec![("", vec![5i64, -6])]),
    ] {
        let columns: Vec<(String, Values)> = columns
            .into_iter()
            .map(|(l, v)| (l.to_owned(), Values::I64(v)))
            .collect();
        let object = Object::frame(columns).unwrap();
        let src = dir.join(format!("{name}.dbdf"));
        to_file(&src, &object).unwrap();
        let csv = dir.join(format!("{name}.csv"));
        assert!(dbdf(&["convert", s(&src), s(&csv)]).status.success());
        let text = std::fs::read_to_string(&csv).unwrap();
        let expected_header = match name {
            "newline" => "\"a\nb, \"\"c\"\"\",d\n",
            _ => "\"\"\n",
        };
        assert!(text.starts_with(expected_header), "{text:?}");
        // With the sidecar, and without it (the header is told from the numbers below).
        for keep_sidecar in [true, false] {
            if !keep_sidecar {
                std::fs::remove_file(dir.join(format!("{name}.csv.meta"))).unwrap();
            }
            let back = dir.join(format!("{name}-back.dbdf"));
            let run = dbdf(&["convert", s(&csv), s(&back)]);
            assert!(run.status.success(), "{run:?}");
            let read: Object = from_file(&back).unwrap();
            assert_eq!(read, object, "{name}, sidecar {keep_sidecar}");
        }
    }
    // Regression: a sidecar whose schema is shorter than its numCols panicked the CSV reader.
    let short = dir.join("short.csv");
    std::fs::write(&short, "1,2,3\n").unwrap();
    std::fs::write(
        dir.join("short.csv.meta"),
        r#"{"numCols":3,"numRows":1,"schema":[{"label":"a","valueType":"si64"},{"label":"b","valueType":"si64"}]}"#,
    )
    .unwrap();
    assert_fails(
        &dbdf(&["convert", s(&short), s(&dir.join("short.dbdf"))]),
        "short.csv.meta",
        "has 2 schema entries for numCols 3",
    );
    // DAPHNE's sidecars name no 16-bit types: the sidecar names the 32-bit type that holds
    // the values, which they read back as, with a warning.
    let narrow = dir.join("u16.dbdf");
    to_file(&narrow, &Dense(array![[1u16, 65535]])).unwrap();
    let csv = dir.join("u16.csv");
    let run = dbdf(&["convert", s(&narrow), s(&csv)]);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "1,65535\n");
    let meta = std::fs::read_to_string(dir.join("u16.csv.meta")).unwrap();
    assert!(meta.contains(r#""valueType":"ui32""#), "{meta}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("name no 16-bit types"),
        "{run:?}"
    );
    let back = dir.join("u16_back.dbdf");
    assert!(dbdf(&["convert", s(&csv), s(&back)]).status.success());
    let Dense(m) = from_file::<_, Dense<u32>>(&back).unwrap();
    assert_eq!(m, array![[1u32, 65535]]);
}

#[test]
fn npy_round_trips_and_options_apply() {
    let dir = scratch("npy");
    let npy = dir.join("d.npy");
    let back = dir.join("d.dbdf");
    let source = golden("dense_f64_neg_3x4.dbdf");
    assert!(dbdf(&["convert", s(&source), s(&npy)]).status.success());
    assert!(dbdf(&["convert", s(&npy), s(&back)]).status.success());
    assert_eq!(
        cells(&from_file::<_, Object>(&back).unwrap()),
        cells(&from_file::<_, Object>(&source).unwrap())
    );
    // Tiling, block policy, narrowing, value type and data type on the way to .dbdf.
    let m = golden("dense_ui32_3x4.dbdf");
    let args = [
        "--tile",
        "2,2",
        "--block",
        "sparse",
        "--narrow",
        "--value-type",
        "u64",
        "--data-type",
        "csr",
    ];
    let out = dbdf(&[&["convert", s(&m), s(&back)][..], &args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let object: Object = from_file(&back).unwrap();
    assert_eq!(object.data_type(), serde_daphne::DataType::CsrMatrix);
    assert_eq!(
        object.header().matrix_value_type(),
        Some(serde_daphne::ValueType::U64)
    );
    assert_eq!(object.blocks().len(), 4);
    assert_eq!(
        object.blocks()[0].data.value_type(),
        Some(serde_daphne::ValueType::U8)
    );
    assert_eq!(object.get(2, 3), Some(Value::U8(23)));
    // For DAPHNE: runtime dialect with its sidecar.
    let out = dbdf(&["convert", s(&m), s(&back), "--dialect", "daphne"]);
    assert!(out.status.success());
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&m).unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("d.dbdf.meta")).unwrap(),
        r#"{"numCols":4,"numRows":3,"valueType":"ui32"}"#
    );
    // Standard output.
    let out = dbdf(&["convert", s(&m), "-", "--to", "csv"]);
    assert_eq!(stdout(&out), "0,1,2,3\n10,11,12,13\n20,21,22,23\n");
    // A .dbdf on standard output: the same bytes, its temporary file gone (the sidecar too).
    let temp = dir.join("temp");
    std::fs::create_dir(&temp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dbdf"))
        .args(["convert", s(&m), "-", "--to", "dbdf", "--dialect", "daphne"])
        .env("TMPDIR", &temp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, std::fs::read(&m).unwrap());
    assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0);
    // A failure prints nothing and leaves nothing.
    let short = dir.join("short.mtx");
    std::fs::write(
        &short,
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.5\n2 2 2.5\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dbdf"))
        .args(["convert", s(&short), "-", "--to", "dbdf"])
        .env("TMPDIR", &temp)
        .output()
        .unwrap();
    assert_fails(&out, "short.mtx", "declares 3 entries but 2 follow");
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0);
}

#[test]
fn lossy_or_impossible_conversions_fail_and_leave_nothing() {
    let dir = scratch("lossy");
    let out_path = dir.join("out.dbdf");
    let negative = golden("dense_si8_neg_2x3.dbdf");
    let out = dbdf(&["convert", s(&negative), s(&out_path), "--value-type", "u8"]);
    assert_fails(
        &out,
        "dense_si8_neg_2x3.dbdf",
        "cannot be represented exactly as u8",
    );
    let mtx = dir.join("out.mtx");
    let out = dbdf(&["convert", s(&golden("frame_mixed_3x8.dbdf")), s(&mtx)]);
    assert_fails(
        &out,
        "frame_mixed_3x8.dbdf",
        "cannot convert a Frame to MatrixMarket",
    );
    let out = dbdf(&[
        "convert",
        s(&golden("dense_ui32_3x4.dbdf")),
        s(&out_path),
        "--value-type",
        "u16",
        "--dialect",
        "daphne",
    ]);
    assert_fails(&out, "out.dbdf", "16-bit");
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn bad_input_is_one_line_naming_the_file_and_where() {
    let dir = scratch("bad");
    let out_path = dir.join("out.dbdf");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let good = std::fs::read(golden("dense_f64_3x4.dbdf")).unwrap();
    let truncated = write("truncated.dbdf", &good[..60]);
    assert_fails(
        &dbdf(&["info", s(&truncated)]),
        "truncated.dbdf",
        "unexpected end of input at byte 45",
    );
    let mut noise = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            noise as u8
        })
        .collect();
    let random = write("random.dbdf", &random);
    assert_fails(&dbdf(&["info", s(&random)]), "random.dbdf", "at byte");
    let mut huge = good.clone();
    huge[2..10].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let huge = write("huge.dbdf", &huge);
    assert_fails(
        &dbdf(&["convert", s(&huge), s(&out_path)]),
        "huge.dbdf",
        "byte",
    );
    let mut code = good.clone();
    code[18] = 42;
    code[44] = 42;
    let code = write("code.dbdf", &code);
    assert_fails(
        &dbdf(&["info", s(&code)]),
        "code.dbdf",
        "unknown value type code 42 at byte 18",
    );
    let index = write(
        "index.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n",
    );
    assert_fails(
        &dbdf(&["convert", s(&index), s(&out_path)]),
        "index.mtx",
        "line 3: row index 3 is outside 1..=2",
    );
    let number = write(
        "number.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0x\n",
    );
    assert_fails(
        &dbdf(&["convert", s(&number), s(&out_path)]),
        "number.mtx",
        "line 3: malformed f64 number \"1.0x\"",
    );
    let twice = write(
        "twice.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 2 3\n2 1 1.0\n1 2 2.0\n2 1 3.0\n",
    );
    assert_fails(
        &dbdf(&["convert", s(&twice), s(&out_path)]),
        "twice.mtx",
        "line 5: duplicate entry (2, 1)",
    );
    let csv = write("bad.csv", b"1,2\n3,x\n");
    assert_fails(
        &dbdf(&["convert", s(&csv), s(&out_path)]),
        "bad.csv",
        "line 2, column 2: not a number",
    );
    let npy = write("bad.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': '<c16'}");
    assert_fails(
        &dbdf(&["convert", s(&npy), s(&out_path)]),
        "bad.npy",
        "descr",
    );
    assert!(!out_path.exists());
}

#[test]
fn help_lists_every_format_the_library_knows_with_its_extensions() {
    use dbdf::convert::Format;
    let text = stdout(&dbdf(&["convert", "--help"]));
    let top = stdout(&dbdf(&["--help"]));
    for &format in Format::ALL {
        assert!(text.contains(format.description()), "{format}:\n{text}");
        assert!(top.contains(&format.to_string()), "{format}:\n{top}");
        for name in format.names() {
            assert_eq!(name.parse::<Format>().unwrap(), format);
        }
        for ext in format.extensions() {
            assert!(text.contains(&format!(".{ext}")), "{ext}:\n{text}");
            let named = Format::of_path(std::path::Path::new(&format!("m.bsp.{ext}")), false);
            assert_eq!(named, Some(format), ".{ext}");
        }
    }
    assert_eq!(Format::ALL.len(), 12);
}

#[test]
fn spy_draws_in_the_terminal_and_as_png() {
    let dir = scratch("spy");
    let path = dir.join("diag.dbdf");
    let mut m = ndarray::Array2::<f64>::zeros((100, 100));
    for i in 0..100 {
        m[[i, i]] = 1.0;
    }
    to_file(&path, &Dense(m)).unwrap();
    let out = dbdf(&["spy", s(&path), "--width", "10"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("DenseMatrix 100 x 100, 100 non-zeros"));
    assert_eq!(lines.len(), 1 + 5);
    // The diagonal: 2 x 4 dots per character, so it crosses two characters per line.
    assert_eq!(lines[1], "⠑⢄⠀⠀⠀⠀⠀⠀⠀⠀");
    assert_eq!(lines[5], "⠀⠀⠀⠀⠀⠀⠀⠀⠑⢄");
    let png = dir.join("diag.png");
    assert!(dbdf(&["spy", s(&path), "--width", "50", "-o", s(&png)])
        .status
        .success());
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[12..16], b"IHDR");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 50);
    assert_eq!(u32::from_be_bytes(bytes[20..24].try_into().unwrap()), 50);
    let frame = golden("frame_mixed_3x8.dbdf");
    assert_fails(
        &dbdf(&["spy", s(&frame)]),
        "frame_mixed_3x8.dbdf",
        "no sparsity pattern",
    );
}

#[test]
fn futhark_files_convert_to_dbdf_and_back_bit_exactly() {
    let dir = scratch("futhark");
    let futhark = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/futhark");
    for (name, flags) in [
        ("multi_concat.bin", &["--futhark-bool"][..]),
        ("array_f16_1d.bin", &["--futhark-f16"][..]),
        ("array_f64_2d_3x4.bin", &[][..]),
        ("array_f32_specials.bin", &[][..]),
    ] {
        let input = futhark.join(name);
        let mid = dir.join(name).with_extension("dbdf");
        let out = dir.join(name).with_extension("fut");
        let to_dbdf = dbdf(&["convert", "--from", "futhark", s(&input), s(&mid)]);
        assert!(to_dbdf.status.success(), "{}", stderr(&to_dbdf));
        let mut args = vec!["convert", s(&mid), s(&out)];
        args.extend_from_slice(flags);
        let back = dbdf(&args);
        assert!(back.status.success(), "{}", stderr(&back));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&input).unwrap(),
            "{name}"
        );
    }
    // Refusals name the file and the offset; nothing is written.
    let out = dir.join("never.dbdf");
    assert_fails(
        &dbdf(&[
            "convert",
            "--from",
            "futhark",
            s(&futhark.join("array_i64_3d_2x3x4.bin")),
            s(&out),
        ]),
        "array_i64_3d_2x3x4.bin",
        "byte 2: a rank-3 array",
    );
    assert_fails(
        &dbdf(&[
            "convert",
            "--from",
            "futhark",
            s(&futhark.join("mixed_text_binary.dat")),
            s(&out),
        ]),
        "mixed_text_binary.dat",
        "text format",
    );
    assert!(!out.exists());
}

#[test]
fn binsparse_files_convert_to_dbdf_and_back() {
    let dir = scratch("binsparse");
    let golden_bsp = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/binsparse");
    let mut names = vec!["csr_f64.npz", "coo_i32.npz", "dmat_f64.npz", "csc_f64.npz"];
    if cfg!(feature = "hdf5") {
        names.extend(["dcsr_f64.h5", "cref_style_coo_bint8.h5", "dvec_f64.h5"]);
    }
    for name in names {
        let input = golden_bsp.join(name);
        let mid = dir.join(format!("{name}.dbdf"));
        let out = dir.join(format!("{name}.bsp.npz"));
        let to_dbdf = dbdf(&["convert", s(&input), s(&mid)]);
        assert!(to_dbdf.status.success(), "{}", stderr(&to_dbdf));
        let back = dbdf(&["convert", s(&mid), s(&out), "--index-type", "u32"]);
        assert!(back.status.success(), "{}", stderr(&back));
        // The same cells all the way through.
        let original = from_file::<_, Object>(&mid).unwrap();
        let again = dir.join(format!("{name}.again.dbdf"));
        assert!(dbdf(&["convert", s(&out), s(&again)]).status.success());
        assert_eq!(
            cells(&from_file::<_, Object>(&again).unwrap()),
            cells(&original),
            "{name}"
        );
    }
    // Choosing the output format and modifiers.
    let coo = dir.join("coo.bsp.npz");
    let args = ["convert", "--binsparse-format", "cooc", "--iso"];
    let source = golden_bsp.join("csr_iso_f64.npz");
    let out = dbdf(&[args[0], args[1], args[2], args[3], s(&source), s(&coo)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&std::fs::read(&coo).unwrap()).replace('\0', "");
    assert!(
        text.contains("\"format\": \"COOC\"") && text.contains("iso[float64]"),
        "{text}"
    );
    // A bad format name is refused by clap with the list.
    let bad = dbdf(&["convert", "--binsparse-format", "XYZ", s(&source), s(&coo)]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("CSR, CSC"), "{}", stderr(&bad));
}

#[test]
fn mtx_to_zarr_to_dbdf_is_exact_in_every_binsparse_format_and_zarr_version() {
    let dir = scratch("zarr");
    let mtx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/systemds/sparse_100.mtx");
    let direct = dir.join("direct.dbdf");
    assert!(dbdf(&["convert", s(&mtx), s(&direct)]).status.success());
    let want = cells(&from_file::<_, Object>(&direct).unwrap());
    let formats = [
        "CSR", "CSC", "COO", "COOR", "COOC", "DCSR", "DCSC", "DMAT", "DMATR", "DMATC",
    ];
    for format in formats {
        for version in ["2", "3"] {
            let zarr = dir.join(format!("{format}.v{version}.bsp.zarr"));
            let args = [
                "convert",
                "--binsparse-format",
                format,
                "--zarr-format",
                version,
            ];
            let run = dbdf(&[
                args[0],
                args[1],
                args[2],
                args[3],
                args[4],
                s(&mtx),
                s(&zarr),
            ]);
            assert!(run.status.success(), "{}", stderr(&run));
            let meta = if version == "3" {
                "zarr.json"
            } else {
                ".zgroup"
            };
            assert!(zarr.join(meta).is_file(), "{format} v{version}");
            let back = dir.join(format!("{format}.v{version}.dbdf"));
            let run = dbdf(&["convert", s(&zarr), s(&back)]);
            assert!(run.status.success(), "{}", stderr(&run));
            let got = cells(&from_file::<_, Object>(&back).unwrap());
            assert_eq!(got, want, "{format} v{version}");
        }
    }
}

#[test]
fn npy_streams_to_systemds_parts_with_the_bytes_of_the_whole_read() {
    let dir = scratch("npy_sysds");
    let source = golden("dense_f64_100x7.dbdf");
    let npy = dir.join("m.npy");
    assert!(dbdf(&["convert", s(&source), s(&npy)]).status.success());
    // From .npy (f64, streamed a band of block rows at a time) and from .dbdf (whole).
    let common = [
        "--to",
        "systemds",
        "--systemds-block-size",
        "8",
        "--parts",
        "3",
    ];
    let streamed = dir.join("streamed");
    let whole = dir.join("whole");
    for (input, output) in [(&npy, &streamed), (&source, &whole)] {
        let mut args = vec!["convert", s(input), s(output)];
        args.extend(common);
        let run = dbdf(&args);
        assert!(run.status.success(), "{}", stderr(&run));
    }
    for part in ["part-00000", "part-00001", "part-00002"] {
        let (a, b) = (streamed.join(part), whole.join(part));
        assert_eq!(
            std::fs::read(a).unwrap(),
            std::fs::read(b).unwrap(),
            "{part}"
        );
    }
    let mtd = |p: &Path| std::fs::read_to_string(p.with_extension("mtd")).unwrap();
    assert_eq!(mtd(&streamed), mtd(&whole));
    assert!(mtd(&streamed).contains("\"nnz\""));
}

#[cfg(feature = "hdf5")]
#[test]
fn binsparse_to_binsparse_keeps_attributes_and_refuses_by_name() {
    let dir = scratch("binsparse_h5");
    let golden_bsp = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/binsparse");
    let out = dir.join("x.bsp.npz");
    let run = dbdf(&[
        "convert",
        s(&golden_bsp.join("cref_style_csr_f64.h5")),
        s(&out),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let read = crate::whole::binsparse_from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(read.attributes.contains_key("comment"));
    let h5 = dir.join("y.bsp.h5");
    let run = dbdf(&["convert", s(&out), s(&h5)]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(
        crate::whole::read_binsparse(&h5).unwrap().attributes,
        read.attributes
    );
    let never = dir.join("never.dbdf");
    assert_fails(
        &dbdf(&["convert", s(&golden_bsp.join("csr_c128.h5")), s(&never)]),
        "csr_c128.h5",
        "complex",
    );
    assert_fails(
        &dbdf(&["convert", s(&golden_bsp.join("csr_fill_f64.h5")), s(&never)]),
        "csr_fill_f64.h5",
        "fill value is -1",
    );
    assert!(!never.exists());
}

#[test]
fn systemds_files_convert_to_dbdf_and_back() {
    let dir = scratch("systemds");
    let sds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/systemds");
    for name in ["dense_small", "sparse_100", "ultrasparse_1000", "zeros_5x7"] {
        let mid = dir.join(format!("{name}.dbdf"));
        let out = dir.join(format!("{name}.out"));
        // No extension: the .mtd beside the file says it is SystemDS.
        let run = dbdf(&["convert", s(&sds.join(name)), s(&mid)]);
        assert!(run.status.success(), "{}", stderr(&run));
        let run = dbdf(&["convert", "--to", "systemds", s(&mid), s(&out)]);
        assert!(run.status.success(), "{}", stderr(&run));
        let (ours, theirs) = (
            std::fs::read(&out).unwrap(),
            std::fs::read(sds.join(name)).unwrap(),
        );
        // All but the 16-byte sync marker (random in SystemDS's file) are the same.
        let differ = ours.iter().zip(&theirs).filter(|(a, b)| a != b).count();
        assert!(
            ours.len() == theirs.len() && differ <= 16,
            "{name}: {differ} bytes differ"
        );
        assert!(dir.join(format!("{name}.out.mtd")).exists());
    }
    // Blocks kept, and a smaller block size on the way out.
    let mid = dir.join("kept.dbdf");
    let run = dbdf(&[
        "convert",
        "--keep-blocks",
        s(&sds.join("sparse_100")),
        s(&mid),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let out = dir.join("small_blocks");
    let run = dbdf(&[
        "convert",
        "--to",
        "systemds",
        "--systemds-block-size",
        "30",
        s(&mid),
        s(&out),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let back = dir.join("back.dbdf");
    assert!(dbdf(&["convert", "--keep-blocks", s(&out), s(&back)])
        .status
        .success());
    let back = from_file::<_, Object>(&back).unwrap();
    assert_eq!(back.blocks().len(), 16);
    assert_eq!(cells(&back), cells(&from_file::<_, Object>(&mid).unwrap()));
    // Frames of strings are refused by name; frames of numbers convert.
    let never = dir.join("never.dbdf");
    assert_fails(
        &dbdf(&["convert", s(&sds.join("frame_named")), s(&never)]),
        "frame_named",
        "\"name\" of strings",
    );
    assert!(!never.exists());
    let csv = dir.join("bools.csv");
    let run = dbdf(&["convert", s(&sds.join("frame_bool_130")), s(&csv)]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("C1,C2\n0,1\n"));
}

/// For DAPHNE: CSR sidecars name their non-zeros (DaphneDSL types readMatrix as CSR only
/// with them), CSR that DaphneDSL would type as dense is written dense unless asked for,
/// and options the runtime dialect cannot express fail instead of vanishing.
#[test]
fn files_for_daphne_are_what_daphne_dsl_asks_for() {
    let dir = scratch("for-daphne");
    let daphne = ["--dialect", "daphne"];
    // 7 non-zeros in 5 x 6 (0.23, below DAPHNE's 0.25): CSR, with DAPHNE's own nnz sidecar.
    let sparse = dir.join("sparse.dbdf");
    let run = dbdf(
        &[
            &["convert", s(&golden("csr_f64_5x6.dbdf")), s(&sparse)][..],
            &daphne,
        ]
        .concat(),
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(std::fs::read(&sparse).unwrap()[1], 2, "a CSRMatrix");
    assert_eq!(
        std::fs::read_to_string(dir.join("sparse.dbdf.meta")).unwrap(),
        std::fs::read_to_string(golden("csr_f64_5x6_nnz.dbdf.meta")).unwrap()
    );
    // 3 of 4 cells from a coordinate .mtx (CSR by default): written dense, no nnz.
    let mtx = dir.join("dense.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.5\n1 2 2\n2 2 -3\n",
    )
    .unwrap();
    let out = dir.join("dense.dbdf");
    let run = dbdf(&[&["convert", s(&mtx), s(&out)][..], &daphne].concat());
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(std::fs::read(&out).unwrap()[1], 1, "a DenseMatrix");
    assert_eq!(
        std::fs::read_to_string(dir.join("dense.dbdf.meta")).unwrap(),
        r#"{"numCols":2,"numRows":2,"valueType":"f64"}"#
    );
    // Asked for CSR: honoured, with the consequence in a warning.
    let run = dbdf(
        &[
            &["convert", s(&mtx), s(&out), "--data-type", "csr"][..],
            &daphne,
        ]
        .concat(),
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(std::fs::read(&out).unwrap()[1], 2, "a CSRMatrix");
    assert!(
        stderr(&run).contains("warning: DaphneDSL's readMatrix types"),
        "{}",
        stderr(&run)
    );
    assert!(std::fs::read_to_string(dir.join("dense.dbdf.meta"))
        .unwrap()
        .contains("\"numNonZeros\":3"));
    // What the runtime dialect cannot express.
    for option in [
        &["--tile", "1,1"][..],
        &["--block", "sparse"],
        &["--narrow"],
    ] {
        let run = dbdf(&[&["convert", s(&mtx), s(&out)][..], &daphne, option].concat());
        assert_fails(
            &run,
            "dense.dbdf",
            "cannot be written in the DAPHNE runtime dialect",
        );
    }
    // A label that would overflow DAPHNE's frame reader, and the way past the guard.
    let frame = dir.join("long.dbdf");
    let long = Object::frame(vec![("x".repeat(40), Values::U8(vec![1, 2]))]).unwrap();
    to_file(&frame, &long).unwrap();
    let runtime = dir.join("long-runtime.dbdf");
    let run = dbdf(&[&["convert", s(&frame), s(&runtime)][..], &daphne].concat());
    assert_fails(
        &run,
        "long-runtime.dbdf",
        "label of frame column 0 (40 bytes, at most 32",
    );
    assert!(!runtime.exists());
    let run = dbdf(
        &[
            &["convert", s(&frame), s(&runtime), "--unguarded-labels"][..],
            &daphne,
        ]
        .concat(),
    );
    assert!(run.status.success(), "{}", stderr(&run));
}

/// Integer MatrixMarket values are read in the widest type that holds them.
#[test]
fn mtx_integers_beyond_i64_read_as_u64() {
    let dir = scratch("mtx-u64");
    let mtx = dir.join("big.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 1 18446744073709551615\n1 2 3\n",
    )
    .unwrap();
    let out = dir.join("big.dbdf");
    for extra in [&[][..], &["--value-type", "u64"]] {
        let run = dbdf(&[&["convert", s(&mtx), s(&out)][..], extra].concat());
        assert!(run.status.success(), "{}", stderr(&run));
        let object: Object = from_file(&out).unwrap();
        assert_eq!(object.get(0, 0), Some(Value::U64(u64::MAX)));
        assert_eq!(object.get(0, 1), Some(Value::U64(3)));
    }
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 1 18446744073709551615\n1 2 -3\n",
    )
    .unwrap();
    assert_fails(
        &dbdf(&["convert", s(&mtx), s(&out)]),
        "big.mtx",
        "line 4: the negative -3 and line 3's integer above i64::MAX share no value type",
    );
}

#[test]
fn slice_writes_windows_to_any_output_format() {
    let dir = scratch("slice");
    let m = ndarray::Array2::from_shape_fn((12, 9), |(r, c)| (r * 10 + c) as f64);
    let path = dir.join("m.dbdf");
    Options {
        tile: Some((5, 4)),
        ..Options::new()
    }
    .to_file(&path, &Dense(m.clone()))
    .unwrap();
    let npy = dir.join("w.npy");
    let out = dbdf(&["slice", s(&path), s(&npy), "--rows", "3:9", "--cols", "2:"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let window = crate::whole::read(&npy, "npy").unwrap();
    assert_eq!(window.shape(), (6, 7));
    assert_eq!(
        window.dense_vec::<f64>().unwrap(),
        m.slice(ndarray::s![3..9, 2..])
            .iter()
            .copied()
            .collect::<Vec<_>>()
    );
    // A CSR matrix stays CSR; a frame's columns by index.
    let csr = dir.join("c.dbdf");
    to_file(
        &csr,
        &serde_daphne::Csr(sprs::CsMat::csr_from_dense(m.view(), 0.0)),
    )
    .unwrap();
    let part = dir.join("p.dbdf");
    assert!(dbdf(&["slice", s(&csr), s(&part), "--rows", ":4"])
        .status
        .success());
    let back: Object = from_file(&part).unwrap();
    assert_eq!(back.data_type(), serde_daphne::DataType::CsrMatrix);
    assert_eq!(back.shape(), (4, 9));
    let frame = Object::frame(vec![
        ("a".into(), Values::I32(vec![1, 2, 3])),
        ("b".into(), Values::F64(vec![0.5, 1.5, 2.5])),
        ("c".into(), Values::U8(vec![7, 8, 9])),
    ])
    .unwrap();
    let f = dir.join("f.dbdf");
    to_file(&f, &frame).unwrap();
    assert!(
        dbdf(&["slice", s(&f), s(&part), "--rows", "1:3", "--cols", "1:3"])
            .status
            .success()
    );
    let back: Object = from_file(&part).unwrap();
    assert_eq!(back.labels(), ["b", "c"]);
    assert_eq!(back.column(0).unwrap(), Values::F64(vec![1.5, 2.5]));
    // A window outside the object is refused, naming the file, and writes nothing.
    let gone = dir.join("gone.npy");
    let out = dbdf(&["slice", s(&path), s(&gone), "--rows", "10:13"]);
    assert_fails(&out, "m.dbdf", "rows 10..13");
    assert!(!gone.exists());
}

#[test]
fn convert_streams_npy_to_tiled_dbdf_and_back() {
    let dir = scratch("stream_convert");
    let m = ndarray::Array2::from_shape_fn((30, 20), |(r, c)| ((r * 7 + c) % 5) as f32);
    let npy = dir.join("m.npy");
    let object = Object::dense(30, 20, Values::F32(m.iter().copied().collect())).unwrap();
    crate::whole::write(&npy, &object, "npy").unwrap();
    let tiled = dir.join("m.dbdf");
    let out = dbdf(&[
        "convert",
        s(&npy),
        s(&tiled),
        "--tile",
        "8,8",
        "--block",
        "smallest",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let options = Options {
        tile: Some((8, 8)),
        block_policy: BlockPolicy::Smallest,
        ..Options::new()
    };
    assert_eq!(
        std::fs::read(&tiled).unwrap(),
        options.to_vec(&Dense(m.clone())).unwrap()
    );
    let again = dir.join("again.npy");
    assert!(dbdf(&["convert", s(&tiled), s(&again)]).status.success());
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&npy).unwrap());
    // .dbdf to .dbdf with other tiles, tile by tile.
    let retiled = dir.join("retiled.dbdf");
    let out = dbdf(&[
        "convert",
        s(&tiled),
        s(&retiled),
        "--tile",
        "7,9",
        "--narrow",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let options = Options {
        tile: Some((7, 9)),
        narrow: true,
        ..Options::new()
    };
    assert_eq!(
        std::fs::read(&retiled).unwrap(),
        options.to_vec(&Dense(m.clone())).unwrap()
    );
}

#[test]
fn large_coordinate_files_parse_in_any_row_order() {
    let dir = scratch("mtx_large");
    let (n, entries) = (300usize, 5000usize);
    let mut expected = ndarray::Array2::<f64>::zeros((n, n));
    let mut text = format!(
        "%%MatrixMarket matrix coordinate real general\r\n% made here\n{n} {n} {entries}\n"
    );
    for k in 0..entries {
        // Scattered rows, no cell twice (k / 17 picks a column band, k % 17 the row step).
        let (r, c) = ((k * 7919 + 13) % n, (k / 17 + (k % 17) * 17) % n);
        let (r, c) = if expected[[r, c]] != 0.0 {
            (r, (c + 150) % n)
        } else {
            (r, c)
        };
        assert_eq!(expected[[r, c]], 0.0, "the generator repeats a cell");
        let v = (k as f64 + 0.5) * if k % 3 == 0 { -1.0 } else { 1.0 };
        expected[[r, c]] = v;
        text += &format!(
            "{} {}   {v:?}{}",
            r + 1,
            c + 1,
            if k % 5 == 0 { "\r\n\n" } else { "\n" }
        );
    }
    let path = dir.join("big.mtx");
    std::fs::write(&path, &text).unwrap();
    let out = dir.join("big.dbdf");
    let result = dbdf(&["convert", s(&path), s(&out)]);
    assert!(result.status.success(), "{}", stderr(&result));
    let m: Dense<f64> = from_file(&out).unwrap();
    assert_eq!(m.0, expected);
    // Symmetric: the lower triangle, mirrored.
    let sym = "%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n4 1 2.5\n2 2 1\n3 2 -1\n";
    std::fs::write(&path, sym).unwrap();
    assert!(dbdf(&["convert", s(&path), s(&out)]).status.success());
    let m: Dense<f64> = from_file(&out).unwrap();
    assert_eq!(
        m.0,
        array![
            [0.0, 0.0, 0.0, 2.5],
            [0.0, 1.0, -1.0, 0.0],
            [0.0, -1.0, 0.0, 0.0],
            [2.5, 0.0, 0.0, 0.0]
        ]
    );
    // Fewer entries than declared, and a cell given twice through its mirror.
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 2\n",
    )
    .unwrap();
    assert_fails(
        &dbdf(&["convert", s(&path), s(&out)]),
        "big.mtx",
        "declares 3 entries but 2 follow",
    );
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n2 1 5\n",
    )
    .unwrap();
    assert_fails(
        &dbdf(&["convert", s(&path), s(&out)]),
        "big.mtx",
        "line 4: duplicate entry",
    );
}

/// Runs `dbdf` under a pseudo-terminal (util-linux `script`), returning what the terminal
/// showed; `None` where `script` is missing.
fn on_terminal(args: &[&str], dir: &Path) -> Option<String> {
    let command: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_dbdf"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect();
    let log = dir.join("typescript");
    let status = Command::new("script")
        .args(["-qfec", &command.join(" "), s(&log)])
        .env("COLUMNS", "120")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    assert!(status.status.success(), "{status:?}");
    Some(String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned())
}

/// Long commands show one progress bar (bytes, rate, time left) on a terminal, nothing when
/// standard error is piped, and nothing with --quiet.
#[test]
fn progress_bars_show_on_a_terminal_only() {
    let dir = scratch("progress");
    // A 32 MiB .npy (the size from which bars are shown): 2048 x 2048 f64.
    let npy = dir.join("big.npy");
    let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2048, 2048), }";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!("{header:<117}\n");
    bytes.extend_from_slice(&(padded.len() as u16).to_le_bytes());
    bytes.extend_from_slice(padded.as_bytes());
    bytes.resize(bytes.len() + 2048 * 2048 * 8, 0x3f);
    std::fs::write(&npy, &bytes).unwrap();
    let out = dir.join("big.dbdf");
    let args = ["convert", s(&npy), s(&out), "--tile", "512,512"];
    let Some(shown) = on_terminal(&args, &dir) else {
        eprintln!("SKIPPED: no `script` to make a pseudo-terminal");
        return;
    };
    assert!(shown.contains("converting big.npy"), "{shown}");
    assert!(shown.contains("32.00 MiB/32.00 MiB"), "{shown}");
    assert!(shown.contains("iB/s") && shown.contains("left"), "{shown}");
    let shown = on_terminal(&["validate", s(&out)], &dir).unwrap();
    assert!(shown.contains("validating big.dbdf"), "{shown}");
    assert!(shown.contains("ok"), "{shown}");
    // info --nnz, slice and SystemDS writes read or write block by block, with a bar too.
    let shown = on_terminal(&["info", "--nnz", s(&out)], &dir).unwrap();
    assert!(shown.contains("counting non-zeros in big.dbdf"), "{shown}");
    assert!(shown.contains("4194304 non-zeros"), "{shown}");
    let window = dir.join("window.npy");
    let args_slice = [
        "slice",
        s(&out),
        s(&window),
        "--rows",
        "0:2048",
        "--cols",
        "1:2048",
    ];
    let shown = on_terminal(&args_slice, &dir).unwrap();
    // The rate's unit depends on the machine (MiB/s or GiB/s).
    assert!(
        shown.contains("slicing big.dbdf") && shown.contains("iB/s"),
        "{shown}"
    );
    let sysds = dir.join("big_sysds");
    let args_sysds = ["convert", s(&out), s(&sysds), "--to", "systemds"];
    let shown = on_terminal(&args_sysds, &dir).unwrap();
    assert!(shown.contains("converting big.dbdf"), "{shown}");
    assert!(sysds.is_file(), "{shown}");
    // Piped: nothing on standard error; --quiet: nothing on the terminal but the result.
    let piped = dbdf(&args);
    assert!(
        piped.status.success() && piped.stderr.is_empty(),
        "{piped:?}"
    );
    let quiet = on_terminal(&["validate", "--quiet", s(&out)], &dir).unwrap();
    assert!(
        quiet.contains("ok") && !quiet.contains("validating"),
        "{quiet}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn matrixmarket_array_files_stream_to_tiles_with_the_values_of_a_whole_read() {
    use dbdf::convert::{convert, ConvertOptions};
    let dir = scratch("mtx-array");
    // Column by column: 3 x 4, with a blank line, -0.0, an exponent.
    let real = "%%MatrixMarket matrix array real general\n% a comment\n3 4\n1.5\n-0.0\n3\n\n\
                4e2\n5\n6\n7\n8\n9\n10\n11\n-12.25\n";
    let typed = "%%MatrixMarket matrix array integer general\n% serde_daphne value type: i32\n\
                 2 3\n1\n-2\n3\n-4\n5\n-6\n";
    // Integers without a type comment: i64, or u64 once one exceeds i64::MAX (a first pass
    // tells which).
    let untyped = "%%MatrixMarket matrix array integer general\n2 2\n1\n-2\n3\n4\n";
    let untyped_big = "%%MatrixMarket matrix array integer general\n2 1\n1\n18446744073709551615\n";
    // A whole read: mirrored values.
    let symmetric = "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n";
    for (name, text) in [
        ("real", real),
        ("typed", typed),
        ("untyped", untyped),
        ("untyped_big", untyped_big),
        ("symmetric", symmetric),
    ] {
        let input = dir.join(format!("{name}.mtx"));
        std::fs::write(&input, text).unwrap();
        let whole = crate::whole::read(&input, "mtx").unwrap();
        for tile in [(2, 3), (1, 1), (5, 5)] {
            let output = dir.join(format!("{name}.dbdf"));
            convert(
                &input,
                &output,
                &ConvertOptions {
                    formats: dbdf::convert::FormatOptions::default().with(serde_daphne::Options {
                        tile: Some((tile.0, tile.1)),
                        ..serde_daphne::Options::new()
                    }),
                    ..Default::default()
                },
            )
            .unwrap();
            let back: Object = from_file(&output).unwrap();
            assert_eq!(back.shape(), whole.shape(), "{name}");
            assert_eq!(
                back.header().matrix_value_type(),
                whole.header().matrix_value_type()
            );
            // Debug output tells -0.0 from 0.0.
            let values = |o: &Object| format!("{:?}", o.dense_values().unwrap());
            assert_eq!(values(&back), values(&whole), "{name} {tile:?}");
            let info = serde_daphne::DbdfFile::open(&output).unwrap();
            let first = info.objects()[0].blocks[0].place;
            assert!(
                first.rows <= tile.0 && first.cols <= tile.1,
                "{name} {first:?}"
            );
        }
    }
    // Too few values, too many, a malformed one: the line (or count) named, nothing left.
    for (text, says) in [
        (
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n",
            "found 3",
        ),
        (
            "%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n",
            "line 5",
        ),
        (
            "%%MatrixMarket matrix array real general\n2 1\n1\nx\n",
            "line 4",
        ),
        // Untyped integers that no type holds: the whole read's error.
        (
            "%%MatrixMarket matrix array integer general\n2 1\n-1\n18446744073709551615\n",
            "share no value type",
        ),
    ] {
        let input = dir.join("bad.mtx");
        std::fs::write(&input, text).unwrap();
        let output = dir.join("bad.dbdf");
        let err = convert(
            &input,
            &output,
            &ConvertOptions {
                formats: dbdf::convert::FormatOptions::default().with(serde_daphne::Options {
                    tile: Some((1, 1)),
                    ..serde_daphne::Options::new()
                }),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_error!(err.error(), ForeignInput);
        assert!(err.to_string().contains(says), "{err}");
        assert!(!output.exists(), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression: SystemDS frames with `--keep-blocks` (or `--tile`) went to the block-by-block
/// path for matrices, which refused them, instead of being read whole.
#[test]
fn systemds_frames_with_kept_blocks_are_read_whole() {
    let dir = scratch("sysds-frame-kept");
    let frame = Object::frame(vec![
        ("x".into(), Values::F64(vec![1.5, -2.0, 0.0])),
        ("n".into(), Values::I64(vec![7, 0, -9])),
    ])
    .unwrap();
    crate::systemds::write(dir.join("frame"), &frame).unwrap();
    let sds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/systemds");
    for (input, flags) in [
        (dir.join("frame"), &["--keep-blocks"][..]),
        (dir.join("frame"), &["--tile", "2,2"][..]),
        (sds.join("dense_small"), &["--keep-blocks"][..]),
    ] {
        let out = dir.join("out.dbdf");
        let mut args = vec!["convert", "--from", "systemds", s(&input), s(&out)];
        args.extend_from_slice(flags);
        let run = dbdf(&args);
        assert!(run.status.success(), "{input:?} {flags:?}: {run:?}");
        let read: Object = from_file(&out).unwrap();
        let whole = crate::systemds::read(&input).unwrap();
        assert_eq!(read.shape(), whole.shape(), "{input:?}");
        assert_eq!(read.data_type(), whole.data_type(), "{input:?}");
        let _ = std::fs::remove_file(&out);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// No secret reaches a message (issue 71): a URL's password and a pre-signed URL's
/// signature, in every line an unreachable server makes the tool print, and a storage option
/// that names a secret; what is not secret stays, so the line still says where.
#[test]
fn secrets_in_urls_and_storage_options_are_never_printed() {
    let refused = "--storage-option=max_retries=0";
    for (url, shown) in [
        (
            "http://user:pa55word@127.0.0.1:9/m.dbdf?X-Amz-Signature=deadbeef&part=1",
            "http://user:****@127.0.0.1:9/m.dbdf?X-Amz-Signature=****&part=1",
        ),
        (
            "https://user:pa55word@127.0.0.1:9/m.npy",
            "https://user:****@127.0.0.1:9/m.npy",
        ),
    ] {
        for args in [
            vec!["info", url, refused],
            vec!["convert", url, "-", "--to", "csv", refused],
        ] {
            let out = dbdf(&args);
            let err = stderr(&out);
            assert!(!out.status.success(), "{args:?}");
            assert!(err.contains(shown), "{args:?}: {err}");
            assert!(
                !err.contains("pa55word") && !err.contains("deadbeef"),
                "{err}"
            );
        }
    }
    let out = dbdf(&[
        "info",
        "s3://b/m.dbdf",
        "--storage-option",
        "aws_secret_access_keyS3CR3T",
    ]);
    assert_eq!(
        stderr(&out),
        "dbdf: storage option \"****\" is not KEY=VALUE\n"
    );
}
