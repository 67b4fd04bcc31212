//! Binsparse in Zarr groups: the reference's golden group, groups zarr-python wrote with
//! every codec read (`dbdf/tests/data/zarr/`, made by `tests/reference/zarr_fixtures.py`),
//! round trips in both Zarr versions, atomic directory writes, and hostile metadata and
//! chunks refused with the chunk's name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dbdf::binsparse::zarr::{self, Directory, Store, ZarrVersion};
use dbdf::binsparse::{self, Format, ReadOptions, WriteOptions};
use serde_daphne::{ErrorKind, Object, Values};
use serde_json::Value as Json;

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// A directory's files as an in-memory store.
fn load(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let key = path.strip_prefix(root).unwrap().to_str().unwrap();
                out.insert(key.to_owned(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn the_reference_group_reads_as_its_npz_twin() {
    let zarr = crate::whole::read_binsparse(data("binsparse/csr_f64.zarr")).unwrap();
    let npz = crate::whole::read_binsparse(data("binsparse/csr_f64.npz")).unwrap();
    assert_eq!(zarr.format, Format::Csr);
    assert_eq!(zarr.object, npz.object);
    // DUMP.txt: values 1..6 in a 3 x 4 matrix.
    let parts = zarr.object.csr_parts::<f64>().unwrap();
    assert_eq!(parts.values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert!(zarr.attributes.is_empty());
}

#[test]
fn groups_zarr_python_wrote_with_every_codec_read_exactly() {
    let manifest: Json =
        serde_json::from_slice(&std::fs::read(data("zarr/MANIFEST.json")).unwrap()).unwrap();
    let groups = manifest["groups"].as_object().unwrap();
    assert!(groups.len() >= 10, "{}", groups.len());
    for (name, entry) in groups {
        let read = crate::whole::read_binsparse(data(&format!("zarr/{name}")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let twin = crate::whole::read_binsparse(data(&format!(
            "zarr/{}",
            entry["same_as"].as_str().unwrap()
        )))
        .unwrap();
        assert_eq!(read.object, twin.object, "{name}");
        assert_eq!(
            read.format.name(),
            entry["format"].as_str().unwrap(),
            "{name}"
        );
    }
}

/// The object's bytes in a `.dbdf` file, which compare NaNs bit for bit.
fn bytes(object: &Object) -> Vec<u8> {
    let mut out = Vec::new();
    object
        .write_with(&mut out, &serde_daphne::Options::new())
        .unwrap();
    out
}

/// The Binsparse tests' objects and one of several chunks.
fn objects() -> Vec<Object> {
    let big: Vec<f64> = (0..3000).map(|i| f64::from(i % 7) - 3.0).collect();
    let mut objects = crate::binsparse::objects();
    objects.push(Object::dense(50, 60, Values::F64(big)).unwrap());
    objects
}

#[test]
fn every_format_round_trips_through_both_zarr_versions() {
    for object in objects() {
        for format in Format::ALL {
            if matches!(format, Format::Dvec | Format::Cvec) && object.shape().1 != 1 {
                continue;
            }
            for version in [ZarrVersion::V2, ZarrVersion::V3] {
                let options = WriteOptions {
                    format: Some(format),
                    zarr_version: version,
                    ..Default::default()
                };
                let mut store = BTreeMap::new();
                zarr::write_store(&mut store, &object, &options).unwrap();
                let meta = if version == ZarrVersion::V3 {
                    "zarr.json"
                } else {
                    ".zgroup"
                };
                assert!(store.contains_key(meta), "{version:?}");
                let back = zarr::read_store(&store, &ReadOptions::default()).unwrap();
                assert_eq!(back.format, format);
                let back = back.object.with_data_type(object.data_type()).unwrap();
                assert_eq!(bytes(&back), bytes(&object), "{format} {version:?}");
            }
        }
    }
}

#[test]
fn the_descriptor_is_stored_as_the_reference_stores_it() {
    let object = &objects()[0];
    let mut store = BTreeMap::new();
    let options = WriteOptions {
        version: binsparse::Version::V0_1_0,
        ..Default::default()
    };
    zarr::write_store(&mut store, object, &options).unwrap();
    let group: Json = serde_json::from_slice(&store["zarr.json"]).unwrap();
    let reference: Json =
        serde_json::from_slice(&std::fs::read(data("binsparse/csr_f64.zarr/zarr.json")).unwrap())
            .unwrap();
    assert_eq!(group["node_type"], "group");
    assert_eq!(
        group["attributes"]["binsparse"]["binsparse"]["format"],
        reference["attributes"]["binsparse"]["binsparse"]["format"]
    );
    let values: Json = serde_json::from_slice(&store["values/zarr.json"]).unwrap();
    let reference: Json = serde_json::from_slice(
        &std::fs::read(data("binsparse/csr_f64.zarr/values/zarr.json")).unwrap(),
    )
    .unwrap();
    for key in ["data_type", "chunk_grid", "chunk_key_encoding", "codecs"] {
        assert_eq!(values[key], reference[key], "{key}");
    }
}

#[test]
fn directories_are_written_atomically_and_replace_only_zarr_groups() {
    let dir = std::env::temp_dir().join(format!("serde_daphne-zarr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("m.bsp.zarr");
    let objects = objects();
    crate::whole::write(&target, &objects[0], "binsparse").unwrap();
    // A Zarr v3 group: its root's metadata document.
    assert!(target.join("zarr.json").is_file());
    assert_eq!(
        crate::whole::read_binsparse(&target).unwrap().object,
        objects[0]
    );
    // A second write replaces the group.
    crate::whole::write(&target, &objects[3], "binsparse").unwrap();
    let back = crate::whole::read_binsparse(&target).unwrap().object;
    assert_eq!(bytes(&back), bytes(&objects[3]));
    // A frame cannot be written: nothing changes, nothing is left beside it.
    let frame = Object::frame(vec![("a".into(), Values::F64(vec![1.0]))]).unwrap();
    assert!(crate::whole::write(&target, &frame, "binsparse").is_err());
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["m.bsp.zarr"]);
    // A directory that is not a Zarr group is never replaced.
    let other = dir.join("photos.zarr");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("cat.jpg"), b"meow").unwrap();
    let err = crate::whole::write(&other, &objects[0], "binsparse").unwrap_err();
    assert!(err.to_string().contains("remove it first"), "{err}");
    assert_eq!(std::fs::read(other.join("cat.jpg")).unwrap(), b"meow");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The golden group with `edit` applied to its store.
fn golden_edited(edit: impl FnOnce(&mut BTreeMap<String, Vec<u8>>)) -> serde_daphne::Result<()> {
    let mut store = load(&data("binsparse/csr_f64.zarr"));
    edit(&mut store);
    zarr::read_store(&store, &ReadOptions::default()).map(drop)
}

fn edit_json(store: &mut BTreeMap<String, Vec<u8>>, key: &str, edit: impl FnOnce(&mut Json)) {
    let mut json: Json = serde_json::from_slice(&store[key]).unwrap();
    edit(&mut json);
    store.insert(key.to_owned(), serde_json::to_vec(&json).unwrap());
}

#[test]
fn hostile_metadata_and_chunks_are_refused_with_their_names() {
    type Edit = Box<dyn FnOnce(&mut BTreeMap<String, Vec<u8>>)>;
    let values = "values/zarr.json";
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "no group",
            Box::new(|s| drop(s.remove("zarr.json"))),
            "not a Zarr group",
        ),
        (
            "not JSON",
            Box::new(|s| drop(s.insert("zarr.json".into(), b"{".to_vec()))),
            "zarr.json is not valid JSON",
        ),
        (
            "no descriptor",
            Box::new(|s| edit_json(s, "zarr.json", |j| j["attributes"] = Json::Null)),
            "no \"binsparse\" descriptor",
        ),
        (
            "chunk of zero",
            Box::new(|s| {
                edit_json(s, values, |j| {
                    j["chunk_grid"]["configuration"]["chunk_shape"] = serde_json::json!([0])
                })
            }),
            "values/zarr.json: chunks of 0 elements",
        ),
        (
            "2-D array",
            Box::new(|s| edit_json(s, values, |j| j["shape"] = serde_json::json!([2, 3]))),
            "1-D",
        ),
        (
            "shape lies",
            Box::new(|s| edit_json(s, values, |j| j["shape"] = serde_json::json!([7]))),
            "values has 7 elements",
        ),
        (
            "chunk lies",
            Box::new(|s| {
                edit_json(s, values, |j| {
                    j["chunk_grid"]["configuration"]["chunk_shape"] = serde_json::json!([5])
                })
            }),
            "values/c/0",
        ),
        (
            "truncated chunk",
            Box::new(|s| s.get_mut("values/c/0").unwrap().truncate(20)),
            "values/c/0",
        ),
        (
            "missing chunk, no fill",
            Box::new(|s| {
                s.remove("indices_1/c/0");
                edit_json(s, "indices_1/zarr.json", |j| j["fill_value"] = Json::Null);
            }),
            "indices_1/c/0 is missing",
        ),
        (
            "sharded",
            Box::new(|s| {
                edit_json(s, values, |j| {
                    j["codecs"] = serde_json::json!([{"name": "sharding_indexed"}])
                })
            }),
            "sharded arrays are not read",
        ),
        (
            "unknown codec",
            Box::new(|s| {
                edit_json(s, values, |j| {
                    j["codecs"][1] = serde_json::json!({"name": "bz2"})
                })
            }),
            "the codec \"bz2\"",
        ),
        (
            "string data",
            Box::new(|s| edit_json(s, values, |j| j["data_type"] = "string".into())),
            "the data type string",
        ),
        (
            "millions of missing chunks",
            Box::new(|s| {
                edit_json(s, values, |j| {
                    j["shape"] = serde_json::json!([40_000_000]);
                    j["chunk_grid"]["configuration"]["chunk_shape"] = serde_json::json!([1]);
                })
            }),
            "",
        ),
    ];
    for (what, edit, message) in cases {
        let err = golden_edited(edit).expect_err(what);
        assert!(
            matches!(
                err.kind(),
                ErrorKind::ForeignInput | ErrorKind::AllocationLimit
            ),
            "{what}: {err:?}"
        );
        assert!(err.to_string().contains(message), "{what}: {err}");
    }
    // Complex values are not a malformed group, but not DAPHNE's either.
    let err = golden_edited(|s| edit_json(s, values, |j| j["data_type"] = "complex128".into()))
        .unwrap_err();
    assert_error!(err, NotConvertible);
}

#[test]
fn missing_chunks_hold_the_fill_value() {
    let mut store = BTreeMap::new();
    let object = Object::dense(1, 5, Values::I64(vec![0, 0, 0, 0, 0])).unwrap();
    zarr::write_store(&mut store, &object, &WriteOptions::default()).unwrap();
    store.remove("values/c/0");
    let read = zarr::read_store(&store, &ReadOptions::default()).unwrap();
    assert_eq!(bytes(&read.object), bytes(&object));
    edit_json(&mut store, "values/zarr.json", |j| {
        j["fill_value"] = 7.into()
    });
    let read = zarr::read_store(&store, &ReadOptions::default()).unwrap();
    let filled = Object::dense(1, 5, Values::I64(vec![7; 5])).unwrap();
    assert_eq!(bytes(&read.object), bytes(&filled));
}

#[test]
fn a_directory_store_counts_its_bytes() {
    let dir = data("binsparse/csr_f64.zarr");
    let store = Directory(dir.clone());
    let files: u64 = load(&dir).values().map(|v| v.len() as u64).sum();
    assert_eq!(store.stored_bytes().unwrap(), files);
    assert_eq!(store.get("nothing/here").unwrap(), None);
}

#[test]
fn arrays_longer_than_a_chunk_are_written_in_padded_chunks() {
    // Chunks hold 2^20 elements (docs/formats.md).
    let len = (1 << 20) + 1000;
    let values: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let object = Object::dense(1, len as u64, Values::U8(values)).unwrap();
    let mut store = BTreeMap::new();
    zarr::write_store(&mut store, &object, &WriteOptions::default()).unwrap();
    assert!(store.contains_key("values/c/1") && !store.contains_key("values/c/2"));
    let back = zarr::read_store(&store, &ReadOptions::default()).unwrap();
    assert_eq!(bytes(&back.object), bytes(&object));
}
