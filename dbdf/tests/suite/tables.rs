//! Parquet and Arrow IPC files that pyarrow, pandas and polars wrote (`tests/data/arrow/`,
//! made by its `make.py`; the expected values are numpy's `types.npy`), the files we write
//! read back, round trips, and hostile files.

use std::path::{Path, PathBuf};

use dbdf::arrow::{Compression, Nulls, ReadOptions, WriteOptions};
use dbdf::convert::{convert, ConvertOptions, Format, FormatOptions};
use serde_daphne::{DataType, Object, ValueType, Values};

pub(crate) fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/arrow")
        .join(name)
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_tables_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What a Parquet or IPC file holds, read whole with `options` through the format's source.
pub(crate) fn read(path: &Path, options: &ReadOptions) -> serde_daphne::Result<Object> {
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("parquet") => "parquet",
        _ => "arrow",
    };
    let convert = ConvertOptions {
        data_type: options.data_type,
        value_type: options.value_type,
        columns: options.columns.clone(),
        formats: FormatOptions::default().with(options.clone()),
        ..Default::default()
    };
    let mut objects = dbdf::convert::read(path, format.parse()?, &convert)?;
    Ok(objects.pop().expect("a table"))
}

/// `object` as a Parquet or Arrow IPC file (`format`) with `options`, through its sink.
pub(crate) fn table_bytes(format: &str, object: &Object, options: &WriteOptions) -> Vec<u8> {
    let convert = ConvertOptions {
        formats: FormatOptions::default().with(options.clone()),
        ..Default::default()
    };
    let format = format.parse().unwrap();
    dbdf::convert::to_vec(std::slice::from_ref(object), format, &convert).unwrap()
}

/// numpy's record array of the same table (bools as u8).
pub(crate) fn expected() -> Object {
    crate::whole::read(data("types.npy"), "npy").unwrap()
}

#[test]
fn pyarrow_files_of_every_type_and_codec_read_as_numpy_wrote_the_table() {
    let expected = expected();
    for name in [
        "types_none.parquet",
        "types_snappy.parquet",
        "types_zstd.parquet",
        "types_gzip.parquet",
        "types_brotli.parquet",
        "types_lz4.parquet",
        "types_pagev2.parquet",
        "types_uncompressed.feather",
        "types_lz4.feather",
        "types_zstd.feather",
    ] {
        let got = read(&data(name), &ReadOptions::default()).unwrap();
        assert_eq!(got, expected, "{name}");
    }
    // Parquet 1.0 has no unsigned 32-bit type: pyarrow stores u32 as int64, read as such.
    let got = read(&data("types_v1.parquet"), &ReadOptions::default()).unwrap();
    let mut columns = expected.columns().unwrap();
    columns[4] = columns[4].clone().convert(ValueType::I64).unwrap();
    assert_eq!(got.columns().unwrap(), columns);
}

#[test]
fn dictionaries_are_decoded_and_pandas_and_polars_files_read() {
    let got = read(&data("dictionary.parquet"), &ReadOptions::default()).unwrap();
    let want = Object::frame(vec![
        ("ints".into(), Values::I64(vec![3, 1, 3, 3, 2, 1])),
        (
            "floats".into(),
            Values::F64(vec![0.5, 0.5, -1.0, 0.5, 2.0, -1.0]),
        ),
    ])
    .unwrap();
    assert_eq!(got, want);
    let got = read(&data("dictionary.feather"), &ReadOptions::default()).unwrap();
    assert_eq!(
        got.columns().unwrap()[0],
        Values::I64(vec![3, 1, 3, 3, 2, 1])
    );
    let frame = Object::frame(vec![
        ("a".into(), Values::I64((0..5).collect())),
        (
            "b".into(),
            Values::F64((0..5).map(|x| x as f64 / 4.0).collect()),
        ),
    ])
    .unwrap();
    for name in ["pandas.parquet", "polars.parquet", "polars.arrow"] {
        assert_eq!(
            read(&data(name), &ReadOptions::default()).unwrap(),
            frame,
            "{name}"
        );
    }
}

