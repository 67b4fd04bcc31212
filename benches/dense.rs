//! Dense `Array2<f64>`: serde_daphne against memcpy, ndarray-npy, postcard and safetensors.
//!
//! `cargo bench --bench dense`; `python3 benches/report.py` turns the results into ratios.
//! The ndarray-npy baseline is measured on Linux only (its parser's stack guard is C code that
//! would need a C compiler for every target the crate is checked on).

mod common;

use std::collections::HashMap;
use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use ndarray::Array2;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde_daphne::{Dense, DenseView, Options};

use common::{bench_file_write, bench_fresh, dense_matrix, group, memcpy_baselines, scratch};

fn safetensors_bytes(a: &Array2<f64>) -> Vec<u8> {
    let view = TensorView::new(
        Dtype::F64,
        vec![a.nrows(), a.ncols()],
        bytemuck::cast_slice(a.as_slice().unwrap()),
    )
    .unwrap();
    safetensors::serialize([("m", view)], None::<HashMap<String, String>>).unwrap()
}

fn safetensors_read(bytes: &[u8]) -> Array2<f64> {
    let tensors = SafeTensors::deserialize(bytes).unwrap();
    let view = tensors.tensor("m").unwrap();
    let shape = (view.shape()[0], view.shape()[1]);
    let values: Vec<f64> = bytemuck::pod_collect_to_vec(view.data());
    Array2::from_shape_vec(shape, values).unwrap()
}

/// ndarray-npy writing and reading the same matrix, in memory and through files.
#[cfg(target_os = "linux")]
fn npy_baselines(g: &mut BenchmarkGroup<'_, WallTime>, a: &Array2<f64>, rows: usize) {
    use ndarray_npy::{ReadNpyExt, WriteNpyExt};
    let mut npy = Vec::new();
    a.write_npy(&mut npy).unwrap();
    g.bench_function("npy/write_reused", |b| {
        b.iter(|| {
            npy.clear();
            black_box(a).write_npy(&mut npy).unwrap();
        })
    });
    bench_fresh(g, "npy/write_vec", || {
        let mut out = Vec::new();
        black_box(a).write_npy(&mut out).unwrap();
        out
    });
    bench_fresh(g, "npy/read_slice", || {
        Array2::<f64>::read_npy(black_box(&npy[..])).unwrap()
    });
    let npy_path = scratch(&format!("dense-{rows}.npy"));
    bench_file_write(g, "npy/write_npy", &npy_path, |p| {
        ndarray_npy::write_npy(p, a).unwrap()
    });
    std::fs::write(&npy_path, &npy).unwrap();
    bench_fresh(g, "npy/read_npy", || {
        ndarray_npy::read_npy::<_, Array2<f64>>(&npy_path).unwrap()
    });
}

