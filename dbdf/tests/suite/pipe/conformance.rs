//! The conformance kit: for objects the format crate's strategies draw (every data type, every
//! value type, tiles of every block type), every sink against its format's whole write, every
//! source against its format's whole read, and every pair of formats through the pipe against
//! the whole read of one and the whole write of the other. Bands of any height, from sources
//! with windows and without.

use proptest::prelude::*;

use super::*;
use dbdf::binsparse;
use dbdf::convert as whole;
use serde_daphne::Result;

/// A format as the kit drives it: its whole write and read, and its sink and source.
struct Format {
    name: &'static str,
    extension: &'static str,
    to_vec: fn(&Object) -> Result<Vec<u8>>,
    read: fn(&std::path::Path) -> Result<Vec<Object>>,
    sink: for<'w> fn(&'w mut Vec<u8>) -> Box<dyn Sink + 'w>,
    source: fn(&std::path::Path) -> Result<Box<dyn Source>>,
}

/// The whole write of the format named `name`, through its pipe.
fn to_vec_as(name: &str, object: &Object) -> Result<Vec<u8>> {
    let options = whole::ConvertOptions::default();
    whole::to_vec(std::slice::from_ref(object), name.parse()?, &options)
}

/// The whole read of the format named `name`, through its pipe.
fn read_as(name: &str, path: &std::path::Path) -> Result<Vec<Object>> {
    let options = whole::ConvertOptions::default();
    Ok(whole::read(path, name.parse()?, &options)?)
}

fn formats() -> Vec<Format> {
    let mut formats = vec![
        Format {
            name: "npy",
            extension: "npy",
            to_vec: |o| to_vec_as("npy", o),
            read: |p| read_as("npy", p),
            sink: |w| crate::whole::sink(w, "npy"),
            source: |p| crate::pipe::opened(p, "npy"),
        },
        Format {
            name: "mtx",
            extension: "mtx",
            to_vec: |o| to_vec_as("mtx", o),
            read: |p| read_as("mtx", p),
            sink: |w| crate::whole::sink(w, "mtx"),
            source: |p| opened(p, "mtx"),
        },
        Format {
            name: "csv",
            extension: "csv",
            to_vec: |o| to_vec_as("csv", o),
            read: |p| read_as("csv", p),
            sink: |w| crate::whole::sink(w, "csv"),
            source: |p| opened(p, "csv"),
        },
        Format {
            name: "futhark",
            extension: "fut",
            to_vec: |o| to_vec_as("futhark", o),
            read: |p| read_as("futhark", p),
            sink: |w| crate::whole::sink(w, "futhark"),
            source: |p| opened(p, "futhark"),
        },
        Format {
            name: "binsparse",
            extension: "npz",
            to_vec: |o| {
                crate::whole::to_vec_with(
                    o,
                    "binsparse",
                    dbdf::convert::FormatOptions::default()
                        .with(binsparse::WriteOptions::default()),
                )
            },
            read: |p| Ok(vec![crate::whole::read_binsparse(p)?.object]),
            sink: |w| crate::whole::sink(w, "binsparse"),
            source: |p| crate::pipe::opened(p, "binsparse"),
        },
        Format {
            name: "scipy",
            extension: "npz",
            to_vec: |o| to_vec_as("scipy", o),
            read: |p| read_as("scipy", p),
            sink: |w| crate::whole::sink(w, "scipy"),
            source: |p| crate::pipe::opened(p, "scipy"),
        },
        Format {
            name: "npz",
            extension: "npz",
            to_vec: |o| to_vec_as("npz", o),
            read: |p| read_as("npz", p),
            sink: |w| crate::whole::sink(w, "npz"),
            source: |p| crate::pipe::opened(p, "npz"),
        },
    ];
    #[cfg(feature = "parquet")]
    formats.extend([
        Format {
            name: "parquet",
            extension: "parquet",
            to_vec: |o| to_vec_as("parquet", o),
            read: |p| read_as("parquet", p),
            sink: |w| crate::whole::sink(w, "parquet"),
            source: |p| opened(p, "parquet"),
        },
        Format {
            name: "arrow",
            extension: "arrow",
            to_vec: |o| to_vec_as("arrow", o),
            read: |p| read_as("arrow", p),
            sink: |w| crate::whole::sink(w, "arrow"),
            source: |p| opened(p, "arrow"),
        },
    ]);
    formats.push(Format {
        name: "dbdf",
        extension: "dbdf",
        // The object written anew (as the sink writes it), not its stored blocks copied.
        to_vec: |o| {
            let mut out = Vec::new();
            o.write_with(&mut out, &serde_daphne::Options::new())?;
            Ok(out)
        },
        read: |p| Ok(vec![serde_daphne::from_file(p)?]),
        sink: |_| unreachable!("the .dbdf sink writes a path"),
        source: |p| Ok(Box::new(DbdfSource::open(p)?)),
    });
    formats
}

