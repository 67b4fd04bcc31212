//! Streaming writes (`DbdfWriter`): tiles in any order give the bytes (or the object) the
//! whole-object writer gives; misuse is a typed error and leaves nothing on disk.

use std::path::{Path, PathBuf};

use ndarray::{s, Array2};
use proptest::prelude::*;
use proptest::sample::select;
use serde_daphne::lowlevel::MatrixRef;
use serde_daphne::Column;
use serde_daphne::Header;
use serde_daphne::{
    from_file, from_slice, BlockPolicy, Csr, DbdfWriter, Dense, Dialect, Object, Options,
    ValueType, Values,
};
use sprs::CsMat;

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("serde_daphne_stream_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in a folder: what a failed write must not leave behind.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn matrix(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((rows, cols), |(r, c)| {
        let h = (r as u64 * 31 + c as u64 * 17 + seed).wrapping_mul(0x9e37_79b9) >> 7;
        if h.is_multiple_of(3) {
            (h % 200) as f64 - 100.0
        } else {
            0.0
        }
    })
}

fn dense_header(rows: usize, cols: usize, vt: ValueType) -> Header {
    Header::DenseMatrix {
        rows: rows as u64,
        cols: cols as u64,
        value_type: vt,
    }
}

/// Writes `m` in tiles of `(tr, tc)`, row-major, or in reverse order.
fn write_tiles(
    path: &Path,
    m: &Array2<f64>,
    tile: (usize, usize),
    options: &Options,
    csr: bool,
    reverse: bool,
) {
    let (rows, cols) = m.dim();
    let mut writer = options.create(path).unwrap();
    let header = if csr {
        Header::CsrMatrix {
            rows: rows as u64,
            cols: cols as u64,
            value_type: ValueType::F64,
        }
    } else {
        dense_header(rows, cols, ValueType::F64)
    };
    writer.begin(header).unwrap();
    let mut tiles = Vec::new();
    for r in (0..rows).step_by(tile.0) {
        for c in (0..cols).step_by(tile.1) {
            tiles.push((r, c));
        }
    }
    if reverse {
        tiles.reverse();
    }
    for (r, c) in tiles {
        let view = m.slice(s![r..(r + tile.0).min(rows), c..(c + tile.1).min(cols)]);
        if csr {
            let sparse = CsMat::csr_from_dense(view, 0.0);
            writer
                .write_csr_tile(r as u64, c as u64, sparse.view())
                .unwrap();
        } else {
            writer.write_dense_tile(r as u64, c as u64, view).unwrap();
        }
    }
    writer.finish().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn tiles_in_order_give_the_bytes_of_to_vec(
        (rows, cols) in (1usize..30, 1usize..30),
        tile in (1usize..12, 1usize..12),
        policy in select(vec![BlockPolicy::Auto, BlockPolicy::Smallest, BlockPolicy::Dense,
            BlockPolicy::Sparse, BlockPolicy::UltraSparse]),
        narrow in any::<bool>(),
        csr in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let dir = temp_dir("prop");
        let path = dir.join("m.dbdf");
        let m = matrix(rows, cols, seed);
        let options = Options { block_policy: policy, narrow, tile: Some((tile.0 as u32, tile.1 as u32)), ..Options::new() };
        write_tiles(&path, &m, tile, &options, csr, false);
        let expected = if csr {
            options.to_vec(&Csr(CsMat::csr_from_dense(m.view(), 0.0))).unwrap()
        } else {
            options.to_vec(&Dense(m.clone())).unwrap()
        };
        prop_assert_eq!(std::fs::read(&path).unwrap(), expected);
        // Any order: other bytes, the same matrix.
        write_tiles(&path, &m, tile, &options, csr, true);
        let back: Dense<f64> = from_file(&path).unwrap();
        prop_assert_eq!(back.0, m);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn runtime_row_bands_give_the_bytes_of_to_vec(
        (rows, cols) in (0usize..30, 1usize..30),
        band in 1usize..12,
        csr in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let dir = temp_dir("runtime");
        let path = dir.join("m.dbdf");
        let m = matrix(rows, cols, seed);
        let options = Options { dialect: Some(Dialect::Runtime), ..Options::new() };
        write_tiles(&path, &m, (band, cols), &options, csr, false);
        let expected = if csr {
            options.to_vec(&Csr(CsMat::csr_from_dense(m.view(), 0.0))).unwrap()
        } else {
            options.to_vec(&Dense(m.clone())).unwrap()
        };
        prop_assert_eq!(std::fs::read(&path).unwrap(), expected);
        // DAPHNE's sidecar, with numNonZeros for CSR.
        let meta = std::fs::read_to_string(dir.join("m.dbdf.meta")).unwrap();
        prop_assert_eq!(meta.contains("numNonZeros"), csr);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn frame() -> Object {
    Object::frame(vec![
        ("id".into(), Values::I64((0..17).collect())),
        (
            "x".into(),
            Values::F32((0..17).map(|i| i as f32 / 2.0).collect()),
        ),
    ])
    .unwrap()
}

fn frame_header() -> Header {
    Header::Frame {
        rows: 17,
        columns: vec![
            Column {
                label: "id".into(),
                value_type: ValueType::I64,
            },
            Column {
                label: "x".into(),
                value_type: ValueType::F32,
            },
        ],
    }
}

#[test]
fn frames_stream_in_row_bands_in_both_dialects() {
    let dir = temp_dir("frames");
    let whole = frame();
    let columns = whole.columns().unwrap();
    for (options, runtime) in [
        (
            Options {
                tile: Some((4, 1)),
                ..Options::new()
            },
            false,
        ),
        (
            Options {
                dialect: Some(Dialect::Runtime),
                ..Options::new()
            },
            true,
        ),
    ] {
        let path = dir.join("f.dbdf");
        let mut writer = options.create(&path).unwrap();
        writer.begin(frame_header()).unwrap();
        for start in (0..17).step_by(5) {
            let end = (start + 5).min(17);
            let band: Vec<Values> = columns
                .iter()
                .map(|c| {
                    let mut v = Values::new(c.value_type());
                    (start..end).for_each(|r| assert!(v.push(c.get(r).unwrap())));
                    v
                })
                .collect();
            writer.write_frame_rows(start as u64, &band).unwrap();
        }
        writer.finish().unwrap();
        let back: Object = from_file(&path).unwrap();
        assert_eq!(back.columns().unwrap(), columns, "{options:?}");
        if runtime {
            assert_eq!(
                std::fs::read(&path).unwrap(),
                options.to_vec(&whole).unwrap()
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn several_objects_follow_each_other() {
    let dir = temp_dir("several");
    let path = dir.join("two.dbdf");
    let m = matrix(5, 4, 1);
    let mut writer = DbdfWriter::create(&path).unwrap();
    writer.begin(dense_header(5, 4, ValueType::F64)).unwrap();
    writer.write_dense_tile(0, 0, m.view()).unwrap();
    writer.begin(frame_header()).unwrap();
    let columns = frame().columns().unwrap();
    writer.write_frame_rows(0, &columns).unwrap();
    writer.begin(dense_header(0, 3, ValueType::U8)).unwrap();
    writer.finish().unwrap();
    let mut file = serde_daphne::DbdfFile::open(&path).unwrap();
    assert_eq!(file.objects().len(), 3);
    assert_eq!(file.read_window::<f64>(0, 0..5, 0..4).unwrap(), m);
    assert_eq!(file.object_at(1).unwrap(), frame());
    assert_eq!(file.objects()[2].header.shape(), (0, 3));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn misuse_is_a_typed_error_and_leaves_no_file() {
    let dir = temp_dir("misuse");
    let path = dir.join("m.dbdf");
    let tile = Array2::<f64>::ones((2, 2));
    let begin = |options: &Options| {
        let mut w = options.create(&path).unwrap();
        w.begin(dense_header(4, 4, ValueType::F64)).unwrap();
        w
    };
    // Outside the object: refused before any byte, the writer stays usable.
    let mut w = begin(&Options::new());
    assert_error!(
        w.write_dense_tile(3, 3, tile.view()),
        BlockOutsideObject { row: 3, col: 3, .. }
    );
    // Wrong value type: i64 does not fit f64 exactly.
    assert_error!(
        w.write_dense_tile(0, 0, Array2::<i64>::zeros((2, 2)).view()),
        TileValueType {
            object: 0,
            expected: ValueType::F64,
            found: ValueType::I64
        }
    );
    // A gap at finish.
    w.write_dense_tile(0, 0, tile.view()).unwrap();
    w.write_dense_tile(0, 2, Array2::<f32>::ones((2, 2)).view())
        .unwrap();
    assert_error!(
        w.finish(),
        IncompleteObject {
            object: 0,
            covered: 8,
            cells: 16
        }
    );
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    // Overlap, found once the areas add up, and a tile after the object is covered.
    let mut w = begin(&Options::new());
    w.write_dense_tile(0, 0, Array2::<f64>::ones((3, 4)).view())
        .unwrap();
    assert_error!(
        w.write_dense_tile(2, 0, tile.view()),
        OverlappingBlocks { row: 2, col: 0, .. }
    );
    drop(w);
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    let mut w = begin(&Options::new());
    w.write_dense_tile(0, 0, Array2::<f64>::ones((4, 4)).view())
        .unwrap();
    assert_error!(w.write_dense_tile(0, 0, tile.view()), OverlappingBlocks);
    drop(w);
    // The next object needs the previous one complete.
    let mut w = begin(&Options::new());
    assert_error!(
        w.begin(dense_header(1, 1, ValueType::F64)),
        IncompleteObject { covered: 0, .. }
    );
    drop(w);
    // Runtime dialect: full-width bands in order only.
    let mut w = begin(&Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    });
    assert_error!(
        w.write_dense_tile(0, 0, tile.view()),
        TileOrder { expected: 0, .. }
    );
    assert_error!(
        w.write_dense_tile(2, 0, Array2::<f64>::ones((2, 4)).view()),
        TileOrder {
            expected: 0,
            found: (2, 0),
            ..
        }
    );
    w.write_dense_tile(0, 0, Array2::<f64>::ones((2, 4)).view())
        .unwrap();
    drop(w); // unfinished
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    // A runtime CSR matrix dropped midway leaves neither the file nor its spills.
    let mut w = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    }
    .create(&path)
    .unwrap();
    w.begin(Header::CsrMatrix {
        rows: 4,
        cols: 4,
        value_type: ValueType::F64,
    })
    .unwrap();
    let band = CsMat::csr_from_dense(Array2::<f64>::eye(4).slice(s![0..2, ..]), 0.0);
    w.write_csr_tile(0, 0, band.view()).unwrap();
    drop(w);
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runtime_writer_refuses_tiling_options() {
    let dir = temp_dir("options");
    let options = Options {
        dialect: Some(Dialect::Runtime),
        tile: Some((2, 2)),
        ..Options::new()
    };
    assert_error!(options.create(dir.join("m.dbdf")), NotInDialect);
    assert!(listing(&dir).is_empty());
    let m: Dense<f64> =
        from_slice(&Options::new().to_vec(&Dense(matrix(2, 2, 0))).unwrap()).unwrap();
    assert_eq!(m.0.dim(), (2, 2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes with `write` into a file and into a stream: the same bytes; the stream's sidecars
/// (returned) are checked by the caller against what the file's readers make.
fn file_and_stream(
    dir: &Path,
    options: &Options,
    write: impl Fn(&mut DbdfWriter<'_>),
) -> (PathBuf, Vec<(&'static str, Vec<u8>)>) {
    let path = dir.join("m.dbdf");
    let mut file = options.create(&path).unwrap();
    write(&mut file);
    assert_eq!(
        file.finish().unwrap(),
        Vec::new(),
        "a file's sidecars are in place"
    );
    let mut streamed = Vec::new();
    let mut stream = DbdfWriter::to_stream(&mut streamed, options).unwrap();
    write(&mut stream);
    let sidecars = stream.finish().unwrap();
    assert_eq!(streamed, std::fs::read(&path).unwrap());
    (path, sidecars)
}

/// A stream holds the file's bytes, and comes with the block index a walk over the file
/// makes (`BlockIndex::of_file`), for every block type, frames, empty objects and several
/// objects; in DAPHNE's runtime dialect with the file's `.meta` instead.
#[test]
fn a_stream_is_the_file_with_the_sidecars_its_readers_make() {
    let dir = temp_dir("to_stream");
    let tiled = |policy| Options {
        tile: Some((8, 8)),
        block_policy: policy,
        ..Options::new()
    };
    let dense = matrix(37, 23, 5);
    let sparse = dense.mapv(|x| if x > 90.0 { x } else { 0.0 });
    let csr = CsMat::csr_from_dense(sparse.view(), 0.0);
    // Past the first MiB, which the stream keeps whole: the headers alone.
    let large = matrix(700, 300, 9);
    type Writes<'a> = Box<dyn Fn(&mut DbdfWriter<'_>) + 'a>;
    let writes: Vec<(Options, Writes<'_>)> = vec![
        (
            tiled(BlockPolicy::Smallest),
            Box::new(|w| {
                w.begin(dense_header(37, 23, ValueType::F64)).unwrap();
                w.write_dense_tile(0, 0, dense.view()).unwrap();
                // A second object, with empty blocks (no cells).
                w.begin(dense_header(0, 20, ValueType::F64)).unwrap();
            }),
        ),
        (
            Options {
                tile: Some((64, 40)),
                ..tiled(BlockPolicy::Smallest)
            },
            Box::new(|w| {
                w.begin(dense_header(700, 300, ValueType::F64)).unwrap();
                w.write_dense_tile(0, 0, large.view()).unwrap();
            }),
        ),
        (
            tiled(BlockPolicy::Auto),
            Box::new(|w| {
                let (rows, cols) = (37, 23);
                w.begin(Header::CsrMatrix {
                    rows,
                    cols,
                    value_type: ValueType::F64,
                })
                .unwrap();
                w.write_csr_tile(0, 0, csr.view()).unwrap();
            }),
        ),
        (
            Options {
                tile: Some((5, 1)),
                ..Options::new()
            },
            Box::new(|w| {
                w.begin(frame_header()).unwrap();
                let ids = Values::I64((0..17).collect());
                let xs = Values::F32((0..17).map(|i| i as f32 / 4.0).collect());
                w.write_frame_rows(0, &[ids, xs]).unwrap();
            }),
        ),
    ];
    for (options, write) in &writes {
        let (path, sidecars) = file_and_stream(&dir, options, write);
        let index = serde_daphne::BlockIndex::of_file(&path, &Options::new()).unwrap();
        assert_eq!(sidecars, vec![(".index", index.to_vec())]);
    }
    // The runtime dialect: `.meta` as the file gets it; a CSR matrix (whose non-zero count
    // comes first, known at the end) in bands.
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let bands = |w: &mut DbdfWriter<'_>| {
        w.begin(Header::CsrMatrix {
            rows: 37,
            cols: 23,
            value_type: ValueType::F64,
        })
        .unwrap();
        for r in (0..37).step_by(10) {
            let band = csr.slice_outer(r..(r + 10).min(37));
            w.write_csr_tile(r as u64, 0, band.view()).unwrap();
        }
    };
    let dense_rows = |w: &mut DbdfWriter<'_>| {
        w.begin(dense_header(37, 23, ValueType::F64)).unwrap();
        w.write_dense_tile(0, 0, dense.view()).unwrap();
    };
    for write in [&bands as &dyn Fn(&mut DbdfWriter<'_>), &dense_rows] {
        let (path, sidecars) = file_and_stream(&dir, &runtime, write);
        let meta = std::fs::read(serde_daphne::lowlevel::sidecar_path(&path)).unwrap();
        assert_eq!(sidecars, vec![(".meta", meta)]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bands of a CSR matrix's rows, `band` rows each, counting the passes over them; the
/// second pass (from 1) changes a value to zero when `changes`.
struct CsrBands {
    matrix: CsMat<f64>,
    band: usize,
    count_known: bool,
    changes: bool,
    passes: usize,
}

impl serde_daphne::lowlevel::RowBands<f64> for CsrBands {
    fn dense(&self) -> bool {
        false
    }

    fn count_nonzero(&mut self) -> serde_daphne::Result<Option<u64>> {
        Ok(self.count_known.then(|| self.matrix.nnz() as u64))
    }

    fn for_each_band(
        &mut self,
        each: &mut dyn FnMut(&MatrixRef<'_, f64>) -> serde_daphne::Result<bool>,
    ) -> serde_daphne::Result<()> {
        self.passes += 1;
        let mut values = self.matrix.data().to_vec();
        if self.changes && self.passes == 2 {
            values[0] = 0.0;
        }
        let indptr = self.matrix.indptr();
        let (offsets, cols) = (indptr.to_proper(), self.matrix.indices());
        for r in (0..self.matrix.rows()).step_by(self.band) {
            let end = (r + self.band).min(self.matrix.rows());
            let base = offsets[r];
            let local: Vec<usize> = offsets[r..=end].iter().map(|o| o - base).collect();
            let (from, to) = (base, offsets[end]);
            let band = MatrixRef::csr(
                end - r,
                self.matrix.cols(),
                &local,
                &cols[from..to],
                &values[from..to],
            )?;
            if !each(&band)? {
                break;
            }
        }
        Ok(())
    }
}

/// A stream's CSR matrix in DAPHNE's runtime dialect, written whole from bands, takes a pass
/// per section (and one to count, unless the bands know the count) and no scratch file: the
/// bytes and `.meta` DAPHNE's runtime writes. A source whose rows change between the passes
/// is refused.
#[test]
fn a_streamed_runtime_csr_matrix_takes_a_pass_per_section() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime");
    let expected = std::fs::read(golden.join("csr_f64_5x6.dbdf")).unwrap();
    let meta = std::fs::read(golden.join("csr_f64_5x6_nnz.dbdf.meta")).unwrap();
    let Csr(matrix) = from_file::<_, Csr<f64>>(golden.join("csr_f64_5x6.dbdf")).unwrap();
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let write = |bands: &mut CsrBands| {
        let mut out = Vec::new();
        let mut w = DbdfWriter::to_stream(&mut out, &runtime)?;
        w.begin(Header::CsrMatrix {
            rows: 5,
            cols: 6,
            value_type: ValueType::F64,
        })?;
        w.write_untiled(bands)?;
        let sidecars = w.finish()?;
        Ok::<_, serde_daphne::Error>((out, sidecars))
    };
    for (count_known, passes) in [(false, 4), (true, 3)] {
        for band in [1, 2, 5] {
            let mut bands = CsrBands {
                matrix: matrix.clone(),
                band,
                count_known,
                changes: false,
                passes: 0,
            };
            let (bytes, sidecars) = write(&mut bands).unwrap();
            assert_eq!(bytes, expected, "bands of {band}");
            assert_eq!(sidecars, vec![(".meta", meta.clone())]);
            assert_eq!(bands.passes, passes);
        }
    }
    let mut changing = CsrBands {
        matrix,
        band: 2,
        count_known: false,
        changes: true,
        passes: 0,
    };
    assert_error!(write(&mut changing), InvalidValue);
}

/// A value serialized as a stream (`Options::to_stream`) holds the bytes `Options::to_vec` gives and
/// comes with the sidecars a file's readers make: the block index of a walk over the file
/// (tiled, untiled, several objects, a frame; past the first MiB), or DAPHNE's `.meta`.
#[test]
fn a_serialized_stream_comes_with_the_sidecars_its_readers_make() {
    let dir = temp_dir("to_stream_with");
    let path = dir.join("s.dbdf");
    let large = Dense(matrix(700, 300, 3));
    let sparse = Csr(CsMat::csr_from_dense(
        matrix(50, 40, 4)
            .mapv(|x| if x > 80.0 { x } else { 0.0 })
            .view(),
        0.0,
    ));
    let tiled = Options {
        tile: Some((64, 40)),
        ..Options::new()
    };
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let check = |value: &dyn erased::Value, options: &Options, suffix: &str| {
        let mut streamed = Vec::new();
        let sidecars = value.to_stream(&mut streamed, options);
        assert_eq!(streamed, value.to_vec(options));
        std::fs::write(&path, &streamed).unwrap();
        let expected = match suffix {
            ".index" => serde_daphne::BlockIndex::of_file(&path, &Options::new())
                .unwrap()
                .to_vec(),
            _ => {
                value.to_file(&path, options);
                std::fs::read(serde_daphne::lowlevel::sidecar_path(&path)).unwrap()
            }
        };
        assert_eq!(sidecars, vec![(suffix, expected)]);
    };
    check(&large, &Options::new(), ".index");
    check(&large, &tiled, ".index");
    check(&(large.clone(), sparse.clone(), frame()), &tiled, ".index");
    check(&sparse, &runtime, ".meta");
    check(&frame(), &runtime, ".meta");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Values of any type behind one reference, for the checks above.
mod erased {
    use serde_daphne::Options;

    pub trait Value {
        fn to_stream(&self, out: &mut Vec<u8>, options: &Options) -> Vec<(&'static str, Vec<u8>)>;
        fn to_vec(&self, options: &Options) -> Vec<u8>;
        fn to_file(&self, path: &std::path::Path, options: &Options);
    }

    impl<T: serde::Serialize> Value for T {
        fn to_stream(&self, out: &mut Vec<u8>, options: &Options) -> Vec<(&'static str, Vec<u8>)> {
            options.to_stream(out, self).unwrap()
        }
        fn to_vec(&self, options: &Options) -> Vec<u8> {
            options.to_vec(self).unwrap()
        }
        fn to_file(&self, path: &std::path::Path, options: &Options) {
            options.to_file(path, self).unwrap()
        }
    }
}

/// A runtime-dialect CSR matrix without rows, streamed: the object is there (its arrays were
/// written from spills its first tile makes, and it has no tile), as in a file.
#[test]
fn a_streamed_runtime_csr_matrix_without_rows_is_written() {
    use serde_daphne::{DataType, Header, ValueType};
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let header = Header::matrix(DataType::CsrMatrix, 0, 3, ValueType::U64);
    let mut streamed = Vec::new();
    let mut writer = DbdfWriter::to_stream(&mut streamed, &runtime).unwrap();
    writer.begin(header.clone()).unwrap();
    writer.finish().unwrap();
    let dir = temp_dir("runtime_csr_no_rows");
    let path = dir.join("m.dbdf");
    let mut writer = runtime.create(&path).unwrap();
    writer.begin(header.clone()).unwrap();
    writer.finish().unwrap();
    assert!(streamed == std::fs::read(&path).unwrap());
    let back: Object = runtime.from_slice(&streamed).unwrap();
    assert_eq!((back.header(), back.nnz()), (&header, 0));
    std::fs::remove_dir_all(&dir).unwrap();
}
