//! Writes a varied set of small .dbdf files (every block policy, tiling, narrowing, frames,
//! both dialects) into a folder: the seed corpus for the fuzz targets (`fuzz/seed.sh`).
//!
//! `cargo run --example fuzz_seeds -- DIR`

use ndarray::{array, Array2};
use serde::Serialize;
use serde_daphne::{BlockPolicy, Csr, Dense, Dialect, Frame, Options};

#[derive(Serialize)]
struct Record {
    a: f64,
    b: i32,
    c: bool,
}

fn main() -> serde_daphne::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "seeds".into()));
    std::fs::create_dir_all(&dir)?;
    let dense = array![
        [1.5f64, 0.0, -2.0],
        [0.0, 0.0, 0.0],
        [f64::NAN, -0.0, 7.0],
        [0.0, 1e300, 0.0]
    ];
    let ints = dense.mapv(|x| {
        if x.is_finite() && x.abs() < 100.0 {
            x as i32
        } else {
            3
        }
    });
    let csr =
        sprs::CsMat::csr_from_dense(dense.mapv(|x| if x.is_nan() { 0.0 } else { x }).view(), 0.0);
    let frame = Frame(vec![
        Record {
            a: 0.5,
            b: -1,
            c: true,
        },
        Record {
            a: 2.0,
            b: 7,
            c: false,
        },
    ]);
    let policies = [
        BlockPolicy::Auto,
        BlockPolicy::Smallest,
        BlockPolicy::Dense,
        BlockPolicy::Sparse,
        BlockPolicy::UltraSparse,
    ];
    let mut n = 0;
    let mut write = |name: &str, bytes: Vec<u8>| -> serde_daphne::Result<()> {
        n += 1;
        std::fs::write(dir.join(format!("{n:03}-{name}.dbdf")), bytes)?;
        Ok(())
    };
    for (p, policy) in policies.iter().enumerate() {
        for (t, tile) in [None, Some((2, 2)), Some((1, 3))].into_iter().enumerate() {
            for narrow in [false, true] {
                let mut options = Options {
                    block_policy: *policy,
                    narrow,
                    ..Options::new()
                };
                if let Some((r, c)) = tile {
                    options.tile = Some((r, c));
                }
                let tag = format!("p{p}-t{t}-n{}", u8::from(narrow));
                write(
                    &format!("dense-{tag}"),
                    options.to_vec(&Dense(dense.clone()))?,
                )?;
                write(
                    &format!("ints-{tag}"),
                    options.to_vec(&Dense(ints.clone()))?,
                )?;
                write(&format!("csr-{tag}"), options.to_vec(&Csr(csr.clone()))?)?;
                write(&format!("frame-{tag}"), options.to_vec(&frame)?)?;
            }
        }
    }
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    write("runtime-dense", runtime.to_vec(&Dense(dense.clone()))?)?;
    write("runtime-csr", runtime.to_vec(&Csr(csr.clone()))?)?;
    write("runtime-frame", runtime.to_vec(&frame)?)?;
    write("runtime-scalar", runtime.to_vec(&-7i64)?)?;
    write(
        "scalars-and-vectors",
        serde_daphne::to_vec(&(1u8, vec![1.0f32, 2.0], vec![vec![1i16, 2], vec![3, 4]]))?,
    )?;
    write(
        "empty",
        serde_daphne::to_vec(&Dense(Array2::<u64>::zeros((0, 5))))?,
    )?;
    write(
        "objects",
        serde_daphne::to_vec(&vec![Dense(array![[1u8]]), Dense(array![[2u8, 3]])])?,
    )?;
    println!("wrote {n} seed files to {}", dir.display());
    Ok(())
}
