//! A frame of 10,000,000 rows x 4 mixed columns, from and to `Vec<Record>` and as typed
//! `Columns`: serde_daphne against postcard on the same records and a memcpy of the column
//! bytes.
//!
//! `cargo bench --bench frame`; `python3 benches/report.py frame` for the ratios.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde::{Deserialize, Serialize, Serializer};

use common::{bench_fresh, group, memcpy_baselines, Rng};

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Record {
    id: u32,
    price: f64,
    volume: i64,
    buy: bool,
}

/// Borrows the records as a frame.
struct FrameOf<'a>(&'a [Record]);

impl Serialize for FrameOf<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_daphne::frame::serialize(self.0, s)
    }
}

#[derive(Deserialize)]
struct Records(#[serde(with = "serde_daphne::frame")] Vec<Record>);

fn frame(c: &mut Criterion) {
    let mut rng = Rng::new(7);
    let records: Vec<Record> = (0..10_000_000u32)
        .map(|id| Record {
            id,
            price: rng.next_f64() * 100.0,
            volume: rng.below(1 << 40) as i64 - (1 << 39),
            buy: rng.below(2) == 1,
        })
        .collect();
    // Column bytes: 4 + 8 + 8 + 1 per row.
    let payload = records.len() * 21;
    let bytes = serde_daphne::to_vec(&FrameOf(&records)).unwrap();
    let back: Records = serde_daphne::from_slice(&bytes).unwrap();
    assert_eq!(back.0, records);
    let mut g = group(c, "frame/10000000x4", payload);
    memcpy_baselines(&mut g, &bytes[bytes.len() - payload..]);
    let mut reused = Vec::with_capacity(bytes.len());
    g.bench_function("daphne/to_writer_reused", |b| {
        b.iter(|| {
            reused.clear();
            serde_daphne::to_writer(&mut reused, &FrameOf(black_box(&records))).unwrap();
        })
    });
    bench_fresh(&mut g, "daphne/to_vec", || {
        serde_daphne::to_vec(&FrameOf(black_box(&records))).unwrap()
    });
    bench_fresh(&mut g, "daphne/from_slice", || {
        serde_daphne::from_slice::<Records>(black_box(&bytes)).unwrap()
    });
    bench_fresh(&mut g, "postcard/to_allocvec", || {
        postcard::to_allocvec(black_box(&records)).unwrap()
    });
    // The same frame held as typed columns: one bulk copy per column each way.
    let columns = serde_daphne::Columns::from_records(&records).unwrap();
    g.bench_function("daphne/columns_to_writer_reused", |b| {
        b.iter(|| {
            reused.clear();
            serde_daphne::to_writer(&mut reused, black_box(&columns)).unwrap();
        })
    });
    bench_fresh(&mut g, "daphne/columns_to_vec", || {
        serde_daphne::to_vec(black_box(&columns)).unwrap()
    });
    bench_fresh(&mut g, "daphne/columns_from_slice", || {
        serde_daphne::from_slice::<serde_daphne::Columns>(black_box(&bytes)).unwrap()
    });
    let pc = postcard::to_allocvec(&records).unwrap();
    bench_fresh(&mut g, "postcard/from_bytes", || {
        postcard::from_bytes::<Vec<Record>>(black_box(&pc)).unwrap()
    });
    g.finish();
}

criterion_group!(benches, frame);
criterion_main!(benches);
