//! Binsparse (`tests/data/binsparse/`, written by the Python reference binsparse 0.1.4
//! and laid out as the C reference writes them): every file DAPHNE can represent reads with
//! the logical values its manifest lists, the others are refused by name, and DAPHNE objects
//! survive the trip through Binsparse byte for byte.

use std::path::{Path, PathBuf};

use dbdf::binsparse::{self, Binsparse, Format, WriteOptions};
use serde_daphne::{DataType, Object, Options, Value, ValueType, Values};
use serde_json::{Map, Value as Json};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/binsparse")
}

fn manifest() -> Vec<Json> {
    let text = std::fs::read_to_string(golden_dir().join("MANIFEST.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What reading a golden file must give: its logical matrix, or a refusal naming `why`.
enum Expected {
    Matrix(Vec<Vec<Json>>),
    Refused(&'static str),
}

fn expected(entry: &Json) -> Expected {
    match entry["file"].as_str().unwrap() {
        "csr_c128.h5" => return Expected::Refused("complex"),
        "csr_fill_f64.h5" => return Expected::Refused("fill value is -1"),
        "custom_3d_f64.h5" => return Expected::Refused("tensor of shape [2, 3, 4]"),
        _ => {}
    }
    let logical = entry["expected_logical"].as_array().unwrap();
    Expected::Matrix(
        logical
            .iter()
            .map(|row| match row {
                Json::Array(cells) => cells.clone(),
                cell => vec![cell.clone()], // a vector: one column
            })
            .collect(),
    )
}

fn same(cell: Value, expected: &Json) -> bool {
    match (cell, expected) {
        (Value::U8(x), Json::Bool(b)) => x == u8::from(*b),
        (Value::F64(x), e) => e.as_f64() == Some(x),
        (Value::F32(x), e) => e.as_f64() == Some(f64::from(x)),
        (cell, e) => cell.convert(ValueType::I64) == e.as_i64().map(Value::I64),
    }
}

fn check_logical(name: &str, object: &Object, rows: &[Vec<Json>]) {
    assert_eq!(
        object.shape(),
        (rows.len() as u64, rows[0].len() as u64),
        "{name}"
    );
    for (r, row) in rows.iter().enumerate() {
        for (c, e) in row.iter().enumerate() {
            let cell = object.get(r as u64, c as u64).unwrap();
            assert!(same(cell, e), "{name} ({r}, {c}): {cell:?} vs {e}");
        }
    }
}

fn read_golden(name: &str) -> serde_daphne::Result<Binsparse> {
    crate::whole::read_binsparse(golden_dir().join(name))
}

/// Every golden file of the containers this build reads: `.npz` always, `.h5` with `hdf5`.
fn golden_entries() -> Vec<Json> {
    manifest()
        .into_iter()
        .filter(|e| {
            let name = e["file"].as_str().unwrap();
            name.ends_with(".npz") || (cfg!(feature = "hdf5") && name.ends_with(".h5"))
        })
        .collect()
}

#[test]
fn every_golden_file_reads_with_its_logical_values_or_is_refused_by_name() {
    let entries = golden_entries();
    assert_eq!(entries.len(), if cfg!(feature = "hdf5") { 27 } else { 5 });
    for entry in &entries {
        let name = entry["file"].as_str().unwrap();
        let descriptor = &entry["descriptor"]["binsparse"];
        match expected(entry) {
            Expected::Refused(why) => {
                let err = read_golden(name).unwrap_err();
                assert_error!(err, NotConvertible);
                assert!(err.to_string().contains(why), "{name}: {err}");
            }
            Expected::Matrix(rows) => {
                let read = read_golden(name).unwrap_or_else(|e| panic!("{name}: {e}"));
                check_logical(name, &read.object, &rows);
                let format = descriptor["format"].as_str().unwrap();
                if format != "custom" {
                    assert_eq!(read.format.name(), format, "{name}");
                }
                let dense = matches!(
                    read.format,
                    Format::Dvec | Format::Dmat | Format::Dmatr | Format::Dmatc
                );
                let data_type = if dense {
                    DataType::DenseMatrix
                } else {
                    DataType::CsrMatrix
                };
                assert_eq!(read.object.data_type(), data_type, "{name}");
                // User attributes are everything beside the binsparse key.
                let mut attributes = entry["descriptor"].as_object().unwrap().clone();
                attributes.remove("binsparse");
                assert_eq!(read.attributes, attributes, "{name}");
            }
        }
    }
}

/// Small objects of every kind Binsparse holds (the Zarr tests use them too).
pub(crate) fn objects() -> Vec<Object> {
    vec![
        Object::csr(
            3,
            4,
            vec![0, 2, 3, 6],
            vec![0, 2, 2, 0, 1, 3],
            Values::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, -0.0]),
        )
        .unwrap(),
        Object::csr(
            4,
            1,
            vec![0, 1, 1, 1, 2],
            vec![0, 0],
            Values::I16(vec![-3, 9]),
        )
        .unwrap(),
        Object::csr(2, 2, vec![0, 0, 0], vec![], Values::U8(vec![])).unwrap(),
        Object::dense(2, 3, Values::I32(vec![1, 0, -2, 0, 5, 6])).unwrap(),
        Object::dense(3, 1, Values::F32(vec![1.5, f32::NAN, 0.0])).unwrap(),
    ]
}

#[test]
fn daphne_objects_come_back_from_binsparse_byte_identical_in_every_format() {
    let index_types = [ValueType::U64, ValueType::I32, ValueType::U8];
    for object in objects() {
        for format in Format::ALL {
            if matches!(format, Format::Dvec | Format::Cvec) && object.shape().1 != 1 {
                let err = crate::whole::to_vec_with(
                    &object,
                    "binsparse",
                    dbdf::convert::FormatOptions::default().with(WriteOptions {
                        format: Some(format),
                        ..Default::default()
                    }),
                )
                .unwrap_err();
                assert_error!(err, NotConvertible);
                continue;
            }
            for index_type in index_types {
                let options = WriteOptions {
                    format: Some(format),
                    index_type,
                    ..Default::default()
                };
                let npz = crate::whole::to_vec_with(
                    &object,
                    "binsparse",
                    dbdf::convert::FormatOptions::default().with(options.clone()),
                )
                .unwrap();
                let back = crate::whole::binsparse_from_slice(&npz).unwrap();
                assert_eq!(back.format, format);
                let back = back.object.with_data_type(object.data_type()).unwrap();
                for dbdf in [
                    Options::new(),
                    Options {
                        tile: Some((2, 2)),
                        ..Options::new()
                    },
                ] {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    object.write_with(&mut a, &dbdf).unwrap();
                    back.write_with(&mut b, &dbdf).unwrap();
                    assert_eq!(a, b, "{format} {index_type}");
                }
            }
        }
    }
}

#[test]
fn attributes_and_modifiers_are_written_as_asked() {
    let golden = read_golden("csr_iso_f64.npz").unwrap();
    let mut attributes = Map::new();
    attributes.insert("author".into(), Json::String("serde_daphne test".into()));
    let options = WriteOptions {
        iso: true,
        index_type: ValueType::U32,
        ..Default::default()
    };
    let npz = crate::whole::to_vec_with(
        &golden.object,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions {
            attributes: attributes.clone(),
            ..options.clone()
        }),
    )
    .unwrap();
    let back = crate::whole::binsparse_from_slice(&npz).unwrap();
    assert_eq!(back.attributes, attributes);
    assert_eq!(back.object, golden.object);
    // The descriptor says what was written: version 0.1, iso values, u32 indices.
    let text = String::from_utf8_lossy(&npz).replace('\0', "");
    for needle in [
        "\"version\": \"0.1\"",
        "\"values\": \"iso[float64]\"",
        "\"indices_1\": \"uint32\"",
        "\"author\": \"serde_daphne test\"",
    ] {
        assert!(text.contains(needle), "{needle}");
    }
    // bint8 for 0/1 bytes, only when asked and only when it holds.
    let ones = Object::csr(2, 2, vec![0, 1, 2], vec![0, 1], Values::U8(vec![1, 1])).unwrap();
    let npz = crate::whole::to_vec_with(
        &ones,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions {
            bint8: true,
            ..Default::default()
        }),
    )
    .unwrap();
    assert!(String::from_utf8_lossy(&npz)
        .replace('\0', "")
        .contains("\"bint8\""));
    assert_eq!(
        crate::whole::binsparse_from_slice(&npz).unwrap().object,
        ones
    );
    // An index that does not fit the index type is refused.
    let wide = Object::csr(1, 300, vec![0, 1], vec![299], Values::U8(vec![1])).unwrap();
    let err = crate::whole::to_vec_with(
        &wide,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions {
            index_type: ValueType::U8,
            ..Default::default()
        }),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("does not fit the index type u8"),
        "{err}"
    );
    let frame = Object::frame(vec![("a".into(), Values::F64(vec![1.0]))]).unwrap();
    let err = crate::whole::to_vec_with(
        &frame,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions::default()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("Frame"), "{err}");
}

