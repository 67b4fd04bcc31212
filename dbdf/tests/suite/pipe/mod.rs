//! The pipe (issue 31): each sink against its format's whole write (bytes equal) and each
//! source against its format's whole read, with bands of one row, of a tile and of uneven
//! heights; regrouping, cancellation and progress.

mod conformance;
mod sinks;

use conformance::pump_bands;

/// The conformance kit over every registered format.
#[test]
fn every_format_of_the_registry_gives_back_the_objects_it_is_given() {
    conformance::walk(32);
}
mod sources;

use std::path::PathBuf;

use dbdf::pipe::*;
use serde_daphne::Header;
use serde_daphne::{DataType, Object, Result, Values};

/// The file at `path` in the format named `name`, opened as the registry opens it.
pub fn opened(path: impl AsRef<std::path::Path>, name: &str) -> Result<Box<dyn Source>> {
    let format: dbdf::convert::Format = name.parse()?;
    let options = dbdf::convert::ConvertOptions::default();
    Ok(dbdf::convert::source(path.as_ref(), format, &options)?)
}

/// Objects of every data type and layout, as the bytes of a file and as read whole.
pub fn band_fixtures() -> Vec<(String, Vec<u8>, Object)> {
    use serde_daphne::{Dialect, Options};
    let dense: Vec<f64> = (0..9 * 5)
        .map(|i| match i % 6 {
            0 => 0.0,
            1 => -0.0,
            2 => f64::NAN,
            _ => f64::from(i) / 8.0 - 2.0,
        })
        .collect();
    let ints: Vec<i32> = (0..9 * 5)
        .map(|i| if i % 3 == 0 { i - 20 } else { 0 })
        .collect();
    let dense = Object::dense(9, 5, Values::F64(dense)).unwrap();
    let csr = Object::dense(9, 5, Values::I32(ints))
        .unwrap()
        .with_data_type(DataType::CsrMatrix)
        .unwrap();
    let frame = Object::frame(vec![
        (
            "x, y".into(),
            Values::F64((0..9).map(|i| f64::from(i) * 0.5).collect()),
        ),
        ("n".into(), Values::I64((0..9).map(|i| i - 4).collect())),
        ("b".into(), Values::U8((0..9).map(|i| i * 30).collect())),
    ])
    .unwrap();
    let mut out = Vec::new();
    for (name, object) in [("dense", &dense), ("csr", &csr), ("frame", &frame)] {
        for (layout, options) in [
            ("plain", Options::new()),
            (
                "tiled",
                Options {
                    tile: Some((2, 3)),
                    ..Options::new()
                },
            ),
            (
                "runtime",
                Options {
                    dialect: Some(Dialect::Runtime),
                    ..Options::new()
                },
            ),
        ] {
            if name == "frame" && layout == "runtime" {
                continue; // runtime frames take their labels from a sidecar
            }
            let bytes = options.to_vec(object).unwrap();
            let whole: Object = options.from_slice(&bytes).unwrap();
            out.push((format!("{name} {layout}"), bytes, whole));
        }
    }
    out
}

pub(super) fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_pipe_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Band heights to feed sinks with: one row, two (uneven against 9 rows), a tile's, all.
pub(super) const HEIGHTS: [u64; 4] = [1, 2, 4, 100];

/// Pumps `object` in bands of `rows` into `sink`.
pub(super) fn pump_held(
    object: &Object,
    rows: u64,
    sink: Box<dyn Sink + '_>,
) -> Result<Vec<String>> {
    pump_bands(object, rows, true, sink)
}

/// Everything a sink writes to memory, or its error.
pub(super) fn written(
    object: &Object,
    rows: u64,
    sink: impl FnOnce(&mut Vec<u8>) -> Box<dyn Sink + '_>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    pump_held(object, rows, sink(&mut out))?;
    Ok(out)
}

/// `object` as CSV with `options`, a whole write through the CSV sink.
pub(super) fn csv_bytes(object: &Object, options: &dbdf::csv::WriteOptions) -> Result<Vec<u8>> {
    let formats = dbdf::convert::FormatOptions::default().with(options.clone());
    crate::whole::to_vec_with(object, "csv", formats)
}

/// Same bytes, or both fail with the same kind.
pub(super) fn same(name: &str, got: Result<Vec<u8>>, whole: Result<Vec<u8>>) {
    match (got, whole) {
        (Ok(got), Ok(whole)) => assert!(got == whole, "{name}: bytes differ"),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{name}: {a} / {b}"),
        (a, b) => panic!("{name}: pipe {a:?}, whole {b:?}"),
    }
}

/// Every object a source gives, collected, or the error.
pub(super) fn try_collected(source: &mut dyn Source) -> Result<Vec<Object>> {
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
pub(super) fn collected(source: &mut dyn Source) -> Vec<Object> {
    try_collected(source).unwrap()
}

/// Cells and header equal (blocks may differ).
pub(super) fn same_object(name: &str, got: &Object, whole: &Object) {
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

/// Every file under `dir`, by its path from `dir`.
#[cfg(feature = "zarr")]
pub(super) fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
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

/// Windows of every size of object `index` of `source` against the same windows of
/// `object` (its whole read).
pub(super) fn same_windows(name: &str, source: &dyn Windows, index: usize, object: &Object) {
    let (rows, cols) = object.shape();
    let whole = Held::new(vec![object.clone()], 0, InputMetadata::default()).unwrap();
    for (tr, tc) in [(1, 1), (2, 3), (4, 5), (9, 5), (rows.max(1), 1)] {
        for r0 in (0..rows).step_by(tr as usize) {
            for c0 in (0..cols).step_by(tc as usize) {
                let (r, c) = (r0..(r0 + tr).min(rows), c0..(c0 + tc).min(cols));
                let got = source.window(index, r.clone(), c.clone()).unwrap();
                let expected = whole.window(0, r, c).unwrap();
                let conform = |b: Band| b.conform(object.header()).unwrap();
                assert_eq!(
                    conform(got),
                    conform(expected),
                    "{name} window at {r0},{c0}"
                );
            }
        }
    }
}
