//! SystemDS binary-block files (`tests/data/systemds/`, written by SystemDS 3.4.0):
//! every matrix reads with the values of its text copy, frames of numbers and booleans read
//! with their names, string columns are refused by name, and what we write is byte for byte
//! what SystemDS wrote (but for the random sync marker).

use std::path::{Path, PathBuf};

use dbdf::pipe;
use dbdf::systemds::{self, ReadOptions, WriteOptions};
use serde_daphne::{DataType, Object, Value, Values};

/// The object of the SystemDS file or folder at `path`, read with `options` through its
/// source.
pub(crate) fn read_with(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> serde_daphne::Result<Object> {
    let formats = dbdf::convert::FormatOptions::default().with(options.clone());
    crate::whole::read_with(path, "systemds", formats)
}

pub(crate) fn read(path: impl AsRef<Path>) -> serde_daphne::Result<Object> {
    read_with(path, &ReadOptions::default())
}

/// `object` written as SystemDS at `path` with `options`, through its sink, as a conversion
/// writes it.
pub(crate) fn write_with(
    path: impl AsRef<Path>,
    object: &Object,
    options: &WriteOptions,
) -> serde_daphne::Result<()> {
    let formats = dbdf::convert::FormatOptions::default().with(options.clone());
    crate::whole::write_with(path, object, "systemds", formats)
}

pub(crate) fn write(path: impl AsRef<Path>, object: &Object) -> serde_daphne::Result<()> {
    write_with(path, object, &WriteOptions::default())
}

/// A SystemDS object to `.dbdf` through the pipe, tiled as its blocks unless `options` give
/// a tile size (or the runtime dialect, which has none).
fn to_dbdf(
    input: &Path,
    output: &Path,
    options: &serde_daphne::Options,
) -> serde_daphne::Result<()> {
    let mut source = systemds::source(input, &ReadOptions::default())?;
    let mut options = options.clone();
    let runtime = options.dialect == Some(serde_daphne::Dialect::Runtime);
    if let (None, Some((r, c)), false) = (options.tile, source.metadata().tile, runtime) {
        options.tile = Some((r, c));
    }
    pipe::to_dbdf(&mut *source, output, &options)
}

/// A `.npy` matrix to SystemDS through the pipe.
fn write_npy(input: &Path, output: &Path, options: &WriteOptions) -> serde_daphne::Result<()> {
    let mut source = crate::pipe::opened(input, "npy")?;
    pipe::copy(&mut *source, systemds::sink(output, options)).map(drop)
}

/// Object `index` of a `.dbdf` file to SystemDS through the pipe.
fn write_dbdf(
    input: &Path,
    index: usize,
    output: &Path,
    options: &WriteOptions,
) -> serde_daphne::Result<()> {
    let mut source = pipe::DbdfSource::open(input)?.only(index)?;
    pipe::copy(&mut source, systemds::sink(output, options)).map(drop)
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/systemds")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("serde_daphne_sds_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The cells of a matrix's text copy: `.csv` (dense) where there is one, else `.ijv`.
fn text_cells(name: &str, rows: u64, cols: u64) -> Vec<f64> {
    let csv = golden(&format!("{name}.csv"));
    match csv.exists() {
        true => text_cells_of(&csv, false, rows, cols),
        false => text_cells_of(&golden(&format!("{name}.ijv")), true, rows, cols),
    }
}

/// The cells of a text copy at `path`: dense `.csv` lines, or `ijv`'s 1-based triples.
fn text_cells_of(path: &Path, ijv: bool, rows: u64, cols: u64) -> Vec<f64> {
    let mut cells = vec![0.0; (rows * cols) as usize];
    let text = std::fs::read_to_string(path).unwrap();
    if !ijv {
        for (r, line) in text.lines().enumerate() {
            for (c, field) in line.split(',').enumerate() {
                cells[r * cols as usize + c] = field.parse().unwrap();
            }
        }
        return cells;
    }
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (i, j): (u64, u64) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        if i == 0 {
            continue; // SystemDS writes "0 0 0" for an all-zero matrix
        }
        cells[((i - 1) * cols + j - 1) as usize] = f[2].parse().unwrap();
    }
    cells
}

fn cells(object: &Object) -> Vec<f64> {
    let (rows, cols) = object.shape();
    let mut out = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            out.push(object.get(r, c).unwrap().to::<f64>().unwrap());
        }
    }
    out
}

const MATRICES: [(&str, u64, u64); 7] = [
    ("dense_small", 3, 4),
    ("colvec_10", 10, 1),
    ("sparse_100", 100, 100),
    ("ultrasparse_1000", 1000, 1000),
    ("sparsecol_1000", 1000, 1),
    ("zeros_5x7", 5, 7),
    ("dense_small", 3, 4),
];