/// The bytes of `csr_f64.npz` with one member's `.npy` data replaced.
fn patched(member: &str, edit: impl FnOnce(&mut [u8])) -> (Vec<u8>, usize) {
    let mut bytes = std::fs::read(golden_dir().join("csr_f64.npz")).unwrap();
    // Stored members: the .npy data of `member` follows its name in the local header, after
    // the zip64 extra field (20 bytes) and the 128-byte .npy header.
    let name = format!("{member}.npy");
    let at = bytes
        .windows(name.len())
        .position(|w| w == name.as_bytes())
        .unwrap();
    let data = at + name.len() + 20 + 128;
    edit(&mut bytes[data..]);
    (bytes, data)
}

#[test]
fn malformed_arrays_are_refused_at_their_byte() {
    // Column indices [0, 2, 2, 0, 1, 3] (int64): make row 0's second column 0, unsorted.
    let (bytes, data) = patched("indices_1", |d| d[8] = 0);
    let err = crate::whole::binsparse_from_slice(&bytes).unwrap_err();
    // Read in place, the order check finds it at the element's byte, before the member's
    // CRC-32 is checked.
    assert_eq!(err.offset(), Some(data as u64 + 8), "{err}");
    // With the CRC fixed, the same.
    let fixed = fix_crcs(bytes);
    let err = crate::whole::binsparse_from_slice(&fixed).unwrap_err();
    assert_eq!(err.offset(), Some(data as u64 + 8), "{err}");
    assert!(err.to_string().contains("indices_1[1]"), "{err}");
    // A column index past the shape.
    let (bytes, data) = patched("indices_1", |d| d[40] = 4);
    let err = crate::whole::binsparse_from_slice(&fix_crcs(bytes)).unwrap_err();
    assert_eq!(err.offset(), Some(data as u64 + 40), "{err}");
    assert!(
        err.to_string().contains("4 is not a valid index (0 to 3)"),
        "{err}"
    );
    // A pointer past the values.
    let (bytes, _) = patched("pointers_to_1", |d| d[24] = 7);
    let err = crate::whole::binsparse_from_slice(&fix_crcs(bytes)).unwrap_err();
    assert!(err.to_string().contains("pointers_to_1[3]"), "{err}");
    // Not a zip at all, and a truncated one.
    let err = crate::whole::binsparse_from_slice(b"PK not really").unwrap_err();
    assert_error!(err, ForeignInput);
    let whole = std::fs::read(golden_dir().join("csr_f64.npz")).unwrap();
    for cut in [10, whole.len() / 2, whole.len() - 1] {
        assert!(crate::whole::binsparse_from_slice(&whole[..cut]).is_err());
    }
}

