//! Each sink against its format's whole write.

use super::*;
use dbdf::{csv, systemds};
use serde_daphne::{BlockPolicy, Csr, DbdfFile, Dense, Dialect, Options, ValueType};
use sprs::CsMat;

#[test]
fn text_and_npy_sinks_write_the_bytes_of_the_whole_writes() {
    for (name, _, object) in band_fixtures() {
        for rows in HEIGHTS {
            let at = format!("{name}, bands of {rows}");
            let npy = written(&object, rows, |w| crate::whole::sink(w, "npy"));
            same(
                &format!("npy {at}"),
                npy,
                crate::whole::to_vec(&object, "npy"),
            );
            let mtx_sink = written(&object, rows, |w| crate::whole::sink(w, "mtx"));
            same(
                &format!("mtx {at}"),
                mtx_sink,
                crate::whole::to_vec(&object, "mtx"),
            );
            for daphne in [false, true] {
                let options = csv::WriteOptions { daphne };
                let got = written(&object, rows, |w| {
                    let formats = dbdf::convert::FormatOptions::default().with(options.clone());
                    crate::whole::sink_with(w, "csv", formats)
                });
                same(
                    &format!("csv {daphne} {at}"),
                    got,
                    csv_bytes(&object, &options),
                );
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
        Options {
            tile: Some((2, 3)),
            ..Options::new()
        },
        Options {
            tile: Some((4, 2)),
            narrow: true,
            ..Options::new()
        },
        Options {
            block_policy: serde_daphne::BlockPolicy::Smallest,
            ..Options::new()
        },
        Options {
            dialect: Some(Dialect::Runtime),
            ..Options::new()
        },
    ];
    for (name, _, object) in band_fixtures() {
        for options in &option_sets {
            let runtime = options.dialect == Some(Dialect::Runtime);
            if runtime && object.data_type() == DataType::Frame {
                continue; // runtime frames take their labels from a sidecar
            }
            let mut whole = Vec::new();
            object.write_with(&mut whole, options).unwrap();
            for (rows, windows) in HEIGHTS.into_iter().flat_map(|r| [(r, true), (r, false)]) {
                let sink = DbdfSink::create(&out, options).unwrap();
                pump_bands(&object, rows, windows, Box::new(sink)).unwrap();
                let got = std::fs::read(&out).unwrap();
                let at = format!("{name}, {options:?}, bands of {rows}, windows {windows}");
                if object.data_type() == DataType::Frame && options.tile.is_some() {
                    // The same blocks, a band of every column after another.
                    let got: Object = serde_daphne::from_slice(&got).unwrap();
                    let whole: Object = serde_daphne::from_slice(&whole).unwrap();
                    assert_eq!(got.columns().unwrap(), whole.columns().unwrap(), "{at}");
                    assert_eq!(got.blocks().len(), whole.blocks().len(), "{at}");
                } else if got != whole {
                    let got: Object = options.from_slice(&got).unwrap();
                    let whole: Object = options.from_slice(&whole).unwrap();
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
    let mut compared = 0;
    for (k, (name, bytes, object), options) in
        band_fixtures().into_iter().enumerate().flat_map(|(k, f)| {
            [
                (
                    k,
                    f.clone(),
                    systemds::WriteOptions {
                        block_size: 2,
                        ..Default::default()
                    },
                ),
                (
                    k,
                    f,
                    systemds::WriteOptions {
                        block_size: 2,
                        parts: Some(3),
                    },
                ),
            ]
        })
    {
        let parted = options
            != systemds::WriteOptions {
                block_size: 2,
                ..Default::default()
            };
        let whole = dir.join(format!("whole{k}-{parted}"));
        let expected = crate::systemds::write_with(&whole, &object, &options);
        // Bands from a source without windows, and windows of a .dbdf file.
        let input = dir.join(format!("in{k}.dbdf"));
        std::fs::write(&input, &bytes).unwrap();
        for (rows, windows) in [
            (Some(1), true),
            (Some(3), true),
            (Some(1), false),
            (Some(3), false),
            // Bands taller than two block rows: block rows copied out of them.
            (Some(7), false),
            (None, true),
        ] {
            let piped = dir.join(format!("piped{k}-{parted}"));
            let sink = systemds::sink(&piped, &options);
            let got = match rows {
                Some(rows) => pump_bands(&object, rows, windows, sink).map(drop),
                None => {
                    let mut source = DbdfSource::open(&input).unwrap();
                    let runtime_frame = source.headers()[0].data_type() == DataType::Frame
                        && name.contains("runtime");
                    if runtime_frame {
                        continue;
                    }
                    pump(&mut source, sink, &PumpOptions::default())
                        .map(drop)
                        .map_err(serde_daphne::Error::from)
                }
            };
            match (&expected, got) {
                (Ok(()), Ok(())) => {
                    compared += 1;
                    let files = match whole.is_dir() {
                        true => (0..3).map(|p| whole.join(format!("part-{p:05}"))).collect(),
                        false => vec![whole.clone()],
                    };
                    for file in files.iter().chain([&metadata_path(&whole)]) {
                        let twin = PathBuf::from(file.to_str().unwrap().replace("whole", "piped"));
                        assert!(
                            std::fs::read(file).unwrap() == std::fs::read(&twin).unwrap(),
                            "{name} {rows:?} {windows}: {} differs",
                            file.display()
                        );
                    }
                }
                (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{name}"),
                (a, b) => panic!("{name} {rows:?}: whole {a:?}, pipe {b:?}"),
            }
        }
    }
    // Every matrix (6 fixtures, 2 option sets, 6 ways), frames refused (a u8 column).
    assert_eq!(compared, 6 * 2 * 6);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cancelled_pump_stops_and_leaves_nothing() {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    let dir = dir("cancel");
    let out = dir.join("out.dbdf");
    let (_, _, object) = band_fixtures().remove(0);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let cancel = Arc::new(AtomicBool::new(false));
    let (h, c) = (heard.clone(), cancel.clone());
    let options = PumpOptions {
        progress: Some(Arc::new(move |done, total| {
            h.lock().unwrap().push((done, total));
            // Cancelled once two bands are in.
            c.store(
                h.lock().unwrap().len() >= 2,
                std::sync::atomic::Ordering::Relaxed,
            );
        })),
        cancel: Some(cancel),
        ..PumpOptions::default()
    };
    let mut source = Held::new(vec![object.clone()], 900, InputMetadata::default())
        .unwrap()
        .band_rows(1);
    let sink = DbdfSink::create(
        &out,
        &Options {
            tile: Some((1, 5)),
            ..Options::new()
        },
    )
    .unwrap();
    let err: serde_daphne::Error = pump(&mut source, Box::new(sink), &options)
        .unwrap_err()
        .into();
    assert_eq!(
        err.io_error().map(std::io::Error::kind),
        Some(std::io::ErrorKind::Interrupted)
    );
    assert_eq!(heard.lock().unwrap().len(), 2);
    assert!(!out.exists());
    // Uncancelled, progress rises to the input's length.
    heard.lock().unwrap().clear();
    let options = PumpOptions {
        cancel: None,
        ..options
    };
    let sink = DbdfSink::create(
        &out,
        &Options {
            tile: Some((1, 5)),
            ..Options::new()
        },
    )
    .unwrap();
    pump(&mut source, Box::new(sink), &options).unwrap();
    let heard = heard.lock().unwrap();
    assert!(heard.windows(2).all(|w| w[0].0 <= w[1].0), "{heard:?}");
    assert_eq!(heard.last(), Some(&(900, 900)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_binsparse_sink_writes_the_bytes_of_the_whole_write() {
    use dbdf::binsparse::{self, Format};
    let mut objects: Vec<(String, Object)> = band_fixtures()
        .into_iter()
        .map(|(name, _, o)| (name, o))
        .collect();
    let column = Object::dense(6, 1, serde_daphne::Values::U8(vec![0, 1, 1, 0, 0, 1])).unwrap();
    objects.push(("u8 column".into(), column.clone()));
    objects.push((
        "u8 column csr".into(),
        column.with_data_type(DataType::CsrMatrix).unwrap(),
    ));
    let ones = Object::dense(
        4,
        3,
        serde_daphne::Values::F32(vec![
            0.0, 2.5, 0.0, 2.5, 2.5, 0.0, 0.0, 0.0, 2.5, 2.5, 0.0, 2.5,
        ]),
    )
    .unwrap()
    .with_data_type(DataType::CsrMatrix)
    .unwrap();
    objects.push(("iso csr".into(), ones));
    let mut compared = 0;
    for (name, object) in &objects {
        for format in [
            None,
            Some(Format::Csr),
            Some(Format::Dcsr),
            Some(Format::Coo),
            Some(Format::Dmat),
            Some(Format::Csc),
            Some(Format::Dvec),
            Some(Format::Cvec),
        ] {
            for (index, iso, bint8) in [
                (ValueType::U64, false, false),
                (ValueType::U8, true, true),
                (ValueType::I32, false, true),
            ] {
                let options = binsparse::WriteOptions {
                    format,
                    index_type: index,
                    iso,
                    bint8,
                    ..Default::default()
                };
                for rows in [1, 2, 100] {
                    let whole = crate::whole::to_vec_with(
                        object,
                        "binsparse",
                        dbdf::convert::FormatOptions::default().with(options.clone()),
                    );
                    let at = format!("{name} {format:?} {index} {iso} {bint8}, bands of {rows}");
                    let got = written(object, rows, |w| {
                        let formats = dbdf::convert::FormatOptions::default().with(options.clone());
                        crate::whole::sink_with(w, "binsparse", formats)
                    });
                    compared += usize::from(whole.is_ok());
                    same(&at, got, whole);
                }
            }
        }
    }
    assert!(compared > 200, "{compared}");
}

#[cfg(feature = "zarr")]
#[test]
fn the_zarr_sink_writes_the_files_of_the_whole_write() {
    use dbdf::binsparse::zarr::{self, ZarrVersion};
    use dbdf::binsparse::{self, Format};
    let dir = dir("zarr_sink");
    let mut objects: Vec<(String, Object)> = band_fixtures()
        .into_iter()
        .map(|(name, _, o)| (name, o))
        .collect();
    // More values than one chunk holds: chunks written as the bands come, the last padded.
    let big: Vec<f64> = (0..1100 * 1000)
        .map(|i| if i % 3 == 0 { 0.0 } else { f64::from(i) })
        .collect();
    let big = Object::dense(1100, 1000, serde_daphne::Values::F64(big)).unwrap();
    objects.push((
        "big csr".into(),
        big.clone().with_data_type(DataType::CsrMatrix).unwrap(),
    ));
    objects.push(("big".into(), big));
    let ones = Object::dense(3, 2, serde_daphne::Values::U8(vec![1, 0, 1, 1, 0, 1])).unwrap();
    objects.push((
        "ones".into(),
        ones.with_data_type(DataType::CsrMatrix).unwrap(),
    ));
    let mut compared = 0;
    for (name, object) in &objects {
        let small = !name.starts_with("big");
        let formats: &[Option<Format>] = match small {
            true => &[
                None,
                Some(Format::Csr),
                Some(Format::Coo),
                Some(Format::Dmat),
                Some(Format::Csc),
            ],
            false => &[None],
        };
        for &format in formats {
            for (version, iso, bint8) in [
                (ZarrVersion::V3, false, false),
                (ZarrVersion::V2, true, true),
            ] {
                let options = binsparse::WriteOptions {
                    format,
                    zarr_version: version,
                    iso,
                    bint8,
                    ..Default::default()
                };
                let whole = dir.join("whole.zarr");
                let expected = crate::whole::write_with(
                    &whole,
                    object,
                    "binsparse",
                    dbdf::convert::FormatOptions::default().with(options.clone()),
                );
                for rows in if small { vec![1, 2, 100] } else { vec![7] } {
                    let piped = dir.join("piped.zarr");
                    let got = pump_held(object, rows, zarr::sink(&piped, &options));
                    let at = format!("{name} {format:?} {version:?} {iso}, bands of {rows}");
                    match (&expected, got) {
                        (Ok(()), Ok(_)) => {
                            assert!(tree(&whole) == tree(&piped), "{at}: files differ");
                            compared += 1;
                        }
                        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{at}"),
                        (a, b) => panic!("{at}: whole {a:?}, pipe {b:?}"),
                    }
                }
            }
        }
    }
    assert!(compared > 100, "{compared}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 37 x 29 matrix with zero rows, sparse rows and dense rows.
fn matrix() -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_fn((37, 29), |(r, c)| match r {
        0..=9 => 0.0,
        10..=19 if (r * 7 + c * 3) % 11 != 0 => 0.0,
        _ => (r * 100 + c) as f64 / 4.0 - 300.0,
    })
}

#[test]
fn dbdf_files_retile_through_the_pipe_as_to_vec_with_would() {
    let dir = std::env::temp_dir().join(format!("dbdf_pipe_retile_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (from, to) = (dir.join("a.dbdf"), dir.join("b.dbdf"));
    let m = matrix();
    let csr = CsMat::csr_from_dense(m.view(), 0.0);
    for (source, target) in [
        (
            Options::new(),
            Options {
                tile: Some((8, 8)),
                ..Options::new()
            },
        ),
        (
            Options {
                tile: Some((5, 7)),
                narrow: true,
                ..Options::new()
            },
            Options {
                tile: Some((10, 3)),
                block_policy: BlockPolicy::Smallest,
                ..Options::new()
            },
        ),
        (
            Options {
                tile: Some((4, 4)),
                ..Options::new()
            },
            Options {
                dialect: Some(Dialect::Runtime),
                ..Options::new()
            },
        ),
        // Untiled: one block from bands of rows.
        (
            Options {
                tile: Some((4, 4)),
                ..Options::new()
            },
            Options::new(),
        ),
        (
            Options {
                tile: Some((5, 7)),
                ..Options::new()
            },
            Options {
                block_policy: BlockPolicy::Smallest,
                narrow: true,
                ..Options::new()
            },
        ),
        (
            Options::new(),
            Options {
                block_policy: BlockPolicy::UltraSparse,
                ..Options::new()
            },
        ),
    ] {
        source.to_file(&from, &Dense(m.clone())).unwrap();
        to_dbdf(&mut DbdfSource::open(&from).unwrap(), &to, &target).unwrap();
        assert_eq!(
            std::fs::read(&to).unwrap(),
            target.to_vec(&Dense(m.clone())).unwrap(),
            "{target:?}"
        );
        source.to_file(&from, &Csr(csr.clone())).unwrap();
        to_dbdf(&mut DbdfSource::open(&from).unwrap(), &to, &target).unwrap();
        assert_eq!(
            std::fs::read(&to).unwrap(),
            target.to_vec(&Csr(csr.clone())).unwrap(),
            "{target:?}"
        );
    }
    // Frames: the same blocks, band by band; several objects in one file.
    let frame = band_fixtures()
        .into_iter()
        .map(|(_, _, o)| o)
        .find(|o| o.data_type() == DataType::Frame)
        .unwrap();
    let mut bytes = Options::new().to_vec(&frame).unwrap();
    bytes.extend(Options::new().to_vec(&Dense(m.clone())).unwrap());
    std::fs::write(&from, &bytes).unwrap();
    to_dbdf(
        &mut DbdfSource::open(&from).unwrap(),
        &to,
        &Options {
            tile: Some((6, 6)),
            ..Options::new()
        },
    )
    .unwrap();
    let mut file = DbdfFile::open(&to).unwrap();
    assert_eq!(
        file.object_at(0).unwrap().columns().unwrap(),
        frame.columns().unwrap()
    );
    // 9 rows in tiles of 6 (two), three columns of one block each.
    assert_eq!(file.objects()[0].blocks.len(), 2 * 3);
    assert_eq!(file.read_window::<f64>(1, 0..37, 0..29).unwrap(), m);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression: CSR rows in order (a Binsparse archive) were estimated by their dense size,
/// so a 1e6 x 1e6 matrix of 1e7 entries became 59,606 part files, nearly all empty.
#[test]
fn sparse_rows_in_order_write_as_many_parts_as_their_entries_need() {
    let dir = dir("systemds_parts");
    // 20,000 x 20,000 (3.2 GB dense, 25 parts by that size) with 3 entries.
    let n = 20_000;
    let object = Object::csr(
        n,
        n,
        [vec![0, 1, 1], vec![3; n as usize - 2]].concat(),
        vec![7, 0, 19_999],
        serde_daphne::Values::F64(vec![1.5, 4.0, -2.0]),
    )
    .unwrap();
    let input = dir.join("m.bsp.npz");
    crate::whole::write(&input, &object, "binsparse").unwrap();
    let output = dir.join("m.sysds");
    let mut source = crate::pipe::opened(&input, "binsparse").unwrap();
    let sink = systemds::sink(&output, &systemds::WriteOptions::default());
    pump(&mut *source, sink, &PumpOptions::default()).unwrap();
    assert!(output.is_file(), "one file, not a directory of parts");
    let back = crate::systemds::read(&output).unwrap();
    assert_eq!(back.csr_parts::<f64>().unwrap().values, [1.5, 4.0, -2.0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Dense rows in order whose block rows are too wide to hold (over 64 MiB) are spilled and
/// then written on every core; those that fit are gathered a block row at a time. Both
/// write the whole write's files.
#[test]
fn dense_rows_in_order_write_the_whole_writes_files_held_or_spilled() {
    let dir = dir("systemds_in_order");
    // A block row of 1,100 x 7,700 doubles: 67.8 MB, over the bound; 100 rows: 6.2 MB.
    let (rows, cols) = (1_100u64, 7_700u64);
    let values = (0..rows * cols)
        .map(|x| (x % 1_000_003) as f64 * 0.5)
        .collect();
    let object = Object::dense(rows, cols, serde_daphne::Values::F64(values)).unwrap();
    for block_size in [1_100, 100] {
        let options = systemds::WriteOptions {
            block_size,
            parts: Some(2),
        };
        let whole = dir.join(format!("whole{block_size}"));
        crate::systemds::write_with(&whole, &object, &options).unwrap();
        let piped = dir.join(format!("piped{block_size}"));
        pump_bands(&object, 300, false, systemds::sink(&piped, &options)).unwrap();
        for file in ["part-00000", "part-00001"] {
            assert!(
                std::fs::read(whole.join(file)).unwrap()
                    == std::fs::read(piped.join(file)).unwrap(),
                "blocks of {block_size}: {file} differs"
            );
        }
        assert_eq!(
            std::fs::read(metadata_path(&whole)).unwrap(),
            std::fs::read(metadata_path(&piped)).unwrap()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression: a sink reading a source's windows got the source's values while its bands
/// were converted, so a value type change made the SystemDS sink drop the windows and spill.
/// Windows now come converted, as bands do, and count for progress.
#[test]
fn windows_come_in_the_asked_value_type_and_count_for_progress() {
    use dbdf::pipe::{Pieces, Sink, Windows};
    use serde_daphne::{ErrorKind, Header, Values};
    use std::sync::{Arc, Mutex};
    struct ReadsWindows(Arc<Mutex<Vec<Values>>>);
    impl Sink for ReadsWindows {
        fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> serde_daphne::Result<()> {
            let (rows, cols) = header.shape();
            let windows = pieces.windows().expect("a source in memory has windows");
            let band = windows.window(0, 0..rows, 0..cols)?;
            let dbdf::pipe::Cells::Dense(values) = band.cells else {
                panic!("dense cells");
            };
            self.0.lock().unwrap().push(values);
            Ok(())
        }
        fn finish(self: Box<Self>) -> serde_daphne::Result<Vec<String>> {
            Ok(Vec::new())
        }
    }
    let object = Object::dense(2, 2, Values::F64(vec![1.5, -2.0, 0.0, 4.25])).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    let options = PumpOptions {
        value_type: Some(ValueType::F32),
        progress: Some(Arc::new(move |done, total| {
            h.lock().unwrap().push((done, total))
        })),
        ..PumpOptions::default()
    };
    let mut source = Held::new(vec![object], 64, InputMetadata::default()).unwrap();
    pump(&mut source, Box::new(ReadsWindows(seen.clone())), &options).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Values::F32(vec![1.5, -2.0, 0.0, 4.25])]
    );
    assert_eq!(heard.lock().unwrap().first(), Some(&(64, 64)));
    // A value the asked type cannot hold is refused, as in bands.
    let lossy = Object::dense(1, 2, Values::F64(vec![1.0, 0.1])).unwrap();
    let mut source = Held::new(vec![lossy], 16, InputMetadata::default()).unwrap();
    let err: serde_daphne::Error = pump(&mut source, Box::new(ReadsWindows(seen)), &options)
        .unwrap_err()
        .into();
    assert_eq!(err.kind(), ErrorKind::LossyConversion);
}

/// Regression (found by the conformance kit): a band of a frame with rows but no columns
/// became an object of no rows. numpy holds such a frame (`dtype([])`, shape `(3,)`): it
/// keeps its rows through bands of any height. CSV cannot (a line of no fields is no
/// record) and refuses it, whole or in bands.
#[test]
fn a_frame_of_rows_without_columns_keeps_its_rows_through_the_pipe() {
    use serde_daphne::{Block, BlockData, BlockPlace, ErrorKind, Header};
    let place = BlockPlace {
        row: 0,
        col: 0,
        rows: 3,
        cols: 0,
    };
    let header = Header::Frame {
        rows: 3,
        columns: Vec::new(),
    };
    let block = Block {
        place,
        data: BlockData::Empty,
    };
    let object = Object::new(header, vec![block]).unwrap();
    let whole = crate::whole::to_vec(&object, "npy").unwrap();
    let dict = String::from_utf8_lossy(&whole[10..]).into_owned();
    assert!(
        dict.starts_with("{'descr': [], 'fortran_order': False, 'shape': (3,), }"),
        "{dict}"
    );
    assert_eq!(
        crate::whole::from_slice(&whole, "npy").unwrap().shape(),
        (3, 0)
    );
    for rows in HEIGHTS {
        let got = written(&object, rows, |w| crate::whole::sink(w, "npy"));
        assert!(got.unwrap() == whole, "bands of {rows}");
        let refused = written(&object, rows, |w| crate::whole::sink(w, "csv")).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::NotConvertible, "bands of {rows}");
    }
}

/// SystemDS's metadata file beside `path` (`path` with `.mtd` appended).
fn metadata_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".mtd");
    name.into()
}
