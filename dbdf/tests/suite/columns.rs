//! Projection (`--columns`, `ConvertOptions::columns`): the picked columns of a table, by
//! label or position, in the order picked; Parquet reading only their column chunks; every
//! other table source through the pipe; matrices refused.

use std::io::IoSliceMut;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use dbdf::arrow::{self, ReadOptions};
use dbdf::convert::{convert, ConvertOptions};
use dbdf::pipe::{Cells, Projection};
use serde_daphne::{DataType, Object, ReadAt, ValueType, Values};

use super::tables::{data, expected, read};

fn picked(columns: &str) -> ReadOptions {
    ReadOptions {
        columns: Some(columns.parse().unwrap()),
        ..Default::default()
    }
}

#[test]
fn columns_are_picked_by_label_or_position_in_the_order_given() {
    let expected = expected();
    let labels: Vec<String> = expected.labels().iter().map(|l| l.to_string()).collect();
    let all = expected.columns().unwrap();
    let last = labels.len() - 1;
    let picks = format!("{},0,{}", labels[3], labels[last]);
    for name in [
        "types_none.parquet",
        "types_zstd.parquet",
        "types_uncompressed.feather",
        "types_zstd.feather",
    ] {
        let got = read(&data(name), &picked(&picks)).unwrap();
        assert_eq!(
            got.labels(),
            [&*labels[3], &*labels[0], &*labels[last]],
            "{name}"
        );
        assert_eq!(
            got.columns().unwrap(),
            [all[3].clone(), all[0].clone(), all[last].clone()],
            "{name}"
        );
    }
}

#[test]
fn columns_not_picked_need_not_be_numbers() {
    for name in ["strings.parquet", "nested.parquet", "dates.parquet"] {
        let whole = read(&data(name), &ReadOptions::default()).unwrap_err();
        assert!(whole.to_string().contains("--columns"), "{whole}");
    }
    let got = read(&data("strings.parquet"), &picked("id")).unwrap();
    assert_eq!(got.columns().unwrap(), [Values::I64(vec![1, 2])]);
    let got = read(&data("nested.parquet"), &picked("0")).unwrap();
    assert_eq!(got.columns().unwrap(), [Values::I64(vec![1, 2])]);
    // Picked, an unsupported column is still refused, naming it.
    let err = read(&data("strings.parquet"), &picked("name")).unwrap_err();
    assert_error!(err, NotConvertible { what, .. } if what.starts_with("column \"name\""));
}

#[test]
fn picks_that_name_no_column_or_one_twice_are_errors_listing_the_columns() {
    let err = read(&data("strings.parquet"), &picked("id,nope")).unwrap_err();
    assert_error!(err, InvalidValue);
    assert!(
        err.to_string().contains(
            "no column \"nope\": the table has 2 columns (\"id\", \"name\"; positions 0 to 1)"
        ),
        "{err}"
    );
    let err = read(&data("strings.parquet"), &picked("2")).unwrap_err();
    assert!(err.to_string().contains("no column \"2\""), "{err}");
    let err = read(&data("strings.parquet"), &picked("id,0")).unwrap_err();
    assert!(err.to_string().contains("\"id\" is picked twice"), "{err}");
    assert_error!("a,,b".parse::<Projection>().unwrap_err(), InvalidValue);
}

#[test]
fn a_table_read_as_a_matrix_takes_the_picked_columns() {
    // mixed.parquet: a: int32 [0, 1, 2], b: double [0, 0.5, 1].
    let options = ReadOptions {
        data_type: Some(DataType::DenseMatrix),
        value_type: Some(ValueType::F64),
        ..picked("b,a")
    };
    let got = read(&data("mixed.parquet"), &options).unwrap();
    assert_eq!(got.data_type(), DataType::DenseMatrix);
    assert_eq!(got.shape(), (3, 2));
    assert_eq!(
        got.into_dense_vec::<f64>().unwrap(),
        [0.0, 0.0, 0.5, 1.0, 1.0, 2.0]
    );
}