/// Recomputes every member's CRC-32 (in the local and central headers) of a stored zip.
fn fix_crcs(mut bytes: Vec<u8>) -> Vec<u8> {
    let mut at = 0;
    let mut crcs = Vec::new();
    while bytes[at..].starts_with(b"PK\x03\x04") {
        let name_len = u16::from_le_bytes([bytes[at + 26], bytes[at + 27]]) as usize;
        let extra_len = u16::from_le_bytes([bytes[at + 28], bytes[at + 29]]) as usize;
        let start = at + 30 + name_len + extra_len;
        // numpy writes zip64 sizes: the real size is in the extra field.
        let size = u64::from_le_bytes(bytes[at + 30 + name_len + 4..][..8].try_into().unwrap());
        let crc = crc32(&bytes[start..start + size as usize]);
        bytes[at + 14..at + 18].copy_from_slice(&crc.to_le_bytes());
        crcs.push(crc);
        at = start + size as usize;
    }
    for crc in crcs {
        bytes[at + 16..at + 20].copy_from_slice(&crc.to_le_bytes());
        let name_len = u16::from_le_bytes([bytes[at + 28], bytes[at + 29]]) as usize;
        let extra_len = u16::from_le_bytes([bytes[at + 30], bytes[at + 31]]) as usize;
        let comment_len = u16::from_le_bytes([bytes[at + 32], bytes[at + 33]]) as usize;
        at += 46 + name_len + extra_len + comment_len;
    }
    bytes
}

