//! Each source against its format's whole read.

use super::*;
use dbdf::{csv, systemds};
use serde_daphne::ValueType;

#[test]
fn sources_give_what_their_whole_reads_give() {
    let dir = dir("sources");
    for (k, (name, bytes, object)) in band_fixtures().into_iter().enumerate() {
        let path = dir.join(format!("{k}.dbdf"));
        std::fs::write(&path, &bytes).unwrap();
        let mut dbdf = DbdfSource::open(&path).unwrap();
        same_object(&format!("dbdf {name}"), &collected(&mut dbdf)[0], &object);
        same_windows(&format!("dbdf {name}"), &dbdf, 0, &object);
        if object.data_type() == DataType::Frame {
            let text = dir.join(format!("{k}.csv"));
            let out = csv_bytes(&object, &csv::WriteOptions::default()).unwrap();
            std::fs::write(&text, &out).unwrap();
            let options = dbdf::convert::ConvertOptions::default();
            let whole = dbdf::convert::from_slice(&out, "csv".parse().unwrap(), &options).unwrap();
            let whole = whole.into_iter().next().unwrap();
            let got = collected(&mut *opened(&text, "csv").unwrap());
            same_object(&format!("csv {name}"), &got[0], &whole);
            continue;
        }
        let npy_path = dir.join(format!("{k}.npy"));
        std::fs::write(&npy_path, crate::whole::to_vec(&object, "npy").unwrap()).unwrap();
        let mut npy_source = crate::pipe::opened(&npy_path, "npy").unwrap();
        same_windows(
            &format!("npy {name}"),
            npy_source.windows().unwrap(),
            0,
            &crate::whole::read(&npy_path, "npy").unwrap(),
        );
        let got = collected(&mut *npy_source);
        same_object(
            &format!("npy {name}"),
            &got[0],
            &crate::whole::read(&npy_path, "npy").unwrap(),
        );
        // A coordinate file: its CSR arrays held with 4-byte columns, bands and windows.
        let mtx_path = dir.join(format!("{k}.mtx"));
        std::fs::write(&mtx_path, crate::whole::to_vec(&object, "mtx").unwrap()).unwrap();
        let whole = crate::whole::read(&mtx_path, "mtx").unwrap();
        let mut coordinates = opened(&mtx_path, "mtx").unwrap();
        same_windows(
            &format!("mtx {name}"),
            coordinates.windows().unwrap(),
            0,
            &whole,
        );
        same_object(
            &format!("mtx {name}"),
            &collected(&mut *coordinates)[0],
            &whole,
        );
        let sysds = dir.join(format!("{k}.sysds"));
        crate::systemds::write_with(
            &sysds,
            &object,
            &systemds::WriteOptions {
                block_size: 2,
                ..Default::default()
            },
        )
        .unwrap();
        let whole = crate::systemds::read(&sysds).unwrap();
        let got = collected(&mut *systemds::source(&sysds, &Default::default()).unwrap());
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
        let whole = crate::whole::read(&path, "mtx").unwrap();
        let mut source = opened(&path, "mtx").unwrap();
        assert!(source.reads_in_place(), "{text}");
        same_windows(text, source.windows().unwrap(), 0, &whole);
        assert_eq!(source.headers()[0].matrix_value_type(), Some(vt), "{text}");
        same_object(text, &collected(&mut *source)[0], &whole);
    }
    // Symmetric files and coordinate files are for the whole read.
    for text in [
        "array real symmetric\n2 2\n1\n2\n3\n",
        "coordinate real general\n1 1 0\n",
    ] {
        std::fs::write(&path, format!("%%MatrixMarket matrix {text}")).unwrap();
        assert!(!opened(&path, "mtx").unwrap().reads_in_place(), "{text}");
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
        let err = opened(&path, "mtx").map(drop).unwrap_err();
        assert_eq!(err.kind(), serde_daphne::ErrorKind::ForeignInput, "{text}");
        assert!(err.to_string().contains(says), "{text}: {err} / {says}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn futhark_streams_as_its_whole_reads_and_writes() {
    use dbdf::convert::{self, ConvertOptions, FormatOptions};
    use dbdf::futhark::WriteOptions;
    let format = "futhark".parse().unwrap();
    let to_vec = |objects: &[Object], option: &WriteOptions| {
        let formats = FormatOptions::default().with(option.clone());
        let options = ConvertOptions {
            formats,
            ..ConvertOptions::default()
        };
        convert::to_vec(objects, format, &options)
    };
    let from_slice = |bytes: &[u8]| convert::from_slice(bytes, format, &ConvertOptions::default());
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
        WriteOptions::default(),
        WriteOptions {
            matrices: true,
            ..Default::default()
        },
        WriteOptions {
            bools: true,
            f16: true,
            ..Default::default()
        },
    ];
    for objects in [matrices.clone(), small.to_vec()] {
        for option in &options {
            let whole = to_vec(&objects, option);
            for rows in HEIGHTS {
                let mut source = Held::new(objects.clone(), 0, InputMetadata::default())
                    .unwrap()
                    .band_rows(rows);
                let mut got = Vec::new();
                let formats = dbdf::convert::FormatOptions::default().with(option.clone());
                let sink = crate::whole::sink_with(&mut got, "futhark", formats);
                let piped = pump(&mut source, sink, &PumpOptions::default())
                    .map_err(serde_daphne::Error::from);
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
            let expected = from_slice(&spaced).unwrap();
            let mut source = opened(&path, "futhark").unwrap();
            for (k, object) in expected.iter().enumerate() {
                same_windows("futhark", source.windows().unwrap(), k, object);
            }
            let got = collected(&mut *source);
            assert_eq!(got.len(), expected.len());
            for (got, expected) in got.iter().zip(&expected) {
                same_object("futhark", got, expected);
            }
        }
    }
    // Every truncation and some flipped bytes: the same error as the whole read, or the
    // same values.
    let bytes = to_vec(
        &small,
        &WriteOptions {
            bools: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut cases: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
    for at in [1, 2, 3, 6, 7, 20, 25] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x41;
        cases.push(flipped);
    }
    for case in cases {
        std::fs::write(&path, &case).unwrap();
        let whole = from_slice(&case);
        let piped = opened(&path, "futhark").and_then(|mut s| try_collected(&mut *s));
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
fn binsparse_archives_read_in_place_as_whole() {
    use dbdf::binsparse::{self, Format};
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
                let options = binsparse::WriteOptions {
                    format,
                    index_type: index,
                    ..Default::default()
                };
                let bytes = crate::whole::to_vec_with(
                    &object,
                    "binsparse",
                    dbdf::convert::FormatOptions::default().with(options.clone()),
                )
                .unwrap();
                std::fs::write(&path, &bytes).unwrap();
                let whole = crate::whole::read_binsparse(&path).unwrap();
                let mut source = crate::pipe::opened(&path, "binsparse").unwrap();
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
                    &collected(&mut *source)[0],
                    &whole.object,
                );
                assert_eq!(source.metadata().layout, Some(whole.format.name()));
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
                    let whole = crate::whole::read_binsparse(&path);
                    let piped = crate::pipe::opened(&path, "binsparse")
                        .and_then(|mut s| try_collected(&mut *s));
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

#[cfg(feature = "zarr")]
#[test]
fn zarr_groups_read_in_place_as_whole() {
    use dbdf::binsparse::zarr::ZarrVersion;
    use dbdf::binsparse::{self, Format};
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
                let options = binsparse::WriteOptions {
                    format,
                    zarr_version: version,
                    index_type: ValueType::U32,
                    ..Default::default()
                };
                crate::whole::write_with(
                    &path,
                    object,
                    "binsparse",
                    dbdf::convert::FormatOptions::default().with(options.clone()),
                )
                .unwrap();
                let whole = crate::whole::read_binsparse(&path).unwrap();
                let mut source = crate::pipe::opened(&path, "binsparse").unwrap();
                assert_eq!(
                    source.reads_in_place(),
                    format.is_none(),
                    "{name} {format:?}"
                );
                same_object(
                    &format!("{name} {format:?} {version:?}"),
                    &collected(&mut *source)[0],
                    &whole.object,
                );
            }
        }
    }
    // Broken chunks and metadata: the whole read's error kind.
    let (_, _, csr) = band_fixtures().remove(3);
    for damage in ["truncate", "remove", "flip", "meta"] {
        crate::whole::write_with(
            &path,
            &csr,
            "binsparse",
            dbdf::convert::FormatOptions::default().with(binsparse::WriteOptions::default()),
        )
        .unwrap();
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
        let whole = crate::whole::read_binsparse(&path);
        let piped =
            crate::pipe::opened(&path, "binsparse").and_then(|mut s| try_collected(&mut *s));
        match (whole, piped) {
            (Ok(a), Ok(b)) => same_object(damage, &b[0], &a.object),
            (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{damage}: {a} / {b}"),
            (a, b) => panic!("{damage}: whole {a:?}, in place {b:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tiled `.dbdf` file's blocks are its own tiles: read in file order (here the bottom row
/// of tiles first), kept as the output's tiles when asked, recut to other tiles exactly.
#[test]
fn tiled_dbdf_files_give_their_blocks_as_their_own_tiles() {
    use dbdf::convert::{convert, ConvertOptions};
    use serde_daphne::Options;
    let dir = dir("own_tiles");
    let (rows, cols) = (10u64, 8u64);
    let value = |r: u64, c: u64| (r * cols + c) as f64 * 0.5 - 7.0;
    let input = dir.join("tiles.dbdf");
    let options = Options {
        tile: Some((4, 3)),
        ..Options::new()
    };
    let mut writer = options.create(&input).unwrap();
    writer
        .begin(Header::DenseMatrix {
            rows,
            cols,
            value_type: ValueType::F64,
        })
        .unwrap();
    // The tiles in the order written: the bottom row of tiles first.
    let mut written = Vec::new();
    for r0 in [8, 4, 0] {
        for c0 in [0, 3, 6] {
            let (h, w) = (4.min(rows - r0), 3.min(cols - c0));
            written.push((r0, c0, h as u32, w as u32));
            let tile = ndarray::Array2::from_shape_fn((h as usize, w as usize), |(r, c)| {
                value(r0 + r as u64, c0 + c as u64)
            });
            writer.write_dense_tile(r0, c0, tile.view()).unwrap();
        }
    }
    writer.finish().unwrap();
    let whole: Object = serde_daphne::from_file(&input).unwrap();

    let source = DbdfSource::open(&input).unwrap();
    assert_eq!(source.metadata().tile, Some((4, 3)));
    assert_eq!(source.own_tiles(0), Some((4, 3)));
    // One block is no tiling.
    let untiled = dir.join("untiled.dbdf");
    let cells = (0..rows * cols)
        .map(|i| value(i / cols, i % cols))
        .collect();
    let one_block = Object::dense(rows, cols, Values::F64(cells)).unwrap();
    same_object("one block", &one_block, &whole);
    serde_daphne::to_file(&untiled, &one_block).unwrap();
    let source = DbdfSource::open(&untiled).unwrap();
    assert_eq!((source.metadata().tile, source.own_tiles(0)), (None, None));

    // The blocks in file order.
    let places = |path: &std::path::Path| -> Vec<(u64, u64, u32, u32)> {
        let file = serde_daphne::DbdfFile::open(path).unwrap();
        file.objects()[0]
            .blocks
            .iter()
            .map(|b| (b.place.row, b.place.col, b.place.rows, b.place.cols))
            .collect()
    };
    for (keep_tiles, tile, value_type) in [
        (true, None, None),
        (true, None, Some(ValueType::F32)),
        (false, None, None),
        (true, Some((3, 5)), None),
        (false, Some((2, 2)), Some(ValueType::F32)),
    ] {
        let output = dir.join("out.dbdf");
        let options = ConvertOptions {
            keep_tiles,
            value_type,
            formats: dbdf::convert::FormatOptions::default().with(Options {
                tile,
                ..Options::new()
            }),
            ..Default::default()
        };
        convert(&input, &output, &options).unwrap();
        let what = format!("keep {keep_tiles}, tile {tile:?}, {value_type:?}");
        let got: Object = serde_daphne::from_file(&output).unwrap();
        let expected = match value_type {
            Some(vt) => whole.convert(vt).unwrap(),
            None => whole.clone(),
        };
        same_object(&what, &got, &expected);
        let expected_places = match (keep_tiles, tile) {
            (_, Some((tr, tc))) => {
                let mut p = Vec::new();
                for r0 in (0..rows).step_by(tr as usize) {
                    for c0 in (0..cols).step_by(tc as usize) {
                        let h = u64::from(tr).min(rows - r0) as u32;
                        let w = u64::from(tc).min(cols - c0) as u32;
                        p.push((r0, c0, h, w));
                    }
                }
                p
            }
            // The input's tiles as they come.
            (true, None) => written.clone(),
            (false, None) => vec![(0, 0, rows as u32, cols as u32)],
        };
        assert_eq!(places(&output), expected_places, "{what}");
    }
}
