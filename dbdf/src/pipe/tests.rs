//! Each sink against its format's whole write (bytes equal) and each source against its
//! format's whole read, with bands of one row, of a tile and of uneven heights.

use std::path::PathBuf;

use super::*;
use crate::mtx::tests::band_fixtures;
use crate::{csv, mtx, npy, systemds};
use serde_daphne::{Dialect, Object, Options};

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_pipe_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Band heights to feed sinks with: one row, two (uneven against 9 rows), a tile's, all.
const HEIGHTS: [u64; 4] = [1, 2, 4, 100];

/// Pumps `object` in bands of `rows` into `sink`.
fn pump_held(object: &Object, rows: u64, sink: Box<dyn Sink + '_>) -> Result<Vec<String>> {
    let mut source = Held::new(vec![object.clone()], 0, Kept::default())?.band_rows(rows);
    pump(&mut source, sink, &PumpOptions::default()).map_err(Failed::into_error)
}

/// Everything a sink writes to memory, or its error.
fn written(
    object: &Object,
    rows: u64,
    sink: impl FnOnce(&mut Vec<u8>) -> Box<dyn Sink + '_>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    pump_held(object, rows, sink(&mut out))?;
    Ok(out)
}

/// Same bytes, or both fail with the same kind.
fn same(name: &str, got: Result<Vec<u8>>, whole: Result<Vec<u8>>) {
    match (got, whole) {
        (Ok(got), Ok(whole)) => assert!(got == whole, "{name}: bytes differ"),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{name}: {a} / {b}"),
        (a, b) => panic!("{name}: pipe {a:?}, whole {b:?}"),
    }
}

#[test]
fn text_and_npy_sinks_write_the_bytes_of_the_whole_writes() {
    for (name, _, object) in band_fixtures() {
        for rows in HEIGHTS {
            let at = format!("{name}, bands of {rows}");
            let npy = written(&object, rows, |w| Box::new(npy::NpySink::new(w)));
            same(&format!("npy {at}"), npy, npy::to_vec(&object));
            let mtx_sink = written(&object, rows, |w| Box::new(mtx::MtxSink::new(w)));
            let mut whole = Vec::new();
            let mtx_whole = mtx::write(&object, &mut whole).map(|()| whole);
            same(&format!("mtx {at}"), mtx_sink, mtx_whole);
            for daphne in [false, true] {
                let got = written(&object, rows, |w| Box::new(csv::CsvSink::new(w, daphne)));
                let mut whole = Vec::new();
                let csv_whole = csv::write(&object, &mut whole, daphne).map(|()| whole);
                same(&format!("csv {daphne} {at}"), got, csv_whole);
            }
        }
    }
}

