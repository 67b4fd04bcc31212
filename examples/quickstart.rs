//! Writes ndarray, sprs and derived-struct values to `.dbdf` files, reads them back, and
//! prints what it did.
//!
//! `cargo run --example quickstart [OUTPUT_DIR]` (default `target/quickstart`).

use std::path::PathBuf;

use ndarray::Array2;
use serde::{Deserialize, Serialize};
use serde_daphne::{BlockPolicy, Csr, Dense, Dialect, Object, Options};
use sprs::{CsMat, TriMat};

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Trade {
    id: u32,
    price: f64,
    volume: i64,
    buy: bool,
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Experiment {
    #[serde(with = "serde_daphne::dense")]
    embeddings: Array2<f32>,
    #[serde(with = "serde_daphne::csr")]
    adjacency: CsMat<f64>,
    #[serde(with = "serde_daphne::frame")]
    trades: Vec<Trade>,
    losses: Vec<f64>,
    seed: u64,
}

fn describe(path: &PathBuf) -> serde_daphne::Result<()> {
    let bytes = std::fs::read(path)?;
    let objects: Vec<Object> = serde_daphne::Deserializer::from_slice(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()?;
    println!(
        "  {} ({} bytes, {} objects)",
        path.display(),
        bytes.len(),
        objects.len()
    );
    for object in &objects {
        let (rows, cols) = object.shape();
        let blocks: Vec<String> = object
            .block_types()
            .iter()
            .map(|(bt, n)| format!("{n} {bt}"))
            .collect();
        println!(
            "    {} {rows} x {cols} ({} dialect): {} block(s): {}",
            object.data_type(),
            object.dialect(),
            object.blocks().len(),
            blocks.join(", ")
        );
    }
    Ok(())
}

fn main() -> serde_daphne::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/quickstart"), PathBuf::from);
    std::fs::create_dir_all(&dir)?;

    // 1. A dense ndarray matrix.
    let dense = Array2::from_shape_fn((300, 200), |(r, c)| (r as f64 * 0.5 - c as f64).sin());
    let path = dir.join("dense.dbdf");
    serde_daphne::to_file(&path, &Dense(dense.clone()))?;
    let back: Dense<f64> = serde_daphne::from_file(&path)?;
    assert_eq!(back.0, dense);
    println!("wrote and read back a 300 x 200 f64 ndarray matrix:");
    describe(&path)?;

    // 2. A sparse sprs matrix (a ring graph with a few chords), tiled like SystemDS does.
    let n = 5_000;
    let mut triplets = TriMat::new((n, n));
    for i in 0..n {
        triplets.add_triplet(i, (i + 1) % n, 1.0);
        if i % 97 == 0 {
            triplets.add_triplet(i, (i * 31) % n, 0.5);
        }
    }
    let sparse: CsMat<f64> = triplets.to_csr();
    let path = dir.join("sparse.dbdf");
    let tiled = Options {
        tile: Some((1000, 1000)),
        ..Options::new()
    };
    tiled.to_file(&path, &Csr(sparse.clone()))?;
    let back: Csr<f64> = serde_daphne::from_file(&path)?;
    assert_eq!(back.0, sparse);
    println!(
        "wrote and read back a {n} x {n} sprs matrix with {} non-zeros in 1000 x 1000 tiles:",
        sparse.nnz()
    );
    describe(&path)?;

    // 3. A derived struct: dense, CSR, a frame of records, a vector and a scalar.
    let experiment = Experiment {
        embeddings: Array2::from_shape_fn((4, 3), |(r, c)| (r * 3 + c) as f32 / 10.0),
        adjacency: CsMat::new((3, 3), vec![0, 1, 2, 3], vec![1, 2, 0], vec![1.0, 2.0, 3.0]),
        trades: vec![
            Trade {
                id: 1,
                price: 101.25,
                volume: 300,
                buy: true,
            },
            Trade {
                id: 2,
                price: 99.5,
                volume: -120,
                buy: false,
            },
            Trade {
                id: 3,
                price: 100.0,
                volume: 55,
                buy: true,
            },
        ],
        losses: vec![0.9, 0.5, 0.31, 0.2],
        seed: 42,
    };
    let path = dir.join("experiment.dbdf");
    serde_daphne::to_file(&path, &experiment)?;
    let back: Experiment = serde_daphne::from_file(&path)?;
    assert_eq!(back, experiment);
    println!("wrote and read back a derived struct (dense, CSR, frame, vector, scalar):");
    describe(&path)?;

    // 4. The same values narrowed and forced dense, to see the writer's choices at work.
    let path = dir.join("experiment-narrow.dbdf");
    let options = Options {
        narrow: true,
        block_policy: BlockPolicy::Dense,
        ..Options::new()
    };
    options.to_file(&path, &experiment)?;
    assert_eq!(serde_daphne::from_file::<_, Experiment>(&path)?, experiment);
    println!("the same struct with narrowed value types and dense blocks:");
    describe(&path)?;
    // 5. A file for DAPHNE itself: the runtime's dialect, with the .meta sidecar its `read`
    //    kernel needs (DaphneDSL reads dense f32/f64/si64/ui8 and CSR f32/f64 .dbdf files).
    let path = dir.join("for-daphne.dbdf");
    let for_daphne = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    for_daphne.to_file(&path, &Dense(dense.clone()))?;
    let meta = std::fs::read_to_string(serde_daphne::lowlevel::sidecar_path(&path))?;
    let back: Dense<f64> = serde_daphne::from_file(&path)?;
    assert_eq!(back.0, dense);
    println!("wrote a file in DAPHNE's runtime dialect, with its sidecar {meta}:");
    describe(&path)?;

    // 6. Bigger than memory: write tile by tile, open lazily, read a window.
    let path = dir.join("tiles.dbdf");
    let (rows, cols) = (3000u64, 2000u64);
    let tile = |r0: u64, c0: u64| {
        Array2::from_shape_fn((1000, 1000), |(r, c)| {
            ((r0 + r as u64) * cols + c0 + c as u64) as f64
        })
    };
    let mut writer = Options {
        tile: Some((1000, 1000)),
        ..Options::new()
    }
    .create(&path)?;
    writer.begin(serde_daphne::Header::DenseMatrix {
        rows,
        cols,
        value_type: serde_daphne::ValueType::F64,
    })?;
    for r0 in [2000, 1000, 0] {
        for c0 in (0..cols).step_by(1000) {
            writer.write_dense_tile(r0, c0, tile(r0, c0).view())?; // one tile in memory
        }
    }
    writer.finish()?;
    let mut file = serde_daphne::DbdfFile::open(&path)?;
    let window = file.read_window::<f64>(0, 900..1100, 1500..1600)?;
    assert_eq!(window[[0, 0]], (900 * cols + 1500) as f64);
    assert_eq!(window[[199, 99]], (1099 * cols + 1599) as f64);
    println!(
        "wrote a {rows} x {cols} matrix tile by tile (bottom row of tiles first), opened it lazily \
         ({} blocks indexed from their headers) and read a 200 x 100 window from the 2 blocks under it:",
        file.objects()[0].blocks.len()
    );
    describe(&path)?;
    println!("all values read back exactly");
    Ok(())
}
