//! CSR `CsMat<f64>`, 1,000,000 x 1,000,000 with 10,000,000 non-zeros (random and banded):
//! serde_daphne's spec layout (a sparse block) and DAPHNE's runtime layout against a memcpy of
//! the same number of bytes and against sprs + postcard.
//!
//! `cargo bench --bench csr`; `python3 benches/report.py csr` for the ratios.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_daphne::{Csr, CsrView, Dialect, Options};
use sprs::CsMat;

use common::{
    banded_csr, bench_file_write, bench_fresh, group, memcpy_baselines, random_csr, scratch,
};

/// Bytes of the three CSR arrays: what the throughput of every benchmark counts.
fn payload(m: &CsMat<f64>) -> usize {
    8 * (m.rows() + 1) + 16 * m.nnz()
}

fn read_back(bytes: &[u8]) -> Csr<f64> {
    serde_daphne::from_slice::<Csr<f64>>(bytes).unwrap()
}

fn bench_layout(c: &mut Criterion, name: &str, m: &CsMat<f64>, options: &Options) {
    let bytes = options.to_vec(&CsrView(m.view())).unwrap();
    assert_eq!(read_back(&bytes).0, *m);
    let mut g = group(c, name, payload(m));
    // The physical limit for this layout: copying as many bytes as it has.
    memcpy_baselines(&mut g, &bytes);
    let mut reused = Vec::with_capacity(bytes.len());
    g.bench_function("daphne/to_writer_reused", |b| {
        b.iter(|| {
            reused.clear();
            options
                .to_writer(&mut reused, &CsrView(black_box(m.view())))
                .unwrap();
        })
    });
    g.bench_function("daphne/append_to_vec_reused", |b| {
        b.iter(|| {
            reused.clear();
            options
                .append_to_vec(&mut reused, &CsrView(black_box(m.view())))
                .unwrap();
        })
    });
    bench_fresh(&mut g, "daphne/to_vec", || {
        options.to_vec(&CsrView(black_box(m.view()))).unwrap()
    });
    bench_fresh(&mut g, "daphne/from_slice", || read_back(black_box(&bytes)));
    let path = scratch(&format!("{}.dbdf", name.replace('/', "-")));
    bench_file_write(&mut g, "daphne/to_file", &path, |p| {
        options.to_file(p, &CsrView(m.view())).unwrap()
    });
    let no_sync = serde_daphne::Options {
        sync: false,
        ..options.clone()
    };
    bench_file_write(&mut g, "daphne/to_file_no_sync", &path, |p| {
        no_sync.to_file(p, &CsrView(m.view())).unwrap()
    });
    options.to_file(&path, &CsrView(m.view())).unwrap();
    bench_fresh(&mut g, "daphne/from_file", || {
        serde_daphne::from_file::<_, Csr<f64>>(&path).unwrap()
    });
    g.finish();
}

fn bench_peers(c: &mut Criterion, name: &str, m: &CsMat<f64>) {
    let mut g = group(c, name, payload(m));
    // A memcpy of the three arrays, into existing and into new vectors.
    let indptr_storage = m.indptr();
    let (indptr, indices, data) = (indptr_storage.raw_storage(), m.indices(), m.data());
    let (mut p2, mut i2, mut d2) = (indptr.to_vec(), indices.to_vec(), data.to_vec());
    g.bench_function("memcpy/warm", |b| {
        b.iter(|| {
            p2.copy_from_slice(black_box(indptr));
            i2.copy_from_slice(black_box(indices));
            d2.copy_from_slice(black_box(data));
        })
    });
    bench_fresh(&mut g, "memcpy/fresh", || {
        (black_box(indptr).to_vec(), indices.to_vec(), data.to_vec())
    });
    bench_fresh(&mut g, "postcard/to_allocvec", || {
        postcard::to_allocvec(black_box(m)).unwrap()
    });
    let pc = postcard::to_allocvec(m).unwrap();
    bench_fresh(&mut g, "postcard/from_bytes", || {
        postcard::from_bytes::<CsMat<f64>>(black_box(&pc)).unwrap()
    });
    g.finish();
}

fn csr(c: &mut Criterion) {
    let n = 1_000_000;
    for (kind, m) in [
        ("random", random_csr(n, 10_000_000)),
        ("banded", banded_csr(n, 10)),
    ] {
        assert_eq!(m.nnz(), 10_000_000);
        bench_layout(c, &format!("csr_{kind}/spec"), &m, &Options::new());
        bench_layout(
            c,
            &format!("csr_{kind}/runtime"),
            &m,
            &Options {
                dialect: Some(Dialect::Runtime),
                ..Options::new()
            },
        );
        bench_peers(c, &format!("csr_{kind}/peers"), &m);
    }
}

criterion_group!(benches, csr);
criterion_main!(benches);