#[test]
fn every_golden_matrix_reads_with_the_values_of_its_text_copy() {
    for (name, rows, cols) in MATRICES {
        for keep_blocks in [false, true] {
            let options = ReadOptions {
                keep_blocks,
                ..Default::default()
            };
            let m = read_with(golden(name), &options).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.shape(), (rows, cols), "{name}");
            assert_eq!(cells(&m), text_cells(name, rows, cols), "{name}");
            let nnz = text_cells(name, rows, cols)
                .iter()
                .filter(|x| **x != 0.0)
                .count() as f64;
            let expected = if nnz < 0.4 * (rows * cols) as f64 {
                DataType::CsrMatrix
            } else {
                DataType::DenseMatrix
            };
            assert_eq!(m.data_type(), expected, "{name}");
        }
    }
}

/// The golden file with its sync marker (bytes 16 after the header's end) replaced by ours.
fn with_sync_of(golden: &[u8], ours: &[u8]) -> Vec<u8> {
    // Both headers have the same class names: the marker ends at the same offset.
    let header_end = golden
        .windows(11)
        .position(|w| w == b"MatrixBlock")
        .unwrap()
        + 11
        + 2
        + 4;
    let (theirs, mine) = (
        &golden[header_end..header_end + 16],
        &ours[header_end..header_end + 16],
    );
    let mut out = golden.to_vec();
    let mut at = 0;
    while let Some(k) = out[at..].windows(16).position(|w| w == theirs) {
        out[at + k..at + k + 16].copy_from_slice(mine);
        at += k + 16;
    }
    out
}

#[test]
fn matrices_we_write_are_the_bytes_systemds_wrote() {
    let dir = scratch("write");
    for (name, ..) in MATRICES {
        let m = read(golden(name)).unwrap();
        let out = dir.join(name);
        write(&out, &m).unwrap();
        let ours = std::fs::read(&out).unwrap();
        let theirs = std::fs::read(golden(name)).unwrap();
        assert_eq!(ours, with_sync_of(&theirs, &ours), "{name}");
        // The .mtd says what SystemDS needs, and reads back.
        let mtd: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(metadata_path(&out)).unwrap()).unwrap();
        let theirs: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(golden(&format!("{name}.mtd"))).unwrap())
                .unwrap();
        for key in [
            "data_type",
            "value_type",
            "rows",
            "cols",
            "rows_in_block",
            "cols_in_block",
            "nnz",
            "format",
        ] {
            assert_eq!(mtd[key], theirs[key], "{name} {key}");
        }
        assert_eq!(cells(&read(&out).unwrap()), cells(&m));
    }
}

#[test]
fn frames_read_with_names_and_strings_are_refused_by_name() {
    let f = read(golden("frame_bool_130")).unwrap();
    assert_eq!(f.data_type(), DataType::Frame);
    assert_eq!(f.shape(), (130, 2));
    assert_eq!(f.labels(), ["C1", "C2"]);
    let text = std::fs::read_to_string(golden("frame_bool_130.csv")).unwrap();
    for (r, line) in text.lines().enumerate() {
        let (flag, n) = line.split_once(',').unwrap();
        assert_eq!(
            f.get(r as u64, 0),
            Some(Value::U8(u8::from(flag == "true"))),
            "row {r}"
        );
        assert_eq!(
            f.get(r as u64, 1),
            Some(Value::I32(n.parse().unwrap())),
            "row {r}"
        );
    }
    for (name, column) in [
        ("frame_mixed", "C2"),
        ("frame_named", "name"),
        ("frame_2500", "C2"),
    ] {
        let err = read(golden(name)).unwrap_err();
        assert_error!(err, NotConvertible);
        assert!(
            err.to_string().contains(&format!("{column:?} of strings")),
            "{name}: {err}"
        );
    }
}

/// The records of a SequenceFile (header bytes, then each record's bytes), parsed here.
fn split_records(bytes: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let header_end = bytes.windows(11).position(|w| w == b"MatrixBlock").unwrap() + 11 + 2 + 4 + 16;
    let mut at = header_end;
    let mut records = Vec::new();
    while at < bytes.len() {
        let len = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        if len == -1 {
            at += 20;
            continue;
        }
        let end = at + 8 + len as usize;
        records.push(bytes[at..end].to_vec());
        at = end;
    }
    (bytes[..header_end].to_vec(), records)
}

