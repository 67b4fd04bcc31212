//! `.npy` <-> `.dbdf` tile by tile: the bytes the whole-matrix paths give, for C and Fortran
//! order, both byte orders and both dialects.

use std::path::{Path, PathBuf};

use dbdf::pipe;
use ndarray::Array2;
use serde_daphne::{Dense, Dialect, Object, Options, Values};

/// `.npy` to `.dbdf` through the pipe.
fn to_dbdf(input: &Path, output: &Path, options: &Options) -> serde_daphne::Result<()> {
    pipe::to_dbdf(&mut *crate::pipe::opened(input, "npy")?, output, options)
}

/// Object `index` of a `.dbdf` file to `.npy` through the pipe.
fn from_dbdf(input: &Path, index: usize, output: &Path) -> serde_daphne::Result<()> {
    let mut source = pipe::DbdfSource::open(input)?.only(index)?;
    serde_daphne::lowlevel::write_buffered(output, |w| {
        pipe::copy(&mut source, crate::whole::sink(w, "npy")).map(drop)
    })
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("serde_daphne_npy_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn matrix() -> Array2<f64> {
    Array2::from_shape_fn((23, 17), |(r, c)| {
        if (r + c) % 4 == 0 {
            0.0
        } else {
            r as f64 * 1.5 - c as f64
        }
    })
}

/// A version 1.0 `.npy` file laid out by hand from NumPy's format description: magic, version,
/// header length, the header dict padded to 64 bytes, then the data.
fn npy_bytes(descr: &str, fortran: bool, shape: (usize, usize), data: &[u8]) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': ({}, {}), }}",
        if fortran { "True" } else { "False" },
        shape.0,
        shape.1
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn npy_to_dbdf_tile_by_tile_gives_the_bytes_of_to_vec() {
    let dir = dir("to_dbdf");
    let m = matrix();
    let c_order: Vec<u8> = m.iter().flat_map(|x| x.to_le_bytes()).collect();
    let fortran: Vec<u8> = m.t().iter().flat_map(|x| x.to_le_bytes()).collect();
    let big: Vec<u8> = m.iter().flat_map(|x| x.to_be_bytes()).collect();
    let inputs = [
        npy_bytes("<f8", false, (23, 17), &c_order),
        npy_bytes("<f8", true, (23, 17), &fortran),
        npy_bytes(">f8", false, (23, 17), &big),
    ];
    let option_sets = [
        Options {
            tile: Some((5, 4)),
            ..Options::new()
        },
        Options {
            tile: Some((23, 17)),
            ..Options::new()
        },
        Options {
            tile: Some((7, 100)),
            ..Options::new()
        },
        Options::new(),
        Options {
            narrow: true,
            ..Options::new()
        },
        Options {
            block_policy: serde_daphne::BlockPolicy::Sparse,
            ..Options::new()
        },
        Options {
            dialect: Some(Dialect::Runtime),
            ..Options::new()
        },
    ];
    for (k, input) in inputs.iter().enumerate() {
        let path = dir.join(format!("in{k}.npy"));
        std::fs::write(&path, input).unwrap();
        for options in &option_sets {
            let out = dir.join("out.dbdf");
            to_dbdf(&path, &out, options).unwrap();
            let expected = options.to_vec(&Dense(m.clone())).unwrap();
            assert_eq!(
                std::fs::read(&out).unwrap(),
                expected,
                "input {k} {options:?}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dbdf_to_npy_band_by_band_gives_the_bytes_of_the_whole_path() {
    let dir = dir("from_dbdf");
    let m = matrix();
    let object = Object::dense(23, 17, Values::F64(m.iter().copied().collect())).unwrap();
    let expected = crate::whole::to_vec(&object, "npy").unwrap();
    for options in [
        Options::new(),
        Options {
            tile: Some((4, 6)),
            narrow: true,
            ..Options::new()
        },
        Options {
            dialect: Some(Dialect::Runtime),
            ..Options::new()
        },
    ] {
        let input = dir.join("m.dbdf");
        options.to_file(&input, &Dense(m.clone())).unwrap();
        let out = dir.join("m.npy");
        from_dbdf(&input, 0, &out).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), expected, "{options:?}");
    }
    // Frames become record arrays, band by band as whole.
    let frame = Object::frame(vec![
        ("a".into(), Values::I8(vec![1, -2, 3])),
        ("b".into(), Values::F64(vec![0.5, 1.5, -2.5])),
    ])
    .unwrap();
    let input = dir.join("f.dbdf");
    Options {
        tile: Some((2, 1)),
        ..Options::new()
    }
    .to_file(&input, &frame)
    .unwrap();
    from_dbdf(&input, 0, &dir.join("f.npy")).unwrap();
    let bytes = std::fs::read(dir.join("f.npy")).unwrap();
    assert_eq!(bytes, crate::whole::to_vec(&frame, "npy").unwrap());
    assert_eq!(crate::whole::from_slice(&bytes, "npy").unwrap(), frame);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_npy_is_refused_with_its_offset() {
    let dir = dir("bad");
    let m = matrix();
    let data: Vec<u8> = m.iter().flat_map(|x| x.to_le_bytes()).collect();
    let path = dir.join("short.npy");
    std::fs::write(&path, npy_bytes("<f8", false, (23, 17), &data[..100])).unwrap();
    let out = dir.join("out.dbdf");
    let tiled = Options {
        tile: Some((4, 4)),
        ..Options::new()
    };
    assert_error!(
        to_dbdf(&path, &out, &tiled),
        ForeignInput {
            offset: Some(128),
            ..
        }
    );
    std::fs::write(&path, npy_bytes("|b1", false, (1, 3), &[0, 2, 1])).unwrap();
    assert_error!(to_dbdf(&path, &out, &tiled), ForeignInput);
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
