//! Files of the Parquet project's own test suite (`tests/data/arrow/parquet-testing/`, copied
//! by its `make.py`, which wrote in `MANIFEST.json` what pyarrow reads from each): every one
//! is converted to `.dbdf` with pyarrow's values, bit for bit, or refused in one line that
//! names the column. The Arrow project's files are read in `tables.rs`.

use std::path::PathBuf;

use dbdf::arrow::{Nulls, ReadOptions};
use dbdf::convert::{convert, ConvertOptions};
use serde_json::Value as Json;

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/arrow/parquet-testing")
}

/// `.dbdf` bytes of the file converted with the read's columns and nulls, or the error.
fn converted(
    name: &str,
    read: &Json,
    out: &std::path::Path,
) -> Result<serde_daphne::Object, String> {
    let columns = read["columns"].as_array().map(|picks| {
        let picks = picks.iter().map(|p| p.as_str().unwrap().to_string());
        dbdf::pipe::Projection::new(picks).unwrap()
    });
    let nulls = match read["nulls"].as_str().unwrap() {
        "zero" => Nulls::Zero,
        _ => Nulls::default(),
    };
    let options = ConvertOptions {
        columns,
        sync: false,
        formats: dbdf::convert::FormatOptions::default().with(ReadOptions {
            nulls,
            ..Default::default()
        }),
        ..Default::default()
    };
    convert(&folder().join(name), out, &options).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(out).unwrap();
    Ok(serde_daphne::from_slice(&bytes).unwrap())
}

#[test]
fn the_parquet_projects_files_convert_with_pyarrows_values_or_are_refused_in_a_line() {
    let manifest: serde_json::Map<String, Json> =
        serde_json::from_str(&std::fs::read_to_string(folder().join("MANIFEST.json")).unwrap())
            .unwrap();
    // Every file kept is in the manifest, and so read here.
    let mut kept: Vec<String> = std::fs::read_dir(folder())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    kept.sort();
    let mut listed: Vec<String> = manifest.keys().cloned().collect();
    listed.sort();
    assert_eq!(kept, listed);
    let dir = std::env::temp_dir().join(format!("dbdf_peer_files_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut equal, mut refused) = (0, 0);
    for (name, file) in &manifest {
        for read in file["reads"].as_array().unwrap() {
            let expect = &read["expect"];
            let got = converted(name, read, &dir.join("out.dbdf"));
            if let Some(words) = expect["refused"].as_str() {
                let error = got.err().unwrap_or_else(|| panic!("{name}: not refused"));
                assert!(!error.contains('\n'), "{name}: {error}");
                assert!(error.contains(words), "{name}: {error}");
                refused += 1;
                continue;
            }
            let object = got.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(object.shape().0, expect["rows"].as_u64().unwrap(), "{name}");
            let columns = object.columns().unwrap();
            let expected = expect["columns"].as_array().unwrap();
            assert_eq!(columns.len(), expected.len(), "{name}");
            for ((label, values), column) in object.labels().iter().zip(&columns).zip(expected) {
                assert_eq!(*label, column[0].as_str().unwrap(), "{name}");
                assert_eq!(values.value_type().name(), column[1], "{name} {label}");
                let crc = crc32fast::hash(&values.le_bytes());
                assert_eq!(
                    u64::from(crc),
                    column[2].as_u64().unwrap(),
                    "{name} {label}"
                );
            }
            equal += 1;
        }
    }
    // The manifest's shape: 11 reads with values (one of a projection, one with nulls
    // filled), 10 refusals (2 of files pyarrow refuses too).
    assert_eq!((equal, refused), (11, 10));
    std::fs::remove_dir_all(&dir).unwrap();
}
