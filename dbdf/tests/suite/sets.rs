//! A file and its sidecars change together or not at all: when a new sidecar cannot take its
//! place, `dbdf` exits 1 with one line and the old file and sidecar are as they were (issue
//! 69); a standard error that cannot be written costs the message, never the exit code.
//! The fault-injection suite (`tests/faults/`) fails every system call of every writer; these
//! tests need no injector: a folder in the way of the new sidecar makes its rename fail.
#![cfg(feature = "cli")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_daphne::Dense;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dbdf_sets_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn dbdf(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbdf"))
        .current_dir(dir)
        .arg("--quiet")
        .args(args)
        .output()
        .expect("dbdf runs")
}

/// Every file under `dir` (folders' files by relative path) with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Asserts that two trees are equal, naming the entries that differ (not their bytes).
fn assert_same(now: &BTreeMap<String, Vec<u8>>, was: &BTreeMap<String, Vec<u8>>, what: &str) {
    let differ: Vec<&String> = now
        .keys()
        .chain(was.keys())
        .filter(|k| now.get(*k) != was.get(*k))
        .collect();
    assert!(differ.is_empty(), "{what}: these differ: {differ:?}");
}

fn matrix(rows: usize, version: u8) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_fn((rows, 4), |(r, c)| (r * 4 + c) as f64 + f64::from(version))
}

/// One writer with a sidecar: its output, the sidecar's name and the extra arguments.
struct Case {
    output: &'static str,
    sidecar: &'static str,
    args: &'static [&'static str],
}

const CASES: [Case; 5] = [
    Case {
        output: "t.csv",
        sidecar: "t.csv.meta",
        args: &[],
    },
    Case {
        output: "d.dbdf",
        sidecar: "d.dbdf.meta",
        args: &["--dialect", "daphne"],
    },
    Case {
        output: "m.sysds",
        sidecar: "m.sysds.mtd",
        args: &["--to", "systemds"],
    },
    Case {
        output: "p.sysds",
        sidecar: "p.sysds.mtd",
        args: &["--to", "systemds", "--parts", "2"],
    },
    Case {
        output: "s.hdfs",
        sidecar: "s.hdfs.meta",
        args: &["--to", "segments", "--segments", "2"],
    },
];

