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

/// A source that gives its rows in order only (as CSV does): no windows.
struct InOrder(Held);

impl Source for InOrder {
    fn headers(&self) -> &[Header] {
        self.0.headers()
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        self.0.for_each_band(index, multiple, each)
    }

    fn input_len(&self) -> u64 {
        0
    }
}

/// Pumps `object` in bands of `rows` into `sink`; with `windows`, the sink may read windows
/// instead.
fn pump_bands(
    object: &Object,
    rows: u64,
    windows: bool,
    sink: Box<dyn Sink + '_>,
) -> Result<Vec<String>> {
    let held = Held::new(vec![object.clone()], 0, Kept::default())?.band_rows(rows);
    let mut in_order = InOrder(held);
    let source: &mut dyn Source = match windows {
        true => &mut in_order.0,
        false => &mut in_order,
    };
    pump(source, sink, &PumpOptions::default()).map_err(Failed::into_error)
}

/// Pumps `object` in bands of `rows` into `sink`.
fn pump_held(object: &Object, rows: u64, sink: Box<dyn Sink + '_>) -> Result<Vec<String>> {
    pump_bands(object, rows, true, sink)
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
            let mtx_sink = written(&object, rows, |w| Box::new(mtx::sink(w)));
            same(&format!("mtx {at}"), mtx_sink, mtx::to_vec(&object));
            for daphne in [false, true] {
                let options = csv::WriteOptions::new().daphne(daphne);
                let got = written(&object, rows, |w| Box::new(csv::sink(w, &options)));
                same(
                    &format!("csv {daphne} {at}"),
                    got,
                    csv::to_vec(&object, &options),
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
    let mut compared = 0;
    for (k, (name, bytes, object), options) in
        band_fixtures().into_iter().enumerate().flat_map(|(k, f)| {
            [
                (k, f.clone(), systemds::WriteOptions::new().block_size(2)),
                (k, f, systemds::WriteOptions::new().block_size(2).parts(3)),
            ]
        })
    {
        let parted = options != systemds::WriteOptions::new().block_size(2);
        let whole = dir.join(format!("whole{k}-{parted}"));
        let expected = systemds::write_with(&whole, &object, &options);
        // Bands from a source without windows, and windows of a .dbdf file.
        let input = dir.join(format!("in{k}.dbdf"));
        std::fs::write(&input, &bytes).unwrap();
        for (rows, windows) in [
            (Some(1), true),
            (Some(3), true),
            (Some(1), false),
            (Some(3), false),
            (None, true),
        ] {
            let piped = dir.join(format!("piped{k}-{parted}"));
            let sink = Box::new(systemds::SystemdsSink::new(&piped, &options));
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
                        .map_err(Failed::into_error)
                }
            };
            match (&expected, got) {
                (Ok(()), Ok(())) => {
                    compared += 1;
                    let files = match whole.is_dir() {
                        true => (0..3).map(|p| whole.join(format!("part-{p:05}"))).collect(),
                        false => vec![whole.clone()],
                    };
                    for file in files.iter().chain([&systemds::metadata_path(&whole)]) {
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
    // Every matrix (6 fixtures, 2 option sets, 5 ways), frames refused (a u8 column).
    assert_eq!(compared, 6 * 2 * 5);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every object a source gives, collected, or the error.
fn try_collected(source: &mut dyn Source) -> Result<Vec<Object>> {
    let mut objects = Vec::new();
    let sink = Collect::new(
        None,
        Box::new(|got, _| {
            objects = got;
            Ok(Vec::new())
        }),
    );
    copy(source, Box::new(sink))?;
    Ok(objects)
}

/// Every object a source gives, collected.
fn collected(source: &mut dyn Source) -> Vec<Object> {
    try_collected(source).unwrap()
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
            let out = csv::to_vec(&object, &csv::WriteOptions::new()).unwrap();
            std::fs::write(&text, &out).unwrap();
            let whole = csv::from_slice(&out).unwrap();
            let got = collected(&mut csv::source(&text).unwrap());
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
        let whole = mtx::read(&path).unwrap();
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

#[test]
fn futhark_streams_as_its_whole_reads_and_writes() {
    use crate::futhark::{self, FutharkSink, FutharkSource, WriteOptions};
    let dir = dir("futhark");
    let path = dir.join("v.fut");
    let matrices: Vec<Object> = band_fixtures()
        .into_iter()
        .map(|(_, _, o)| o)
        .filter(|o| o.data_type() != DataType::Frame)
        .collect();
    let small = [
        Object::dense(1, 1, serde_daphne::Values::U8(vec![1])).unwrap(),
        Object::dense(3, 1, serde_daphne::Values::F32(vec![0.5, -2.0, 1e-3])).unwrap(),
        Object::dense(2, 2, serde_daphne::Values::U8(vec![0, 1, 1, 0])).unwrap(),
    ];
    let options = [
        WriteOptions::new(),
        WriteOptions::new().matrices(true),
        WriteOptions::new().bools(true).f16(true),
    ];
    for objects in [matrices.clone(), small.to_vec()] {
        for option in &options {
            let whole = futhark::to_vec(&objects, option);
            for rows in HEIGHTS {
                let mut source = Held::new(objects.clone(), 0, Kept::default())
                    .unwrap()
                    .band_rows(rows);
                let mut got = Vec::new();
                let sink = Box::new(FutharkSink::new(&mut got, option));
                let piped =
                    pump(&mut source, sink, &PumpOptions::default()).map_err(Failed::into_error);
                match (&whole, piped) {
                    (Ok(whole), Ok(_)) => assert!(&got == whole, "{option:?} bands of {rows}"),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("{option:?}: whole {a:?}, pipe {b:?}"),
                }
            }
            let Ok(bytes) = whole else { continue };
            // With whitespace between the values, read back both ways.
            let spaced = [b"\n ".as_slice(), &bytes, b"\t\n"].concat();
            std::fs::write(&path, &spaced).unwrap();
            let expected = futhark::from_slice(&spaced).unwrap();
            let got = collected(&mut FutharkSource::open(&path).unwrap());
            assert_eq!(got.len(), expected.len());
            for (got, expected) in got.iter().zip(&expected) {
                same_object("futhark", got, expected);
            }
        }
    }
    // Every truncation and some flipped bytes: the same error as the whole read, or the
    // same values.
    let bytes = futhark::to_vec(&small, &WriteOptions::new().bools(true)).unwrap();
    let mut cases: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
    for at in [1, 2, 3, 6, 7, 20, 25] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x41;
        cases.push(flipped);
    }
    for case in cases {
        std::fs::write(&path, &case).unwrap();
        let whole = futhark::from_slice(&case);
        let piped = FutharkSource::open(&path).and_then(|mut s| try_collected(&mut s));
        match (whole, piped) {
            (Ok(a), Ok(b)) => assert_eq!(a.len(), b.len()),
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{case:?}");
                assert_eq!(a.offset(), b.offset(), "{case:?}");
            }
            (a, b) => panic!("{case:?}: whole {a:?}, pipe {b:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn regrouped_bands_are_multiples_and_lose_nothing() {
    let values: Vec<i32> = (0..14 * 2).collect();
    let whole = Band {
        first_row: 0,
        first_col: 0,
        rows: 14,
        cols: 2,
        cells: Cells::Dense(serde_daphne::Values::I32(values)),
    };
    for multiple in [1, 2, 3, 5, 20] {
        let mut regroup = Regroup::new(multiple);
        let mut out: Vec<Band> = Vec::new();
        let mut keep = |band: Band| {
            out.push(band);
            Ok(true)
        };
        let mut r0 = 0;
        for height in [3, 1, 4, 1, 5] {
            regroup
                .push(whole.window(r0..r0 + height, 0..2), &mut keep)
                .unwrap();
            r0 += height;
        }
        regroup.finish(&mut keep).unwrap();
        let (last, rest) = out.split_last().unwrap();
        assert!(rest.iter().all(|b| b.rows % multiple == 0), "{multiple}");
        assert!(last.rows <= 14, "{multiple}");
        let mut joined = out[0].clone();
        for band in &out[1..] {
            joined.append(band.clone()).unwrap();
        }
        assert_eq!(joined, whole, "{multiple}");
    }
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
    let mut source = Held::new(vec![object.clone()], 900, Kept::default())
        .unwrap()
        .band_rows(1);
    let sink = DbdfSink::create(&out, &Options::new().tile(1, 5)).unwrap();
    let err = pump(&mut source, Box::new(sink), &options)
        .unwrap_err()
        .into_error();
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
    let sink = DbdfSink::create(&out, &Options::new().tile(1, 5)).unwrap();
    pump(&mut source, Box::new(sink), &options).unwrap();
    let heard = heard.lock().unwrap();
    assert!(heard.windows(2).all(|w| w[0].0 <= w[1].0), "{heard:?}");
    assert_eq!(heard.last(), Some(&(900, 900)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_binsparse_sink_writes_the_bytes_of_the_whole_write() {
    use crate::binsparse::{self, BinsparseSink, Format};
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
                let mut options = binsparse::WriteOptions::new()
                    .index_type(index)
                    .iso(iso)
                    .bint8(bint8);
                if let Some(format) = format {
                    options = options.format(format);
                }
                for rows in [1, 2, 100] {
                    let whole = binsparse::to_vec(object, &options);
                    let at = format!("{name} {format:?} {index} {iso} {bint8}, bands of {rows}");
                    let got = written(object, rows, |w| Box::new(BinsparseSink::new(w, &options)));
                    compared += usize::from(whole.is_ok());
                    same(&at, got, whole);
                }
            }
        }
    }
    assert!(compared > 200, "{compared}");
}

#[test]
fn binsparse_archives_read_in_place_as_whole() {
    use crate::binsparse::{self, BinsparseSource, Format};
    let dir = dir("binsparse_source");
    let path = dir.join("m.bsp.npz");
    let mut cases = 0;
    for (name, _, object) in band_fixtures() {
        if object.data_type() == DataType::Frame {
            continue;
        }
        for format in [
            None,
            Some(Format::Csr),
            Some(Format::Dmat),
            Some(Format::Coo),
        ] {
            for index in [ValueType::U64, ValueType::I32] {
                let mut options = binsparse::WriteOptions::new().index_type(index);
                if let Some(format) = format {
                    options = options.format(format);
                }
                let bytes = binsparse::to_vec(&object, &options).unwrap();
                std::fs::write(&path, &bytes).unwrap();
                let whole = binsparse::read(&path).unwrap();
                let mut source = BinsparseSource::open(&path).unwrap();
                assert_eq!(
                    source.headers()[0],
                    *whole.object.header(),
                    "{name} {format:?}"
                );
                assert_eq!(
                    source.reads_in_place(),
                    format != Some(Format::Coo),
                    "{name} {format:?}"
                );
                same_object(
                    &format!("{name} {format:?}"),
                    &collected(&mut source)[0],
                    &whole.object,
                );
                let (kept, _) = source.kept().binsparse.unwrap();
                assert_eq!(kept, whole.format);
                cases += 1;
                // Every truncation and flipped byte: the whole read's error kind, or its
                // values (the first of several faults may differ).
                if index != ValueType::I32 || format != Some(Format::Csr) {
                    continue;
                }
                let mut broken: Vec<Vec<u8>> = (0..bytes.len())
                    .step_by(7)
                    .map(|n| bytes[..n].to_vec())
                    .collect();
                for at in (0..bytes.len()).step_by(3) {
                    let mut b = bytes.clone();
                    b[at] ^= 0x5a;
                    broken.push(b);
                }
                for case in broken {
                    std::fs::write(&path, &case).unwrap();
                    let whole = binsparse::read(&path);
                    let piped =
                        BinsparseSource::open(&path).and_then(|mut s| try_collected(&mut s));
                    match (whole, piped) {
                        (Ok(a), Ok(b)) => same_object(&name, &b[0], &a.object),
                        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{name}: {a} / {b}"),
                        (a, b) => panic!("{name}: whole {a:?}, in place {b:?}"),
                    }
                }
            }
        }
    }
    assert_eq!(cases, 6 * 4 * 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every file under `dir`, by its path from `dir`.
#[cfg(feature = "zarr")]
fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[cfg(feature = "zarr")]
#[test]
fn the_zarr_sink_writes_the_files_of_the_whole_write() {
    use crate::binsparse::zarr::{self, ZarrVersion};
    use crate::binsparse::{self, Format};
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
                let mut options = binsparse::WriteOptions::new()
                    .zarr_version(version)
                    .iso(iso)
                    .bint8(bint8);
                if let Some(format) = format {
                    options = options.format(format);
                }
                let whole = dir.join("whole.zarr");
                let expected = zarr::write(&whole, object, &options);
                for rows in if small { vec![1, 2, 100] } else { vec![7] } {
                    let piped = dir.join("piped.zarr");
                    let got = pump_held(object, rows, Box::new(zarr::sink(&piped, &options)));
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

#[cfg(feature = "zarr")]
#[test]
fn zarr_groups_read_in_place_as_whole() {
    use crate::binsparse::zarr::{self, ZarrVersion};
    use crate::binsparse::{self, BinsparseSource, Format};
    let dir = dir("zarr_source");
    let path = dir.join("m.zarr");
    let big: Vec<f64> = (0..1100 * 1000)
        .map(|i| if i % 3 == 0 { 0.0 } else { f64::from(i) })
        .collect();
    let big = Object::dense(1100, 1000, serde_daphne::Values::F64(big)).unwrap();
    let mut objects: Vec<(String, Object)> = band_fixtures()
        .into_iter()
        .filter(|(_, _, o)| o.data_type() != DataType::Frame)
        .map(|(name, _, o)| (name, o))
        .collect();
    objects.push((
        "big csr".into(),
        big.clone().with_data_type(DataType::CsrMatrix).unwrap(),
    ));
    objects.push(("big".into(), big));
    for (name, object) in &objects {
        for format in [None, Some(Format::Coo)] {
            for version in [ZarrVersion::V3, ZarrVersion::V2] {
                let mut options = binsparse::WriteOptions::new()
                    .zarr_version(version)
                    .index_type(ValueType::U32);
                if let Some(format) = format {
                    options = options.format(format);
                }
                zarr::write(&path, object, &options).unwrap();
                let whole = binsparse::read(&path).unwrap();
                let mut source = BinsparseSource::open(&path).unwrap();
                assert_eq!(
                    source.reads_in_place(),
                    format.is_none(),
                    "{name} {format:?}"
                );
                same_object(
                    &format!("{name} {format:?} {version:?}"),
                    &collected(&mut source)[0],
                    &whole.object,
                );
            }
        }
    }
    // Broken chunks and metadata: the whole read's error kind.
    let (_, _, csr) = band_fixtures().remove(3);
    for damage in ["truncate", "remove", "flip", "meta"] {
        zarr::write(&path, &csr, &binsparse::WriteOptions::new()).unwrap();
        let chunk = path.join("indices_1/c/0");
        match damage {
            "truncate" => std::fs::write(&chunk, &std::fs::read(&chunk).unwrap()[..5]).unwrap(),
            "remove" => std::fs::remove_file(&chunk).unwrap(),
            "flip" => {
                let mut bytes = std::fs::read(&chunk).unwrap();
                let last = bytes.len() - 3;
                bytes[last] ^= 0xff;
                std::fs::write(&chunk, &bytes).unwrap();
            }
            _ => std::fs::write(path.join("values/zarr.json"), b"{").unwrap(),
        }
        let whole = binsparse::read(&path);
        let piped = BinsparseSource::open(&path).and_then(|mut s| try_collected(&mut s));
        match (whole, piped) {
            (Ok(a), Ok(b)) => same_object(damage, &b[0], &a.object),
            (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{damage}: {a} / {b}"),
            (a, b) => panic!("{damage}: whole {a:?}, in place {b:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
