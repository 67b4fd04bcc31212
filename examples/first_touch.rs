//! Times the first touch of fresh memory: 128 MiB of zeroed pages (allocated as the readers
//! allocate them, advised huge pages unless `small`), one write per 4 KiB page on this
//! thread, six times in one process. On a virtual machine whose host takes freed memory
//! back, the first time in a process can be many times the later ones.
//!
//! `cargo run --release --example first_touch -- [huge|small]`

use std::hint::black_box;
use std::time::Instant;

use serde_daphne::lowlevel::zeroed_vec;

fn main() {
    let huge = std::env::args().nth(1).is_none_or(|a| a != "small");
    serde_daphne::lowlevel::set_huge_pages(huge);
    let len = 128 << 20;
    for i in 0..6 {
        let mut buffer = zeroed_vec::<u8>(len).expect("128 MiB");
        let start = Instant::now();
        for at in (0..len).step_by(4096) {
            *black_box(&mut buffer[at]) = 1;
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{} pages, touch {i}: {:.1} ms ({:.2} GB/s)",
            if huge { "huge" } else { "4 KiB" },
            secs * 1e3,
            len as f64 / secs / 1e9
        );
        drop(black_box(buffer));
    }
}
