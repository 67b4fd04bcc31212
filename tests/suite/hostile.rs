//! Hostile and broken input, on stable Rust in CI: every decoder gives a typed error or a
//! correct value for thousands of mutated files, huge shapes and many blocks; the inputs the
//! fuzzers found stay fixed; every error variant is produced at its offset.

use std::io::Write;
use std::path::Path;

use ndarray::{array, Array2};
use serde::{Deserialize, Serialize};
use serde_daphne::{
    from_reader, from_slice, to_file, to_vec, to_writer, BlockPolicy, Csr, DataType, Dense,
    Dialect, Error, ErrorKind, Frame, Object, Options,
};

use crate::Layout;

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Record {
    a: f64,
    b: i32,
    c: bool,
}

#[derive(Deserialize, Debug)]
#[allow(dead_code)]
struct Mixed {
    #[serde(with = "serde_daphne::dense")]
    dense: Array2<f32>,
    #[serde(with = "serde_daphne::csr")]
    csr: sprs::CsMat<u16>,
    vector: Vec<u64>,
    pair: (i8, f64),
}

/// Runs every decoder on `bytes`; returns how many succeeded. Panics are test failures.
fn decode_all(bytes: &[u8]) -> usize {
    let limited = Options {
        max_alloc: 64 << 20,
        ..Options::new()
    };
    let spec = serde_daphne::Options {
        dialect: Some(Dialect::Spec),
        ..limited.clone()
    };
    let runtime = serde_daphne::Options {
        dialect: Some(Dialect::Runtime),
        ..limited.clone()
    };
    let mut ok = 0;
    let mut count = |r: bool| ok += usize::from(r);
    let object = from_slice::<Object>(bytes);
    if let Ok(object) = &object {
        // What decodes, re-encodes and decodes to the same object.
        let again = object.to_bytes().expect("a decoded object encodes");
        let back: Object = spec.from_slice(&again).expect("our encoding decodes");
        assert_eq!(back.to_bytes().unwrap(), again);
    }
    count(object.is_ok());
    count(from_reader::<_, Object>(bytes).is_ok());
    count(spec.from_slice::<Object>(bytes).is_ok());
    count(runtime.from_slice::<Object>(bytes).is_ok());
    count(limited.from_slice::<Dense<f64>>(bytes).is_ok());
    count(limited.from_slice::<Dense<u8>>(bytes).is_ok());
    count(limited.from_slice::<Csr<f64>>(bytes).is_ok());
    count(limited.from_slice::<Frame<Record>>(bytes).is_ok());
    count(limited.from_slice::<Vec<f64>>(bytes).is_ok());
    count(limited.from_slice::<Vec<Vec<i64>>>(bytes).is_ok());
    count(limited.from_slice::<(u8, f32)>(bytes).is_ok());
    count(limited.from_slice::<Mixed>(bytes).is_ok());
    let lazy = read_lazily(bytes, &limited);
    if let Ok(object) = &object {
        // What reads whole, indexes and validates lazily to the same object.
        match &lazy {
            Ok(first) => assert_eq!(first.as_ref(), Some(object)),
            Err(e) => panic!("whole read Ok, lazy read {e:?}"),
        }
    }
    count(lazy.is_ok());
    ok
}

/// Opens `bytes` lazily, validates them, reads a corner of every object; returns the first
/// object, whole.
fn read_lazily(bytes: &[u8], options: &Options) -> Result<Option<Object>, Error> {
    let mut file = options.open_reader(std::io::Cursor::new(bytes))?;
    file.validate()?;
    for i in 0..file.objects().len() {
        let header = file.objects()[i].header.clone();
        let (r, c) = header.shape();
        // Values that do not fit f64 and windows beyond the memory limit are refused;
        // anything else must read.
        let typed = |e: Error| match e.kind() {
            ErrorKind::LossyConversion | ErrorKind::AllocationLimit => Ok(()),
            _ => Err(e),
        };
        if header.data_type() == DataType::Frame {
            file.read_frame(i, 0..r.min(3), &[])?;
        } else {
            file.read_window::<f64>(i, r / 2..r, 0..c.min(3))
                .map(drop)
                .or_else(typed)?;
            file.read_window_csr::<f64>(i, 0..r.min(3), c / 2..c)
                .map(drop)
                .or_else(typed)?;
        }
    }
    if file.objects().is_empty() {
        return Ok(None);
    }
    file.object_at(0).map(Some)
}