#[cfg(not(target_os = "linux"))]
fn npy_baselines(_: &mut BenchmarkGroup<'_, WallTime>, _: &Array2<f64>, _: usize) {}

fn bench_dense(c: &mut Criterion, rows: usize, cols: usize) {
    let a = dense_matrix(rows, cols);
    let payload: &[u8] = bytemuck::cast_slice(a.as_slice().unwrap());
    let mut g = group(c, &format!("dense/{rows}x{cols}"), payload.len());
    memcpy_baselines(&mut g, payload);

    // Writes.
    let daphne = serde_daphne::to_vec(&DenseView(a.view())).unwrap();
    let mut reused = Vec::with_capacity(daphne.len());
    g.bench_function("daphne/to_writer_reused", |b| {
        b.iter(|| {
            reused.clear();
            serde_daphne::to_writer(&mut reused, &DenseView(black_box(a.view()))).unwrap();
        })
    });
    bench_fresh(&mut g, "daphne/to_vec", || {
        serde_daphne::to_vec(&DenseView(black_box(a.view()))).unwrap()
    });
    npy_baselines(&mut g, &a, rows);
    bench_fresh(&mut g, "safetensors/serialize", || {
        safetensors_bytes(black_box(&a))
    });
    bench_fresh(&mut g, "postcard/to_allocvec", || {
        postcard::to_allocvec(black_box(&a)).unwrap()
    });

    // Reads into a new Array2.
    bench_fresh(&mut g, "daphne/from_slice", || {
        serde_daphne::from_slice::<Dense<f64>>(black_box(&daphne)).unwrap()
    });
    // The same without huge pages: what a buffer costs where the watch turns them all down
    // (memory the host must back again).
    serde_daphne::lowlevel::set_huge_pages(false);
    bench_fresh(&mut g, "daphne/from_slice_small_pages", || {
        serde_daphne::from_slice::<Dense<f64>>(black_box(&daphne)).unwrap()
    });
    serde_daphne::lowlevel::set_huge_pages(true);
    let st = safetensors_bytes(&a);
    bench_fresh(&mut g, "safetensors/deserialize", || {
        safetensors_read(black_box(&st))
    });
    let pc = postcard::to_allocvec(&a).unwrap();
    bench_fresh(&mut g, "postcard/from_bytes", || {
        postcard::from_bytes::<Array2<f64>>(black_box(&pc)).unwrap()
    });

    // Files: written to a new file each time, read from the page cache.
    let path = scratch(&format!("dense-{rows}.dbdf"));
    bench_file_write(&mut g, "daphne/to_file", &path, |p| {
        serde_daphne::to_file(p, &DenseView(a.view())).unwrap()
    });
    // Without the sync to disk: what npy and safetensors do (neither syncs).
    let no_sync = Options {
        sync: false,
        ..Options::new()
    };
    bench_file_write(&mut g, "daphne/to_file_no_sync", &path, |p| {
        no_sync.to_file(p, &DenseView(a.view())).unwrap()
    });
    let st_path = scratch(&format!("dense-{rows}.safetensors"));
    bench_file_write(&mut g, "safetensors/serialize_to_file", &st_path, |p| {
        let view = TensorView::new(
            Dtype::F64,
            vec![rows, cols],
            bytemuck::cast_slice(a.as_slice().unwrap()),
        )
        .unwrap();
        safetensors::serialize_to_file([("m", view)], None, p).unwrap()
    });
    std::fs::write(&path, &daphne).unwrap();
    bench_fresh(&mut g, "daphne/from_file", || {
        serde_daphne::from_file::<_, Dense<f64>>(&path).unwrap()
    });

    // The cost of the writer's options.
    if rows >= 4096 {
        let tiled = Options {
            tile: Some((1000, 1000)),
            ..Options::new()
        };
        g.bench_function("daphne/to_writer_reused_tiled_1000", |b| {
            b.iter(|| {
                reused.clear();
                tiled.to_writer(&mut reused, &DenseView(a.view())).unwrap();
            })
        });
        bench_fresh(&mut g, "daphne/to_vec_tiled_1000", || {
            tiled.to_vec(&DenseView(black_box(a.view()))).unwrap()
        });
        let tiled_bytes = tiled.to_vec(&DenseView(a.view())).unwrap();
        bench_fresh(&mut g, "daphne/from_slice_tiled_1000", || {
            serde_daphne::from_slice::<Dense<f64>>(black_box(&tiled_bytes)).unwrap()
        });
        // Integers stored as f64 narrow to i16/u16 on the wire.
        let ints = a.mapv(|x| (x * 1000.0).round());
        let narrow = Options {
            narrow: true,
            ..Options::new()
        };
        g.bench_function("daphne/to_writer_reused_narrowed", |b| {
            b.iter(|| {
                reused.clear();
                narrow
                    .to_writer(&mut reused, &DenseView(ints.view()))
                    .unwrap();
            })
        });
        let narrowed = narrow.to_vec(&DenseView(ints.view())).unwrap();
        bench_fresh(&mut g, "daphne/from_slice_narrowed", || {
            serde_daphne::from_slice::<Dense<f64>>(black_box(&narrowed)).unwrap()
        });
    }
    g.finish();
}

fn dense(c: &mut Criterion) {
    bench_dense(c, 512, 512);
    bench_dense(c, 4096, 4096);
}

criterion_group!(benches, dense);
criterion_main!(benches);
