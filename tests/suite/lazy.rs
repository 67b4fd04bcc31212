//! Lazy reading (`DbdfFile`): the index against the bytes, windows of every block type,
//! tiling, narrowing and both dialects against reading the whole file, frames, blocks.

use serde_daphne::lowlevel::portable;
use std::io::Cursor;
use std::path::Path;

use ndarray::{s, Array2};
use serde_daphne::ObjectInfo;
use serde_daphne::{
    from_slice, BlockPolicy, BlockType, Csr, DbdfFile, Dense, Dialect, Object, Options, ValueType,
    Values,
};
use sprs::CsMat;

/// 37 x 29 with an all-zero band (empty blocks), a sparse band and a dense band.
fn matrix() -> Array2<f64> {
    Array2::from_shape_fn((37, 29), |(r, c)| match r {
        0..=9 => 0.0,
        10..=19 if (r * 7 + c * 3) % 11 != 0 => 0.0,
        _ => (r * 100 + c) as f64 / 4.0 - 300.0,
    })
}

fn option_sets() -> Vec<Options> {
    let mut sets = vec![Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    }];
    for policy in [
        BlockPolicy::Auto,
        BlockPolicy::Smallest,
        BlockPolicy::Dense,
        BlockPolicy::Sparse,
        BlockPolicy::UltraSparse,
    ] {
        sets.push(Options {
            block_policy: policy,
            ..Options::new()
        });
        sets.push(Options {
            block_policy: policy,
            tile: Some((8, 8)),
            ..Options::new()
        });
        sets.push(Options {
            block_policy: policy,
            tile: Some((5, 7)),
            narrow: true,
            ..Options::new()
        });
    }
    sets
}

fn windows() -> Vec<(std::ops::Range<u64>, std::ops::Range<u64>)> {
    vec![
        (0..37, 0..29),
        (0..0, 0..0),
        (3..3, 0..29),
        (0..37, 5..5),
        (7..23, 6..17),
        (12..13, 0..29),
        (36..37, 28..29),
        (9..31, 27..29),
        (20..37, 0..8),
    ]
}

fn open(bytes: &[u8]) -> DbdfFile<Cursor<&[u8]>> {
    Options::new()
        .open_reader(Cursor::new(bytes))
        .expect("the file indexes")
}

#[test]
fn windows_equal_slices_of_the_whole_matrix_for_every_layout() {
    let m = matrix();
    for options in option_sets() {
        for sparse in [false, true] {
            let bytes = if sparse {
                options
                    .to_vec(&Csr(CsMat::csr_from_dense(m.view(), 0.0)))
                    .unwrap()
            } else {
                options.to_vec(&Dense(m.clone())).unwrap()
            };
            let whole: Dense<f64> = from_slice(&bytes).unwrap();
            assert_eq!(whole.0, m);
            let mut file = open(&bytes);
            assert_eq!(file.objects().len(), 1);
            for (rows, cols) in windows() {
                let expected = m.slice(s![
                    rows.start as usize..rows.end as usize,
                    cols.start as usize..cols.end as usize
                ]);
                let got = file
                    .read_window::<f64>(0, rows.clone(), cols.clone())
                    .unwrap();
                assert_eq!(
                    got, expected,
                    "{options:?} sparse {sparse} {rows:?} {cols:?}"
                );
                // Into a buffer holding other values: cells no block stores become zeros.
                let mut reused = vec![7.5; expected.len()];
                file.read_window_into::<f64>(0, rows.clone(), cols.clone(), &mut reused)
                    .unwrap();
                let expected_cells: Vec<f64> = expected.iter().copied().collect();
                assert_eq!(reused, expected_cells, "{options:?} {rows:?} {cols:?}");
                let csr = file.read_window_csr::<f64>(0, rows.clone(), cols.clone());
                let csr = csr.unwrap();
                assert_eq!(csr.to_dense(), expected, "{options:?} {rows:?} {cols:?}");
                assert_eq!(csr.nnz(), expected.iter().filter(|x| **x != 0.0).count());
            }
            let read: Dense<f64> = file.read_object(0).unwrap();
            assert_eq!(read.0, m);
        }
    }
}

