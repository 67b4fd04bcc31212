//! What a conversion of a MatrixMarket coordinate file allocates grows by at most 16 bytes an
//! entry, entries in any order (issue 88: the reader before it took 16 at its peak, fixed
//! buffers included). Measured as the difference of two files' peaks, so that the fixed
//! buffers (chunks of lines, the pipe's bands) cancel.
//!
//! Its own test binary, because it installs a counting global allocator.

use std::io::Write;
use std::path::Path;

use dbdf::convert::{convert, ConvertOptions};

#[path = "../../tests/common/counting.rs"]
mod counting;
use counting::{peak_during, SERIAL};

/// A general real coordinate file of `entries` distinct cells, ten a row as in the
/// benchmark's files (1e7 entries in 1e6 rows), in scattered order (entry k is in row
/// k / 10, written in the order of a stride through k), values with 17 significant digits
/// as scipy's `mmwrite` gives them.
fn coordinate_file(path: &Path, entries: u64) {
    let side = entries / 10;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "%%MatrixMarket matrix coordinate real general").unwrap();
    writeln!(out, "{side} {side} {entries}").unwrap();
    // A stride prime to the count visits every k once, far from file order.
    let stride = 1_000_003;
    assert_ne!(entries % stride, 0);
    for j in 0..entries {
        let k = j * stride % entries;
        let mut x = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
        x ^= x >> 29;
        // The row's ten entries each in a tenth of the columns of its own: distinct cells.
        let col = k % 10 * (side / 10) + x % (side / 10);
        let value = (x >> 11) as f64 / (1u64 << 53) as f64;
        writeln!(out, "{} {} {value:.17e}", k / 10 + 1, col + 1).unwrap();
    }
    out.flush().unwrap();
}

#[test]
fn coordinate_files_take_at_most_16_bytes_an_entry_in_any_order() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("dbdf_peak_memory_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (small, large) = (500_000, 2_500_000);
    let mut peaks = Vec::new();
    for entries in [small, large] {
        let (input, output) = (dir.join("m.mtx"), dir.join("m.dbdf"));
        coordinate_file(&input, entries);
        let options = ConvertOptions {
            sync: false,
            ..ConvertOptions::default()
        };
        peaks.push(peak_during(|| {
            convert(&input, &output, &options).unwrap();
        }));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let per_entry = (peaks[1] as f64 - peaks[0] as f64) / (large - small) as f64;
    assert!(
        per_entry <= 16.0,
        "{per_entry:.1} bytes an entry (peaks {peaks:?} for {small} and {large} entries)"
    );
}
