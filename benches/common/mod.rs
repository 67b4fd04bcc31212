//! Data and baselines shared by the benchmarks.
#![allow(dead_code)]

use std::path::PathBuf;

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, Throughput};
use ndarray::Array2;
use sprs::CsMat;

/// A fixed-seed xorshift generator: the same data on every run without a `rand` dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// A dense matrix with no zero entries, so every policy keeps it dense.
pub fn dense_matrix(rows: usize, cols: usize) -> Array2<f64> {
    let mut rng = Rng::new(0x5eed);
    Array2::from_shape_simple_fn((rows, cols), || rng.next_f64() + 0.5)
}

/// Exactly `nnz` non-zeros at random, distinct positions of an `n x n` matrix (fixed seed):
/// row lengths vary from half to one and a half times the mean.
pub fn random_csr(n: usize, nnz: usize) -> CsMat<f64> {
    let mut rng = Rng::new(0xc5);
    let mean = nnz / n;
    let mut counts: Vec<usize> = (0..n)
        .map(|_| mean / 2 + rng.below(mean as u64 + 1) as usize)
        .collect();
    let mut total: usize = counts.iter().sum();
    while total != nnz {
        let r = rng.below(n as u64) as usize;
        if total < nnz && counts[r] < n {
            counts[r] += 1;
            total += 1;
        } else if total > nnz && counts[r] > 0 {
            counts[r] -= 1;
            total -= 1;
        }
    }
    let mut indptr = Vec::with_capacity(n + 1);
    let mut indices = Vec::with_capacity(nnz);
    let mut data = Vec::with_capacity(nnz);
    indptr.push(0);
    let mut row = Vec::new();
    for &count in &counts {
        row.clear();
        while row.len() < count {
            row.push(rng.below(n as u64) as usize);
            if row.len() == count {
                row.sort_unstable();
                row.dedup();
            }
        }
        indices.extend_from_slice(&row);
        data.extend(row.iter().map(|_| rng.next_f64() + 0.5));
        indptr.push(indices.len());
    }
    CsMat::new((n, n), indptr, indices, data)
}

/// A banded `n x n` matrix with `width` non-zeros per row around the diagonal.
pub fn banded_csr(n: usize, width: usize) -> CsMat<f64> {
    let mut indptr = Vec::with_capacity(n + 1);
    let mut indices = Vec::with_capacity(n * width);
    let mut data = Vec::with_capacity(n * width);
    indptr.push(0);
    for r in 0..n {
        let start = r.saturating_sub(width / 2).min(n - width);
        for c in start..start + width {
            indices.push(c);
            data.push((r + c) as f64 * 0.25 + 1.0);
        }
        indptr.push(indices.len());
    }
    CsMat::new((n, n), indptr, indices, data)
}

/// A path in cargo's per-target scratch folder.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-files");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A group whose throughput is `payload` bytes, sampled as the size of each run allows.
///
/// With `DBDF_HUGE_PAGES=off` in the environment serde_daphne asks for no huge pages and
/// the group's name ends in `+4k` (peers run unchanged, as the baseline of the same run).
pub fn group<'a>(c: &'a mut Criterion, name: &str, payload: usize) -> BenchmarkGroup<'a, WallTime> {
    let off = std::env::var("DBDF_HUGE_PAGES").is_ok_and(|v| v == "off");
    serde_daphne::lowlevel::set_huge_pages(!off);
    let mut group = c.benchmark_group(if off {
        format!("{name}+4k")
    } else {
        name.to_owned()
    });
    group.throughput(Throughput::Bytes(payload as u64));
    if payload >= 16 << 20 {
        group.sample_size(10);
        group.warm_up_time(std::time::Duration::from_secs(1));
        group.measurement_time(std::time::Duration::from_secs(4));
    }
    group
}

/// The physical limits: copying `bytes` into a buffer that already exists (warm), and into a
/// freshly allocated one (fresh: the first touch of new pages included).
pub fn memcpy_baselines(group: &mut BenchmarkGroup<'_, WallTime>, bytes: &[u8]) {
    let mut warm = bytes.to_vec();
    group.bench_function("memcpy/warm", |b| {
        b.iter(|| {
            warm.copy_from_slice(black_box(bytes));
            black_box(&warm);
        })
    });
    bench_fresh(group, "memcpy/fresh", || black_box(bytes).to_vec());
}

/// Benchmarks `f`, whose result is dropped outside the timed part (freeing a large result
/// would otherwise be timed with it).
pub fn bench_fresh<O>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut f: impl FnMut() -> O,
) {
    group.bench_function(id, |b| {
        b.iter_batched(|| (), |()| f(), BatchSize::PerIteration)
    });
}

/// Writes to a new file each time; removing the old one is not timed (overwriting a file
/// measures the file system).
pub fn bench_file_write(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    path: &std::path::Path,
    mut write: impl FnMut(&std::path::Path),
) {
    group.bench_function(id, |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(path);
            },
            |()| write(path),
            BatchSize::PerIteration,
        )
    });
    let _ = std::fs::remove_file(path);
}