/// Small valid files: ours in every writer option, and DAPHNE's own.
fn corpus() -> Vec<Vec<u8>> {
    let dense = array![[1.5f64, 0.0, -2.0], [0.0, 0.0, 0.0], [f64::NAN, -0.0, 7.0]];
    let csr = sprs::CsMat::csr_from_dense(array![[0.0f64, 2.0], [3.0, 0.0]].view(), 0.0);
    let frame = Frame(vec![
        Record {
            a: 0.5,
            b: -1,
            c: true,
        },
        Record {
            a: 2.0,
            b: 7,
            c: false,
        },
    ]);
    let mut files = Vec::new();
    for policy in [
        BlockPolicy::Auto,
        BlockPolicy::Smallest,
        BlockPolicy::Dense,
        BlockPolicy::Sparse,
        BlockPolicy::UltraSparse,
    ] {
        for options in [
            Options {
                block_policy: policy,
                ..Options::new()
            },
            Options {
                block_policy: policy,
                tile: Some((2, 2)),
                narrow: true,
                ..Options::new()
            },
        ] {
            files.push(options.to_vec(&Dense(dense.clone())).unwrap());
            files.push(options.to_vec(&Csr(csr.clone())).unwrap());
            files.push(options.to_vec(&frame).unwrap());
        }
    }
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    files.push(runtime.to_vec(&Dense(dense)).unwrap());
    files.push(runtime.to_vec(&Csr(csr)).unwrap());
    files.push(runtime.to_vec(&frame).unwrap());
    files.push(to_vec(&(1u8, vec![1.0f32, 2.0], vec![Dense(array![[1i16]])])).unwrap());
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime");
    for entry in std::fs::read_dir(golden).unwrap() {
        let path = entry.unwrap().path();
        let name = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && (name == "dbdf" || name == "bin") {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.len() <= 512 {
                files.push(bytes);
            }
        }
    }
    files
}