/// CRC-32 (IEEE), bit by bit: independent of the crate's implementation.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn structures_fill_in_the_other_triangle() {
    // Lower triangle of [[4, 1, 0], [1, 5, 2], [0, 2, 6]], as CSR with symmetric_lower, and
    // its skew-symmetric reading.
    let lower = Object::csr(
        3,
        3,
        vec![0, 1, 3, 5],
        vec![0, 0, 1, 1, 2],
        Values::I32(vec![4, 1, 5, 2, 6]),
    )
    .unwrap();
    for (structure, mirrored) in [
        ("symmetric_lower", [1, 2]),
        ("skew_symmetric_lower", [-1, -2]),
    ] {
        let npz = crate::whole::to_vec_with(
            &lower,
            "binsparse",
            dbdf::convert::FormatOptions::default().with(WriteOptions::default()),
        )
        .unwrap();
        let m = crate::whole::binsparse_from_slice(&with_structure(&npz, structure))
            .unwrap()
            .object;
        assert_eq!(m.get(0, 1), Some(Value::I32(mirrored[0])), "{structure}");
        assert_eq!(m.get(1, 2), Some(Value::I32(mirrored[1])), "{structure}");
        assert_eq!(m.get(1, 0), Some(Value::I32(1)), "{structure}");
        assert_eq!(m.get(0, 2), Some(Value::I32(0)), "{structure}");
    }
    // An entry on the wrong side of the diagonal is refused.
    let upper = Object::csr(2, 2, vec![0, 1, 1], vec![1], Values::I32(vec![3])).unwrap();
    let npz = crate::whole::to_vec_with(
        &upper,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions::default()),
    )
    .unwrap();
    let err =
        crate::whole::binsparse_from_slice(&with_structure(&npz, "symmetric_lower")).unwrap_err();
    assert!(
        err.to_string().contains("outside the lower triangle"),
        "{err}"
    );
}

/// The archive with `"structure"` added to its descriptor.
fn with_structure(npz: &[u8], structure: &str) -> Vec<u8> {
    rebuild_descriptor(npz, |json| {
        json["binsparse"]["structure"] = Json::String(structure.into());
    })
}

/// Rewrites the `binsparse.npy` member of an archive written by this crate.
fn rebuild_descriptor(npz: &[u8], mut edit: impl FnMut(&mut Json)) -> Vec<u8> {
    // Every other member is kept as it is; the zip is written anew around them.
    let members = list_members(npz)
        .into_iter()
        .map(|(name, data)| {
            if name != "binsparse.npy" {
                return (name, data);
            }
            let header_len = u16::from_le_bytes([data[8], data[9]]) as usize;
            let text: String = data[10 + header_len..]
                .chunks_exact(4)
                .map(|u| char::from_u32(u32::from_le_bytes(u.try_into().unwrap())).unwrap())
                .collect();
            let mut json: Json = serde_json::from_str(&text).unwrap();
            edit(&mut json);
            let text = json.to_string();
            let mut header = format!(
                "{{'descr': '<U{}', 'fortran_order': False, 'shape': (), }}",
                text.chars().count()
            );
            while (10 + header.len() + 1) % 64 != 0 {
                header.push(' ');
            }
            header.push('\n');
            let mut npy = b"\x93NUMPY\x01\x00".to_vec();
            npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
            npy.extend_from_slice(header.as_bytes());
            for c in text.chars() {
                npy.extend_from_slice(&u32::from(c).to_le_bytes());
            }
            (name, npy)
        })
        .collect();
    write_zip(members, false)
}

