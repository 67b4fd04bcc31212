//! Any bytes as a SystemDS binary matrix and frame file (with a fixed .mtd each): an error
//! or an object, never a panic or an allocation the bytes do not justify.
#![no_main]

use dbdf::convert::{self, ConvertOptions, FormatOptions};
use dbdf::systemds::ReadOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("sds-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("m");
    // SystemDS's metadata file: the path with `.mtd` appended.
    let mtd_path = dir.join("m.mtd");
    std::fs::write(&path, data).unwrap();
    for mtd in [
        r#"{"data_type":"matrix","rows":100,"cols":100,"format":"binary"}"#,
        r#"{"data_type":"matrix","rows":2500,"cols":3,"rows_in_block":1000,"cols_in_block":2,"nnz":7500,"format":"binary"}"#,
        r#"{"data_type":"frame","rows":130,"cols":2,"format":"binary"}"#,
    ] {
        std::fs::write(&mtd_path, mtd).unwrap();
        for keep_blocks in [false, true] {
            let options = ReadOptions {
                keep_blocks,
                max_alloc: 1 << 26,
                ..Default::default()
            };
            let options = ConvertOptions {
                formats: FormatOptions::default().with(options),
                ..ConvertOptions::default()
            };
            if let Ok(objects) = convert::read(&path, "systemds".parse().unwrap(), &options) {
                let _ = objects[0].nnz();
            }
        }
    }
});