#[test]
fn the_index_names_each_block_and_its_bytes() {
    let m = matrix();
    let options = Options {
        block_policy: BlockPolicy::Smallest,
        tile: Some((10, 29)),
        ..Options::new()
    };
    let bytes = options.to_vec(&Dense(m.clone())).unwrap();
    let object: Object = from_slice(&bytes).unwrap();
    let file = open(&bytes);
    let info: &ObjectInfo = &file.objects()[0];
    assert_eq!(info.range, 0..bytes.len() as u64);
    assert_eq!(info.dialect, Dialect::Spec);
    assert_eq!(info.header, *object.header());
    let types: Vec<BlockType> = info.blocks.iter().map(|b| b.block_type).collect();
    let expected: Vec<BlockType> = object
        .blocks()
        .iter()
        .map(|b| b.data.block_type())
        .collect();
    assert_eq!(types, expected);
    assert_eq!(types[0], BlockType::Empty);
    assert_eq!(types[1], BlockType::Sparse);
    for (k, block) in info.blocks.iter().enumerate() {
        assert_eq!(block.place, object.blocks()[k].place);
        assert_eq!(Some(block.range.start), object.block_offset(k));
        let end = object.block_offset(k + 1).unwrap_or(bytes.len() as u64);
        assert_eq!(block.range.end, end);
        assert_eq!(block.value_type, object.blocks()[k].data.value_type());
    }
    // The sparse block's count is the one stored in its header.
    assert_eq!(
        info.blocks[1].nnz(),
        Some(object.blocks()[1].data.stored() as u64)
    );
}

#[test]
fn blocks_come_one_at_a_time_and_rebuild_the_object() {
    let m = matrix();
    for options in option_sets() {
        let bytes = options.to_vec(&Dense(m.clone())).unwrap();
        let whole: Object = from_slice(&bytes).unwrap();
        let mut file = open(&bytes);
        let blocks: Vec<_> = file.blocks(0).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(blocks, whole.blocks(), "{options:?}");
        assert_eq!(file.object_at(0).unwrap(), whole);
        file.validate().unwrap();
    }
}

#[test]
fn several_objects_are_indexed_in_order() {
    let m = matrix();
    let tiled = Options {
        tile: Some((16, 16)),
        ..Options::new()
    };
    let mut bytes = tiled.to_vec(&Dense(m.clone())).unwrap();
    let second = tiled.to_vec(&vec![1u8, 2, 3]).unwrap();
    let first_len = bytes.len() as u64;
    bytes.extend_from_slice(&second);
    let mut file = open(&bytes);
    assert_eq!(file.objects().len(), 2);
    assert_eq!(file.objects()[1].range, first_len..bytes.len() as u64);
    let v: Vec<u8> = file.read_object(1).unwrap();
    assert_eq!(v, [1, 2, 3]);
    assert_eq!(
        file.read_window::<u8>(1, 1..3, 0..1)
            .unwrap()
            .into_raw_vec_and_offset()
            .0,
        [2, 3]
    );
    assert_error!(file.read_window::<f64>(2, 0..1, 0..1), InvalidValue);
}

#[test]
fn narrowed_blocks_convert_and_refuse_as_whole_reads_do() {
    let m = matrix().mapv(|x| x.trunc());
    let bytes = Options {
        tile: Some((8, 8)),
        narrow: true,
        ..Options::new()
    }
    .to_vec(&Dense(m.clone()))
    .unwrap();
    let mut file = open(&bytes);
    let i32s = file.read_window::<i32>(0, 0..37, 0..29).unwrap();
    assert_eq!(i32s, m.mapv(|x| x as i32));
    // -300.0 does not fit u8, in the window as in the whole read.
    assert_error!(file.read_window::<u8>(0, 20..37, 0..29), LossyConversion);
    assert_error!(from_slice::<Dense<u8>>(&bytes), LossyConversion);
}

#[test]
fn windows_outside_the_object_and_of_frames_are_refused() {
    let bytes = Options::new().to_vec(&Dense(matrix())).unwrap();
    let mut file = open(&bytes);
    assert_error!(
        file.read_window::<f64>(0, 30..38, 0..1),
        ShapeMismatch {
            rows: 37,
            cols: 29,
            ..
        }
    );
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 5..4;
    assert_error!(file.read_window::<f64>(0, reversed, 0..1), ShapeMismatch);
    let frame = Object::frame(vec![("a".into(), Values::I32(vec![1, 2]))]).unwrap();
    let frame_bytes = frame.to_bytes().unwrap();
    let mut file = open(&frame_bytes);
    assert_error!(file.read_window::<f64>(0, 0..1, 0..1), DataTypeMismatch);
}

