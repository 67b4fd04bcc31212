//! Any bytes as a Parquet file and as an Arrow IPC file, read through the pipe to the end:
//! an error or a table, never a panic or an allocation the bytes do not justify.
#![no_main]

use dbdf::arrow::{self, ReadOptions};
use dbdf::convert::{self, ConvertOptions, FormatOptions};
use dbdf::pipe::{copy, Collect, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("tables-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("t");
    std::fs::write(&path, data).unwrap();
    let read = ReadOptions {
        nulls: arrow::Nulls::Zero,
        ..Default::default()
    };
    let options = ConvertOptions {
        formats: FormatOptions::default().with(read),
        ..ConvertOptions::default()
    };
    let open = |name: &str| convert::source(&path, name.parse().ok()?, &options).ok();
    let sources: [Option<Box<dyn Source>>; 2] = [open("parquet"), open("arrow")];
    for mut source in sources.into_iter().flatten() {
        let sink = Collect::new(None, Box::new(|_, _| Ok(Vec::new())));
        let _ = copy(&mut *source, Box::new(sink));
    }
});
