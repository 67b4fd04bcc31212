//! DAPHNE's segmented layout: segments against the bytes DAPHNE's serializer wrote for the
//! same rows (its golden files, `tests/data/daphne-runtime`), the local sidecar against
//! DAPHNE's documentation, every object back through the pipe, windows across segments,
//! and broken folders.

use std::path::{Path, PathBuf};

use dbdf::convert::{convert, ConvertOptions, Format};
use dbdf::pipe::{DbdfSource, Source};
use dbdf::segments::{self, segment_path, WriteOptions};
use serde_daphne::{ErrorKind, Object};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_segments_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/daphne-runtime")
        .join(name)
}

fn to_segments(input: &Path, folder: &Path, count: usize) -> dbdf::convert::Report {
    let options = ConvertOptions {
        formats: dbdf::convert::FormatOptions::default().with(WriteOptions {
            segments: Some(count),
        }),
        ..ConvertOptions::default()
    };
    convert(input, folder, &options).unwrap()
}

fn whole(path: &Path) -> Object {
    serde_daphne::from_file::<_, Object>(path).unwrap()
}

/// One segment of a DAPHNE-written matrix is DAPHNE's file, byte for byte, with its sidecar.
#[test]
fn one_segment_is_daphnes_file() {
    let dir = scratch("one");
    let folder = dir.join("m.dbdf.hdfs");
    to_segments(&golden("dense_f64_100x7.dbdf"), &folder, 1);
    let segment = segment_path(&folder, 1).unwrap();
    assert_eq!(
        std::fs::read(&segment).unwrap(),
        std::fs::read(golden("dense_f64_100x7.dbdf")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.join("m.dbdf.hdfs/m.dbdf.hdfs_segment_1.meta")).unwrap(),
        std::fs::read(golden("dense_f64_100x7.dbdf.meta")).unwrap()
    );
    // The local sidecar, as DAPHNE's write kernel writes it (doc/HDFSUsage.md).
    assert_eq!(
        std::fs::read_to_string(dir.join("m.dbdf.hdfs.meta")).unwrap(),
        r#"{"hdfs":{"HDFSFilename":"/m.dbdf.hdfs","isHDFS":true},"numCols":7,"numRows":100,"valueType":"f64"}"#
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A segment that is a row range DAPHNE wrote as a view (`sliceRow`, as its distributed
/// write does) has the view's bytes: dense and CSR.
#[test]
fn segments_are_daphnes_row_ranges() {
    let dir = scratch("ranges");
    // Rows 1..4 of the 4 x 4 matrix v = r * 10 + c: two segments, rows 1..3 and 3..4.
    let rows: Vec<Vec<f64>> = (1..4)
        .map(|r| (0..4).map(|c| f64::from(r * 10 + c)).collect())
        .collect();
    let input = dir.join("rows1to4.dbdf");
    serde_daphne::to_file(&input, &rows).unwrap();
    let folder = dir.join("d.dbdf.hdfs");
    to_segments(&input, &folder, 2);
    assert_eq!(
        std::fs::read(segment_path(&folder, 1).unwrap()).unwrap(),
        std::fs::read(golden("dense_f64_view_rows1to3_of_4x4.dbdf")).unwrap()
    );
    // csr_f64_5x6 in two segments: rows 0..3 and 3..5, the second DAPHNE's view of rows 3..5.
    let folder = dir.join("s.dbdf.hdfs");
    let report = to_segments(&golden("csr_f64_5x6.dbdf"), &folder, 2);
    assert_eq!(
        std::fs::read(segment_path(&folder, 2).unwrap()).unwrap(),
        std::fs::read(golden("csr_f64_view_rows3to5_of_5x6.dbdf")).unwrap()
    );
    assert!(report.warnings[0].contains("reads dense matrices from segments"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every golden object DAPHNE wrote (dense, CSR of every value type, frames) through
/// segments of several counts and back: the same object, and the segments' rows as
/// DAPHNE splits them.
#[test]
fn every_golden_object_round_trips() {
    let dir = scratch("round");
    let names = [
        "dense_f64_100x7.dbdf",
        "dense_si8_3x4.dbdf",
        "dense_ui64_3x4.dbdf",
        "dense_f32_3x4.dbdf",
        "csr_f64_5x6.dbdf",
        "csr_si32_5x6.dbdf",
        "csr_ui8_5x6.dbdf",
        "frame_mixed_3x8.dbdf",
        "dense_f64_0x4.dbdf",
    ];
    for name in names {
        let original = whole(&golden(name));
        for count in [1, 2, 3, 7] {
            let folder = dir.join(format!("{name}.{count}.hdfs"));
            to_segments(&golden(name), &folder, count);
            let source = segments::source(&folder).unwrap();
            let rows = original.shape().0;
            let files = source.files().unwrap();
            let split: Vec<_> = files.iter().map(|(_, rows)| rows.clone()).collect();
            // DAPHNE's split (`LoadPartitioningDistributed.h`): the first `rows % count`
            // segments one row longer, none empty.
            let n = (count as u64).min(rows.max(1));
            let sizes = (0..n).map(|i| rows / n + u64::from(i < rows % n));
            let expected: Vec<_> = sizes
                .scan(0, |at, size| {
                    *at += size;
                    Some(*at - size..*at)
                })
                .collect();
            assert_eq!(split, expected, "{name} {count}");
            for (k, (file, _)) in (1..).zip(&files) {
                assert_eq!(Path::new(file), segment_path(&folder, k).unwrap());
            }
            let options = dbdf::convert::ConvertOptions::default();
            let format = "segments".parse().unwrap();
            let back = dbdf::convert::read(&folder, format, &options)
                .unwrap()
                .remove(0);
            assert_eq!(back.header(), original.header(), "{name} {count}");
            for r in 0..rows {
                for c in 0..original.shape().1 {
                    assert_eq!(
                        back.get(r, c),
                        original.get(r, c),
                        "{name} {count} ({r}, {c})"
                    );
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Windows across segment boundaries read the same cells as windows of the whole file.
#[test]
fn windows_cross_segments() {
    let dir = scratch("windows");
    let folder = dir.join("w.hdfs");
    to_segments(&golden("dense_f64_100x7.dbdf"), &folder, 6);
    let source = segments::source(&folder).unwrap();
    let file = DbdfSource::open(&golden("dense_f64_100x7.dbdf")).unwrap();
    let (ours, theirs) = (source.windows().unwrap(), file.windows().unwrap());
    for (rows, cols) in [
        (0..100, 0..7),
        (15..18, 2..5),
        (16..51, 0..7),
        (99..100, 6..7),
        (40..40, 0..7),
    ] {
        let a = ours.window(0, rows.clone(), cols.clone()).unwrap();
        let b = theirs.window(0, rows.clone(), cols.clone()).unwrap();
        assert_eq!(a, b, "{rows:?} x {cols:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The format is told by the `.hdfs` extension, both ways, and by its names.
#[test]
fn named_by_extension_and_names() {
    assert_eq!(
        Format::of_path(Path::new("x/m.dbdf.hdfs"), false),
        Some("segments".parse::<Format>().unwrap())
    );
    for name in ["segments", "HDFS"] {
        assert_eq!(
            name.parse::<Format>().unwrap(),
            "segments".parse::<Format>().unwrap()
        );
    }
    let dir = scratch("names");
    let folder = dir.join("m.dbdf.hdfs");
    to_segments(&golden("dense_si64_3x4.dbdf"), &folder, 2);
    let out = dir.join("m.npy");
    convert(&folder, &out, &ConvertOptions::default()).unwrap();
    let back = crate::whole::read(&out, "npy").unwrap();
    assert_eq!(back, whole(&golden("dense_si64_3x4.dbdf")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Broken folders: a missing segment, segments that disagree, a disagreeing local sidecar, no
/// segments at all; a failed write leaves nothing.
#[test]
fn broken_folders_are_refused() {
    let dir = scratch("broken");
    let folder = dir.join("b.dbdf.hdfs");
    to_segments(&golden("dense_f64_100x7.dbdf"), &folder, 3);
    let message = |folder: &Path| match segments::source(folder) {
        Ok(_) => panic!("{} was read", folder.display()),
        Err(e) => (e.kind(), e.to_string()),
    };
    // The local sidecar says 99 rows.
    let meta = dir.join("b.dbdf.hdfs.meta");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("\"numRows\":100", "\"numRows\":99")).unwrap();
    let (kind, text) = message(&folder);
    assert_eq!(kind, ErrorKind::InvalidValue);
    assert!(text.contains("says 99 x 7"), "{text}");
    std::fs::write(
        &meta,
        std::fs::read_to_string(&meta).unwrap().replace("99", "100"),
    )
    .unwrap();
    assert!(segments::source(&folder).is_ok());
    // Segment 2 gone: rows would vanish.
    let second = segment_path(&folder, 2).unwrap();
    std::fs::rename(&second, dir.join("aside")).unwrap();
    let (_, text) = message(&folder);
    assert!(text.contains("segment 2 is missing"), "{text}");
    // Segment 2 of other columns.
    to_segments(&golden("dense_f64_3x4.dbdf"), &dir.join("other.hdfs"), 1);
    std::fs::copy(segment_path(&dir.join("other.hdfs"), 1).unwrap(), &second).unwrap();
    std::fs::copy(
        dir.join("other.hdfs/other.hdfs_segment_1.meta"),
        dir.join("b.dbdf.hdfs/b.dbdf.hdfs_segment_2.meta"),
    )
    .unwrap();
    let (_, text) = message(&folder);
    assert!(text.contains("does not continue"), "{text}");
    // A segment whose sidecar disagrees with its bytes.
    std::fs::copy(dir.join("aside"), &second).unwrap();
    let (_, text) = message(&folder);
    assert!(text.contains("b.dbdf.hdfs_segment_2"), "{text}");
    // No segments.
    let empty = dir.join("empty.hdfs");
    std::fs::create_dir(&empty).unwrap();
    let (_, text) = message(&empty);
    assert!(text.contains("no segments"), "{text}");
    // A write that fails (16-bit values have no runtime code) leaves nothing.
    let failed = dir.join("f.hdfs");
    let u16s = dir.join("u16.dbdf");
    serde_daphne::to_file(&u16s, &vec![vec![1u16, 2]]).unwrap();
    assert!(convert(&u16s, &failed, &ConvertOptions::default()).is_err());
    assert!(!failed.exists() && !dir.join("f.hdfs.meta").exists());
    let litter: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".f.hdfs"))
        .collect();
    assert!(litter.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
