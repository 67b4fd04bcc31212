//! Any bytes opened lazily: the index, windows of every object (positions taken from the
//! input's own bytes), frame rows, block iteration, validation, checked whole reads: an
//! error or a value, never a panic, never an allocation the input cannot justify.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use serde_daphne::Header;
use serde_daphne::Options;

fuzz_target!(|data: &[u8]| {
    // Windows materialise their cells: the allocation limit bounds the fuzzer's memory.
    let options = Options {
        max_alloc: 1 << 24,
        ..Options::new()
    };
    let Ok(mut file) = options.open_reader(Cursor::new(data)) else {
        return;
    };
    let pick = |i: usize, n: u64| -> u64 {
        let byte = u64::from(data.get(i % data.len().max(1)).copied().unwrap_or(0));
        if n == 0 {
            0
        } else {
            byte % (n + 1)
        }
    };
    for index in 0..file.objects().len().min(8) {
        let header = file.objects()[index].header.clone();
        let (rows, cols) = header.shape();
        let (r0, c0) = (pick(index, rows), pick(index + 1, cols));
        let (r1, c1) = (
            r0 + pick(index + 2, rows - r0),
            c0 + pick(index + 3, cols - c0),
        );
        match &header {
            Header::Frame { columns, .. } => {
                let labels: Vec<&str> = columns.iter().take(2).map(|c| c.label.as_str()).collect();
                let _ = file.read_frame(index, r0..r1, &labels);
            }
            _ => {
                let _ = file.read_window::<f64>(index, r0..r1, c0..c1);
                let _ = file.read_window_csr::<i64>(index, r0..r1, c0..c1);
                let _ = file.read_window::<u8>(index, r0..r1, c0..c1);
            }
        }
        let _ = file.read_window_object(index, r0..r1, c0..c1);
        if let Ok(blocks) = file.blocks(index) {
            for block in blocks.take(64) {
                if block.is_err() {
                    break;
                }
            }
        }
        let _ = file.object_checked(index);
    }
    let _ = file.validate();
});