#[test]
fn nulls_are_refused_by_column_and_row_or_filled_as_asked() {
    let err = read(&data("nulls.parquet"), &ReadOptions::default()).unwrap_err();
    assert_error!(err, NotConvertible { what, .. } if what == "the null at row 2 of column \"x\"");
    assert!(err.to_string().contains("--nulls"), "{err}");
    // NaN fills floats only: the int column's null is refused next.
    let err = read(
        &data("nulls.parquet"),
        &ReadOptions {
            nulls: Nulls::Nan,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_error!(err, NotConvertible { what, reason, .. }
        if what == "the null at row 3 of column \"n\"" && reason.contains("--nulls zero"));
    let got = read(
        &data("nulls_float.parquet"),
        &ReadOptions {
            nulls: Nulls::Nan,
            ..Default::default()
        },
    )
    .unwrap();
    let x = got.columns().unwrap().remove(0).into_vec::<f64>().unwrap();
    assert_eq!((x[0], x[2]), (1.5, 2.0));
    assert!(x[1].is_nan());
    let got = read(
        &data("nulls.parquet"),
        &ReadOptions {
            nulls: Nulls::Zero,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        got.columns().unwrap(),
        [
            Values::F64(vec![1.5, 2.5, 0.0, 4.5]),
            Values::I32(vec![1, 2, 3, 0]),
            Values::U8(vec![1, 0, 0, 1]),
        ]
    );
}

#[test]
fn columns_daphne_cannot_hold_are_refused_naming_column_and_type() {
    for (name, column) in [
        ("strings.parquet", "column \"name\" of type Utf8"),
        ("dates.parquet", "column \"day\" of type Date32"),
        ("nested.parquet", "column \"xs\" of type List"),
        ("decimals.parquet", "column \"p\" of type Decimal128(5, 2)"),
    ] {
        let err = read(&data(name), &ReadOptions::default()).unwrap_err();
        assert_error!(err, NotConvertible { what, .. } if what.starts_with(column));
    }
}

#[test]
fn tables_read_as_matrices_when_asked_and_their_columns_share_a_type() {
    let dense = ReadOptions {
        data_type: Some(DataType::DenseMatrix),
        ..Default::default()
    };
    let got = read(&data("matrix_columns.parquet"), &dense).unwrap();
    assert_eq!(got.data_type(), DataType::DenseMatrix);
    let want: Vec<f64> = (0..4)
        .flat_map(|r| (0..3).map(move |c| (r * (c + 1)) as f64))
        .collect();
    assert_eq!(got.dense_vec::<f64>().unwrap(), want);
    let err = read(&data("mixed.parquet"), &dense).unwrap_err();
    assert_error!(err, InvalidValue { message, .. } if message.contains("a matrix has one value type"));
    let got = read(
        &data("mixed.parquet"),
        &ReadOptions {
            value_type: Some(ValueType::F64),
            ..dense.clone()
        },
    )
    .unwrap();
    assert_eq!(
        got.dense_vec::<f64>().unwrap(),
        [0.0, 0.0, 1.0, 0.5, 2.0, 1.0]
    );
    // Exactly or not at all: 0.5 is no integer.
    let ints = ReadOptions {
        data_type: Some(DataType::DenseMatrix),
        value_type: Some(ValueType::I32),
        ..Default::default()
    };
    let err = read(&data("mixed.parquet"), &ints).unwrap_err();
    assert!(err.to_string().contains("column \"b\" row 1"), "{err}");
}

/// Frames and matrices of every value type, dense and CSR, written by the `.dbdf` writer.
fn objects() -> Vec<(String, Object)> {
    let mut out = Vec::new();
    for vt in ValueType::ALL {
        let values = |n: usize| {
            let ints: Vec<i64> = (0..n as i64).map(|k| (k * 7) % 5 - 1).collect();
            Values::I64(ints).convert(vt).unwrap_or_else(|_| {
                Values::I64((0..n as i64).map(|k| (k * 7) % 5).collect())
                    .convert(vt)
                    .unwrap()
            })
        };
        out.push((
            format!("dense_{vt}"),
            Object::dense(4, 3, values(12)).unwrap(),
        ));
        // No stored zeros: a table's dense columns cannot keep them.
        let stored = Values::U8(vec![1, 2, 3]).convert(vt).unwrap();
        let csr = Object::csr(4, 3, vec![0, 1, 1, 3, 3], vec![2, 0, 1], stored);
        out.push((format!("csr_{vt}"), csr.unwrap()));
    }
    let columns = ValueType::ALL
        .iter()
        .map(|&vt| {
            let v = Values::I64((0..6).collect()).convert(vt).unwrap();
            (format!("col {vt}"), v)
        })
        .collect();
    out.push(("frame".into(), Object::frame(columns).unwrap()));
    out
}

#[test]
fn dbdf_files_round_trip_through_parquet_and_feather_byte_for_byte() {
    let dir = dir("round_trip");
    for (name, object) in objects() {
        // The file as the writer's default choices make it (an `Object` keeps its blocks).
        let given = dir.join(format!("{name}.given.dbdf"));
        serde_daphne::to_file(&given, &object).unwrap();
        let original = dir.join(format!("{name}.dbdf"));
        convert(&given, &original, &ConvertOptions::default()).unwrap();
        let bytes = std::fs::read(&original).unwrap();
        for (table, compression) in [
            ("parquet", Compression::Zstd),
            ("parquet", Compression::Snappy),
            ("parquet", Compression::None),
            ("feather", Compression::None),
            ("arrow", Compression::Lz4),
        ] {
            let middle = dir.join(format!("{name}.{table}"));
            let options = ConvertOptions {
                formats: dbdf::convert::FormatOptions::default().with(WriteOptions {
                    compression: Some(compression),
                    row_group_rows: Some(3),
                    ..Default::default()
                }),
                ..Default::default()
            };
            convert(&original, &middle, &options).unwrap();
            let back = dir.join(format!("{name}.back.dbdf"));
            convert(&middle, &back, &ConvertOptions::default()).unwrap();
            let got = std::fs::read(&back).unwrap();
            assert!(got == bytes, "{name} through {table} {compression}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn matrices_are_written_a_column_each_named_as_asked() {
    let dir = dir("labels");
    let original = dir.join("m.dbdf");
    let m = Object::dense(2, 2, Values::F64(vec![1.0, 2.0, 3.0, 4.0])).unwrap();
    serde_daphne::to_file(&original, &m).unwrap();
    let out = dir.join("m.parquet");
    let labelled = |labels: &[&str]| ConvertOptions {
        formats: dbdf::convert::FormatOptions::default().with(WriteOptions {
            labels: Some(labels.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }),
        ..Default::default()
    };
    convert(&original, &out, &labelled(&["x", "y"])).unwrap();
    // As a frame (without the metadata's say): the labels are the column names.
    let frame = read(
        &out,
        &ReadOptions {
            data_type: Some(DataType::Frame),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        frame,
        Object::frame(vec![
            ("x".into(), Values::F64(vec![1.0, 3.0])),
            ("y".into(), Values::F64(vec![2.0, 4.0])),
        ])
        .unwrap()
    );
    let err = convert(&original, &out, &labelled(&["x"])).unwrap_err();
    assert!(
        err.to_string()
            .contains("1 labels for a matrix of 2 columns"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn several_objects_and_formats_by_name_and_extension() {
    assert_eq!("PARQUET".parse::<Format>().unwrap().to_string(), "parquet");
    assert_eq!(
        "feather".parse::<Format>().unwrap(),
        "arrow".parse::<Format>().unwrap()
    );
    assert_eq!(
        Format::of_path(Path::new("x.arrow"), true),
        Some("arrow".parse::<Format>().unwrap())
    );
    assert_eq!(
        Format::of_path(Path::new("x.feather"), false),
        Some("arrow".parse::<Format>().unwrap())
    );
    assert_eq!(
        Format::of_path(Path::new("x.parquet"), false),
        Some("parquet".parse::<Format>().unwrap())
    );
    let dir = dir("several");
    let two = dir.join("two.dbdf");
    let m = Object::dense(1, 1, Values::F64(vec![1.0])).unwrap();
    serde_daphne::to_file(&two, &(m.clone(), m)).unwrap();
    let err = convert(&two, &dir.join("two.parquet"), &ConvertOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("holds 2 objects, but Parquet holds one"),
        "{err}"
    );
    assert!(!dir.join("two.parquet").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn hostile_tables_give_errors_and_leave_nothing() {
    let dir = dir("hostile");
    for name in [
        "types_zstd.parquet",
        "types_none.parquet",
        "types_lz4.feather",
        "types_uncompressed.feather",
    ] {
        let bytes = std::fs::read(data(name)).unwrap();
        let ext = Path::new(name).extension().unwrap().to_str().unwrap();
        let bad = dir.join(format!("bad.{ext}"));
        let out = dir.join("out.dbdf");
        let mut cases: Vec<Vec<u8>> = (0..bytes.len())
            .step_by(97)
            .map(|n| bytes[..n].to_vec())
            .collect();
        for at in (0..bytes.len()).step_by(13) {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[at] ^= flip;
                cases.push(b);
            }
        }
        for case in cases {
            std::fs::write(&bad, &case).unwrap();
            // An error or a table: never a panic, and no output after an error.
            if convert(&bad, &out, &ConvertOptions::default()).is_err() {
                assert!(!out.exists(), "{name}");
            }
            let _ = std::fs::remove_file(&out);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_footer_that_lies_about_its_length_or_blocks_is_refused_at_open() {
    let bytes = std::fs::read(data("types_uncompressed.feather")).unwrap();
    let dir = dir("footer");
    let bad = dir.join("bad.feather");
    let mut lying = bytes.clone();
    let n = lying.len();
    lying[n - 10..n - 6].copy_from_slice(&i32::MAX.to_le_bytes());
    std::fs::write(&bad, &lying).unwrap();
    let err = crate::pipe::opened(&bad, "arrow").err().unwrap();
    assert_error!(err, ForeignInput { message, .. } if message.contains("does not fit"));
    std::fs::write(&bad, &bytes[..bytes.len() - 3]).unwrap();
    let err = crate::pipe::opened(&bad, "arrow").err().unwrap();
    assert_error!(err, ForeignInput { .. });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "cli")]
mod cli {
    use super::*;
    use std::process::Command;

    fn dbdf(args: &[&Path]) -> std::process::Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dbdf"));
        command.arg("--quiet").arg("convert");
        command.args(args).output().expect("dbdf runs")
    }

    fn flagged(input: &Path, output: &Path, flags: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_dbdf"))
            .args(["--quiet", "convert"])
            .arg(input)
            .arg(output)
            .args(flags)
            .output()
            .expect("dbdf runs")
    }

    #[test]
    fn the_tool_converts_tables_with_its_flags() {
        let dir = dir("cli");
        let out = dir.join("out.dbdf");
        let run = dbdf(&[&data("types_zstd.parquet"), &out]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(
            serde_daphne::from_file::<_, Object>(&out).unwrap(),
            expected()
        );
        // Nulls: refused by name, then filled.
        let run = dbdf(&[&data("nulls.parquet"), &out]);
        let message = String::from_utf8_lossy(&run.stderr);
        assert!(
            !run.status.success() && message.contains("row 2 of column \"x\""),
            "{message}"
        );
        let run = flagged(&data("nulls.parquet"), &out, &["--nulls", "zero"]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        // Row groups and compression as asked, read back by the Parquet crate's own reader.
        let table = dir.join("t.parquet");
        let flags = ["--compression", "snappy", "--row-group-rows", "4"];
        let run = flagged(&data("types.npy"), &table, &flags);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let reader =
            parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&table).unwrap())
                .unwrap();
        let meta = parquet::file::reader::FileReader::metadata(&reader);
        assert_eq!(meta.num_row_groups(), 3);
        assert_eq!(
            meta.row_group(0).column(0).compression(),
            parquet::basic::Compression::SNAPPY
        );
        let named = dir.join("m.arrow");
        let matrix = dir.join("m.dbdf");
        serde_daphne::to_file(
            &matrix,
            &Object::dense(1, 2, Values::I8(vec![1, 2])).unwrap(),
        )
        .unwrap();
        let run = flagged(&matrix, &named, &["--labels", "left,right"]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let frame = read(
            &named,
            &ReadOptions {
                data_type: Some(DataType::Frame),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            frame,
            Object::frame(vec![
                ("left".into(), Values::I8(vec![1])),
                ("right".into(), Values::I8(vec![2])),
            ])
            .unwrap()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_table_of_large_columns_round_trips_through_the_tool() {
        // Columns of megabytes: the tool's own mappings of large buffers at work.
        let dir = dir("cli_large");
        let rows = 600_000i32;
        let frame = Object::frame(vec![
            (
                "x".into(),
                Values::F64((0..rows).map(|r| r as f64 / 3.0).collect()),
            ),
            ("k".into(), Values::I32((0..rows).rev().collect())),
            (
                "b".into(),
                Values::U8((0..rows).map(|r| (r % 7) as u8).collect()),
            ),
        ])
        .unwrap();
        let (original, table, back) = (
            dir.join("f.dbdf"),
            dir.join("f.parquet"),
            dir.join("b.dbdf"),
        );
        serde_daphne::to_file(&original, &frame).unwrap();
        for (middle, flags) in [
            (&table, &["--row-group-rows", "250000"][..]),
            (&dir.join("f.feather"), &[][..]),
        ] {
            let run = flagged(&original, middle, flags);
            assert!(
                run.status.success(),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
            let run = dbdf(&[middle, &back]);
            assert!(
                run.status.success(),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
            assert!(std::fs::read(&back).unwrap() == std::fs::read(&original).unwrap());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The whole writes are the sinks' bytes (as `dbdf convert` writes them) and read back as
/// the table numpy wrote.
#[test]
fn whole_writes_are_the_conversions_bytes_and_read_back() {
    let dir = dir("whole");
    let expected = expected();
    for (extension, format) in [
        ("parquet", "parquet".parse::<Format>().unwrap()),
        ("feather", "arrow".parse::<Format>().unwrap()),
    ] {
        let converted = dir.join(format!("converted.{extension}"));
        convert(
            &data("types.npy"),
            &converted,
            &ConvertOptions {
                to: Some(format),
                ..Default::default()
            },
        )
        .unwrap();
        let written = dir.join(format!("written.{extension}"));
        let options = ConvertOptions::default();
        dbdf::convert::write(&written, std::slice::from_ref(&expected), format, &options).unwrap();
        let bytes =
            dbdf::convert::to_vec(std::slice::from_ref(&expected), format, &options).unwrap();
        assert_eq!(bytes, std::fs::read(&converted).unwrap(), "{extension}");
        assert_eq!(std::fs::read(&written).unwrap(), bytes, "{extension}");
        assert_eq!(
            read(&written, &ReadOptions::default()).unwrap(),
            expected,
            "{extension}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn schema_metadata_are_user_attributes_kept_by_tables_and_binsparse() {
    let dir = dir("attributes");
    let want: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"origin": "sensor-7", "units": "m/s"}"#).unwrap();
    // pyarrow's files (with pandas' key, and Arrow's schema in the Parquet file): through
    // Parquet and Arrow IPC to Binsparse (as a matrix), whose descriptor holds the user's keys
    // alone.
    let matrix = ConvertOptions {
        data_type: Some(DataType::DenseMatrix),
        ..Default::default()
    };
    for name in ["attributes.parquet", "attributes.feather"] {
        let table = dir.join(format!("{name}.parquet"));
        convert(&data(name), &table, &ConvertOptions::default()).unwrap();
        let bsp = dir.join(format!("{name}.bsp.npz"));
        convert(&table, &bsp, &matrix).unwrap();
        assert_eq!(
            crate::whole::read_binsparse(&bsp).unwrap().attributes,
            want,
            "{name}"
        );
    }
    // Attributes asked are written over the input's.
    let options = ConvertOptions {
        formats: dbdf::convert::FormatOptions::default().with(WriteOptions {
            attributes: serde_json::from_str(r#"{"units": "km/h", "n": 3}"#).unwrap(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let table = dir.join("asked.parquet");
    convert(&data("attributes.parquet"), &table, &options).unwrap();
    let bsp = dir.join("asked.bsp.npz");
    convert(&table, &bsp, &matrix).unwrap();
    let read = crate::whole::read_binsparse(&bsp).unwrap().attributes;
    let expected: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"origin": "sensor-7", "units": "km/h", "n": "3"}"#).unwrap();
    assert_eq!(read, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The Arrow project's integration files (arrow-testing, `1.0.0-bigendian` and
/// `1.0.0-littleendian`): one table written on machines of both byte orders.
#[test]
fn big_endian_ipc_files_read_as_their_little_endian_twins() {
    let twin = |order: &str| data(&format!("arrow-testing/primitive_{order}.arrow_file"));
    // Its binary, string and fixed-size binary columns are not DAPHNE's: the numbers are.
    let whole = read(&twin("bigendian"), &ReadOptions::default()).unwrap_err();
    assert!(whole.to_string().contains("\"binary_nullable\""), "{whole}");
    let numbers: Vec<String> = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16"]
        .iter()
        .chain(&["uint32", "uint64", "float32", "float64"])
        .flat_map(|t| [format!("{t}_nullable"), format!("{t}_nonnullable")])
        .collect();
    let options = ReadOptions {
        nulls: Nulls::Zero,
        columns: Some(dbdf::pipe::Projection::new(numbers.clone()).unwrap()),
        ..Default::default()
    };
    let little = read(&twin("littleendian"), &options).unwrap();
    let big = read(&twin("bigendian"), &options).unwrap();
    assert_eq!(big.labels(), numbers);
    assert_eq!(big, little);
    // Swapped, not zeros: the 37 rows of each non-nullable column are not all alike.
    for column in little.columns().unwrap().iter().skip(3).step_by(2) {
        let cells: Vec<String> = (0..37)
            .map(|r| column.get(r).unwrap().to_string())
            .collect();
        assert!(cells.iter().any(|c| c != &cells[0]), "{cells:?}");
    }
}

/// A file of many compressed row groups: its bands come in the file's order, a row group
/// each, and a reader that stops early stops the decoding thread.
#[test]
fn row_groups_come_in_order_and_a_reader_may_stop_early() {
    let rows = 200_000usize;
    let object = Object::frame(vec![
        (
            "x".into(),
            Values::F64((0..rows).map(|r| r as f64 / 7.0).collect()),
        ),
        (
            "n".into(),
            Values::I32((0..rows).map(|r| r as i32 * 3).collect()),
        ),
        (
            "b".into(),
            Values::U8((0..rows).map(|r| (r % 251) as u8).collect()),
        ),
    ])
    .unwrap();
    let dir = dir("row_groups");
    let path = dir.join("t.parquet");
    let options = WriteOptions {
        compression: Some(Compression::Zstd),
        row_group_rows: Some(30_000),
        ..Default::default()
    };
    std::fs::write(&path, table_bytes("parquet", &object, &options)).unwrap();
    assert_eq!(read(&path, &ReadOptions::default()).unwrap(), object);
    let mut source = crate::pipe::opened(&path, "parquet").unwrap();
    let mut firsts = Vec::new();
    dbdf::pipe::Source::for_each_band(&mut *source, 0, 1, &mut |band| {
        firsts.push(band.rows);
        Ok(firsts.len() < 2)
    })
    .unwrap();
    assert_eq!(firsts, [30_000, 30_000]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn parquet_chunks_of_one_page_have_no_page_index_and_longer_ones_do() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = dir("page_index");
    let chunk_offsets = |object: &Object, rows: usize| {
        let path = dir.join("t.parquet");
        let options = WriteOptions {
            row_group_rows: Some(rows),
            ..Default::default()
        };
        std::fs::write(&path, table_bytes("parquet", object, &options)).unwrap();
        assert_eq!(&read(&path, &ReadOptions::default()).unwrap(), object);
        let file = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let column = file.metadata().row_group(0).column(0).clone();
        (column.column_index_offset(), column.offset_index_offset())
    };
    let values = |n: usize| Values::F64((0..n).map(|i| i as f64 / 3.0).collect());
    // 300 columns of 64 rows a group: 512 bytes a chunk, one page.
    let wide = Object::dense(640, 300, values(640 * 300)).unwrap();
    assert_eq!(chunk_offsets(&wide, 64), (None, None));
    // One column of 300,000 rows a group: 2.4 MB a chunk, several pages.
    let tall = Object::dense(600_000, 1, values(600_000)).unwrap();
    let (column_index, offset_index) = chunk_offsets(&tall, 300_000);
    assert!(column_index.is_some() && offset_index.is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each row group is written by a file writer of its own and its metadata moved to where it
/// lies: the footer's offsets, ordinals and page indexes must be the file's.
#[test]
fn parquet_row_groups_lie_where_the_footer_and_page_indexes_say() {
    use parquet::file::page_index::offset_index::OffsetIndexMetaData;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::serialized_reader::ReadOptionsBuilder;
    let dir = dir("row_groups_apart");
    let path = dir.join("t.parquet");
    let values = |n: usize| Values::F64((0..n).map(|i| i as f64 / 7.0).collect());
    // Three groups of 200,000 rows of two columns: several pages a chunk, page indexes.
    let tall = Object::dense(600_000, 2, values(1_200_000)).unwrap();
    let options = WriteOptions {
        row_group_rows: Some(200_000),
        compression: Some(Compression::None),
        ..Default::default()
    };
    std::fs::write(&path, table_bytes("parquet", &tall, &options)).unwrap();
    assert_eq!(&read(&path, &ReadOptions::default()).unwrap(), &tall);
    let bytes = std::fs::read(&path).unwrap();
    let indexed = ReadOptionsBuilder::new().with_page_index().build();
    let file = SerializedFileReader::new_with_options(std::fs::File::open(&path).unwrap(), indexed)
        .unwrap();
    let metadata = file.metadata();
    assert_eq!(metadata.file_metadata().num_rows(), 600_000);
    assert!(metadata.page_index().is_some(), "a page index");
    let mut end = 4;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        assert_eq!(group.ordinal(), Some(g as i16 as i32));
        for (c, column) in group.columns().iter().enumerate() {
            // A group's chunks follow each other, after the group before and its page
            // indexes; each where its pages are.
            match c {
                0 => assert!(column.data_page_offset() >= end),
                _ => assert_eq!(column.data_page_offset(), end),
            }
            end = column.data_page_offset();
            end += column.compressed_size();
            let index = metadata.page_index_for_row_group(g);
            let pages: &OffsetIndexMetaData = index.offset_index(c).expect("an offset index");
            assert!(index.column_index(c).is_some(), "a column index");
            let first = &pages.page_locations()[0];
            assert!(pages.page_locations().len() > 1);
            assert_eq!(first.offset, column.data_page_offset());
            // Uncompressed plain pages: the first page's values are the column's first rows.
            let page = &bytes[first.offset as usize..][..first.compressed_page_size as usize];
            let value = |k: usize| (k * 2 + c) as f64 / 7.0;
            let first_values: Vec<u8> = (200_000 * g..200_000 * g + 4)
                .flat_map(|r| value(r).to_le_bytes())
                .collect();
            let found = page.windows(32).any(|w| w == first_values.as_slice());
            assert!(found, "group {g} column {c}: the page holds its rows");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