/// The new sidecar cannot be put in place: the old data file and the old sidecar stay, the
/// command fails with one line, and nothing else is left. The CSV case is the regression of
/// issue 69 (the old `t.csv` was deleted when its new `.meta` could not be written).
#[test]
fn a_sidecar_that_cannot_be_replaced_costs_nothing_of_the_old_pair() {
    let dir = scratch("obstacle");
    serde_daphne::to_file(dir.join("a.dbdf"), &Dense(matrix(50, 0))).unwrap();
    serde_daphne::to_file(dir.join("b.dbdf"), &Dense(matrix(60, 1))).unwrap();
    for case in CASES {
        let convert = |input: &str| {
            let mut args = vec!["convert", input, case.output];
            args.extend(case.args);
            dbdf(&dir, &args)
        };
        let old = convert("a.dbdf");
        assert!(
            old.status.success(),
            "{}",
            String::from_utf8_lossy(&old.stderr)
        );
        // The old sidecar moves into a folder of that name, where no file can go; the old
        // data stays beside it.
        let sidecar = dir.join(case.sidecar);
        let kept = dir.join("kept");
        std::fs::rename(&sidecar, &kept).unwrap();
        std::fs::create_dir(&sidecar).unwrap();
        std::fs::rename(&kept, sidecar.join("old")).unwrap();
        let before = tree(&dir);
        let failed = convert("b.dbdf");
        let err = String::from_utf8_lossy(&failed.stderr).into_owned();
        assert_eq!(failed.status.code(), Some(1), "{}: {err}", case.output);
        assert_eq!(err.lines().count(), 1, "{}: {err}", case.output);
        assert!(
            err.starts_with("dbdf: ") && err.contains(case.sidecar),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert_same(
            &tree(&dir),
            &before,
            &format!("{}: the old set", case.output),
        );
        // Once the way is clear, the new pair is written and nothing else is left.
        std::fs::remove_dir_all(&sidecar).unwrap();
        let new = convert("b.dbdf");
        assert!(
            new.status.success(),
            "{}",
            String::from_utf8_lossy(&new.stderr)
        );
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(names.is_empty(), "{}: litter {names:?}", case.output);
        let back = dbdf(&dir, &["convert", case.output, "back.dbdf"]);
        assert!(
            back.status.success(),
            "{}",
            String::from_utf8_lossy(&back.stderr)
        );
        let got: Dense<f64> = serde_daphne::from_file(dir.join("back.dbdf")).unwrap();
        assert_eq!(got.0, matrix(60, 1), "{}", case.output);
        std::fs::remove_file(dir.join("back.dbdf")).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stale sidecar that a new write removes comes back when the removal cannot go through
/// with the rest of the set: here a spec-dialect `.dbdf` over a runtime-dialect pair whose
/// block index is in the way.
#[test]
fn a_stale_sidecar_goes_with_the_write_that_replaces_its_file() {
    let dir = scratch("stale");
    serde_daphne::to_file(dir.join("a.dbdf"), &Dense(matrix(5, 0))).unwrap();
    let pair = dbdf(
        &dir,
        &["convert", "a.dbdf", "d.dbdf", "--dialect", "daphne"],
    );
    assert!(pair.status.success());
    assert!(dir.join("d.dbdf.meta").is_file());
    let spec = dbdf(&dir, &["convert", "a.dbdf", "d.dbdf"]);
    assert!(
        spec.status.success(),
        "{}",
        String::from_utf8_lossy(&spec.stderr)
    );
    assert!(
        !dir.join("d.dbdf.meta").exists(),
        "the runtime sidecar went"
    );
    // An index beside the file is removed with the next write of the file (it would
    // describe the old one)...
    assert!(dbdf(&dir, &["index", "d.dbdf"]).status.success());
    assert!(dir.join("d.dbdf.index").is_file());
    let again = dbdf(
        &dir,
        &["convert", "a.dbdf", "d.dbdf", "--dialect", "daphne"],
    );
    assert!(again.status.success());
    assert!(!dir.join("d.dbdf.index").exists());
    // ... and where it cannot go, nothing of the old pair changes.
    std::fs::create_dir(dir.join("d.dbdf.index")).unwrap();
    std::fs::write(dir.join("d.dbdf.index").join("x"), b"in the way").unwrap();
    let before = tree(&dir);
    let failed = dbdf(&dir, &["convert", "a.dbdf", "d.dbdf"]);
    assert_eq!(failed.status.code(), Some(1));
    assert_same(&tree(&dir), &before, "the old pair");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `dbdf` with standard error closed (`2>&-`) or on a full device (`/dev/full`).
fn with_broken_stderr(dir: &Path, how: &str, args: &[&str]) -> Output {
    let dbdf = env!("CARGO_BIN_EXE_dbdf");
    let redirect = match how {
        "closed" => "2>&-",
        _ => "2>/dev/full",
    };
    Command::new("sh")
        .current_dir(dir)
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {redirect}"))
        .arg(dbdf)
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .expect("sh runs")
}

/// An error, a warning or `--stats` that cannot be written is dropped: exit code 1 for the
/// failure (not 101, a panic's), 0 for the success.
#[test]
fn a_failing_standard_error_is_not_a_crash() {
    let dir = scratch("stderr");
    serde_daphne::to_file(dir.join("a.dbdf"), &Dense(matrix(5, 0))).unwrap();
    let small = ndarray::Array2::from_shape_fn((3, 2), |(r, c)| (r + c) as i16);
    serde_daphne::to_file(dir.join("i.dbdf"), &Dense(small)).unwrap();
    let full = Path::new("/dev/full").exists();
    for how in ["closed", "full"] {
        if how == "full" && !full {
            continue;
        }
        let failed = with_broken_stderr(&dir, how, &["convert", "missing.npy", "out.dbdf"]);
        assert_eq!(failed.status.code(), Some(1), "{how}");
        assert!(!dir.join("out.dbdf").exists());
        let stats = with_broken_stderr(&dir, how, &["--stats", "info", "a.dbdf"]);
        assert_eq!(stats.status.code(), Some(0), "{how}");
        // A warning (16-bit values named as 32-bit in the sidecar) that cannot be printed.
        let warned = with_broken_stderr(&dir, how, &["convert", "i.dbdf", "w.csv"]);
        assert_eq!(warned.status.code(), Some(0), "{how}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
