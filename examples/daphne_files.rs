//! Writes runtime-dialect files with the library, for DAPHNE's own reader to check
//! (`tests/reference/daphne.sh`): dense and CSR matrices of the eight value types DAPHNE
//! reads, in shapes from `0 x n` to several MiB, and frames of all eight types. Beside each
//! `NAME.dbdf` (and its `.meta`) goes `NAME.expected.json`: the shape and every cell, as text
//! that reads back to the same number, taken from the values written (not from a reading).
//!
//! `cargo run --example daphne_files -- DIR`

use std::path::Path;

use ndarray::Array2;
use serde_daphne::{Csr, Dense, Dialect, Element, Object, Options, Value, Values};

/// A deterministic stream of pseudo-random numbers (an LCG; no dependency needed).
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11
    }

    /// A value of `T` from its whole range (floats: exact eighths, some negative).
    fn value<T: Element>(&mut self) -> T {
        let bits = self.next();
        let value = match T::VALUE_TYPE.name() {
            "f32" | "f64" => Value::F64((bits % 4001) as f64 / 8.0 - 250.0),
            "u8" => Value::U8(bits as u8),
            "u32" => Value::U32(bits as u32),
            "u64" => Value::U64(bits.wrapping_mul(4_099)),
            "i8" => Value::I8(bits as i8),
            "i32" => Value::I32(bits as i32),
            _ => Value::I64(bits.wrapping_mul(4_099) as i64),
        };
        T::from_value(value).expect("every generated value fits its type")
    }
}

fn text(value: Value) -> String {
    match value {
        Value::F64(x) => format!("{x:?}"),
        Value::F32(x) => format!("{x:?}"),
        other => other.to_string().split('_').next().unwrap_or("").to_owned(),
    }
}

fn expected(dir: &Path, name: &str, kind: &str, object: &Object) -> std::io::Result<()> {
    let (rows, cols) = object.shape();
    let cells: Vec<String> = match kind {
        "frame" => (0..cols)
            .flat_map(|c| (0..rows).map(move |r| (r, c)))
            .map(|(r, c)| text(object.get(r, c).expect("inside")))
            .collect(),
        _ => (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .map(|(r, c)| text(object.get(r, c).expect("inside")))
            .collect(),
    };
    let json = serde_json::json!({ "kind": kind, "rows": rows, "cols": cols, "cells": cells });
    std::fs::write(dir.join(format!("{name}.expected.json")), json.to_string())
}

fn matrices<T: Element + serde::Serialize>(
    dir: &Path,
    numbers: &mut Numbers,
    options: &Options,
) -> serde_daphne::Result<()> {
    let vt = T::VALUE_TYPE.name();
    for (rows, cols) in [(0, 3), (3, 0), (1, 7), (7, 1), (13, 11), (300, 257)] {
        let dense = Array2::from_shape_fn((rows, cols), |_| numbers.value::<T>());
        let name = format!("lib_dense_{vt}_{rows}x{cols}");
        options.to_file(dir.join(format!("{name}.dbdf")), &Dense(dense.clone()))?;
        let object = Object::dense(
            rows as u64,
            cols as u64,
            T::into_values(dense.into_raw_vec_and_offset().0),
        )?;
        expected(dir, &name, "dense", &object)?;
        if rows * cols == 0 {
            continue;
        }
        // About one cell in ten: below DAPHNE's sparsity threshold, so DaphneDSL types it CSR.
        let (mut indptr, mut indices, mut data) = (vec![0], Vec::new(), Vec::new());
        for _ in 0..rows {
            for c in 0..cols {
                let x = numbers.value::<T>();
                if numbers.next().is_multiple_of(10) && !x.is_zero() {
                    indices.push(c);
                    data.push(x);
                }
            }
            indptr.push(data.len());
        }
        let csr = sprs::CsMat::new((rows, cols), indptr, indices, data);
        let name = format!("lib_csr_{vt}_{rows}x{cols}");
        options.to_file(dir.join(format!("{name}.dbdf")), &Csr(csr.clone()))?;
        let (indptr, indices, data) = csr.into_raw_storage();
        let object = Object::csr(
            rows as u64,
            cols as u64,
            indptr,
            indices,
            T::into_values(data),
        )?;
        expected(dir, &name, "csr", &object)?;
    }
    Ok(())
}

fn main() -> serde_daphne::Result<()> {
    let dir = std::env::args().nth(1).expect("usage: daphne_files DIR");
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    let options = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let mut numbers = Numbers(7);
    matrices::<f64>(dir, &mut numbers, &options)?;
    matrices::<f32>(dir, &mut numbers, &options)?;
    matrices::<i64>(dir, &mut numbers, &options)?;
    matrices::<i32>(dir, &mut numbers, &options)?;
    matrices::<i8>(dir, &mut numbers, &options)?;
    matrices::<u64>(dir, &mut numbers, &options)?;
    matrices::<u32>(dir, &mut numbers, &options)?;
    matrices::<u8>(dir, &mut numbers, &options)?;
    // Several of DAPHNE's 1 MiB read chunks: 4 MB of f64.
    let big = Array2::from_shape_fn((700, 750), |_| numbers.value::<f64>());
    options.to_file(dir.join("lib_dense_f64_700x750.dbdf"), &Dense(big.clone()))?;
    let object = Object::dense(700, 750, Values::F64(big.into_raw_vec_and_offset().0))?;
    expected(dir, "lib_dense_f64_700x750", "dense", &object)?;
    // Frames of all eight types, with labels DAPHNE survives.
    for rows in [0usize, 1, 37] {
        let column = |label: &str, values: Values| (label.to_owned(), values);
        let take = |n: &mut Numbers| (0..rows).map(|_| n.next()).collect::<Vec<u64>>();
        let columns = vec![
            column(
                "f64",
                Values::F64(
                    take(&mut numbers)
                        .iter()
                        .map(|&b| (b % 801) as f64 / 4.0 - 100.0)
                        .collect(),
                ),
            ),
            column(
                "f32",
                Values::F32(
                    take(&mut numbers)
                        .iter()
                        .map(|&b| (b % 801) as f32 / 4.0)
                        .collect(),
                ),
            ),
            column(
                "si64",
                Values::I64(take(&mut numbers).iter().map(|&b| b as i64).collect()),
            ),
            column(
                "si32",
                Values::I32(take(&mut numbers).iter().map(|&b| b as i32).collect()),
            ),
            column(
                "si8",
                Values::I8(take(&mut numbers).iter().map(|&b| b as i8).collect()),
            ),
            column("ui64", Values::U64(take(&mut numbers))),
            column(
                "ui32",
                Values::U32(take(&mut numbers).iter().map(|&b| b as u32).collect()),
            ),
            column(
                "",
                Values::U8(take(&mut numbers).iter().map(|&b| b as u8).collect()),
            ),
        ];
        let frame = Object::frame(columns)?;
        let name = format!("lib_frame_{rows}x8");
        options.to_file(dir.join(format!("{name}.dbdf")), &frame)?;
        expected(dir, &name, "frame", &frame)?;
    }
    println!("{}", dir.display());
    Ok(())
}
