//! `#[derive]` on user structs holding every adapter, through memory, readers and files.

use ndarray::{array, Array2};
use serde::{Deserialize, Serialize};
use serde_daphne::{
    from_file, from_reader, from_slice, to_file, to_vec, to_writer, DataType, Deserializer,
    Dialect, Object, Options,
};
use sprs::CsMat;

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Sample {
    id: u32,
    score: f32,
    label: i8,
    kept: bool,
}

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Dataset {
    #[serde(with = "serde_daphne::dense")]
    features: Array2<f64>,
    #[serde(with = "serde_daphne::csr")]
    graph: CsMat<u32>,
    #[serde(with = "serde_daphne::frame")]
    samples: Vec<Sample>,
    weights: Vec<f32>,
    epoch: u64,
}

fn dataset() -> Dataset {
    Dataset {
        features: array![[0.5, -1.0, 0.0], [2.0, 0.0, 1e-300]],
        graph: CsMat::new((3, 3), vec![0, 2, 2, 3], vec![1, 2, 0], vec![7, 8, 9]),
        samples: vec![
            Sample {
                id: 1,
                score: 0.25,
                label: -1,
                kept: true,
            },
            Sample {
                id: 2,
                score: 0.0,
                label: 1,
                kept: false,
            },
            Sample {
                id: 3,
                score: 9.5,
                label: 0,
                kept: true,
            },
        ],
        weights: vec![0.1, 0.2, 0.3],
        epoch: 12,
    }
}

