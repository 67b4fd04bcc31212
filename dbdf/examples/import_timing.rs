//! Times importing a matrix into one object (`convert::read` of SystemDS binary blocks or of
//! a Binsparse file), against reading the same matrix from a `.npy` or
//! `.dbdf` file in the same process (medians of N, alternating).
//!
//! `cargo run --release -p dbdf --example import_timing -- systemds|binsparse INPUT BASELINE [N]`;
//! peak memory is measured from outside (`benches/measure.sh`).

use std::time::Instant;

use dbdf::convert::{self, ConvertOptions};
use serde_daphne::Object;

fn median(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(|a, b| a.total_cmp(b));
    (ms[ms.len() / 2], ms[0], ms[ms.len() - 1])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (format, input, numpy) = (args[1].as_str(), args[2].as_str(), args[3].as_str());
    let reps: usize = args.get(4).map_or(7, |s| s.parse().unwrap());
    let import = |path: &str| {
        let options = ConvertOptions::default();
        let format = format.parse().unwrap();
        convert::read(path.as_ref(), format, &options)
            .unwrap()
            .remove(0)
    };
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let start = Instant::now();
        let object = import(input);
        ours.push(start.elapsed().as_secs_f64() * 1e3);
        drop(object);
        let start = Instant::now();
        let object = match numpy.ends_with(".npy") {
            true => {
                let npy = "npy".parse().unwrap();
                let options = ConvertOptions::default();
                convert::read(numpy.as_ref(), npy, &options)
                    .unwrap()
                    .remove(0)
            }
            false => serde_daphne::from_file::<_, Object>(numpy).unwrap(),
        };
        base.push(start.elapsed().as_secs_f64() * 1e3);
        drop(object);
    }
    let ((o, o0, o1), (b, b0, b1)) = (median(ours), median(base));
    println!("{format} {o:.1} ms ({o0:.1} to {o1:.1}); baseline {b:.1} ms ({b0:.1} to {b1:.1}); ratio {:.2}x", b / o);
}