#[test]
fn part_files_in_any_order_with_sync_markers_anywhere_read_the_same() {
    let dir = scratch("parts");
    // A mostly dense 5 x 7 matrix and a sparse 6 x 9 one, in 2 x 2 blocks; with and without
    // the .mtd's non-zero count (which picks the dense path in advance).
    let dense: Vec<f64> = (0..35)
        .map(|k| if k % 3 == 0 { 0.0 } else { k as f64 / 4.0 })
        .collect();
    let sparse: Vec<f64> = (0..54)
        .map(|k| if k % 7 == 2 { -(k as f64) } else { 0.0 })
        .collect();
    for (name, m, grid) in [
        (
            "dense",
            Object::dense(5, 7, Values::F64(dense)).unwrap(),
            12,
        ),
        (
            "sparse",
            Object::dense(6, 9, Values::F64(sparse)).unwrap(),
            15,
        ),
    ] {
        let file = dir.join(name);
        write_with(
            &file,
            &m,
            &WriteOptions {
                block_size: 2,
                ..Default::default()
            },
        )
        .unwrap();
        let (header, records) = split_records(&std::fs::read(&file).unwrap());
        assert_eq!(records.len(), grid);
        let sync = header[header.len() - 16..].to_vec();
        let parts = dir.join(format!("{name}-parts"));
        std::fs::create_dir_all(&parts).unwrap();
        for (p, chunk) in records.rchunks(5).enumerate() {
            let mut bytes = header.clone();
            for record in chunk.iter().rev() {
                bytes.extend_from_slice(&(-1i32).to_be_bytes());
                bytes.extend_from_slice(&sync);
                bytes.extend_from_slice(record);
            }
            std::fs::write(parts.join(format!("part-{p:05}")), bytes).unwrap();
        }
        std::fs::write(parts.join("_SUCCESS"), b"").unwrap();
        let mtd = std::fs::read_to_string(metadata_path(&file)).unwrap();
        for with_nnz in [true, false] {
            let mut json: serde_json::Value = serde_json::from_str(&mtd).unwrap();
            if !with_nnz {
                json.as_object_mut().unwrap().remove("nnz");
            }
            std::fs::write(metadata_path(&parts), json.to_string()).unwrap();
            for keep_blocks in [false, true] {
                // SystemDS's blocks kept as the tiles of a .dbdf (--keep-blocks), or one block.
                let out = dir.join(format!("{name}-{with_nnz}-{keep_blocks}.dbdf"));
                let convert = dbdf::convert::ConvertOptions {
                    from: Some("systemds".parse().unwrap()),
                    keep_tiles: keep_blocks,
                    ..Default::default()
                };
                dbdf::convert::convert(&parts, &out, &convert).unwrap();
                let read: Object = serde_daphne::from_file(&out).unwrap();
                assert_eq!(cells(&read), cells(&m), "{name} {with_nnz} {keep_blocks}");
                let blocks = read.block_types().iter().map(|(_, n)| n).sum::<usize>();
                assert_eq!(blocks, if keep_blocks { grid } else { 1 });
                let csr = name == "sparse";
                assert_eq!(read.data_type() == DataType::CsrMatrix, csr, "{name}");
            }
        }
    }
}

#[test]
fn malformed_files_are_refused_with_their_offset_and_never_panic() {
    let dir = scratch("hostile");
    for name in [
        "dense_small",
        "sparse_100",
        "ultrasparse_1000",
        "sparsecol_1000",
        "frame_bool_130",
    ] {
        let bytes = std::fs::read(golden(name)).unwrap();
        let path = dir.join(name);
        std::fs::copy(golden(&format!("{name}.mtd")), metadata_path(&path)).unwrap();
        for at in (0..bytes.len()).step_by(if bytes.len() > 400 { 7 } else { 1 }) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                std::fs::write(&path, &bad).unwrap();
                let _ = read(&path);
            }
        }
        for cut in [0, 3, 40, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let err = read(&path).unwrap_err();
            assert_error!(err, ForeignInput);
        }
    }
    // An unknown block type, at its byte: the dense block's type follows the 126-byte header,
    // the record's lengths (8), its key (16) and the block's rows and columns (8).
    let mut bytes = std::fs::read(golden("dense_small")).unwrap();
    assert_eq!(bytes[158], 3);
    bytes[158] = 9;
    let path = dir.join("dense_small");
    std::fs::write(&path, &bytes).unwrap();
    let err = read(&path).unwrap_err();
    assert_eq!(err.offset(), Some(158), "{err}");
    assert!(err.to_string().contains("unknown block type 9"), "{err}");
    // A missing .mtd, and one that says another format.
    let lonely = dir.join("lonely");
    std::fs::copy(golden("dense_small"), &lonely).unwrap();
    let err = read(&lonely).unwrap_err();
    assert!(err.to_string().contains("lonely.mtd"), "{err}");
    std::fs::write(
        metadata_path(&lonely),
        r#"{"data_type":"matrix","rows":3,"cols":4,"format":"csv"}"#,
    )
    .unwrap();
    let err = read(&lonely).unwrap_err();
    assert!(err.to_string().contains("format \"csv\""), "{err}");
    // Dimensions the blocks do not fit.
    std::fs::write(
        metadata_path(&lonely),
        r#"{"data_type":"matrix","rows":2,"cols":4,"format":"binary"}"#,
    )
    .unwrap();
    let err = read(&lonely).unwrap_err();
    assert!(
        err.to_string().contains("does not fit the 2 x 4 matrix"),
        "{err}"
    );
    let err = read(tall_matrix(&dir)).unwrap_err();
    assert_error!(err, AllocationLimit);
}