/// A zip of `members`, stored or deflated (method 8, as `numpy.savez_compressed` writes).
fn write_zip(members: Vec<(String, Vec<u8>)>, deflate: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in &members {
        let packed = if deflate {
            miniz_oxide::deflate::compress_to_vec(data, 6)
        } else {
            data.clone()
        };
        let method: u16 = if deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let crc = crc32(data);
        let mut sizes = crc.to_le_bytes().to_vec();
        sizes.extend_from_slice(&(packed.len() as u32).to_le_bytes());
        sizes.extend_from_slice(&(data.len() as u32).to_le_bytes());
        sizes.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00");
        out.extend_from_slice(&method.to_le_bytes());
        out.extend_from_slice(b"\x00\x00\x21\x00");
        out.extend_from_slice(&sizes);
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&packed);
        central.extend_from_slice(b"PK\x01\x02\x14\x00\x14\x00\x00\x00");
        central.extend_from_slice(&method.to_le_bytes());
        central.extend_from_slice(b"\x00\x00\x21\x00");
        central.extend_from_slice(&sizes);
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let count = members.len() as u16;
    let start = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00");
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// The members of a stored zip without zip64 fields (as this crate writes small archives).
fn list_members(npz: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut at = 0;
    let mut out = Vec::new();
    while npz[at..].starts_with(b"PK\x03\x04") {
        let size = u32::from_le_bytes(npz[at + 18..at + 22].try_into().unwrap()) as usize;
        let name_len = u16::from_le_bytes([npz[at + 26], npz[at + 27]]) as usize;
        let extra_len = u16::from_le_bytes([npz[at + 28], npz[at + 29]]) as usize;
        let name = String::from_utf8(npz[at + 30..at + 30 + name_len].to_vec()).unwrap();
        let start = at + 30 + name_len + extra_len;
        out.push((name, npz[start..start + size].to_vec()));
        at = start + size;
    }
    out
}

#[cfg(feature = "hdf5")]
#[test]
fn hdf5_files_round_trip_and_keep_attributes() {
    let dir = std::env::temp_dir().join(format!("serde_daphne_bsp_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.bsp.h5");
    for object in objects() {
        for format in [Format::Csr, Format::Cooc, Format::Dcsc, Format::Dmatc] {
            let options = WriteOptions {
                format: Some(format),
                index_type: ValueType::I64,
                ..Default::default()
            };
            crate::whole::write_with(
                &path,
                &object,
                "binsparse",
                dbdf::convert::FormatOptions::default().with(options.clone()),
            )
            .unwrap();
            let back = crate::whole::read_binsparse(&path).unwrap();
            assert_eq!(back.format, format);
            let back = back.object.with_data_type(object.data_type()).unwrap();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            object.write_with(&mut a, &Options::new()).unwrap();
            back.write_with(&mut b, &Options::new()).unwrap();
            assert_eq!(a, b, "{format}");
        }
    }
    // The C reference's user attribute ("comment") survives HDF5 -> HDF5 and HDF5 -> NPZ.
    let golden = read_golden("cref_style_csr_f64.h5").unwrap();
    assert!(golden.attributes.contains_key("comment"));
    crate::whole::write_with(
        &path,
        &golden.object,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions {
            attributes: golden.attributes.clone(),
            ..Default::default()
        }),
    )
    .unwrap();
    assert_eq!(
        crate::whole::read_binsparse(&path).unwrap().attributes,
        golden.attributes
    );
    let npz = crate::whole::to_vec_with(
        &golden.object,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions {
            attributes: golden.attributes.clone(),
            ..Default::default()
        }),
    )
    .unwrap();
    assert_eq!(
        crate::whole::binsparse_from_slice(&npz).unwrap().attributes,
        golden.attributes
    );
    // Not an HDF5 file: a typed error naming it, no panic.
    std::fs::write(&path, b"not hdf5").unwrap();
    let err = crate::whole::read_binsparse(&path).unwrap_err();
    assert_error!(err, ForeignInput);
    assert!(err.to_string().contains("m.bsp.h5"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mutated_archives_give_errors_or_matrices_and_never_too_much_memory() {
    for name in [
        "csr_f64.npz",
        "coo_i32.npz",
        "csc_f64.npz",
        "dmat_f64.npz",
        "csr_iso_f64.npz",
    ] {
        let bytes = std::fs::read(golden_dir().join(name)).unwrap();
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                let _ = crate::whole::binsparse_from_slice(&bad);
            }
        }
        for cut in 0..bytes.len() {
            assert!(
                crate::whole::binsparse_from_slice(&bytes[..cut]).is_err(),
                "{name} cut at {cut}"
            );
        }
    }
    // One stored value in a matrix of 4e9 rows: the row offsets alone would take 32 GB.
    let one = Object::csr(2, 2, vec![0, 1, 1], vec![1], Values::F64(vec![2.0])).unwrap();
    let npz = crate::whole::to_vec_with(
        &one,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions {
            format: Some(Format::Coor),
            ..Default::default()
        }),
    )
    .unwrap();
    let with_rows = |rows: u64| {
        rebuild_descriptor(&npz, |json| {
            json["binsparse"]["shape"] = serde_json::json!([rows, 2]);
        })
    };
    let err = crate::whole::binsparse_from_slice(&with_rows(4_000_000_000)).unwrap_err();
    assert_error!(err, AllocationLimit { offset: 0, .. });
    // Beyond one DAPHNE block, refused before any allocation, whatever the allowance.
    let generous = binsparse::ReadOptions {
        max_alloc: u64::MAX,
    };
    let err = crate::whole::binsparse_from_slice_with(&with_rows(1 << 40), &generous).unwrap_err();
    assert_error!(err, NotConvertible);
    // iso values in a dense format are refused (they would make memory from nothing).
    let dense = Object::dense(1, 2, Values::F64(vec![1.0, 1.0])).unwrap();
    let npz = crate::whole::to_vec_with(
        &dense,
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions::default()),
    )
    .unwrap();
    let iso = rebuild_descriptor(&npz, |json| {
        json["binsparse"]["data_types"]["values"] = Json::String("iso[float64]".into());
    });
    let err = crate::whole::binsparse_from_slice(&iso).unwrap_err();
    assert!(
        err.to_string().contains("iso values in the dense format"),
        "{err}"
    );
}

