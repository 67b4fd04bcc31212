//! The conformance kit (issue 87): every format of the registry, `Format::all()` (one that
//! another crate registers included, with no line here), takes the objects the format
//! crate's strategies draw (every data type, every value type, tiles of every block type)
//! and gives back their values: written whole, written by its sink from bands of any height
//! (with windows and without), and converted to and from every other format. The expected
//! values are the objects given, never another codec's answer; a format that cannot hold an
//! object refuses it, in every way it is written, before anything appears.
//!
//! The kit uses the two crates' public API alone, so that a format outside this repository
//! runs it as it is: the toy converter's tests include this file (`#[path]`) and call
//! [`walk`] after registering their format.

use std::path::{Path, PathBuf};

use dbdf::convert::{self, ConvertOptions, Format};
use dbdf::pipe::{pump, Band, Held, InputMetadata, PumpOptions, Sink, Source};
use proptest::test_runner::{Config, TestRunner};
use serde_daphne::{DataType, Header, Object, Options};

/// Walks every registered format with `cases` objects the strategies draw.
pub fn walk(cases: u32) {
    let dir = std::env::temp_dir().join(format!("dbdf_conformance_{}", std::process::id()));
    let mut runner = TestRunner::new(Config::with_cases(cases));
    let strategy = (
        serde_daphne::strategies::object(6),
        1u64..8,
        proptest::bool::ANY,
    );
    let result = runner.run(&strategy, |(object, rows, windows)| {
        std::fs::create_dir_all(&dir).unwrap();
        check(&object, rows, windows, &dir);
        std::fs::remove_dir_all(&dir).unwrap();
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

/// Every format with `object`, fed to sinks in bands of `rows`.
fn check(object: &Object, rows: u64, windows: bool, dir: &Path) {
    let formats = Format::all();
    let mut written = Vec::new();
    for &format in &formats {
        let path = dir.join(format!("given_{format}.{}", extension(format)));
        match convert::write(&path, std::slice::from_ref(object), format, &options()) {
            Ok(_) => {
                let back = read(&path, format, &format!("{format}, written whole"));
                holds(&format!("{format}, written whole"), &back, object);
                written.push((format, path));
            }
            Err(_) => assert!(!path.exists(), "{format}: refused, yet {path:?} is there"),
        }
        let whole = written
            .last()
            .filter(|(f, _)| *f == format)
            .map(|(_, p)| p.as_path());
        check_bands(object, rows, windows, format, whole, dir);
    }
    for (from, input) in &written {
        for &to in &formats {
            let name = format!("{from} -> {to}");
            let output = dir.join(format!("pair.{}", extension(to)));
            let options = ConvertOptions {
                from: Some(*from),
                to: Some(to),
                ..options()
            };
            let can = written.iter().any(|(f, _)| *f == to);
            match (convert::convert(input, &output, &options), can) {
                (Ok(_), _) => holds(&name, &read(&output, to, &name), object),
                (Err(e), true) => panic!("{name}: {e}"),
                (Err(_), false) => assert!(!output.exists(), "{name}: refused, yet written"),
            }
            remove(dir, "pair.");
        }
    }
}

/// The format's sink fed `object` in bands of `rows`: as one stream where the format writes
/// one (the bytes of its whole write at `whole`, or others that give the object back), and
/// from a `.dbdf` file tiled in bands of `rows` (at a path, for every format, giving the object
/// back); where the whole write refused the object (`whole` is `None`), refused too.
fn check_bands(
    object: &Object,
    rows: u64,
    windows: bool,
    format: Format,
    whole: Option<&Path>,
    dir: &Path,
) {
    let can = whole.is_some();
    let name = format!("{format}, bands of {rows} rows, windows {windows}");
    let mut out = Vec::new();
    let fed = match convert::sink(&mut out, format, &options()) {
        Ok(sink) => Some(pump_bands(object, rows, windows, sink).map(drop)),
        Err(_) => None, // a format written at a path only
    };
    match (fed, can) {
        (None, _) | (Some(Err(_)), false) => {}
        (Some(Ok(())), true)
            if whole.and_then(|p| std::fs::read(p).ok()).as_deref() == Some(&out[..]) => {}
        (Some(Ok(())), true) => {
            let back = convert::from_slice(&out, format, &options());
            let back = back.unwrap_or_else(|e| panic!("{name}: read back: {e}"));
            holds(&name, &back, object);
        }
        (Some(Err(e)), true) => panic!("{name}: {e}"),
        (Some(Ok(())), false) => panic!("{name}: written, where the whole write refused it"),
    }
    let Some(tiled) = tiled(object, rows, dir) else {
        return;
    };
    let output = dir.join(format!("banded.{}", extension(format)));
    let options = ConvertOptions {
        to: Some(format),
        ..options()
    };
    match (convert::convert(&tiled, &output, &options), can) {
        (Ok(_), true) => holds(&name, &read(&output, format, &name), object),
        (Err(e), true) => panic!("{name}, from a tiled file: {e}"),
        (Ok(_), false) => {
            panic!("{name}: written from a tiled file, where the whole write refused it")
        }
        (Err(_), false) => assert!(!output.exists(), "{name}: refused, yet written"),
    }
    remove(dir, "banded.");
}

/// `object` as a `.dbdf` file of tiles `rows` high, whose source gives bands of that height;
/// `None` for objects a tile size does not apply to (scalars, objects without cells).
fn tiled(object: &Object, rows: u64, dir: &Path) -> Option<PathBuf> {
    let (height, width) = object.shape();
    if height == 0 || width == 0 || object.data_type() == DataType::Scalar {
        return None;
    }
    let path = dir.join("tiled.dbdf");
    let options = Options {
        tile: Some((rows as u32, width.min(u64::from(u32::MAX)) as u32)),
        ..Options::new()
    };
    options.to_file(&path, object).ok().map(|()| path)
}

/// Pumps `object` in bands of `rows` into `sink`, returning its warnings; without `windows`,
/// from a source that gives its rows in order only (as CSV's does).
pub fn pump_bands(
    object: &Object,
    rows: u64,
    windows: bool,
    sink: Box<dyn Sink + '_>,
) -> serde_daphne::Result<Vec<String>> {
    let held = Held::new(vec![object.clone()], 0, InputMetadata::default())?.band_rows(rows);
    let mut in_order = InOrder(held);
    let source: &mut dyn Source = match windows {
        true => &mut in_order.0,
        false => &mut in_order,
    };
    Ok(pump(source, sink, &PumpOptions::default())?)
}

/// A source that gives its rows in order only: no windows.
struct InOrder(Held);

impl Source for InOrder {
    fn headers(&self) -> &[Header] {
        self.0.headers()
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> serde_daphne::Result<bool>,
    ) -> serde_daphne::Result<()> {
        self.0.for_each_band(index, multiple, each)
    }

    fn input_len(&self) -> u64 {
        0
    }
}

/// The objects of the file at `path`.
fn read(path: &Path, format: Format, name: &str) -> Vec<Object> {
    convert::read(path, format, &options()).unwrap_or_else(|e| panic!("{name}: read back: {e}"))
}

/// `got` is `given` back: one object of its shape, a frame's labels, and every cell's value,
/// exactly, in whatever value type the format keeps it.
fn holds(name: &str, got: &[Object], given: &Object) {
    assert_eq!(got.len(), 1, "{name}: {} objects", got.len());
    let got = &got[0];
    assert_eq!(got.shape(), given.shape(), "{name}: shape");
    if given.data_type() == DataType::Frame && got.data_type() == DataType::Frame {
        assert_eq!(got.labels(), given.labels(), "{name}: labels");
    }
    let (rows, cols) = given.shape();
    for (r, c) in (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c))) {
        let (Some(want), Some(have)) = (given.get(r, c), got.get(r, c)) else {
            panic!("{name}: no cell ({r}, {c})");
        };
        let same = have
            .convert(want.value_type())
            .is_some_and(|have| format!("{have:?}") == format!("{want:?}"));
        assert!(same, "{name}: cell ({r}, {c}) is {have:?}, was {want:?}");
    }
}

fn options() -> ConvertOptions {
    ConvertOptions {
        sync: false,
        ..Default::default()
    }
}

fn extension(format: Format) -> &'static str {
    format.extensions().first().copied().unwrap_or("out")
}

/// Every file or folder in `dir` whose name starts with `prefix` (an output and its sidecars).
fn remove(dir: &Path, prefix: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(prefix)
        {
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
        }
    }
}