fn frame() -> Object {
    let rows = 23;
    Object::frame(vec![
        (
            "id".into(),
            Values::I64((0..rows).map(|i| i * 3 - 20).collect()),
        ),
        (
            "x".into(),
            Values::F64((0..rows).map(|i| i as f64 / 8.0).collect()),
        ),
        (
            "flag".into(),
            Values::U8((0..rows).map(|i| (i % 3 == 0) as u8).collect()),
        ),
        (
            "w".into(),
            Values::F32((0..rows).map(|i| (i % 5) as f32).collect()),
        ),
    ])
    .unwrap()
}

#[test]
fn frame_rows_of_chosen_columns_in_both_dialects() {
    let frame = frame();
    for options in [
        Options::new(),
        Options {
            tile: Some((5, 1)),
            ..Options::new()
        },
        Options {
            block_policy: BlockPolicy::Smallest,
            tile: Some((7, 1)),
            narrow: true,
            ..Options::new()
        },
        Options {
            dialect: Some(Dialect::Runtime),
            ..Options::new()
        },
    ] {
        let bytes = options.to_vec(&frame).unwrap();
        let whole: Object = options.from_slice(&bytes).unwrap();
        let mut file = options.open_reader(Cursor::new(&bytes[..])).unwrap();
        // Runtime frames without a sidecar are labelled col_<i>.
        let (w, id) = match &file.objects()[0].header {
            serde_daphne::Header::Frame { columns, .. } => {
                (columns[3].label.clone(), columns[0].label.clone())
            }
            _ => unreachable!(),
        };
        let part = file.read_frame(0, 4..19, &[&w, &id]).unwrap();
        assert_eq!(part.labels(), [&w, &id]);
        assert_eq!(part.shape(), (15, 2));
        let columns = part.columns().unwrap();
        let all = whole.columns().unwrap();
        for (got, source) in columns.iter().zip([3, 0]) {
            let expected: Vec<_> = (4..19).map(|r| all[source].get(r).unwrap()).collect();
            let got: Vec<_> = (0..15).map(|r| got.get(r).unwrap()).collect();
            assert_eq!(got, expected, "{options:?}");
        }
        assert_eq!(columns[1].value_type(), ValueType::I64);
        let everything = file.read_frame(0, 0..23, &[]).unwrap();
        assert_eq!(everything.columns().unwrap(), all, "{options:?}");
        assert_error!(file.read_frame(0, 0..1, &["nope"]), FrameMismatch);
    }
}

