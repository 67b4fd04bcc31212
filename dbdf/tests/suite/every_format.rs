//! `dbdf info`, `validate`, `slice` and `spy` take a file of every format the library reads
//! (issue 70): each a peer's file where the repository has one, else text written here from
//! the format's spec; shapes and values from the peers' own descriptions (manifests, make.py).
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};

use dbdf::convert::Format;

use super::cli::dbdf;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// One file of a format: where it is, `--from` where the extension does not say, its first
/// object's shape and its row 1 as CSV.
struct Case {
    format: &'static str,
    path: PathBuf,
    from: Option<&'static str>,
    shape: (u64, u64),
    row_1: &'static str,
}

fn cases(dir: &Path) -> Vec<Case> {
    // MatrixMarket and DAPHNE's CSV, written from their specs.
    let mtx = dir.join("m.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1.5\n2 3 -2\n3 4 7\n",
    )
    .unwrap();
    let csv = dir.join("c.csv");
    std::fs::write(&csv, "1.5,0,0\n0,-2,0\n").unwrap();
    std::fs::write(
        dir.join("c.csv.meta"),
        r#"{"numCols":3,"numRows":2,"valueType":"f64"}"#,
    )
    .unwrap();
    // DAPHNE's segments of a file DAPHNE wrote (100 x 7, value 100 r + c: its MANIFEST).
    let segments = dir.join("d.hdfs");
    let out = dbdf(&[
        "convert",
        data("../tests/data/daphne-runtime/dense_f64_100x7.dbdf")
            .to_str()
            .unwrap(),
        segments.to_str().unwrap(),
        "--segments",
        "3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let values = text(
        &std::fs::read(data(
            "../tests/data/daphne-runtime/dense_f64_100x7.values.txt",
        ))
        .unwrap(),
    );
    let row_1: Vec<String> = (values.lines().filter(|l| !l.starts_with('#')).nth(1))
        .unwrap()
        .split(' ')
        .map(|v| format!("{:?}", v.parse::<f64>().unwrap()))
        .collect();
    let row_1_of_100x7: &'static str = Box::leak((row_1.join(",") + "\n").into_boxed_str());
    let case = |format, path: PathBuf, from, shape, row_1| Case {
        format,
        path,
        from,
        shape,
        row_1,
    };
    vec![
        case(
            "dbdf",
            data("../tests/data/daphne-runtime/dense_f64_3x4.dbdf"),
            None,
            (3, 4),
            "10.0,11.0,12.0,13.0\n",
        ),
        case("mtx", mtx, None, (3, 4), "0.0,0.0,-2.0,0.0\n"),
        case("csv", csv, None, (2, 3), "0.0,-2.0,0.0\n"),
        case(
            "npy",
            data("tests/data/numpy/matrix_f64.npy"),
            None,
            (2, 3),
            "0.75,1.0,1.25\n",
        ),
        case(
            "npz",
            data("tests/data/numpy/savez.npz"),
            None,
            (2, 3),
            "0.75,1.0,1.25\n",
        ),
        case(
            "scipy",
            data("tests/data/numpy/scipy_csr.npz"),
            None,
            (6, 5),
            "0.0,0.0,0.0,0.0,0.0\n",
        ),
        case(
            "futhark",
            data("tests/data/futhark/array_f64_2d_3x4.bin"),
            Some("futhark"),
            (3, 4),
            "10.0,11.0,12.0,13.0\n",
        ),
        case(
            "binsparse",
            data("tests/data/binsparse/csr_f64.npz"),
            None,
            (3, 4),
            "0.0,0.0,3.0,0.0\n",
        ),
        case(
            "systemds",
            data("tests/data/systemds/dense_small"),
            None,
            (3, 4),
            "21.0,22.0,23.0,24.0\n",
        ),
        case(
            "parquet",
            data("tests/data/arrow/pandas.parquet"),
            None,
            (5, 2),
            "a,b\n1,0.25\n",
        ),
        case(
            "arrow",
            data("tests/data/arrow/polars.arrow"),
            None,
            (5, 2),
            "a,b\n1,0.25\n",
        ),
        case("segments", segments, None, (100, 7), row_1_of_100x7),
        // A Zarr group (a folder), as zarr-python wrote it (its MANIFEST: 9 x 7).
        case(
            "binsparse",
            data("tests/data/zarr/v3_zstd_csr.zarr"),
            None,
            (9, 7),
            "0.0,0.0,0.0,0.0,0.0,0.9633225530808519,0.0\n",
        ),
    ]
}

#[test]
fn info_validate_slice_and_spy_take_every_format() {
    let dir = std::env::temp_dir().join(format!("dbdf_every_format_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cases = cases(&dir);
    for format in Format::ALL {
        let name = format.to_string();
        assert!(
            cases.iter().any(|c| c.format == name),
            "no file of format {name} here"
        );
    }
    for case in &cases {
        let name = case.format;
        let file = case.path.to_str().unwrap();
        let with = |args: &[&str]| {
            let mut all: Vec<&str> = vec![args[0], file];
            all.extend(&args[1..]);
            if let Some(from) = case.from {
                all.extend(["--from", from]);
            }
            let out = dbdf(&all);
            assert!(
                out.status.success(),
                "{name}: {args:?}: {}",
                text(&out.stderr)
            );
            text(&out.stdout)
        };
        let info: serde_json::Value = serde_json::from_str(&with(&["info", "--json"])).unwrap();
        let first = &info["objects"][0];
        assert_eq!(
            (first["rows"].as_u64(), first["cols"].as_u64()),
            (Some(case.shape.0), Some(case.shape.1)),
            "{name}: {info}"
        );
        assert!(with(&["info", "--nnz"]).contains("non-zeros"), "{name}");
        assert_eq!(with(&["validate"]), "ok\n", "{name}");
        let row = with(&["slice", "-", "--rows", "1:2", "--to", "csv"]);
        assert_eq!(row, case.row_1, "{name}");
        if !first["data_type"].as_str().unwrap().starts_with("Frame") {
            assert!(
                with(&["spy", "--width", "4"]).contains("non-zeros"),
                "{name}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_file_of_another_format_is_one_line_naming_it() {
    let dir = std::env::temp_dir().join(format!("dbdf_every_format_bad_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let npy = dir.join("bad.npy");
    std::fs::write(&npy, b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8',").unwrap();
    let file = npy.to_str().unwrap();
    let out = dbdf(&["info", file]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("dbdf: ") && err.contains("bad.npy"),
        "{err}"
    );
    // validate says what is wrong on standard output, as for .dbdf files.
    let out = dbdf(&["validate", file]);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stdout);
    assert!(
        said.starts_with(file) && said.lines().count() == 1,
        "{said}"
    );
    // A folder of no format: said so, not "Is a directory".
    let folder = dir.join("plain");
    std::fs::create_dir(&folder).unwrap();
    for command in ["info", "spy"] {
        let out = dbdf(&[command, folder.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("plain: a folder of no format dbdf reads"),
            "{err}"
        );
    }
    // A frame has no pattern to draw: said by name.
    let parquet = data("tests/data/arrow/pandas.parquet");
    let out = dbdf(&["spy", parquet.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("a Frame has no sparsity pattern"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The conformance walk of the registry: every format it lists (a new one included, with no
/// line here) takes a matrix DAPHNE wrote and gives it back, value for value, as the same
/// `.dbdf` bytes as the file converted to `.dbdf` directly.
#[test]
fn every_format_of_the_registry_gives_back_what_it_was_given() {
    use dbdf::convert::{convert, ConvertOptions};
    use serde_daphne::DataType;

    let dir = std::env::temp_dir().join(format!("dbdf_every_format_walk_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let daphne = data("../tests/data/daphne-runtime/dense_f64_100x7.dbdf");
    let dense = |from: Option<Format>| ConvertOptions {
        from,
        data_type: Some(DataType::DenseMatrix),
        ..Default::default()
    };
    let expected = dir.join("expected.dbdf");
    convert(&daphne, &expected, &dense(None)).unwrap();
    let expected = std::fs::read(&expected).unwrap();
    for format in Format::all() {
        let extension = format.extensions().first().copied().unwrap_or("out");
        let written = dir.join(format!("m_{format}.{extension}"));
        let to = ConvertOptions {
            to: Some(format),
            ..Default::default()
        };
        convert(&daphne, &written, &to).unwrap_or_else(|e| panic!("to {format}: {e}"));
        let back = dir.join(format!("back_{format}.dbdf"));
        convert(&written, &back, &dense(Some(format)))
            .unwrap_or_else(|e| panic!("from {format}: {e}"));
        assert!(std::fs::read(&back).unwrap() == expected, "{format}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