/// What `sink` writes of `objects` pumped from `source`, or the error.
fn piped(source: &mut dyn Source, format: &Format, dir: &std::path::Path) -> Result<Vec<u8>> {
    if format.name == "dbdf" {
        let path = dir.join("piped.dbdf");
        copy(
            source,
            Box::new(DbdfSink::create(&path, &serde_daphne::Options::new())?),
        )?;
        return std::fs::read(&path).map_err(Into::into);
    }
    let mut out = Vec::new();
    copy(source, (format.sink)(&mut out))?;
    Ok(out)
}

/// Same bytes, or both fail with the same kind. Where a sink's bytes may depend on how its
/// input came (not only on the cells), the same objects read back: `.dbdf` writers choose
/// block types by what their source suggests (`BlockPolicy::Auto`: an object's whole write
/// takes a mostly-zero dense matrix as sparse, the pipe's dense bands as dense), and the
/// Parquet and Arrow sinks cut batches (and choose dictionaries) by the bands they get.
fn same_output(
    name: &str,
    format: &Format,
    dir: &std::path::Path,
    got: Result<Vec<u8>>,
    whole: Result<Vec<u8>>,
) {
    match (format.name, got, whole) {
        ("dbdf" | "parquet" | "arrow", Ok(got), Ok(whole)) if got != whole => {
            let read = |bytes: &[u8], which: &str| {
                let path = dir.join(format!("{which}.{}", format.extension));
                std::fs::write(&path, bytes).unwrap();
                (format.read)(&path).unwrap()
            };
            let (got, whole) = (read(&got, "got"), read(&whole, "whole"));
            assert_eq!(got.len(), whole.len(), "{name}");
            for (got, whole) in got.iter().zip(&whole) {
                same_object(name, got, whole);
            }
        }
        (_, got, whole) => same(name, got, whole),
    }
}

/// The pipe from a held object (bands of `rows`, with windows or in order) into `format`'s
/// sink, and the whole write of the object.
fn check_sink(object: &Object, rows: u64, windows: bool, format: &Format, dir: &std::path::Path) {
    let name = format!("{} sink, bands of {rows}, windows {windows}", format.name);
    let got = if format.name == "dbdf" {
        let path = dir.join("sink.dbdf");
        let sink = DbdfSink::create(&path, &serde_daphne::Options::new()).unwrap();
        pump_bands(object, rows, windows, Box::new(sink))
            .and_then(|_| std::fs::read(&path).map_err(Into::into))
    } else {
        let mut out = Vec::new();
        pump_bands(object, rows, windows, (format.sink)(&mut out)).map(|_| out)
    };
    same_output(&name, format, dir, got, (format.to_vec)(object));
}

fn check(object: &Object, rows: u64, windows: bool) {
    let dir = dir("conformance");
    let formats = formats();
    for from in &formats {
        check_sink(object, rows, windows, from, &dir);
        let Ok(bytes) = (from.to_vec)(object) else {
            continue;
        };
        let path = dir.join(format!("input.{}", from.extension));
        std::fs::write(&path, &bytes).unwrap();
        let whole = (from.read)(&path);
        let mut source = (from.source)(&path);
        let (whole, source) = match (whole, &mut source) {
            (Ok(whole), Ok(source)) => (whole, source),
            (Err(a), Err(b)) => {
                assert_eq!(a.kind(), b.kind(), "{} source: {a} / {b}", from.name);
                continue;
            }
            (a, b) => panic!(
                "{} source: whole {a:?}, source {:?}",
                from.name,
                b.as_ref().err()
            ),
        };
        let got = collected(&mut **source);
        assert_eq!(got.len(), whole.len(), "{} source", from.name);
        for (got, whole) in got.iter().zip(&whole) {
            same_object(&format!("{} source", from.name), got, whole);
        }
        for to in &formats {
            let name = format!("{} -> {}", from.name, to.name);
            let mut source = (from.source)(&path).unwrap();
            let expected = match whole.as_slice() {
                [one] => (to.to_vec)(one),
                _ => continue,
            };
            let got = piped(&mut *source, to, &dir);
            same_output(&name, to, &dir, got, expected);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn every_source_sink_and_pair_matches_the_whole_reads_and_writes(
        object in serde_daphne::strategies::object(6),
        rows in 1u64..8,
        windows in any::<bool>(),
    ) {
        check(&object, rows, windows);
    }
}