/// The archive with every member deflated, as `numpy.savez_compressed` stores them.
fn deflated(npz: &[u8]) -> Vec<u8> {
    write_zip(list_members(npz), true)
}

#[test]
fn deflated_archives_read_like_stored_ones() {
    for object in objects() {
        for format in [Format::Csr, Format::Cooc, Format::Dmat] {
            let options = WriteOptions {
                format: Some(format),
                ..Default::default()
            };
            let npz = crate::whole::to_vec_with(
                &object,
                "binsparse",
                dbdf::convert::FormatOptions::default().with(options.clone()),
            )
            .unwrap();
            let packed = deflated(&npz);
            assert_ne!(packed, npz);
            assert_eq!(
                crate::whole::binsparse_from_slice(&packed).unwrap(),
                crate::whole::binsparse_from_slice(&npz).unwrap()
            );
        }
    }
    let npz = crate::whole::to_vec_with(
        &objects()[0],
        "binsparse",
        dbdf::convert::FormatOptions::default().with(WriteOptions::default()),
    )
    .unwrap();
    let packed = deflated(&npz);
    // A member that claims to inflate to far more than the archive justifies.
    let mut bomb = packed.clone();
    let central = bomb.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    bomb[central + 24..central + 28].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = crate::whole::binsparse_from_slice_with(
        &bomb,
        &binsparse::ReadOptions { max_alloc: 1 << 20 },
    )
    .unwrap_err();
    assert_error!(err, AllocationLimit);
    // A broken deflate stream, and a wrong uncompressed size.
    let mut broken = packed.clone();
    let data = 30 + "pointers_to_1.npy".len();
    broken[data] ^= 0xFF;
    broken[data + 1] ^= 0xFF;
    assert_error!(crate::whole::binsparse_from_slice(&broken), ForeignInput);
    let mut short = packed;
    short[central + 24] ^= 1;
    let err = crate::whole::binsparse_from_slice(&short).unwrap_err();
    assert_error!(err, ForeignInput);
}
