//! Allocation is bounded by the input: hostile headers that claim huge sizes fail after
//! allocating at most a small constant plus a small multiple of the input's length.
//!
//! Its own test binary, because it installs a counting global allocator.

use serde_daphne::{from_reader, from_slice, Csr, Dense, Dialect, Object, Options};

#[path = "common/counting.rs"]
mod counting;
use counting::{peak_during, SERIAL};

fn le(fields: &[&[u8]]) -> Vec<u8> {
    fields.concat()
}

fn u64b(x: u64) -> Vec<u8> {
    x.to_le_bytes().to_vec()
}

fn u32b(x: u32) -> Vec<u8> {
    x.to_le_bytes().to_vec()
}

/// Spec header of a matrix.
fn spec_matrix(dt: u8, rows: u64, cols: u64, vt: u8) -> Vec<u8> {
    le(&[&[1, dt], &u64b(rows), &u64b(cols), &[vt]])
}

fn hostile_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let tail = vec![0u8; 10];
    let big = 1u64 << 40;
    vec![
        (
            "dense block of 2^32-1 x 2^32-1 f64 values, then 10 bytes",
            le(&[
                &spec_matrix(1, big, big, 10),
                &u64b(0),
                &u64b(0),
                &u32b(u32::MAX),
                &u32b(u32::MAX),
                &[1, 10],
                &tail,
            ]),
        ),
        (
            "sparse block claiming 2^60 non-zeros",
            le(&[
                &spec_matrix(2, 10, 10, 10),
                &u64b(0),
                &u64b(0),
                &u32b(10),
                &u32b(10),
                &[2, 10],
                &u64b(1 << 60),
                &tail,
            ]),
        ),
        (
            "sparse block of 2^32-1 rows",
            le(&[
                &spec_matrix(2, big, 4, 10),
                &u64b(0),
                &u64b(0),
                &u32b(u32::MAX),
                &u32b(4),
                &[2, 10],
                &u64b(3),
                &tail,
            ]),
        ),
        (
            "ultra-sparse block claiming 2^32-1 entries",
            le(&[
                &spec_matrix(1, big, big, 10),
                &u64b(0),
                &u64b(0),
                &u32b(u32::MAX),
                &u32b(7),
                &[3, 10],
                &u32b(u32::MAX),
                &tail,
            ]),
        ),
        (
            "frame of 2^40 columns",
            le(&[&[1, 3], &u64b(1), &u64b(big), &[10; 10]]),
        ),
        (
            "frame label of 65535 bytes",
            le(&[&[1, 3], &u64b(1), &u64b(1), &[10], &[0xff, 0xff], b"short"]),
        ),
        (
            "one-cell blocks of a 2^40 x 2^40 object",
            le(&[
                &spec_matrix(1, big, big, 1),
                &u64b(0),
                &u64b(0),
                &u32b(1),
                &u32b(1),
                &[0],
                &u64b(0),
                &u64b(1),
                &u32b(1),
                &u32b(1),
                &[0],
            ]),
        ),
        (
            "runtime dense 2^31 x 2^31 f64, values missing",
            le(&[
                &spec_matrix(1, 1 << 31, 1 << 31, 7),
                &u64b(0),
                &u64b(0),
                &u32b(1 << 31),
                &u32b(1 << 31),
                &[1, 7],
                &tail,
            ]),
        ),
        (
            "runtime CSR with 2^32-1 rows",
            le(&[
                &spec_matrix(2, u64::from(u32::MAX), 3, 7),
                &u64b(0),
                &u64b(0),
                &u32b(u32::MAX),
                &u32b(3),
                &[2, 7],
                &u64b(5),
                &tail,
            ]),
        ),
        (
            "runtime frame of 2^50 rows",
            le(&[
                &[1, 3],
                &u64b(1 << 50),
                &u64b(1),
                &[7],
                &u16::to_le_bytes(0),
                &u64b(0),
                &u64b(0),
                &tail,
            ]),
        ),
        (
            "runtime scalar cut short",
            le(&[&[1, 4], &[0; 16], &[7], &[1, 2]]),
        ),
    ]
}

#[test]
fn hostile_headers_fail_after_allocating_little() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let spec = Options {
        dialect: Some(Dialect::Spec),
        ..Options::new()
    };
    let mut report = Vec::new();
    for (what, bytes) in hostile_inputs() {
        let bound = 64 * 1024 + 16 * bytes.len();
        type Read<'a> = Box<dyn Fn() -> bool + 'a>;
        let readers: Vec<(&str, Read)> = vec![
            (
                "Object from a slice",
                Box::new(|| from_slice::<Object>(&bytes).is_err()),
            ),
            (
                "Object from a reader",
                Box::new(|| from_reader::<_, Object>(&bytes[..]).is_err()),
            ),
            (
                "spec Object",
                Box::new(|| spec.from_slice::<Object>(&bytes).is_err()),
            ),
            (
                "runtime Object",
                Box::new(|| runtime.from_slice::<Object>(&bytes).is_err()),
            ),
            (
                "Dense<f64>",
                Box::new(|| from_slice::<Dense<f64>>(&bytes).is_err()),
            ),
            (
                "Csr<f64>",
                Box::new(|| from_slice::<Csr<f64>>(&bytes).is_err()),
            ),
            (
                "Vec<f64> from a reader",
                Box::new(|| from_reader::<_, Vec<f64>>(&bytes[..]).is_err()),
            ),
        ];
        for (how, read) in readers {
            let mut failed = false;
            let peak = peak_during(|| failed = read());
            assert!(failed, "{what}: {how} succeeded");
            report.push(format!("{what}, {how}: {peak} bytes"));
            assert!(
                peak <= bound,
                "{what}: {how} allocated {peak} bytes (bound {bound})"
            );
        }
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn a_read_limit_fails_cleanly_before_reading_past_it() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = serde_daphne::to_vec(&vec![1.0f64; 10_000]).unwrap();
    let limited = Options {
        max_bytes: 4096,
        ..Options::new()
    };
    let mut result = None;
    let peak = peak_during(|| result = Some(limited.from_reader::<_, Vec<f64>>(&bytes[..])));
    let got = result
        .expect("a result")
        .expect_err("the limit refuses the read");
    assert_eq!(
        got.kind(),
        serde_daphne::ErrorKind::LimitExceeded,
        "{got:?}"
    );
    assert!(got.to_string().contains("the limit of 4096 bytes"), "{got}");
    assert!(peak < 64 * 1024, "{peak}");
}