#[test]
fn a_struct_with_every_adapter_round_trips() {
    let value = dataset();
    let bytes = to_vec(&value).unwrap();
    let objects: Vec<Object> = Deserializer::from_slice(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let kinds: Vec<_> = objects.iter().map(|o| (o.data_type(), o.shape())).collect();
    assert_eq!(
        kinds,
        vec![
            (DataType::DenseMatrix, (2, 3)),
            (DataType::CsrMatrix, (3, 3)),
            (DataType::Frame, (3, 4)),
            (DataType::DenseMatrix, (3, 1)),
            (DataType::DenseMatrix, (1, 1)),
        ]
    );
    assert_eq!(objects[2].labels(), ["id", "score", "label", "kept"]);
    assert_eq!(from_slice::<Dataset>(&bytes).unwrap(), value);
    // Through a reader as well.
    assert_eq!(from_reader::<_, Dataset>(&bytes[..]).unwrap(), value);
}

#[test]
fn appending_to_a_vector_writes_what_a_writer_gets() {
    for (options, spec) in [
        (Options::new(), true),
        (
            Options {
                dialect: Some(Dialect::Runtime),
                tile: Some((2, 2)),
                ..Options::new()
            },
            false,
        ),
    ] {
        let mut written = Vec::new();
        let result = options.to_writer(&mut written, &dataset());
        let mut out = b"kept".to_vec();
        let appended = options.append_to_vec(&mut out, &dataset());
        match result {
            Ok(()) => {
                appended.unwrap();
                assert_eq!(&out[..4], b"kept");
                assert_eq!(&out[4..], &written[..]);
                // (Runtime frames keep their labels in a `.meta` file, not in the bytes.)
                if spec {
                    assert_eq!(from_slice::<Dataset>(&out[4..]).unwrap(), dataset());
                }
            }
            // What a dialect cannot hold: the same error, and `out` untouched.
            Err(e) => {
                assert_eq!(appended.unwrap_err().to_string(), e.to_string());
                assert_eq!(out, b"kept");
            }
        }
    }
    // An error part-way leaves the vector as it was.
    #[derive(Serialize)]
    struct Bad {
        ok: Vec<f64>,
        name: String,
    }
    let mut out = vec![1, 2, 3];
    let bad = Bad {
        ok: vec![1.0; 1000],
        name: "x".into(),
    };
    let err = serde_daphne::Options::new()
        .append_to_vec(&mut out, &bad)
        .unwrap_err();
    assert_error!(err, Unrepresentable);
    assert_eq!(out, [1, 2, 3]);
}

#[test]
fn frame_columns_are_matched_by_label() {
    #[derive(Serialize)]
    struct Written {
        kept: bool,
        extra: f64,
        label: i8,
        score: f32,
        id: u32,
    }
    #[derive(Serialize)]
    struct File {
        #[serde(with = "serde_daphne::frame")]
        rows: Vec<Written>,
    }
    #[derive(Deserialize, PartialEq, Debug)]
    struct Read {
        #[serde(with = "serde_daphne::frame")]
        rows: Vec<Sample>,
    }
    let bytes = to_vec(&File {
        rows: vec![Written {
            kept: true,
            extra: 3.0,
            label: 4,
            score: 1.5,
            id: 77,
        }],
    })
    .unwrap();
    let read: Read = from_slice(&bytes).unwrap();
    assert_eq!(
        read.rows,
        vec![Sample {
            id: 77,
            score: 1.5,
            label: 4,
            kept: true
        }]
    );
}

#[test]
fn files_are_written_atomically_and_read_back() {
    let dir = std::env::temp_dir().join(format!("serde_daphne_files_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dataset.dbdf");
    to_file(&path, &dataset()).unwrap();
    assert_eq!(from_file::<_, Dataset>(&path).unwrap(), dataset());
    // A failing write leaves the previous file intact and no temporary file behind.
    #[derive(Serialize)]
    struct Bad {
        ok: Vec<f64>,
        name: String,
    }
    let err = to_file(
        &path,
        &Bad {
            ok: vec![1.0; 1000],
            name: "x".into(),
        },
    )
    .unwrap_err();
    assert_error!(err, Unrepresentable);
    assert_eq!(from_file::<_, Dataset>(&path).unwrap(), dataset());
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["dataset.dbdf".to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn readers_grow_only_with_bytes_and_honour_the_limit() {
    let bytes = to_vec(&dataset()).unwrap();
    // A reader that hands out one byte at a time.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(slot)) => {
                    *slot = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    assert_eq!(
        from_reader::<_, Dataset>(Trickle(&bytes)).unwrap(),
        dataset()
    );
    let limited = Options {
        max_bytes: 100,
        ..Options::new()
    }
    .from_reader::<_, Dataset>(&bytes[..]);
    assert_error!(limited, LimitExceeded { limit: 100, .. });
    // A header claiming 2^40 x 2^40 dense values, then 10 bytes: end of input, not an abort.
    let mut huge = crate::Layout::new()
        .matrix(1, 1 << 40, 1 << 40, 10)
        .block(0, 0, u32::MAX, u32::MAX, 1)
        .u8(10)
        .0;
    huge.extend_from_slice(&[0; 10]);
    let from_reader = from_reader::<_, Object>(&huge[..]);
    for result in [from_reader, from_slice::<Object>(&huge)] {
        assert_error!(
            result,
            UnexpectedEof {
                offset: 45,
                available: 10,
                ..
            }
        );
    }
}

#[test]
fn to_writer_and_deserializer_stream_several_values() {
    let mut out = Vec::new();
    to_writer(&mut out, &1.5f64).unwrap();
    to_writer(&mut out, &serde_daphne::Dense(array![[1u8, 2]])).unwrap();
    let mut de = Deserializer::from_slice(&out);
    let x: f64 = Deserialize::deserialize(&mut de).unwrap();
    let m: serde_daphne::Dense<u8> = Deserialize::deserialize(&mut de).unwrap();
    de.end().unwrap();
    assert_eq!((x, m.0), (1.5, array![[1u8, 2]]));
}

/// A tiled dense matrix large enough for the bulk paths (rows written from the array's
/// memory, tiles read in parallel straight into the array) is the same bytes through a
/// vector, a writer and a file, each tile holding its window of the matrix row-major, and
/// reads back whole; a struct around it too.
#[test]
fn tiled_dense_matrices_take_every_route_to_the_same_bytes() {
    let (rows, cols, tile) = (1300usize, 1100usize, (512u32, 384u32));
    let m = Array2::from_shape_fn((rows, cols), |(r, c)| (r * cols + c) as f64 + 0.5);
    let options = Options {
        tile: Some((tile.0, tile.1)),
        ..Options::new()
    };
    let view = serde_daphne::DenseView(m.view());
    let bytes = options.to_vec(&view).unwrap();
    let mut written = Vec::new();
    options.to_writer(&mut written, &view).unwrap();
    assert!(
        written == bytes,
        "Options::to_writer differs from Options::to_vec"
    );
    let path = std::env::temp_dir().join(format!("serde_daphne_tiled_{}", std::process::id()));
    options.to_file(&path, &view).unwrap();
    let from_disk = std::fs::read(&path).unwrap();
    assert!(
        from_disk == bytes,
        "Options::to_file differs from Options::to_vec"
    );
    let object = serde_daphne::from_slice::<Object>(&bytes).unwrap();
    assert_eq!(object.blocks().len(), 3 * 3);
    for block in object.blocks() {
        let p = block.place;
        let (r0, c0) = (p.row as usize, p.col as usize);
        let window = m.slice(ndarray::s![
            r0..r0 + p.rows as usize,
            c0..c0 + p.cols as usize
        ]);
        let expected: Vec<f64> = window.iter().copied().collect();
        let values = block.data.values().unwrap().to_vec::<f64>().unwrap();
        assert!(values == expected, "block at ({r0}, {c0})");
    }
    assert_eq!(from_slice::<serde_daphne::Dense<f64>>(&bytes).unwrap().0, m);
    assert_eq!(
        from_file::<_, serde_daphne::Dense<f64>>(&path).unwrap().0,
        m
    );
    std::fs::remove_file(&path).unwrap();
}

/// Tiled dense files read into arrays with positional reads on every core: value types
/// widened as any read widens them, layouts the fast path leaves to the usual read (a
/// sparse tile, one tile), and damaged files, each against reading the same bytes from
/// memory.
#[test]
fn tiled_files_read_into_arrays_as_their_bytes_read_from_memory() {
    let m = Array2::from_shape_fn((70, 45), |(r, c)| (r * 45 + c) as i32 - 900);
    let mut sparse_corner = m.clone();
    sparse_corner.slice_mut(ndarray::s![..16, ..16]).fill(0);
    sparse_corner[[3, 4]] = 7;
    let path = std::env::temp_dir().join(format!("serde_daphne_tfile_{}", std::process::id()));
    let cases = [
        (
            "tiled i32",
            m.clone(),
            Options {
                tile: Some((16, 16)),
                ..Options::new()
            },
        ),
        (
            "one tile",
            m.clone(),
            Options {
                tile: Some((100, 100)),
                ..Options::new()
            },
        ),
        (
            "a sparse tile",
            sparse_corner,
            Options {
                tile: Some((16, 16)),
                block_policy: serde_daphne::BlockPolicy::Smallest,
                ..Options::new()
            },
        ),
    ];
    for (name, matrix, options) in cases {
        let bytes = options
            .to_vec(&serde_daphne::DenseView(matrix.view()))
            .unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let wide: serde_daphne::Dense<f64> = from_file(&path).unwrap();
        assert_eq!(wide.0, matrix.mapv(f64::from), "{name}");
        // The lazy handle's typed read takes the same route, with and without a memory map.
        for memory_map in [false, true] {
            let options = Options {
                memory_map,
                ..Options::new()
            };
            let mut file = options.open(&path).unwrap();
            let lazy: serde_daphne::Dense<f64> = file.read_object(0).unwrap();
            assert_eq!(lazy.0, wide.0, "{name} memory_map {memory_map}");
            let window = file.read_window::<f64>(0, 3..20, 5..40).unwrap();
            assert_eq!(window, wide.0.slice(ndarray::s![3..20, 5..40]), "{name}");
        }
        let same: serde_daphne::Dense<i32> = from_file(&path).unwrap();
        assert_eq!(same.0, matrix, "{name}");
        let narrow = from_file::<_, serde_daphne::Dense<u8>>(&path).unwrap_err();
        let in_memory = from_slice::<serde_daphne::Dense<u8>>(&bytes).unwrap_err();
        assert_eq!(narrow.to_string(), in_memory.to_string(), "{name}");
        // Cut anywhere in the last tile, or flipped in a tile's head: the same error as the
        // same bytes read from memory.
        for cut in [bytes.len() - 1, bytes.len() - 600, bytes.len() / 2] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let from_disk = from_file::<_, serde_daphne::Dense<f64>>(&path).unwrap_err();
            let from_memory = from_slice::<serde_daphne::Dense<f64>>(&bytes[..cut]).unwrap_err();
            assert_eq!(
                from_disk.to_string(),
                from_memory.to_string(),
                "{name} cut {cut}"
            );
            // The lazy handle refuses the cut file when it indexes it.
            assert!(
                serde_daphne::DbdfFile::open(&path).is_err(),
                "{name} cut {cut}"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}
