//! The toy format through `dbdf`'s pipe, both ways, with the public API alone.

use std::path::PathBuf;

use dbdf::convert::{convert, ConvertOptions, Format};
use dbdf::pipe::{copy, DbdfSink, DbdfSource};
use ndarray::Array2;
use serde_daphne::{Dense, ErrorKind, Options};
use toy_converter::{Toy, ToySink, ToySource};

/// dbdf's conformance kit, as it is: it walks every registered format, TOY1 among them.
#[path = "../../../dbdf/tests/suite/pipe/conformance.rs"]
mod conformance;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toy_converter_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The TOY1 bytes of `m`, laid out from the format's definition in `src/lib.rs`.
fn toy_bytes(m: &Array2<f64>) -> Vec<u8> {
    let mut out = b"TOY1".to_vec();
    out.extend((m.nrows() as u64).to_le_bytes());
    out.extend((m.ncols() as u64).to_le_bytes());
    m.iter().for_each(|x| out.extend(x.to_le_bytes()));
    out
}

#[test]
fn a_tiled_dbdf_file_goes_to_toy_and_back() {
    let m = Array2::from_shape_fn((7, 5), |(r, c)| (r * 5 + c) as f64 - 3.5);
    let dbdf = temp("m.dbdf");
    Options {
        tile: Some((3, 2)),
        ..Options::new()
    }
    .to_file(&dbdf, &Dense(m.clone()))
    .unwrap();

    let toy = temp("m.toy");
    copy(
        &mut DbdfSource::open(&dbdf).unwrap(),
        Box::new(ToySink::create(&toy).unwrap()),
    )
    .unwrap();
    assert_eq!(std::fs::read(&toy).unwrap(), toy_bytes(&m));

    let back = temp("back.dbdf");
    let source = ToySource::open(&toy).unwrap().with_band_rows(2);
    copy(
        &mut { source },
        Box::new(DbdfSink::create(&back, &Options::new()).unwrap()),
    )
    .unwrap();
    let read: Dense<f64> = serde_daphne::from_file(&back).unwrap();
    assert_eq!(read.0, m);
}

#[test]
fn integers_convert_exactly_and_frames_are_refused() {
    let m = Array2::from_shape_fn((3, 4), |(r, c)| (r as i32 - 1) * 1000 + c as i32);
    let dbdf = temp("i.dbdf");
    serde_daphne::to_file(&dbdf, &Dense(m.clone())).unwrap();
    let toy = temp("i.toy");
    copy(
        &mut DbdfSource::open(&dbdf).unwrap(),
        Box::new(ToySink::create(&toy).unwrap()),
    )
    .unwrap();
    assert_eq!(std::fs::read(&toy).unwrap(), toy_bytes(&m.mapv(f64::from)));

    let frame = temp("f.dbdf");
    let mut columns = serde_daphne::Columns::new();
    columns.push("a", vec![1.0f64, 2.0]).unwrap();
    serde_daphne::to_file(&frame, &columns).unwrap();
    let error = copy(
        &mut DbdfSource::open(&frame).unwrap(),
        Box::new(ToySink::create(&temp("f.toy")).unwrap()),
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotConvertible);
}

#[test]
fn a_malformed_toy_file_is_a_foreign_input_error_with_its_offset() {
    let toy = temp("bad.toy");
    let mut bytes = b"TOY1".to_vec();
    bytes.extend(3u64.to_le_bytes());
    bytes.extend(2u64.to_le_bytes());
    bytes.extend([0u8; 40]); // 5 of the 6 cells
    std::fs::write(&toy, &bytes).unwrap();
    let error = ToySource::open(&toy).err().unwrap();
    assert_eq!(error.kind(), ErrorKind::ForeignInput);
    assert_eq!(error.offset(), Some(4));
    assert!(error.to_string().contains("3 x 2"), "{error}");

    std::fs::write(&toy, b"TOY2").unwrap();
    let error = ToySource::open(&toy).err().unwrap();
    assert_eq!(
        (error.kind(), error.offset()),
        (ErrorKind::ForeignInput, Some(0))
    );
}

#[test]
fn a_registered_format_converts_to_and_from_every_other() {
    let toy_format = Format::register(&Toy).unwrap();
    assert_eq!("TOY".parse::<Format>().unwrap(), toy_format);
    assert_eq!(Format::of_path(&temp("x.toy"), true), Some(toy_format));
    // Registering it twice keeps it once; another format's name is refused.
    assert_eq!(Format::register(&Toy).unwrap(), toy_format);

    let m = Array2::from_shape_fn((6, 4), |(r, c)| (r * 4 + c) as f64 / 8.0);
    let dbdf = temp("registered.dbdf");
    serde_daphne::to_file(&dbdf, &Dense(m.clone())).unwrap();
    let toy = temp("registered.toy");
    convert(&dbdf, &toy, &ConvertOptions::default()).unwrap();
    assert_eq!(std::fs::read(&toy).unwrap(), toy_bytes(&m));

    // Through a third format, chosen by name rather than extension.
    let csv = temp("registered.txt");
    let to_csv = ConvertOptions {
        to: Some("csv".parse().unwrap()),
        ..Default::default()
    };
    convert(&toy, &csv, &to_csv).unwrap();
    let back = temp("registered_back.toy");
    let from_csv = ConvertOptions {
        from: Some("csv".parse().unwrap()),
        ..Default::default()
    };
    convert(&csv, &back, &from_csv).unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), toy_bytes(&m));
}

/// The conformance kit walks TOY1 once it is registered, with no line of the kit about it:
/// every object it can hold comes back value for value, to and from every other format, and
/// every other it refuses.
#[test]
fn the_conformance_kit_walks_the_registered_format() {
    let toy = Format::register(&Toy).unwrap();
    assert!(Format::all().contains(&toy));
    conformance::walk(32);
}
