//! `dbdf::arrow::DbdfBatchReader`: a `.dbdf` object as Arrow record batches, on files DAPHNE
//! wrote (values from the reference files' manifest) and on tiled files.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type, UInt64Type};
use arrow_array::RecordBatchReader;
use arrow_schema::DataType as ArrowType;
use dbdf::arrow::DbdfBatchReader;
use dbdf::pipe::Projection;
use serde_daphne::{DbdfFile, Object, Options, Values};

fn daphne(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/daphne-runtime")
        .join(name)
}

fn pick(columns: &str) -> Projection {
    columns.parse().unwrap()
}

#[test]
fn a_frame_daphne_wrote_is_its_columns_of_their_types() {
    // Values and labels (from its .meta) as the manifest gives them.
    let file = DbdfFile::open(daphne("frame_mixed_3x8.dbdf")).unwrap();
    let reader = DbdfBatchReader::new(file, 0, None, None).unwrap();
    let schema = reader.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "id",
            "price",
            "qty",
            "flag",
            "ratio",
            "quantity_total",
            "a_label_with_24_chars_xx",
            "c"
        ]
    );
    assert_eq!(schema.field(5).data_type(), &ArrowType::UInt64);
    assert_eq!(schema.field(4).data_type(), &ArrowType::Float32);
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(
        batch.column(0).as_primitive::<Int64Type>().values(),
        &[1, -2, 9000000000]
    );
    assert_eq!(
        batch.column(1).as_primitive::<Float64Type>().values(),
        &[0.5, -1.25, 1e100]
    );
    assert_eq!(
        batch.column(5).as_primitive::<UInt64Type>().values(),
        &[10, 20, u64::MAX]
    );
    assert_eq!(
        batch.column(4).as_primitive::<Float32Type>().values(),
        &[0.25, -3.5, 0.33333334]
    );
}

#[test]
fn a_matrix_is_a_column_per_matrix_column_in_batches_of_the_rows_asked() {
    // DAPHNE's 100 x 7 matrix, its values in the text file DAPHNE printed.
    let text = std::fs::read_to_string(daphne("dense_f64_100x7.values.txt")).unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    let file = DbdfFile::open(daphne("dense_f64_100x7.dbdf")).unwrap();
    let reader = DbdfBatchReader::new(file, 0, Some(&pick("c6,2")), Some(30)).unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["c6", "c2"]);
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
        [30, 30, 30, 10]
    );
    let c6: Vec<f64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Float64Type>().values().to_vec())
        .collect();
    assert_eq!(c6, rows.iter().map(|r| r[6]).collect::<Vec<_>>());
}

#[test]
fn tiles_and_sparse_blocks_read_as_the_whole_object() {
    let path = super::cli::scratch("batches_tiles").join("t.dbdf");
    let values: Vec<f64> = (0..35 * 9)
        .map(|k| if k % 4 == 0 { k as f64 } else { 0.0 })
        .collect();
    let m = Object::dense(35, 9, Values::F64(values.clone())).unwrap();
    let options = Options {
        tile: Some((8, 4)),
        ..Options::new()
    };
    options.to_file(&path, &m).unwrap();
    let file = DbdfFile::open(&path).unwrap();
    let reader = DbdfBatchReader::new(file, 0, Some(&pick("c8,c0,c5")), None).unwrap();
    let mut got = vec![Vec::new(); 3];
    for batch in reader {
        let batch = batch.unwrap();
        for (k, column) in got.iter_mut().enumerate() {
            column.extend_from_slice(batch.column(k).as_primitive::<Float64Type>().values());
        }
    }
    for (k, c) in [8, 0, 5].into_iter().enumerate() {
        let expected: Vec<f64> = (0..35).map(|r| values[r * 9 + c]).collect();
        assert_eq!(got[k], expected, "column c{c}");
    }
}

#[test]
fn bad_picks_objects_and_widths_are_errors() {
    let file = || DbdfFile::open(daphne("dense_f64_100x7.dbdf")).unwrap();
    let missing = DbdfBatchReader::new(file(), 0, Some(&pick("c7")), None)
        .err()
        .unwrap();
    assert!(
        missing.to_string().contains("no column \"c7\""),
        "{missing}"
    );
    let twice = DbdfBatchReader::new(file(), 0, Some(&pick("c1,1")), None)
        .err()
        .unwrap();
    assert!(twice.to_string().contains("picked twice"), "{twice}");
    let none = DbdfBatchReader::new(file(), 1, None, None).err().unwrap();
    assert!(none.to_string().contains("no object 1"), "{none}");
    // Wider than the Arrow outputs write (65536 columns).
    let path = super::cli::scratch("batches_wide").join("w.dbdf");
    let wide = Object::dense(1, 70_000, Values::F64(vec![0.0; 70_000])).unwrap();
    serde_daphne::to_file(&path, &wide).unwrap();
    let wide = DbdfBatchReader::new(DbdfFile::open(&path).unwrap(), 0, None, None).err();
    assert!(wide.unwrap().to_string().contains("more than 65536"));
}

#[test]
fn a_frame_of_column_blocks_comes_in_batches_of_about_8_mib_by_default() {
    // Each column one block of every row: batches are windows of about 8 MiB, not the table.
    let path = super::cli::scratch("batches_default").join("f.dbdf");
    let n = 1_500_000;
    let frame = Object::frame(vec![
        (
            "a".to_owned(),
            Values::F64((0..n).map(|r| r as f64).collect()),
        ),
        ("b".to_owned(), Values::I64((0..n as i64).collect())),
    ])
    .unwrap();
    serde_daphne::to_file(&path, &frame).unwrap();
    let reader = DbdfBatchReader::new(DbdfFile::open(&path).unwrap(), 0, None, None).unwrap();
    let rows: Vec<usize> = reader.map(|b| b.unwrap().num_rows()).collect();
    assert_eq!(rows, [524_288, 524_288, 451_424]);
}