#[test]
fn the_dbdf_sink_writes_the_bytes_of_the_whole_write() {
    let dir = dir("dbdf_sink");
    let out = dir.join("out.dbdf");
    let option_sets = [
        Options::new(),
        Options::new().tile(2, 3),
        Options::new().tile(4, 2).narrow(true),
        Options::new().block_policy(serde_daphne::BlockPolicy::Smallest),
        Options::new().dialect(Dialect::Runtime),
    ];
    for (name, _, object) in band_fixtures() {
        for options in &option_sets {
            let runtime = options.dialect == Some(Dialect::Runtime);
            if runtime && object.data_type() == DataType::Frame {
                continue; // runtime frames take their labels from a sidecar
            }
            let mut whole = Vec::new();
            object.write_with(&mut whole, options).unwrap();
            for rows in HEIGHTS {
                let sink = DbdfSink::create(&out, options).unwrap();
                pump_held(&object, rows, Box::new(sink)).unwrap();
                let got = std::fs::read(&out).unwrap();
                let at = format!("{name}, {options:?}, bands of {rows}");
                if object.data_type() == DataType::Frame && options.tile.is_some() {
                    // The same blocks, a band of every column after another.
                    let got: Object = serde_daphne::from_slice(&got).unwrap();
                    let whole: Object = serde_daphne::from_slice(&whole).unwrap();
                    assert_eq!(got.columns().unwrap(), whole.columns().unwrap(), "{at}");
                    assert_eq!(got.blocks().len(), whole.blocks().len(), "{at}");
                } else if got != whole {
                    let got: Object = serde_daphne::from_slice_with(&got, options).unwrap();
                    let whole: Object = serde_daphne::from_slice_with(&whole, options).unwrap();
                    panic!(
                        "{at}: bytes differ\n{:?}\n{:?}",
                        got.blocks(),
                        whole.blocks()
                    );
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_systemds_sink_writes_the_files_of_the_whole_write() {
    let dir = dir("systemds_sink");
    let options = systemds::WriteOptions::new().block_size(2);
    for (k, (name, bytes, object)) in band_fixtures().into_iter().enumerate() {
        let whole = dir.join(format!("whole{k}"));
        let expected = systemds::write_with(&whole, &object, &options);
        // Bands from a source without windows, and windows of a .dbdf file.
        let input = dir.join(format!("in{k}.dbdf"));
        std::fs::write(&input, &bytes).unwrap();
        for rows in [Some(1), Some(3), None] {
            let piped = dir.join(format!("piped{k}"));
            let sink = Box::new(systemds::SystemdsSink::new(&piped, &options));
            let got = match rows {
                Some(rows) => pump_held(&object, rows, sink).map(drop),
                None => {
                    let mut source = DbdfSource::open(&input).unwrap();
                    let runtime_frame = source.headers()[0].data_type() == DataType::Frame
                        && name.contains("runtime");
                    if runtime_frame {
                        continue;
                    }
                    pump(&mut source, sink, &PumpOptions::default())
                        .map(drop)
                        .map_err(Failed::into_error)
                }
            };
            match (&expected, got) {
                (Ok(()), Ok(())) => {
                    for file in [&whole, &systemds::metadata_path(&whole)] {
                        let twin = dir.join(
                            file.file_name()
                                .unwrap()
                                .to_str()
                                .unwrap()
                                .replace("whole", "piped"),
                        );
                        assert!(
                            std::fs::read(file).unwrap() == std::fs::read(&twin).unwrap(),
                            "{name} {rows:?}: {} differs",
                            file.display()
                        );
                    }
                }
                (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{name}"),
                (a, b) => panic!("{name} {rows:?}: whole {a:?}, pipe {b:?}"),
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every object a source gives, collected.
fn collected(source: &mut dyn Source) -> Vec<Object> {
    let mut objects = Vec::new();
    let sink = Collect::new(
        None,
        Box::new(|got, _| {
            objects = got;
            Ok(Vec::new())
        }),
    );
    pump(source, Box::new(sink), &PumpOptions::default()).unwrap();
    objects
}

/// Cells and header equal (blocks may differ).
fn same_object(name: &str, got: &Object, whole: &Object) {
    assert_eq!(got.header(), whole.header(), "{name}");
    if got.data_type() == DataType::Frame {
        assert_eq!(got.columns().unwrap(), whole.columns().unwrap(), "{name}");
    } else {
        let (rows, cols) = whole.shape();
        let cells = |o: &Object| {
            (0..rows * cols)
                .map(|k| format!("{:?}", o.get(k / cols, k % cols)))
                .collect::<Vec<_>>()
        };
        assert_eq!(cells(got), cells(whole), "{name}");
    }
}

#[test]
fn sources_give_what_their_whole_reads_give() {
    let dir = dir("sources");
    for (k, (name, bytes, object)) in band_fixtures().into_iter().enumerate() {
        let path = dir.join(format!("{k}.dbdf"));
        std::fs::write(&path, &bytes).unwrap();
        let mut dbdf = DbdfSource::open(&path).unwrap();
        same_object(&format!("dbdf {name}"), &collected(&mut dbdf)[0], &object);
        // Windows of every size agree with the whole object's cells.
        let (rows, cols) = object.shape();
        let whole = Held::new(vec![object.clone()], 0, Kept::default()).unwrap();
        for (tr, tc) in [(1, 1), (2, 3), (4, 5), (9, 5)] {
            for r0 in (0..rows).step_by(tr) {
                for c0 in (0..cols).step_by(tc) {
                    let (r, c) = (
                        r0..(r0 + tr as u64).min(rows),
                        c0..(c0 + tc as u64).min(cols),
                    );
                    let got = dbdf
                        .window(0, r.clone(), c.clone())
                        .unwrap()
                        .conform(object.header())
                        .unwrap();
                    let expected = whole
                        .window(0, r, c)
                        .unwrap()
                        .conform(object.header())
                        .unwrap();
                    assert_eq!(got, expected, "{name} window at {r0},{c0}");
                }
            }
        }
        if object.data_type() == DataType::Frame {
            let text = dir.join(format!("{k}.csv"));
            let mut out = Vec::new();
            csv::write(&object, &mut out, false).unwrap();
            std::fs::write(&text, &out).unwrap();
            let whole = csv::read(out.as_slice(), None).unwrap();
            let got = collected(&mut csv::CsvSource::open(&text).unwrap());
            same_object(&format!("csv {name}"), &got[0], &whole);
            continue;
        }
        let npy_path = dir.join(format!("{k}.npy"));
        std::fs::write(&npy_path, npy::to_vec(&object).unwrap()).unwrap();
        let got = collected(&mut npy::NpySource::open(&npy_path).unwrap());
        same_object(
            &format!("npy {name}"),
            &got[0],
            &npy::read(&npy_path).unwrap(),
        );
        let sysds = dir.join(format!("{k}.sysds"));
        systemds::write_with(
            &sysds,
            &object,
            &systemds::WriteOptions::new().block_size(2),
        )
        .unwrap();
        let whole = systemds::read(&sysds).unwrap();
        let got =
            collected(&mut systemds::SystemdsSource::open(&sysds, &Default::default()).unwrap());
        same_object(&format!("systemds {name}"), &got[0], &whole);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn array_files_read_through_the_scratch_file_as_whole() {
    let dir = dir("mtx_array");
    let path = dir.join("a.mtx");
    for (text, vt) in [
        (
            "real general\n3 2\n1.5\n-2\n0\n4\n5e3\n-0\n",
            ValueType::F64,
        ),
        ("integer general\n2 2\n-1\n2\n3\n4\n", ValueType::I64),
        (
            "integer general\n2 1\n1\n18446744073709551615\n",
            ValueType::U64,
        ),
    ] {
        std::fs::write(&path, format!("%%MatrixMarket matrix array {text}")).unwrap();
        let whole = mtx::read_path(&path, None).unwrap();
        let mut source = mtx::MtxArraySource::open(&path).unwrap().expect("streams");
        assert_eq!(source.headers()[0].matrix_value_type(), Some(vt), "{text}");
        same_object(text, &collected(&mut source)[0], &whole);
    }
    // Symmetric files and coordinate files are for the whole read.
    for text in [
        "array real symmetric\n2 2\n1\n2\n3\n",
        "coordinate real general\n1 1 0\n",
    ] {
        std::fs::write(&path, format!("%%MatrixMarket matrix {text}")).unwrap();
        assert!(
            mtx::MtxArraySource::open(&path).unwrap().is_none(),
            "{text}"
        );
    }
    // Too many or too few values, by line.
    for (text, says) in [
        (
            "real general\n1 2\n1\n2\n3\n",
            "line 5: more than the 2 values",
        ),
        (
            "real general\n2 2\n1\n2\n3\n",
            "expected 4 values after the size line, found 3",
        ),
        (
            "real general\n1 1\nx\n",
            "line 3: malformed f64 number \"x\"",
        ),
    ] {
        std::fs::write(&path, format!("%%MatrixMarket matrix array {text}")).unwrap();
        let err = mtx::MtxArraySource::open(&path).map(drop).unwrap_err();
        assert_eq!(err.kind(), serde_daphne::ErrorKind::ForeignInput, "{text}");
        assert!(err.to_string().contains(says), "{text}: {err} / {says}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
