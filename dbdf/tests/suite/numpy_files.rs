//! Files numpy and scipy wrote (`tests/data/numpy/`, made by its `make.py` in the reference
//! environment; numpy's and scipy's own test files copied): record arrays, Python 2 headers,
//! scipy's sparse `.npz` in every format and numpy's `.npz` archives.

use std::path::PathBuf;

use serde_daphne::{DataType, Object, ValueType, Values};

/// The names of a numpy archive's arrays, in order.
fn names_in(path: &std::path::Path) -> Vec<String> {
    crate::whole::read_npz(path)
        .unwrap()
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// The whole object of a scipy `.npz` file, through its source.
fn scipy_read(path: impl AsRef<std::path::Path>) -> serde_daphne::Result<Object> {
    let options = dbdf::convert::ConvertOptions::default();
    Ok(dbdf::convert::read(path.as_ref(), "scipy".parse()?, &options)?.remove(0))
}

/// A scipy `.npz` archive in memory, read through its source.
fn scipy_from_slice(bytes: &[u8]) -> serde_daphne::Result<Object> {
    let options = dbdf::convert::ConvertOptions::default();
    Ok(dbdf::convert::from_slice(bytes, "scipy".parse()?, &options)?.remove(0))
}

/// `object` as a scipy `.npz` archive with `options`, through its sink.
fn scipy_bytes(object: &Object, options: &dbdf::scipy::WriteOptions) -> Vec<u8> {
    let options = dbdf::convert::ConvertOptions {
        formats: dbdf::convert::FormatOptions::default().with(options.clone()),
        ..Default::default()
    };
    let scipy = "scipy".parse().unwrap();
    dbdf::convert::to_vec(std::slice::from_ref(object), scipy, &options).unwrap()
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/numpy")
        .join(name)
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_numpy_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const TYPES: [&str; 11] = [
    "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8", "b1",
];

/// The column make.py wrote for field `k` (of type `TYPES[k]`), `rows` records.
fn record_column(k: usize, rows: usize) -> Values {
    let int = |r: usize| ((r * 37 + k * 11) % 100) as i64;
    let float = |r: usize| (r as f64 - 2.0) * 0.5 + k as f64;
    let r = 0..rows;
    match TYPES[k] {
        "u1" => Values::U8(r.map(|r| int(r) as u8).collect()),
        "i1" => Values::I8(r.map(|r| (int(r) - 50) as i8).collect()),
        "u2" => Values::U16(r.map(|r| int(r) as u16).collect()),
        "i2" => Values::I16(r.map(|r| (int(r) - 50) as i16).collect()),
        "u4" => Values::U32(r.map(|r| int(r) as u32).collect()),
        "i4" => Values::I32(r.map(|r| (int(r) - 50) as i32).collect()),
        "u8" => Values::U64(r.map(|r| int(r) as u64).collect()),
        "i8" => Values::I64(r.map(|r| int(r) - 50).collect()),
        "f4" => Values::F32(r.map(|r| float(r) as f32).collect()),
        "f8" => Values::F64(r.map(float).collect()),
        _ => Values::U8(r.map(|r| (r % 2) as u8).collect()),
    }
}

fn expected_records() -> Vec<(String, Values)> {
    (0..TYPES.len())
        .map(|k| (format!("f_{}", TYPES[k]), record_column(k, 5)))
        .collect()
}

#[test]
fn record_arrays_of_every_type_order_and_alignment_read_as_frames() {
    let expected = Object::frame(expected_records()).unwrap();
    for name in [
        "records_le_packed.npy",
        "records_le_aligned.npy",
        "records_be_packed.npy",
        "records_be_aligned.npy",
    ] {
        let whole = crate::whole::read(data(name), "npy").unwrap();
        assert_eq!(whole, expected, "{name}");
        let bytes = std::fs::read(data(name)).unwrap();
        assert_eq!(
            crate::whole::from_slice(&bytes, "npy").unwrap(),
            expected,
            "{name}"
        );
        // Through the pipe: windows of records, any rows and fields.
        let mut source = crate::pipe::opened(data(name), "npy").unwrap();
        crate::pipe::same_windows(name, source.windows().unwrap(), 0, &expected);
        assert_eq!(
            crate::pipe::collected(&mut *source),
            std::slice::from_ref(&expected),
            "{name}"
        );
    }
}

#[test]
fn frames_write_as_the_packed_record_arrays_numpy_writes() {
    // numpy's own bytes for the packed little-endian records, header and all, but for the
    // bool field, which a frame holds as u8 (DAPHNE has no bool).
    let frame = Object::frame(expected_records()).unwrap();
    let numpy = std::fs::read(data("records_le_packed.npy")).unwrap();
    let field = b"('f_b1', '|b1')";
    let at = numpy.windows(field.len()).position(|w| w == field).unwrap() + 11;
    let mut numpy = numpy;
    numpy[at] = b'u';
    assert_eq!(crate::whole::to_vec(&frame, "npy").unwrap(), numpy);
    let dir = dir("records_sink");
    let out = dir.join("out.npy");
    serde_daphne::lowlevel::write_buffered(&out, |w| {
        let mut source =
            dbdf::pipe::Held::new(vec![frame.clone()], 0, Default::default())?.band_rows(2);
        dbdf::pipe::copy(&mut source, crate::whole::sink(w, "npy")).map(drop)
    })
    .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), numpy);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scipys_record_array_of_nine_fields_reads_as_a_frame() {
    let frame = crate::whole::read(data("stable-loc-scale-sample-data.npy"), "npy").unwrap();
    assert_eq!(frame.data_type(), DataType::Frame);
    assert_eq!(frame.shape(), (126, 9));
    let header = frame.header();
    let labels: Vec<&str> = match header {
        serde_daphne::Header::Frame { columns, .. } => {
            assert_eq!(columns[0].value_type, ValueType::I64);
            assert_eq!(columns[1].value_type, ValueType::F64);
            columns.iter().map(|c| c.label.as_str()).collect()
        }
        _ => unreachable!(),
    };
    assert_eq!(
        labels,
        ["param", "x", "alpha", "beta", "gamma", "delta", "pct", "pdf", "cdf"]
    );
}

#[test]
fn string_and_nested_fields_are_refused_by_name() {
    for (name, expected) in [
        ("records_strings.npy", "the field \"name\": strings"),
        ("records_nested.npy", "the field \"pos\": a nested record"),
    ] {
        let message = crate::whole::read(data(name), "npy")
            .unwrap_err()
            .to_string();
        assert!(message.contains(expected), "{name}: {message}");
    }
}

#[test]
fn python_2_headers_read_as_numpy_reads_them() {
    // numpy's test files: `'shape': (2L,)` from Python 2 on Windows, and Python 3's.
    for name in ["win64python2.npy", "python3.npy"] {
        let m = crate::whole::read(data(name), "npy").unwrap();
        assert_eq!(m.shape(), (2, 1), "{name}");
        assert_eq!(m.dense_vec::<f64>().unwrap().len(), 2, "{name}");
    }
    let two = crate::whole::read(data("win64python2.npy"), "npy").unwrap();
    let three = crate::whole::read(data("python3.npy"), "npy").unwrap();
    assert_eq!(two, three);
}

#[test]
fn matrices_write_the_bytes_numpy_saves() {
    let m = Object::dense(2, 3, Values::F64((0..6).map(|k| k as f64 / 4.0).collect())).unwrap();
    let numpy = std::fs::read(data("matrix_f64.npy")).unwrap();
    assert_eq!(crate::whole::to_vec(&m, "npy").unwrap(), numpy);
    assert_eq!(crate::whole::from_slice(&numpy, "npy").unwrap(), m);
}

/// The matrix make.py saved in every scipy format.
fn m() -> Object {
    let dense = [
        [1.5, 0.0, 0.0, 2.0, 0.0],
        [0.0; 5],
        [0.0, -3.25, 0.0, 0.0, 4.0],
        [5.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 6.5, 0.0, 0.0],
        [0.0, 7.0, 0.0, 0.0, -8.0],
    ];
    let (mut offsets, mut columns, mut values) = (vec![0], Vec::new(), Vec::new());
    for row in dense {
        for (c, &x) in row.iter().enumerate() {
            if x != 0.0 {
                columns.push(c);
                values.push(x);
            }
        }
        offsets.push(values.len());
    }
    Object::csr(6, 5, offsets, columns, Values::F64(values)).unwrap()
}

#[test]
fn scipy_archives_of_every_format_read_as_the_same_csr_matrix() {
    let expected = m();
    for format in [
        "csr",
        "csc",
        "coo",
        "bsr",
        "dia",
        "csr_array",
        "csr_unsorted",
    ] {
        for compressed in ["", "_compressed"] {
            if format == "csr_unsorted" && !compressed.is_empty() {
                continue;
            }
            let name = format!("scipy_{format}{compressed}.npz");
            let got = scipy_read(data(&name)).unwrap();
            let mut want = expected.clone();
            if format == "bsr" {
                // bsr.tocsr() keeps the zeros stored in its 2 x 1 blocks.
                assert_eq!(got.entries(), 16, "{name}");
                assert_eq!(
                    got.dense_vec::<f64>().unwrap(),
                    m().dense_vec::<f64>().unwrap()
                );
                want = got.clone();
            }
            assert_eq!(got, want, "{name}");
            // Through the pipe: CSR streamed (stored or deflated), the other formats whole.
            let mut source = crate::pipe::opened(data(&name), "scipy").unwrap();
            let in_place = format.starts_with("csr");
            assert_eq!(source.reads_in_place(), in_place, "{name}");
            // The layout stored, in Binsparse's names (BSR and DIA have none).
            let layout = match format {
                "csc" => Some("CSC"),
                "coo" => Some("COO"),
                "bsr" | "dia" => None,
                _ => Some("CSR"),
            };
            assert_eq!(source.metadata().layout, layout, "{name}");
            assert_eq!(crate::pipe::collected(&mut *source), [want], "{name}");
        }
    }
    // M.astype(int32): truncated toward zero.
    let ints = scipy_read(data("scipy_csr_i32.npz")).unwrap();
    let csr = expected.csr_parts::<f64>().unwrap();
    let truncated = csr.values.iter().map(|&x| x as i32).collect();
    let want = Object::csr(
        6,
        5,
        csr.row_offsets,
        csr.col_indices,
        Values::I32(truncated),
    );
    assert_eq!(ints, want.unwrap());
}

#[test]
fn a_cell_given_twice_is_refused_not_summed() {
    let message = scipy_read(data("scipy_coo_duplicates.npz"))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("the cell (0, 1) is given twice"),
        "{message}"
    );
}