#[test]
fn every_other_table_source_is_projected_on_the_pipe_and_matrices_are_refused() {
    let dir = std::env::temp_dir().join(format!("dbdf_columns_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let expected = expected();
    let all = expected.columns().unwrap();
    let labels = expected
        .labels()
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>();
    let options = ConvertOptions {
        columns: Some(format!("{},1", labels[2]).parse().unwrap()),
        ..Default::default()
    };
    // numpy's record array, and a .dbdf frame and CSV made of it.
    let whole = dir.join("whole.dbdf");
    convert(&data("types.npy"), &whole, &ConvertOptions::default()).unwrap();
    let csv = dir.join("whole.csv");
    convert(&whole, &csv, &ConvertOptions::default()).unwrap();
    for input in [data("types.npy"), whole.clone(), csv] {
        // Each source's own columns (CSV's are typed by their text), picked.
        let (out, unpicked) = (dir.join("picked.dbdf"), dir.join("unpicked.dbdf"));
        convert(&input, &unpicked, &ConvertOptions::default()).unwrap();
        let all: Object = serde_daphne::from_file(&unpicked).unwrap();
        let all = all.columns().unwrap();
        convert(&input, &out, &options).unwrap();
        let got: Object = serde_daphne::from_file(&out).unwrap();
        assert_eq!(got.labels(), [&*labels[2], &*labels[1]], "{input:?}");
        assert_eq!(got.columns().unwrap(), [all[2].clone(), all[1].clone()]);
    }
    assert_eq!(expected.columns().unwrap(), all);
    let matrix = dir.join("matrix.dbdf");
    let m = ndarray::Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f64);
    serde_daphne::to_file(&matrix, &serde_daphne::Dense(m)).unwrap();
    let options = ConvertOptions {
        columns: Some("0".parse().unwrap()),
        ..Default::default()
    };
    let out = dir.join("never.dbdf");
    let err = convert(&matrix, &out, &options).unwrap_err();
    assert!(
        err.to_string().contains("columns are picked from a table"),
        "{err}"
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// A file in memory that records every read.
#[derive(Debug)]
struct Recorded {
    bytes: Vec<u8>,
    reads: Mutex<Vec<Range<u64>>>,
}

impl ReadAt for Recorded {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.reads
            .lock()
            .unwrap()
            .push(offset..offset + buf.len() as u64);
        self.bytes.read_exact_at(buf, offset)
    }
    fn read_exact_vectored_at(&self, _: &mut [IoSliceMut<'_>], _: u64) -> std::io::Result<()> {
        unreachable!("Parquet reads one buffer at a time")
    }
}

#[test]
fn parquet_reads_only_the_picked_columns_chunks() {
    use parquet::file::reader::{FileReader, SerializedFileReader};

    // 21 columns of 60,000 f64 in 3 row groups, uncompressed: 480 KB a column chunk.
    let columns: Vec<(String, Values)> = (0..21)
        .map(|c| {
            let values = (0..60_000).map(|r| (r * 21 + c) as f64).collect();
            (format!("x{c}"), Values::F64(values))
        })
        .collect();
    let table = Object::frame(columns.clone()).unwrap();
    let write = arrow::WriteOptions {
        compression: Some(arrow::Compression::None),
        row_group_rows: Some(20_000),
        ..Default::default()
    };
    let bytes = super::tables::table_bytes("parquet", &table, &write);
    // Where the picked chunks lie, as the parquet crate reads the footer.
    let footer = SerializedFileReader::new(bytes::Bytes::from(bytes.clone())).unwrap();
    let chunks: Vec<Range<u64>> = footer
        .metadata()
        .row_groups()
        .iter()
        .flat_map(|g| [g.column(17), g.column(4)])
        .map(|c| {
            let (at, n) = c.byte_range();
            at..at + n
        })
        .collect();
    assert_eq!(chunks.len(), 6);
    let file = Arc::new(Recorded {
        bytes,
        reads: Mutex::new(Vec::new()),
    });
    let mut source = arrow::parquet::source_at(file.clone(), &picked("x17,4")).unwrap();
    let footer_reads = file.reads.lock().unwrap().len();
    let mut got = [Vec::new(), Vec::new()];
    source
        .for_each_band(0, 1, &mut |band| {
            let Cells::Frame(columns) = band.cells else {
                panic!("a frame's band");
            };
            for (out, column) in got.iter_mut().zip(columns) {
                out.extend(column.into_vec::<f64>().unwrap());
            }
            Ok(true)
        })
        .unwrap();
    assert_eq!(Values::F64(got[0].clone()), columns[17].1);
    assert_eq!(Values::F64(got[1].clone()), columns[4].1);
    let reads = file.reads.lock().unwrap();
    let fetched: u64 = reads[footer_reads..].iter().map(|r| r.end - r.start).sum();
    let wanted: u64 = chunks.iter().map(|c| c.end - c.start).sum();
    for read in &reads[footer_reads..] {
        assert!(
            chunks
                .iter()
                .any(|c| c.start <= read.start && read.end <= c.end),
            "a read of {read:?} outside the picked chunks {chunks:?}"
        );
    }
    assert_eq!(fetched, wanted, "each picked chunk read once");
}

#[test]
fn the_tool_takes_columns_and_its_refusal_names_the_flag() {
    let dir = std::env::temp_dir().join(format!("dbdf_columns_cli_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("ids.dbdf");
    let run = |flags: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_dbdf"))
            .args(["--quiet", "convert"])
            .arg(data("strings.parquet"))
            .arg(&out)
            .args(flags)
            .output()
            .expect("dbdf runs")
    };
    let refused = run(&[]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("column \"name\" of type Utf8"), "{stderr}");
    assert!(stderr.contains("--columns"), "{stderr}");
    assert!(!out.exists());
    let picked = run(&["--columns", "id"]);
    assert!(
        picked.status.success(),
        "{}",
        String::from_utf8_lossy(&picked.stderr)
    );
    let got: Object = serde_daphne::from_file(&out).unwrap();
    assert_eq!(got.labels(), ["id"]);
    assert_eq!(got.columns().unwrap(), [Values::I64(vec![1, 2])]);
    let unknown = run(&["--columns", "ID"]);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("no column \"ID\""), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}