/// A block value: `rows, cols, type` and then `body`, big-endian as SystemDS writes it.
fn block_value(rows: i32, cols: i32, block_type: u8, body: &[u8]) -> Vec<u8> {
    let mut v = [rows.to_be_bytes(), cols.to_be_bytes()].concat();
    v.push(block_type);
    v.extend_from_slice(body);
    v
}

/// Ultra-sparse or sparse-row bytes: `ints` then `(int, int|none, double)` parts.
fn be_ints(ints: &[i32]) -> Vec<u8> {
    ints.iter().flat_map(|i| i.to_be_bytes()).collect()
}

#[test]
fn cell_errors_found_after_the_read_keep_file_order_and_offsets() {
    // Cells are checked on a second thread while the next record is read: the first error
    // in the file must still be the one reported, at its byte. A 4 x 8 matrix of two 4 x 4
    // blocks, the second always broken (an unknown block type, found by the reading thread).
    let dir = scratch("cell_errors");
    let golden_bytes = std::fs::read(golden("dense_small")).unwrap();
    let (header, _) = split_records(&golden_bytes);
    let entry = |r: i32, c: i32, x: f64| [be_ints(&[r, c]), x.to_be_bytes().to_vec()].concat();
    let pair = |c: i32, x: f64| [be_ints(&[c]), x.to_be_bytes().to_vec()].concat();
    let ultra = |entries: &[Vec<u8>]| {
        let nnz = entries.len() as i32;
        block_value(4, 4, 1, &[be_ints(&[nnz]), entries.concat()].concat())
    };
    // (first block's value, where its error is within the value, what it says)
    let cases: Vec<(Vec<u8>, usize, &str)> = vec![
        (
            ultra(&[entry(0, 0, 1.0), entry(5, 1, 2.0)]),
            13 + 16,
            "(5, 1) outside the 4 x 4 block",
        ),
        (
            ultra(&[entry(2, 1, 1.0), entry(1, 1, 2.0), entry(2, 1, 3.0)]),
            13 + 32,
            "(2, 1) appears twice",
        ),
        (
            // Row 0: columns 3 then 1.
            block_value(
                4,
                4,
                2,
                &[
                    be_ints(&[2, 2]),
                    pair(3, 1.0),
                    pair(1, 2.0),
                    be_ints(&[0, 0, 0]),
                ]
                .concat(),
            ),
            13 + 4 + 12,
            "column 1 in row 0 does not increase",
        ),
        (
            // A valid sparse block and three bytes more.
            block_value(
                4,
                4,
                2,
                &[
                    be_ints(&[1, 1]),
                    pair(0, 1.0),
                    be_ints(&[0, 0, 0]),
                    vec![0; 3],
                ]
                .concat(),
            ),
            13 + 4 + 12 + 12,
            "3 bytes after the block",
        ),
    ];
    let record = |bi: i64, bj: i64, value: &[u8]| {
        let key = [bi.to_be_bytes(), bj.to_be_bytes()].concat();
        let len = (key.len() + value.len()) as i32;
        [be_ints(&[len, 16]), key, value.to_vec()].concat()
    };
    let broken = block_value(4, 4, 9, &[]);
    let path = dir.join("m");
    std::fs::write(
        metadata_path(&path),
        r#"{"data_type":"matrix","rows":4,"cols":8,"rows_in_block":4,"cols_in_block":4,"format":"binary"}"#,
    )
    .unwrap();
    for (value, at, says) in cases {
        let file = [header.clone(), record(1, 1, &value), record(1, 2, &broken)].concat();
        std::fs::write(&path, &file).unwrap();
        for options in [
            ReadOptions::default(),
            ReadOptions {
                keep_blocks: true,
                ..Default::default()
            },
        ] {
            let err = read_with(&path, &options).unwrap_err();
            assert_error!(err, ForeignInput);
            assert_eq!(
                err.offset(),
                Some((header.len() + 24 + at) as u64),
                "{says}: {err}"
            );
            assert!(err.to_string().contains(says), "{says}: {err}");
        }
        // The block-by-block conversion reports the same, and leaves no file.
        let out = dir.join("m.dbdf");
        let err = to_dbdf(&path, &out, &serde_daphne::Options::new()).unwrap_err();
        assert_eq!(
            err.offset(),
            Some((header.len() + 24 + at) as u64),
            "{says}: {err}"
        );
        assert!(!out.exists());
    }
    // With a good first block, the second block's error is reported.
    let good = ultra(&[entry(0, 0, 1.0)]);
    let file = [header.clone(), record(1, 1, &good), record(1, 2, &broken)].concat();
    std::fs::write(&path, &file).unwrap();
    let err = read(&path).unwrap_err();
    let second = header.len() + 8 + 16 + good.len() + 8 + 16 + 8;
    assert_eq!(err.offset(), Some(second as u64), "{err}");
    assert!(err.to_string().contains("unknown block type 9"), "{err}");
}