#[test]
fn csr_archives_write_stored_or_deflated_and_read_back() {
    // (Each member's bytes against scipy's: python/tests, which reads the zip with numpy.)
    for options in [
        dbdf::scipy::WriteOptions::default(),
        dbdf::scipy::WriteOptions { compressed: true },
    ] {
        let bytes = scipy_bytes(&m(), &options);
        assert_eq!(scipy_from_slice(&bytes).unwrap(), m(), "{options:?}");
    }
}

#[test]
fn numpy_archives_are_an_object_per_array_with_their_names() {
    let a = Object::dense(2, 3, Values::F64((0..6).map(|k| k as f64 / 4.0).collect())).unwrap();
    let b = Object::dense(4, 1, Values::I32(vec![-1, 0, 1, 2])).unwrap();
    let c = Object::frame(expected_records()).unwrap();
    for name in ["savez.npz", "savez_compressed.npz"] {
        let arrays = crate::whole::read_npz(data(name)).unwrap();
        let expected = vec![
            ("a".into(), a.clone()),
            ("b".into(), b.clone()),
            ("c".into(), c.clone()),
        ];
        assert_eq!(arrays, expected, "{name}");
        let mut source = crate::pipe::opened(data(name), "npz").unwrap();
        assert_eq!(
            crate::pipe::collected(&mut *source),
            [a.clone(), b.clone(), c.clone()],
            "{name}"
        );
        // Stored members read any window in place; deflated ones stream their rows in order.
        let compressed = name.contains("compressed");
        assert_eq!(source.windows().is_none(), compressed, "{name}");
        if !compressed {
            for (k, object) in [&a, &b, &c].into_iter().enumerate() {
                crate::pipe::same_windows(name, source.windows().unwrap(), k, object);
            }
        }
    }
    let positional = crate::whole::read_npz(data("savez_positional.npz")).unwrap();
    let names: Vec<&str> = positional.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["arr_0", "arr_1"]);
    // Written back: the members numpy wrote, stored or deflated.
    for options in [
        dbdf::npz::WriteOptions::default(),
        dbdf::npz::WriteOptions {
            compressed: true,
            ..Default::default()
        },
    ] {
        let named = vec![("a".to_string(), a.clone()), ("c".to_string(), c.clone())];
        let dir = dir("npz_write");
        let path = dir.join("out.npz");
        crate::whole::write_npz(&path, &named, &options).unwrap();
        assert_eq!(crate::whole::read_npz(&path).unwrap(), named, "{options:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn convert_tells_npz_archives_apart_by_their_members() {
    use dbdf::convert::{convert, ConvertOptions, Format};
    let dir = dir("npz_convert");
    for (name, format) in [
        ("scipy_coo.npz", "scipy".parse::<Format>().unwrap()),
        ("savez.npz", "npz".parse::<Format>().unwrap()),
    ] {
        assert_eq!(Format::of_path(&data(name), true), Some(format), "{name}");
    }
    let binsparse = dir.join("m.bsp.npz");
    crate::whole::write(&binsparse, &m(), "binsparse").unwrap();
    assert_eq!(
        Format::of_path(&binsparse, true),
        Some("binsparse".parse::<Format>().unwrap())
    );
    assert_eq!(
        Format::of_path(&dir.join("new.npz"), false),
        Some("binsparse".parse::<Format>().unwrap())
    );
    // scipy -> .dbdf -> scipy (compressed) -> .dbdf: the same matrix.
    let (one, two, back) = (dir.join("1.dbdf"), dir.join("2.npz"), dir.join("3.dbdf"));
    convert(&data("scipy_dia.npz"), &one, &ConvertOptions::default()).unwrap();
    let to_scipy = ConvertOptions {
        to: Some("scipy".parse::<Format>().unwrap()),
        formats: dbdf::convert::FormatOptions::default()
            .with(dbdf::scipy::WriteOptions { compressed: true }),
        ..Default::default()
    };
    convert(&one, &two, &to_scipy).unwrap();
    convert(&two, &back, &ConvertOptions::default()).unwrap();
    let read = |p: &std::path::Path| serde_daphne::from_file::<_, Object>(p).unwrap();
    assert_eq!(read(&back), m());
    // A stored CSR archive in place, its non-zeros counted from its values alone: one pass.
    for name in ["scipy_csr.npz", "scipy_csr_unsorted.npz"] {
        let out = dir.join("in_place.dbdf");
        convert(&data(name), &out, &ConvertOptions::default()).unwrap();
        assert_eq!(read(&out), m(), "{name}");
    }
    // A .dbdf of several objects to a numpy archive: arr_0, arr_1, ...
    let several = dir.join("several.dbdf");
    convert(&data("savez.npz"), &several, &ConvertOptions::default()).unwrap();
    let out = dir.join("out.npz");
    convert(
        &several,
        &out,
        &ConvertOptions {
            to: Some("npz".parse::<Format>().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    let names = names_in(&out);
    assert_eq!(names, ["arr_0", "arr_1", "arr_2"]);
    // Between archives, the names stay.
    let kept = dir.join("kept.npz");
    convert(
        &data("savez.npz"),
        &kept,
        &ConvertOptions {
            to: Some("npz".parse::<Format>().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    let names = names_in(&kept);
    assert_eq!(names, ["a", "b", "c"]);
    // Names asked are taken over the input's, positional ones after them.
    let renamed = dir.join("renamed.npz");
    let options = ConvertOptions {
        to: Some("npz".parse::<Format>().unwrap()),
        formats: dbdf::convert::FormatOptions::default().with(dbdf::npz::WriteOptions {
            names: vec!["x".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    convert(&data("savez.npz"), &renamed, &options).unwrap();
    let names = names_in(&renamed);
    assert_eq!(names, ["x", "arr_1", "arr_2"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn hostile_archives_and_headers_give_errors_never_panics() {
    // Every file above, truncated and with bytes flipped: each read ends in a value or an
    // error.
    let mut tried = 0;
    for entry in std::fs::read_dir(data("")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let mut cases: Vec<Vec<u8>> = (0..bytes.len())
            .step_by(7)
            .map(|n| bytes[..n].to_vec())
            .collect();
        for at in (0..bytes.len()).step_by(5) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x5a;
            cases.push(flipped);
        }
        for case in cases {
            let _ = crate::whole::from_slice(&case, "npy");
            let _ = crate::whole::from_slice(&case, "npz");
            let _ = scipy_from_slice(&case);
            tried += 1;
        }
    }
    assert!(tried > 1000);
    // The sources that read in place, from files.
    let dir = dir("hostile");
    let path = dir.join("m.npz");
    for name in ["scipy_csr.npz", "savez.npz"] {
        let bytes = std::fs::read(data(name)).unwrap();
        for at in (0..bytes.len()).step_by(3) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x5a;
            for case in [&bytes[..at], &flipped[..]] {
                std::fs::write(&path, case).unwrap();
                if let Ok(mut source) = crate::pipe::opened(&path, "scipy") {
                    let _ = crate::pipe::try_collected(&mut *source);
                }
                if let Ok(mut source) = crate::pipe::opened(&path, "npz") {
                    let _ = crate::pipe::try_collected(&mut *source);
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn deflated_members_stream_across_chunks_and_bands_as_whole() {
    // 2.4 MB of values that barely compress: the compressed member spans several 1 MiB
    // reads, and the bands end anywhere in them.
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let values: Vec<f64> = (0..300 * 1000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f64::from_bits(x >> 2)
        })
        .collect();
    let big = Object::dense(300, 1000, Values::F64(values)).unwrap();
    let frame = Object::frame(expected_records()).unwrap();
    let named = vec![
        ("big".to_string(), big.clone()),
        ("f".to_string(), frame.clone()),
    ];
    let dir = dir("npz_streamed");
    let path = dir.join("z.npz");
    crate::whole::write_npz(
        &path,
        &named,
        &dbdf::npz::WriteOptions {
            compressed: true,
            ..Default::default()
        },
    )
    .unwrap();
    for rows in [1, 7, 64] {
        let mut source = crate::pipe::opened(&path, "npz").unwrap();
        let mut got = Vec::new();
        for index in 0..2 {
            let mut bands = Vec::new();
            source
                .for_each_band(index, rows, &mut |band| {
                    bands.push(band);
                    Ok(true)
                })
                .unwrap();
            let header = source.headers()[index].clone();
            let mut whole = bands.remove(0);
            for band in bands {
                whole.append(band).unwrap();
            }
            got.push(whole.into_object(&header).unwrap());
        }
        assert_eq!(got, [big.clone(), frame.clone()], "bands of {rows}");
    }
    // A member cut short: an error, at any point of the pass.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(crate::pipe::opened(&path, "npz").is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scipy_csr_archives_stream_stored_or_deflated_as_whole() {
    // 20,000 rows of a few entries: members of 100s of KB, bands of any height.
    let (n, mut offsets, mut columns, mut values) = (20_000usize, vec![0], Vec::new(), Vec::new());
    for r in 0..n {
        for k in 0..(r % 5) {
            columns.push((r * 7 + k * 1_001) % 30_000);
            values.push(r as f64 - k as f64 * 0.25);
        }
        let row = offsets.len() - 1;
        let start = offsets[row];
        let mut pairs: Vec<(usize, f64)> = columns[start..]
            .iter()
            .copied()
            .zip(values[start..].iter().copied())
            .collect();
        pairs.sort_by_key(|p| p.0);
        pairs.dedup_by_key(|p| p.0);
        columns.truncate(start);
        values.truncate(start);
        columns.extend(pairs.iter().map(|p| p.0));
        values.extend(pairs.iter().map(|p| p.1));
        offsets.push(columns.len());
    }
    let m = Object::csr(n as u64, 30_000, offsets, columns, Values::F64(values)).unwrap();
    let dir = dir("scipy_streamed");
    for compressed in [false, true] {
        let path = dir.join("m.npz");
        let options = dbdf::scipy::WriteOptions { compressed };
        std::fs::write(&path, scipy_bytes(&m, &options)).unwrap();
        for rows in [1, 999, 50_000] {
            let mut source = crate::pipe::opened(&path, "scipy").unwrap();
            assert!(source.reads_in_place());
            let mut bands = Vec::new();
            source
                .for_each_band(0, rows, &mut |band| {
                    bands.push(band);
                    Ok(true)
                })
                .unwrap();
            let mut whole = bands.remove(0);
            for band in bands {
                whole.append(band).unwrap();
            }
            let got = whole.into_object(&source.headers()[0].clone()).unwrap();
            assert_eq!(got, m, "compressed {compressed}, bands of {rows}");
        }
        // A flipped byte in the middle: an error by the end of the pass, never a panic.
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(mut source) = crate::pipe::opened(&path, "scipy") {
            assert!(
                crate::pipe::try_collected(&mut *source).is_err(),
                "compressed {compressed}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scipy_layouts_are_kept_by_binsparse_outputs() {
    use dbdf::binsparse::Format as Layout;
    use dbdf::convert::{convert, ConvertOptions};
    let dir = dir("scipy_layouts");
    for (format, layout) in [
        ("csc", Layout::Csc),
        ("coo", Layout::Coo),
        ("csr", Layout::Csr),
        ("dia", Layout::Csr),
    ] {
        let input = data(&format!("scipy_{format}.npz"));
        let out = dir.join(format!("{format}.bsp.npz"));
        convert(&input, &out, &ConvertOptions::default()).unwrap();
        let read = crate::whole::read_binsparse(&out).unwrap();
        assert_eq!(read.format, layout, "{format}");
        assert_eq!(read.object, scipy_read(&input).unwrap(), "{format}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