#[test]
fn frame_columns_read_from_files_on_every_core_as_from_bytes() {
    // From a file, frames of plain column pieces are read at positions on every core; the
    // others (narrowed, sparse pieces, the runtime dialect) as from bytes.
    let frame = frame();
    let path = std::env::temp_dir().join(format!("lazy_frame_columns_{}.dbdf", std::process::id()));
    for options in [
        Options::new(),
        Options {
            tile: Some((5, 1)),
            ..Options::new()
        },
        Options {
            tile: Some((7, 1)),
            block_policy: BlockPolicy::Smallest,
            narrow: true,
            ..Options::new()
        },
        Options {
            dialect: Some(Dialect::Runtime),
            ..Options::new()
        },
    ] {
        let bytes = options.to_vec(&frame).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let mut in_memory = options.open_reader(Cursor::new(&bytes[..])).unwrap();
        let mut on_disk = options.open(&path).unwrap();
        for (rows, wanted) in [
            (0..23, vec![0, 1, 2, 3]),
            (4..19, vec![3, 0]),
            (6..7, vec![2]),
            (9..9, vec![1]),
        ] {
            let want = in_memory
                .read_frame_columns(0, rows.clone(), &wanted)
                .unwrap();
            let got = on_disk
                .read_frame_columns(0, rows.clone(), &wanted)
                .unwrap();
            assert_eq!(
                got.columns().unwrap(),
                want.columns().unwrap(),
                "{options:?} {rows:?}"
            );
            assert_eq!(got.labels(), want.labels());
        }
        // A file cut short after it was indexed: an error, not a short column. (The portable
        // path may serve these bytes from the window it read while indexing.)
        std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
        if options.dialect != Some(Dialect::Runtime) && !portable() {
            assert!(
                on_disk.read_frame_columns(0, 0..23, &[0, 1, 2, 3]).is_err(),
                "{options:?}"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn daphne_runtime_golden_files_open_lazily_like_whole_reads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime");
    let mut opened = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "dbdf") {
            continue;
        }
        let whole = serde_daphne::from_file::<_, Object>(&path);
        let lazy = DbdfFile::open(&path).and_then(|mut f| {
            let object = f.object_at(0)?;
            f.validate()?;
            Ok((f, object))
        });
        match (whole, lazy) {
            (Ok(whole), Ok((mut file, object))) => {
                opened += 1;
                assert_eq!(object, whole, "{}", path.display());
                assert_eq!(file.objects()[0].header, *whole.header());
                if whole.header().matrix_value_type().is_some() {
                    let (r, c) = whole.shape();
                    let window = file.read_window::<f64>(0, r / 2..r, 0..c.min(2));
                    let dense = whole.dense_vec::<f64>();
                    if let (Ok(window), Ok(dense)) = (window, dense) {
                        let m = Array2::from_shape_vec((r as usize, c as usize), dense).unwrap();
                        let expected = m.slice(s![r as usize / 2.., ..(c as usize).min(2)]);
                        // Bitwise: the files hold NaNs.
                        let bits = |a: ndarray::ArrayView2<f64>| a.mapv(f64::to_bits);
                        assert_eq!(bits(window.view()), bits(expected), "{}", path.display());
                    }
                }
            }
            (Err(_), Err(_)) => {}
            (whole, lazy) => panic!(
                "{}: whole read {:?}, lazy {:?}",
                path.display(),
                whole.map(|_| ()),
                lazy.map(|_| ())
            ),
        }
    }
    assert!(opened >= 30, "{opened} golden files opened");
}

#[test]
fn mapped_and_plain_files_read_the_same_windows() {
    let m = matrix();
    let path =
        std::env::temp_dir().join(format!("serde_daphne_lazy_map_{}.dbdf", std::process::id()));
    let options = Options {
        tile: Some((6, 5)),
        block_policy: BlockPolicy::Smallest,
        ..Options::new()
    };
    options.to_file(&path, &Dense(m.clone())).unwrap();
    for map in [true, false] {
        let mut file = Options {
            memory_map: map,
            ..Options::new()
        }
        .open(&path)
        .unwrap();
        for (rows, cols) in windows() {
            let expected = m.slice(s![
                rows.start as usize..rows.end as usize,
                cols.start as usize..cols.end as usize
            ]);
            let got = file.read_window::<f64>(0, rows, cols).unwrap();
            assert_eq!(got, expected, "memory map {map}");
        }
        file.validate().unwrap();
    }
    std::fs::remove_file(&path).unwrap();
}

/// Regression: a spec-dialect file written where a runtime-dialect file (with its sidecar)
/// was kept the old sidecar, which then described another file and broke reading.
#[test]
fn a_spec_file_replacing_a_runtime_file_removes_its_sidecar() {
    let dir = std::env::temp_dir().join(format!("serde_daphne_stale_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.dbdf");
    let meta = dir.join("m.dbdf.meta");
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let small = ndarray::array![[1u8, 2], [3, 4]];
    runtime.to_file(&path, &Dense(matrix())).unwrap();
    assert!(meta.exists());
    serde_daphne::to_file(&path, &Dense(small.clone())).unwrap();
    assert!(!meta.exists());
    let back: Dense<u8> = serde_daphne::from_file(&path).unwrap();
    assert_eq!(back.0, small);
    runtime.to_file(&path, &Dense(matrix())).unwrap();
    let mut writer = serde_daphne::DbdfWriter::create(&path).unwrap();
    writer
        .begin(serde_daphne::Header::DenseMatrix {
            rows: 2,
            cols: 2,
            value_type: ValueType::U8,
        })
        .unwrap();
    writer.write_dense_tile(0, 0, small.view()).unwrap();
    writer.finish().unwrap();
    assert!(!meta.exists());
    assert_eq!(
        DbdfFile::open(&path)
            .unwrap()
            .read_window::<u8>(0, 0..2, 0..2)
            .unwrap(),
        small
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 37-byte file claiming a (2^32 - 1)² f64 matrix in one empty block: indexing and windows
/// are fine, materializing it whole is refused before allocating, as typed reads refuse it.
#[test]
fn object_checked_refuses_what_typed_reads_refuse() {
    let n = u64::from(u32::MAX);
    let mut bytes = vec![1u8, 1];
    bytes.extend_from_slice(&n.to_le_bytes());
    bytes.extend_from_slice(&n.to_le_bytes());
    bytes.push(10); // f64
    bytes.extend_from_slice(&[0; 16]); // the block at (0, 0)
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.push(0); // empty
    let mut file = open(&bytes);
    let info = &file.objects()[0];
    assert_eq!(info.natural_bytes(), u128::from(n) * u128::from(n) * 8);
    assert!(file.object_at(0).is_ok());
    assert_eq!(file.read_window::<f64>(0, 0..2, 0..2).unwrap().sum(), 0.0);
    let checked = file.object_checked(0).unwrap_err();
    assert_error!(checked, AllocationLimit { offset: 0, .. });
    assert_error!(from_slice::<Dense<f64>>(&bytes), AllocationLimit);
    // Within the limit, the same object is read.
    let small = Options::new()
        .to_vec(&Dense(Array2::<f64>::zeros((3, 4))))
        .unwrap();
    let mut file = open(&small);
    assert_eq!(file.objects()[0].natural_bytes(), 96);
    assert_eq!(file.object_checked(0).unwrap().shape(), (3, 4));
}

#[test]
fn values_of_32_mib_and_more_read_on_every_core_are_the_files() {
    // Large values are read from files with positional reads split between the cores
    // (from_file, and DbdfFile's plain reads): the bytes and what follows must be exact.
    let (rows, cols) = (1025, 4096); // 33.6 MB of f64, past the 32 MiB split
    let m = Array2::from_shape_fn((rows, cols), |(r, c)| (r * cols + c) as f64 * 0.5 - 7.0);
    let tail = Array2::from_shape_fn((3, 2), |(r, c)| (r + 10 * c) as f64);
    let dir = std::env::temp_dir().join(format!("serde_daphne_pread_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (one, two) = (dir.join("one.dbdf"), dir.join("two.dbdf"));
    let big = Options::new()
        .to_vec(&serde_daphne::DenseView(m.view()))
        .unwrap();
    let small = Options::new()
        .to_vec(&serde_daphne::DenseView(tail.view()))
        .unwrap();
    std::fs::write(&one, &big).unwrap();
    std::fs::write(&two, [&big[..], &small[..]].concat()).unwrap();
    let read: Dense<f64> = serde_daphne::from_file(&one).unwrap();
    assert_eq!(read.0, m);
    for memory_map in [false, true] {
        let options = Options {
            memory_map,
            ..Options::new()
        };
        let mut file = options.open(&two).unwrap();
        let a = file.object_checked(0).unwrap().dense_vec::<f64>().unwrap();
        assert_eq!(&a[..], m.as_slice().unwrap(), "memory_map {memory_map}");
        let b: Dense<f64> = file.read_object(1).unwrap();
        assert_eq!(b.0, tail);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A window of one sparse block reads only its rows (the rows' starts found once from the
/// counts): every band of rows equals that part of the whole read, a fault in a row outside
/// the window does not stop it, and one inside is the whole read's error at its offset.
#[test]
fn windows_of_a_sparse_block_read_only_their_rows() {
    let m = matrix();
    let csr = CsMat::csr_from_dense(m.view(), 0.0);
    let options = Options {
        block_policy: BlockPolicy::Sparse,
        ..Options::new()
    };
    let bytes = options.to_vec(&Csr(csr.clone())).unwrap();
    let mut file = Options::new()
        .open_reader(Cursor::new(bytes.clone()))
        .unwrap();
    assert_eq!(file.objects()[0].blocks.len(), 1);
    assert_eq!(file.objects()[0].blocks[0].block_type, BlockType::Sparse);
    let windows: [(std::ops::Range<usize>, std::ops::Range<usize>); 4] = [
        (0..37, 0..29),
        (12..13, 0..29),
        (15..31, 3..20),
        (36..37, 28..29),
    ];
    for (rows, cols) in windows {
        let expected = m.slice(s![rows.clone(), cols.clone()]);
        let r = rows.start as u64..rows.end as u64;
        let c = cols.start as u64..cols.end as u64;
        let window = file.read_window::<f64>(0, r.clone(), c.clone()).unwrap();
        assert_eq!(window, expected, "{rows:?} {cols:?}");
        let sparse = file.read_window_csr::<f64>(0, r, c).unwrap();
        assert_eq!(sparse.to_dense(), expected);
    }
    // Row 25's first column index made 29 (outside the block): a window of rows 0..20 still
    // reads; one over row 25 gives the whole read's error, at the same offset.
    // The block's rows end the file: 37 counts and the entries, 4 + 8 bytes each.
    let range = file.objects()[0].blocks[0].range.clone();
    let body = range.end as usize - (4 * 37 + csr.nnz() * 12);
    let indptr = csr.indptr();
    let indptr = indptr.to_proper();
    let at = body + 4 * 25 + indptr[25] * 12 + 4;
    assert!(indptr[26] > indptr[25], "row 25 has entries");
    let mut bad = bytes.clone();
    bad[at..at + 4].copy_from_slice(&29u32.to_le_bytes());
    let expected = from_slice::<Object>(&bad).unwrap_err();
    assert_error!(expected, ColumnOutOfRange { offset, .. } if *offset == at as u64);
    let mut file = Options::new().open_reader(Cursor::new(bad)).unwrap();
    let early = file.read_window::<f64>(0, 0..20, 0..29).unwrap();
    assert_eq!(early, m.slice(s![0..20_usize, ..]));
    let err = file.read_window::<f64>(0, 20..30, 0..29).unwrap_err();
    assert_eq!(
        (err.kind(), err.offset()),
        (expected.kind(), expected.offset())
    );
}

/// Regression (found by `dbdf`'s conformance kit): a window of a frame's rows without
/// columns came back as a frame of no rows, so a `.dbdf` frame of rows but no columns lost
/// its rows through the pipe.
#[test]
fn a_frame_window_without_columns_keeps_its_rows() {
    let frame = Object::frame(vec![
        ("a".into(), Values::F64(vec![1.0, 2.0, 3.0, 4.0])),
        ("b".into(), Values::I32(vec![5, 6, 7, 8])),
    ])
    .unwrap();
    let bytes = Options::new().to_vec(&frame).unwrap();
    let mut file = Options::new().open_reader(Cursor::new(bytes)).unwrap();
    let window = file.read_window_object(0, 1..3, 1..1).unwrap();
    assert_eq!(window.shape(), (2, 0));
    assert_eq!(
        window.header(),
        &serde_daphne::Header::Frame {
            rows: 2,
            columns: Vec::new()
        }
    );
}

/// Another handle on a file opened by path (read plainly or through a memory map) reads the
/// same windows, from its own file handle, and refuses a file whose length changed since it
/// was indexed.
#[test]
fn a_file_opened_by_path_is_cloned_by_opening_it_again() {
    let path = std::env::temp_dir().join(format!("serde_daphne_clone_{}.dbdf", std::process::id()));
    let m = matrix();
    let tiled = Options {
        tile: Some((3, 2)),
        ..Options::new()
    };
    tiled
        .to_file(&path, &serde_daphne::DenseView(m.view()))
        .unwrap();
    for memory_map in [false, true] {
        let options = Options {
            memory_map,
            ..Options::new()
        };
        let mut file = options.open(&path).unwrap();
        let mut other = file.try_clone().unwrap();
        let (rows, cols) = m.dim();
        let want = m.slice(s![1..rows, 1..cols]).to_owned();
        assert_eq!(
            other
                .read_window::<f64>(0, 1..rows as u64, 1..cols as u64)
                .unwrap(),
            want
        );
        assert_eq!(
            file.read_window::<f64>(0, 1..rows as u64, 1..cols as u64)
                .unwrap(),
            want
        );
    }
    let file = DbdfFile::open(&path).unwrap();
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&[0])
        .unwrap();
    let err = file.try_clone().unwrap_err();
    assert!(
        err.to_string()
            .contains("the file changed while it was read"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
}