#[test]
fn writing_needs_exact_doubles_and_a_matrix() {
    let dir = scratch("refuse");
    let big = Object::dense(1, 1, Values::I64(vec![(1 << 53) + 1])).unwrap();
    let err = write(dir.join("big"), &big).unwrap_err();
    assert_error!(err, LossyConversion);
    let frame = Object::frame(vec![("a".into(), Values::U8(vec![1]))]).unwrap();
    let err = write(dir.join("frame"), &frame).unwrap_err();
    assert_error!(err, NotConvertible);
    assert!(err.to_string().contains("\"a\" of u8"), "{err}");
    assert!(!dir.join("big").exists() && !dir.join("frame").exists());
    // Integers that doubles hold exactly are fine, and -0.0 and NaN survive.
    let m = Object::dense(2, 2, Values::F64(vec![-0.0, f64::NAN, 3.0, 0.0])).unwrap();
    write(dir.join("m"), &m).unwrap();
    let back = read(dir.join("m")).unwrap();
    assert_eq!(back.get(0, 0).unwrap().bits(), (-0.0f64).to_bits());
    assert!(back.get(0, 1).unwrap().to::<f64>().unwrap().is_nan());
}

/// Where `needle` starts in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn frames_we_write_encode_columns_as_systemds_does_and_read_back() {
    let dir = scratch("frames");
    let frame = Object::frame(vec![
        ("id".into(), Values::I64(vec![1, 2, 3, 4])),
        ("score".into(), Values::F64(vec![0.5, -1.75, 0.001, 100.0])),
        ("n".into(), Values::I32(vec![-1, 0, 7, i32::MAX])),
        ("x".into(), Values::F32(vec![1.5, -0.0, f32::INFINITY, 2.0])),
    ])
    .unwrap();
    let out = dir.join("f");
    write(&out, &frame).unwrap();
    let ours = std::fs::read(&out).unwrap();
    // SystemDS's own encoding of the columns "id" (INT64) and "score" (FP64), cut from the
    // frame it wrote (frame_named; the same values).
    let theirs = std::fs::read(golden("frame_named")).unwrap();
    for name in [&b"\x00\x02id"[..], &b"\x00\x05score"[..]] {
        let at = find(&theirs, name).unwrap() - 1;
        let column = &theirs[at..at + 1 + name.len() + 8 + 2 + 1 + 4 * 8];
        assert!(
            find(&ours, column).is_some(),
            "{:?}",
            String::from_utf8_lossy(name)
        );
    }
    let mtd: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(metadata_path(&out)).unwrap()).unwrap();
    assert_eq!(mtd["data_type"], "frame");
    assert_eq!(mtd["schema"], "INT64,FP64,INT32,FP32,");
    let back = read(&out).unwrap();
    assert_eq!(back.labels(), ["id", "score", "n", "x"]);
    assert_eq!(back.columns().unwrap(), frame.columns().unwrap());
    // Blocks of 3 rows in 2 parts: a directory Spark can split, read back the same.
    let parts = dir.join("f_parts");
    let options = WriteOptions {
        block_size: 3,
        parts: Some(2),
    };
    write_with(&parts, &frame, &options).unwrap();
    assert!(parts.join("part-00000").is_file() && parts.join("part-00001").is_file());
    assert_eq!(
        read(&parts).unwrap().columns().unwrap(),
        frame.columns().unwrap()
    );
}