#[test]
fn thousands_of_mutated_files_give_errors_or_values() {
    let mut decoded = 0;
    let mut cases = 0;
    let extremes = [0u64, 1, 0xffff_ffff, 1 << 32, 1 << 40, 1 << 63, u64::MAX];
    for file in corpus() {
        decode_all(&file);
        // Every truncation.
        for cut in 0..file.len() {
            decoded += decode_all(&file[..cut]);
            cases += 1;
        }
        // Every byte flipped, and nudged.
        for at in 0..file.len() {
            for change in [0xff, 0x01] {
                let mut bad = file.clone();
                bad[at] ^= change;
                decoded += decode_all(&bad);
                cases += 1;
            }
        }
        // Header dimensions and the first block's fields set to extremes.
        for at in [2usize, 10, 19, 27] {
            for value in extremes {
                let mut bad = file.clone();
                if at + 8 <= bad.len() {
                    bad[at..at + 8].copy_from_slice(&value.to_le_bytes());
                    decoded += decode_all(&bad);
                    cases += 1;
                }
            }
        }
        for at in [35usize, 39, 45] {
            for value in [0u32, 1, 0xffff, u32::MAX] {
                let mut bad = file.clone();
                if at + 4 <= bad.len() {
                    bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
                    decoded += decode_all(&bad);
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 10_000, "{cases} mutated files");
    eprintln!("{cases} mutated files through 13 decoders: {decoded} decodes succeeded, the rest failed with typed errors");
}

#[test]
fn inputs_the_fuzzers_found_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/regressions");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    // A frame header claiming 2^64 - 1 columns overflowed a position (a panic).
    let frame = read("frame-columns-overflow.bin");
    decode_all(&frame);
    assert!(from_slice::<Object>(&frame).is_err());
    // 4,294,967,301 rows without columns: an Array of nothing, but CSR offsets or one Vec
    // per row would take tens of gigabytes.
    let rows = read("rows-without-columns.bin");
    decode_all(&rows);
    assert_error!(
        from_slice::<Csr<f64>>(&rows),
        AllocationLimit { offset: 0, .. }
    );
    assert_error!(from_slice::<Vec<Vec<i64>>>(&rows), AllocationLimit);
    assert_eq!(
        from_slice::<Dense<f64>>(&rows).unwrap().0.dim(),
        (4_294_967_301, 0)
    );
    // Tiling an object without cells multiplied empty blocks without end (a hang).
    let nothing = read("tiles-of-nothing.bin");
    decode_all(&nothing);
    let object: Object = from_slice(&nothing).unwrap();
    let mut out = Vec::new();
    object
        .write_with(
            &mut out,
            &Options {
                tile: Some((3, 2)),
                ..Options::new()
            },
        )
        .unwrap();
    let (rows, cols) = object.shape();
    assert_eq!(rows, 0);
    let written: Object = from_slice(&out).unwrap();
    assert_eq!(
        written.blocks().len() as u64,
        cols.div_ceil(u64::from(u32::MAX))
    );
    // Runtime objects 2^63 wide became 2^31 blocks of this crate's model (a hang): refused.
    for name in [
        "runtime-wide-with-values.bin",
        "runtime-wide-without-values.bin",
    ] {
        let bytes = read(name);
        decode_all(&bytes);
        assert_error!(from_slice::<Object>(&bytes), TooLarge { offset: 0, .. });
    }
    // A block whose values do not fit the object's value type (the spec allows a block's own
    // type only where the range permits) was accepted, and broke re-encoding.
    let beyond = read("block-values-beyond-object-type.bin");
    decode_all(&beyond);
    assert_error!(
        from_slice::<Object>(&beyond),
        LossyConversion {
            offset: 19,
            to: serde_daphne::ValueType::U8,
            ..
        }
    );
    // -0.0 stored in an f64 block of an i32 frame column is the column's 0 (it converts
    // exactly), so re-encoding writes 0: the same value.
    let zero = read("negative-zero-in-integer-column.bin");
    decode_all(&zero);
    let object: Object = from_slice(&zero).unwrap();
    assert_eq!(
        object.column(0).unwrap().get(0),
        Some(serde_daphne::Value::I32(0))
    );
    // A 0-row CSR matrix with 2^40 columns, read as rows, read zeros past its values without end.
    let empty_rows = read("zero-rows-read-as-rows.bin");
    decode_all(&empty_rows);
    assert_eq!(
        from_slice::<Vec<Vec<i64>>>(&empty_rows).unwrap(),
        Vec::<Vec<i64>>::new()
    );
}

#[test]
fn huge_shapes_give_errors_or_correct_results() {
    // Dimensions near u64::MAX: the area does not overflow; the blocks run out.
    let max = Layout::new()
        .matrix(1, u64::MAX, u64::MAX, 1)
        .block(0, 0, 1, 1, 1)
        .u8(1)
        .u8(5)
        .0;
    assert_error!(from_slice::<Object>(&max), UnexpectedEof { offset: 46, .. });
    let too_far = Layout::new()
        .matrix(1, 10, 10, 1)
        .block(u64::MAX, u64::MAX, 1, 1, 0)
        .0;
    assert_error!(
        from_slice::<Object>(&too_far),
        BlockOutsideObject { offset: 19, .. }
    );
    // rows x cols beyond the address space, read as a typed matrix.
    let empty = Layout::new()
        .matrix(1, u64::MAX / 2, 4, 10)
        .block(0, 0, u32::MAX, 4, 0);
    let mut bytes = empty.0;
    let limited = Options {
        max_alloc: u64::MAX,
        ..Options::new()
    };
    assert!(limited.from_slice::<Dense<f64>>(&bytes).is_err());
    assert_error!(from_slice::<Dense<f64>>(&bytes), UnexpectedEof);
    bytes.clear();
    // A 0 x 4294967295 object: one block of its own shape.
    let wide = Layout::new()
        .matrix(1, 0, u64::from(u32::MAX), 10)
        .block(0, 0, 0, u32::MAX, 0)
        .0;
    assert_eq!(
        from_slice::<Dense<f64>>(&wide).unwrap().0.dim(),
        (0, u32::MAX as usize)
    );
    // A huge all-zero matrix in one empty block: within the limit it reads (untouched pages),
    // beyond it a typed read is refused.
    let zeros = Layout::new()
        .matrix(1, 20_000, 20_000, 10)
        .block(0, 0, 20_000, 20_000, 0)
        .0;
    assert!(
        matches!(from_slice::<Dense<f64>>(&zeros), Ok(Dense(m)) if m.dim() == (20_000, 20_000))
    );
    let small = Options {
        max_alloc: 1 << 20,
        ..Options::new()
    };
    assert_error!(
        small.from_slice::<Dense<f64>>(&zeros),
        AllocationLimit {
            offset: 0,
            bytes: 3_200_000_000,
            limit: 1_048_576
        }
    );
}

#[test]
fn many_tiny_blocks_in_any_order() {
    // A 600 x 600 object of 360,000 one-cell blocks, in a scrambled order.
    let n = 600u64;
    let mut order: Vec<u64> = (0..n * n).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..order.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        order.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    let mut layout = Layout::new().matrix(1, n, n, 6);
    for &cell in &order {
        let (r, c) = (cell / n, cell % n);
        layout = if (r + c) % 7 == 0 {
            layout.block(r, c, 1, 1, 1).u8(6).u16(r as u16)
        } else {
            layout.block(r, c, 1, 1, 0)
        };
    }
    let m: Dense<i16> = from_slice(&layout.0).unwrap();
    for ((r, c), &x) in m.0.indexed_iter() {
        let expected = if (r + c) % 7 == 0 { r as i16 } else { 0 };
        assert_eq!(x, expected, "({r}, {c})");
    }
    // One block overlapping another among them is found.
    let mut bad = layout.0.clone();
    bad.extend_from_slice(&[0; 4]);
    let last_block_row = bad.len() - 4 - 25;
    bad[last_block_row..last_block_row + 8].copy_from_slice(&0u64.to_le_bytes());
    assert!(from_slice::<Object>(&bad).is_err());
}

#[test]
fn every_remaining_error_variant_at_its_offset() {
    // RuntimeLayout: a runtime CSR whose row offsets do not start at 0.
    let mut csr = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime/csr_f64_5x6.dbdf"),
    )
    .unwrap();
    csr[53] = 1;
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    assert_error!(
        runtime.from_slice::<Object>(&csr),
        RuntimeLayout { offset: 53, .. }
    );
    // LabelTooLong, on writing.
    let label = "x".repeat(70_000);
    let err = Object::frame(vec![(label, serde_daphne::Values::F64(vec![1.0]))])
        .unwrap()
        .to_bytes()
        .unwrap_err();
    assert_error!(
        err,
        LabelTooLong {
            column: 0,
            len: 70_000
        }
    );
    // Message: what a Deserialize implementation itself rejects.
    #[derive(Deserialize, Debug)]
    struct NonZero(#[allow(dead_code)] std::num::NonZeroU8);
    let err = from_slice::<NonZero>(&to_vec(&0u8).unwrap()).unwrap_err();
    assert_error!(err, Message);
    // OutOfMemory and TooLarge: matrices larger than memory or the address space.
    let huge = Layout::new()
        .matrix(1, 1 << 30, 1 << 30, 10)
        .block(0, 0, 1 << 30, 1 << 30, 0)
        .0;
    let object: Object = from_slice(&huge).unwrap();
    assert_error!(object.dense_vec::<f64>(), OutOfMemory);
    let beyond = Layout::new().matrix(1, 1 << 40, 1 << 40, 10).0;
    let mut cells = beyond;
    for r in 0..256u64 {
        cells = Layout(cells).block(r << 32, 0, u32::MAX, u32::MAX, 0).0;
    }
    let result = from_slice::<Object>(&cells);
    assert!(result.is_err() || result.unwrap().dense_vec::<u8>().is_err());
    // Io: a writer that fails.
    struct Failing(usize);
    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("disk full"));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let value = (Dense(Array2::from_elem((64, 64), 1.5f64)), vec![1u8; 10]);
    let total = to_vec(&value).unwrap().len();
    for budget in (0..total).step_by(97) {
        assert_error!(to_writer(Failing(budget), &value), Io);
    }
    assert!(to_writer(Failing(total), &value).is_ok());
}

#[test]
fn writes_that_fail_leave_the_previous_file_and_no_temporary() {
    let dir = std::env::temp_dir().join(format!("serde_daphne_atomic_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.dbdf");
    to_file(&path, &vec![1.0f64, 2.0]).unwrap();
    let before = std::fs::read(&path).unwrap();
    let new = to_vec(&Dense(Array2::from_elem((100, 100), 3.0f64))).unwrap();
    // Fail after N bytes, for many N.
    for n in (0..new.len()).step_by(331) {
        let result = serde_daphne::lowlevel::write_buffered(&path, |file| {
            file.write_all(&new[..n])?;
            Err(Error::from(std::io::Error::other("failed midway")))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before, "after {n} bytes");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "a temporary file is left after {n} bytes"
        );
    }
    // A folder that cannot be written: missing, or a file in the way.
    assert_error!(to_file(dir.join("missing/x.dbdf"), &1u8), Io);
    assert_error!(to_file(path.join("x.dbdf"), &1u8), Io);
    // A read-only folder (root ignores permission bits, so only when they apply; Unix modes).
    #[cfg(unix)]
    {
        let locked = dir.join("locked");
        std::fs::create_dir_all(&locked).unwrap();
        to_file(locked.join("x.dbdf"), &1u8).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let set_mode =
            |mode| std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(mode));
        set_mode(0o555).unwrap();
        if std::fs::File::create(locked.join("probe")).is_err() {
            assert!(to_file(locked.join("x.dbdf"), &2u8).is_err());
            assert_eq!(
                serde_daphne::from_file::<_, u8>(locked.join("x.dbdf")).unwrap(),
                1
            );
            assert_eq!(std::fs::read_dir(&locked).unwrap().count(), 1);
        }
        set_mode(0o755).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stream_of_objects_that_ends_early() {
    #[derive(Serialize, Deserialize, Debug)]
    struct Three {
        a: f64,
        b: Vec<u8>,
        c: i32,
    }
    let bytes = to_vec(&Three {
        a: 1.0,
        b: vec![1, 2],
        c: 3,
    })
    .unwrap();
    let cut = to_vec(&(1.0f64, vec![1u8, 2])).unwrap();
    assert_eq!(&bytes[..cut.len()], &cut[..]);
    let err = from_slice::<Three>(&cut).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof, "{err:?}");
    assert_eq!(err.offset(), Some(cut.len() as u64));
    let seq = to_vec(&vec![Dense(array![[1u8]]), Dense(array![[2u8]])]).unwrap();
    let short = &seq[..seq.len() - 46];
    assert_error!(from_slice::<Vec<Dense<u8>>>(short), UnexpectedEof);
}

#[test]
fn a_frame_of_many_rows_and_no_columns() {
    // A runtime frame header: 2^43 rows, 0 columns, rx = cx = 0, and nothing else (34 bytes).
    let bytes = Layout::new()
        .u8(1)
        .u8(3)
        .u64(1 << 43)
        .u64(0)
        .u64(0)
        .u64(0)
        .0;
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let object: Object = runtime.from_slice(&bytes).unwrap();
    assert_eq!(object.shape(), (1 << 43, 0));
    let rows = runtime.from_slice::<Frame<Record>>(&bytes);
    assert_error!(rows, AllocationLimit { offset: 0, .. });
}