#[test]
fn matrices_split_into_parts_of_contiguous_block_rows_read_back_the_same() {
    let dir = scratch("parts");
    let m = read(golden("sparse_100")).unwrap();
    for parts in [1, 3, 7, 200] {
        let out = dir.join(format!("m{parts}"));
        let options = WriteOptions {
            block_size: 16,
            parts: Some(parts),
        };
        write_with(&out, &m, &options).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), parts + 1, "{names:?}");
        // "_SUCCESS" sorts first.
        assert_eq!(names[0], "_SUCCESS");
        assert_eq!(names[1], "part-00000");
        assert_eq!(cells(&read(&out).unwrap()), cells(&m), "{parts}");
        // Each part holds a contiguous run of block rows, in order (an empty part is a
        // header alone).
        let mut last = 0;
        for name in &names[1..] {
            let (_, records) = split_records(&std::fs::read(out.join(name)).unwrap());
            for record in records {
                let row = i64::from_be_bytes(record[8..16].try_into().unwrap());
                assert!(row >= last, "{name}: block row {row} after {last}");
                last = row;
            }
        }
    }
    // Writing again replaces the directory; a directory of other files is left alone.
    let out = dir.join("m3");
    write_with(
        &out,
        &m,
        &WriteOptions {
            parts: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!out.join("part-00002").exists());
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    let err = write_with(
        &out,
        &m,
        &WriteOptions {
            parts: Some(2),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("remove it first"), "{err}");
}

#[test]
fn npy_files_write_as_systemds_streamed_or_whole_with_the_same_values() {
    let dir = scratch("npy");
    let m = read(golden("dense_small")).unwrap();
    for (name, object) in [
        ("f64", m.clone()),
        (
            "i32",
            Object::dense(2, 3, Values::I32(vec![1, -2, 0, 4, 5, 0])).unwrap(),
        ),
    ] {
        let npy = dir.join(format!("{name}.npy"));
        crate::whole::write(&npy, &object, "npy").unwrap();
        let out = dir.join(name);
        let options = WriteOptions {
            block_size: 2,
            parts: Some(2),
        };
        write_npy(&npy, &out, &options).unwrap();
        assert_eq!(cells(&read(&out).unwrap()), cells(&object), "{name}");
    }
}

#[test]
fn npy_values_at_any_offset_write_the_same_blocks() {
    // numpy starts the values at a multiple of 64; a header one byte longer puts them where
    // they cannot be mapped as f64, and the conversion reads them in bands instead.
    let dir = scratch("npy-offset");
    let m = read(golden("dense_small")).unwrap();
    let aligned = dir.join("aligned.npy");
    crate::whole::write(&aligned, &m, "npy").unwrap();
    let bytes = std::fs::read(&aligned).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let mut shifted = bytes[..10 + header_len - 1].to_vec();
    shifted.extend_from_slice(b" \n");
    shifted.extend_from_slice(&bytes[10 + header_len..]);
    shifted[8..10].copy_from_slice(&((header_len + 1) as u16).to_le_bytes());
    let misaligned = dir.join("misaligned.npy");
    std::fs::write(&misaligned, &shifted).unwrap();
    let options = WriteOptions {
        block_size: 2,
        parts: Some(2),
    };
    for (npy, out) in [(&aligned, "a"), (&misaligned, "m")] {
        write_npy(npy, &dir.join(out), &options).unwrap();
    }
    for part in ["part-00000", "part-00001"] {
        let a = std::fs::read(dir.join("a").join(part)).unwrap();
        assert!(a.len() > 100, "{part}");
        assert_eq!(
            a,
            std::fs::read(dir.join("m").join(part)).unwrap(),
            "{part}"
        );
    }
    assert_eq!(cells(&read(dir.join("m")).unwrap()), cells(&m));
}

#[test]
fn dbdf_matrices_stream_to_systemds_with_the_bytes_of_the_whole_write() {
    use serde_daphne::{Dialect, Options};
    let dir = scratch("from-dbdf");
    // Zeros, a stored -0.0 (a non-zero to SystemDS) and a row with nothing in it.
    let dense: Vec<f64> = (0..7 * 5)
        .map(|i| match i % 4 {
            0 => 0.0,
            1 => -0.0,
            _ => f64::from(i) * 0.25 - 3.0,
        })
        .collect();
    let csr = Object::csr(
        7,
        5,
        vec![0, 2, 2, 3, 5, 5, 6, 7],
        vec![0, 4, 2, 1, 3, 0, 4],
        Values::F64(vec![1.5, -0.0, 2.0, -3.0, 4.0, 5.0, 6.0]),
    )
    .unwrap();
    let objects = [
        ("dense", Object::dense(7, 5, Values::F64(dense)).unwrap()),
        (
            "ints",
            Object::dense(3, 4, Values::I32((0..12).map(|i| i * 7 - 40).collect())).unwrap(),
        ),
        ("csr", csr),
    ];
    let layouts = [
        ("plain", Options::new()),
        (
            "tiled",
            Options {
                tile: Some((3, 2)),
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
    ];
    for (name, object) in &objects {
        for (layout, options) in &layouts {
            let dbdf = dir.join(format!("{name}-{layout}.dbdf"));
            options.to_file(&dbdf, object).unwrap();
            for write in [
                WriteOptions {
                    block_size: 2,
                    parts: Some(2),
                },
                WriteOptions::default(),
            ] {
                let (whole, streamed) = (dir.join("whole"), dir.join("streamed"));
                write_with(&whole, object, &write).unwrap();
                write_dbdf(&dbdf, 0, &streamed, &write).unwrap();
                let files = |path: &Path| -> Vec<(String, Vec<u8>)> {
                    let mut files: Vec<_> = if path.is_dir() {
                        std::fs::read_dir(path)
                            .unwrap()
                            .map(|e| e.unwrap().path())
                            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
                            .map(|(n, p)| (n, std::fs::read(p).unwrap()))
                            .collect()
                    } else {
                        vec![(String::new(), std::fs::read(path).unwrap())]
                    };
                    files.sort();
                    files
                };
                let context = format!("{name} {layout} {write:?}");
                assert!(
                    files(&whole).iter().any(|(_, b)| b.len() > 100),
                    "{context}"
                );
                assert_eq!(files(&whole), files(&streamed), "{context}");
                let mtd = |p: &Path| std::fs::read(metadata_path(p)).unwrap();
                assert_eq!(mtd(&whole), mtd(&streamed), "{context}");
                for path in [&whole, &streamed] {
                    let _ = std::fs::remove_dir_all(path);
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
    // A frame is held whole and written as the whole write writes it.
    let frame = Object::frame(vec![("a".into(), Values::F64(vec![1.0, 2.0]))]).unwrap();
    let dbdf = dir.join("frame.dbdf");
    serde_daphne::to_file(&dbdf, &frame).unwrap();
    write_dbdf(&dbdf, 0, &dir.join("frame"), &WriteOptions::default()).unwrap();
    write(dir.join("frame-whole"), &frame).unwrap();
    assert_eq!(
        std::fs::read(dir.join("frame")).unwrap(),
        std::fs::read(dir.join("frame-whole")).unwrap()
    );
    // What cannot be written at all is refused by name.
    let big = Object::dense(1, 2, Values::I64(vec![1, (1 << 53) + 1])).unwrap();
    let dbdf = dir.join("big.dbdf");
    serde_daphne::to_file(&dbdf, &big).unwrap();
    let err = write_dbdf(&dbdf, 0, &dir.join("big"), &WriteOptions::default()).unwrap_err();
    assert_error!(err, LossyConversion);
    assert!(!dir.join("big").exists(), "nothing left behind");
    let dbdf = dir.join("dense-plain.dbdf");
    let err = write_dbdf(&dbdf, 1, &dir.join("none"), &WriteOptions::default()).unwrap_err();
    assert_error!(err, InvalidValue);
}

#[test]
fn systemds_matrices_write_to_dbdf_block_by_block_with_their_values() {
    use serde_daphne::{from_file, DbdfFile, Dialect, Options};
    let dir = scratch("to-dbdf");
    let read_back = |path: &Path| -> Object { from_file(path).unwrap() };
    // SystemDS's own files against their text copies; the data type as a whole read decides.
    for (name, rows, cols) in MATRICES {
        let whole = read(golden(name)).unwrap();
        // Tiles that do not divide SystemDS's (1000) split each block from its corner.
        let tile = if rows * cols <= 10_000 {
            (2, 3)
        } else {
            (400, 300)
        };
        for options in [
            Options::new(),
            Options {
                tile: Some((tile.0, tile.1)),
                ..Options::new()
            },
        ] {
            let out = dir.join(format!("{name}.dbdf"));
            to_dbdf(&golden(name), &out, &options).unwrap();
            let m = read_back(&out);
            assert_eq!(m.shape(), (rows, cols), "{name}");
            let got = m.dense_vec::<f64>().unwrap();
            assert_eq!(got, text_cells(name, rows, cols), "{name} {options:?}");
            assert_eq!(m.data_type(), whole.data_type(), "{name}");
            let file = DbdfFile::open(&out).unwrap();
            let tile = options.tile.unwrap_or((1000, 1000));
            let first = file.objects()[0].blocks[0].place;
            assert!(
                first.rows <= tile.0 && first.cols <= tile.1,
                "{name} {first:?}"
            );
        }
    }
    // Many blocks in two parts, some all zeros, with -0.0 stored (a non-zero to SystemDS).
    let values: Vec<f64> = (0..9 * 7)
        .map(|i| match (i / 7, i % 7) {
            (0..=3, 0..=3) => 0.0,
            (r, c) if (r + c) % 5 == 0 => -0.0,
            (r, c) if (r * c) % 3 == 0 => (r * 10 + c) as f64 - 20.5,
            _ => 0.0,
        })
        .collect();
    for object in [
        Object::dense(9, 7, Values::F64(values.clone())).unwrap(),
        Object::dense(9, 7, Values::F64(values))
            .unwrap()
            .with_data_type(DataType::CsrMatrix)
            .unwrap(),
    ] {
        let sysds = dir.join("parts");
        write_with(
            &sysds,
            &object,
            &WriteOptions {
                block_size: 2,
                parts: Some(2),
            },
        )
        .unwrap();
        let out = dir.join("parts.dbdf");
        to_dbdf(&sysds, &out, &Options::new()).unwrap();
        let m = read_back(&out);
        let bits = |o: &Object| {
            let cells = o.dense_vec::<f64>().unwrap();
            cells.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(bits(&m), bits(&object));
        assert_eq!(
            DbdfFile::open(&out).unwrap().objects()[0].blocks.len(),
            5 * 4
        );
        let _ = std::fs::remove_dir_all(&sysds);
    }
    // A matrix without cells is written as a whole read gives it.
    let empty = Object::dense(0, 5, Values::F64(Vec::new())).unwrap();
    write(dir.join("empty"), &empty).unwrap();
    let out = dir.join("empty.dbdf");
    to_dbdf(&dir.join("empty"), &out, &Options::new()).unwrap();
    let whole = read(dir.join("empty")).unwrap();
    let back = read_back(&out);
    assert_eq!(
        (back.shape(), back.data_type()),
        (whole.shape(), whole.data_type())
    );
    // The runtime dialect (bands of rows) and frames (held whole) convert too.
    let out = dir.join("runtime.dbdf");
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    to_dbdf(&golden("dense_small"), &out, &runtime).unwrap();
    let back: Object = runtime.from_file(&out).unwrap();
    assert_eq!(cells(&back), cells(&read(golden("dense_small")).unwrap()));
    let frame = Object::frame(vec![
        ("x".into(), Values::F64(vec![1.5, -2.0, 0.0])),
        ("n".into(), Values::I64(vec![7, 0, -9])),
    ])
    .unwrap();
    write(dir.join("frame"), &frame).unwrap();
    let out = dir.join("frame.dbdf");
    to_dbdf(&dir.join("frame"), &out, &Options::new()).unwrap();
    let back: Object = from_file(&out).unwrap();
    assert_eq!(back.columns().unwrap(), frame.columns().unwrap());
}

/// Every text copy SystemDS wrote beside a golden binary (`.csv`, `.ijv`, and scipy's `.mtx`)
/// agrees with it: the shape its `.mtd` gives, and for matrices every cell; a frame's copy
/// has a line per row (after its header line, where its `.mtd` says so) and a field per
/// column (string columns, which this crate refuses, are not compared).
#[test]
fn every_text_copy_agrees_with_its_binary() {
    let dir = golden("");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mtd = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(golden(name)).unwrap()).unwrap()
    };
    let mut checked = 0;
    for name in names {
        let Some((binary, extension)) = name.rsplit_once('.') else {
            continue;
        };
        if !["csv", "ijv", "mtx"].contains(&extension) || !golden(binary).exists() {
            continue;
        }
        let meta = mtd(&format!("{binary}.mtd"));
        let (rows, cols) = (
            meta["rows"].as_u64().unwrap(),
            meta["cols"].as_u64().unwrap(),
        );
        if extension != "mtx" {
            let copy = mtd(&format!("{name}.mtd"));
            assert_eq!(
                (&copy["rows"], &copy["cols"]),
                (&meta["rows"], &meta["cols"]),
                "{name}"
            );
        }
        if meta["data_type"] == "frame" {
            let header = mtd(&format!("{name}.mtd"))["header"] == true;
            let records: Vec<::csv::StringRecord> = ::csv::ReaderBuilder::new()
                .has_headers(header)
                .from_path(golden(&name))
                .unwrap()
                .records()
                .map(Result::unwrap)
                .collect();
            assert_eq!(records.len() as u64, rows, "{name}");
            assert!(records.iter().all(|r| r.len() as u64 == cols), "{name}");
        } else {
            let theirs = read(golden(binary)).unwrap();
            let copy = match extension {
                "mtx" => cells(&crate::whole::read(golden(&name), "mtx").unwrap()),
                "csv" => text_cells_of(&golden(&name), false, rows, cols),
                _ => text_cells_of(&golden(&name), true, rows, cols),
            };
            assert_eq!(cells(&theirs), copy, "{name}");
        }
        checked += 1;
    }
    assert_eq!(checked, 14, "text copies checked");
}

/// SystemDS's metadata file beside `path` (`path` with `.mtd` appended).
fn metadata_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".mtd");
    name.into()
}

/// A matrix far larger than its files justify, in `dir`: one 1000 x 1000 block of 4e9 rows,
/// whose row offsets alone would take 32 GB.
fn tall_matrix(dir: &Path) -> PathBuf {
    let tall = dir.join("tall");
    std::fs::copy(golden("ultrasparse_1000"), &tall).unwrap();
    std::fs::write(
        metadata_path(&tall),
        r#"{"data_type":"matrix","rows":4000000000,"cols":1000,"format":"binary"}"#,
    )
    .unwrap();
    tall
}

/// A matrix far larger than its files justify (4e9 rows, whose CSR row offsets alone take
/// 32 GB), read whole through the pipe or into a format written whole: an allocation-limit
/// error before anything is read, not the memory (issue 87's whole reads through the pipe).
#[test]
fn whole_objects_through_the_pipe_are_refused_where_the_input_does_not_justify_them() {
    use dbdf::convert::{convert, read, ConvertOptions};
    let dir = scratch("whole-too-big");
    let tall = tall_matrix(&dir);
    let options = ConvertOptions::default();
    let err = read(&tall, "systemds".parse().unwrap(), &options).unwrap_err();
    assert_error!(serde_daphne::Error::from(err), AllocationLimit);
    let out = dir.join("tall.npz");
    let to_scipy = ConvertOptions {
        from: Some("systemds".parse().unwrap()),
        to: Some("scipy".parse().unwrap()),
        ..Default::default()
    };
    let err = convert(&tall, &out, &to_scipy).unwrap_err();
    assert_error!(serde_daphne::Error::from(err), AllocationLimit);
    assert!(!out.exists());
}
