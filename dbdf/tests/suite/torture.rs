//! Writes killed at any moment leave the old target or the new one, and after the next
//! write nothing else: every writer is killed with SIGKILL at 20 moments spread over a write
//! (seeded, so a failure reproduces), and stopped at each step between the two halves of a
//! replacement (`SERDE_DAPHNE_CRASH_AT`, debug builds); a reader meanwhile never sees a
//! partial file.

use serde_daphne::lowlevel::portable;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_daphne::{Dense, Options, ValueType};

/// Set in a child process of this test binary: which library writer to run, and where.
const CHILD: &str = "DBDF_TORTURE_CHILD";
/// Kills per writer (on top of the stops at each crash point).
const KILLS: u64 = 12;

/// The files (and folders) a write produces, by name, each as its bytes (a folder's files by
/// relative path); absent ones are missing from the map.
type Snapshot = BTreeMap<String, BTreeMap<String, Vec<u8>>>;

fn snapshot(dir: &Path, names: &[String]) -> Snapshot {
    let mut snap = Snapshot::new();
    for name in names {
        let path = dir.join(name);
        let mut files = BTreeMap::new();
        if path.is_dir() {
            collect(&path, &path, &mut files);
        } else if let Ok(bytes) = std::fs::read(&path) {
            files.insert(String::new(), bytes);
        } else {
            continue;
        }
        snap.insert(name.clone(), files);
    }
    snap
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            files.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A deterministic sequence in [0, 1) (a 64-bit LCG): where in a write each kill lands.
struct Moments(u64);

impl Moments {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One writer under test: the command that writes the new version of its outputs.
struct Writer {
    name: &'static str,
    /// The files or folders it writes (the target first, then sidecars and metadata).
    outputs: Vec<String>,
    /// The command writing version `v` (0: the old, 1: the new).
    command: Box<dyn Fn(u8) -> Command>,
    /// The steps between which a crash point stops it.
    crash_points: Vec<&'static str>,
}

fn dbdf_cli(dir: &Path, args: Vec<String>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dbdf"));
    command.current_dir(dir).arg("--quiet").args(args);
    command
}

/// A child of this test binary running a library writer (`library_writer_child`).
fn library(dir: &Path, kind: &str, target: &str, version: u8) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .current_dir(dir)
        .args(["torture::library_writer_child", "--exact", "--nocapture"])
        .arg("--test-threads=1")
        .env(CHILD, format!("{kind}:{target}:{version}"));
    command
}

fn matrix(rows: usize, cols: usize, version: u8) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_fn((rows, cols), |(r, c)| {
        let x = (r * cols + c) as f64;
        if (r + c) % 3 == 0 {
            0.0
        } else {
            x * 0.5 + f64::from(version)
        }
    })
}

/// Runs the library writer a parent asked for; does nothing in an ordinary test run.
#[test]
fn library_writer_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = spec.splitn(3, ':');
    let (kind, target, version) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap().parse::<u8>().unwrap(),
    );
    let m = matrix(2000, 1500, version);
    match kind {
        "to_file" => serde_daphne::to_file(target, &Dense(m)).unwrap(),
        "to_file_daphne" => {
            let options = Options {
                dialect: Some(serde_daphne::Dialect::Runtime),
                ..Options::new()
            };
            options.to_file(target, &Dense(m)).unwrap();
        }
        "writer_tiles" => {
            let mut writer = serde_daphne::DbdfWriter::create(target).unwrap();
            let (rows, cols) = m.dim();
            writer
                .begin(serde_daphne::Header::DenseMatrix {
                    rows: rows as u64,
                    cols: cols as u64,
                    value_type: ValueType::F64,
                })
                .unwrap();
            for r in (0..rows).step_by(500) {
                for c in (0..cols).step_by(500) {
                    let tile = m.slice(ndarray::s![r..(r + 500).min(rows), c..(c + 500).min(cols)]);
                    writer.write_dense_tile(r as u64, c as u64, tile).unwrap();
                }
            }
            writer.finish().unwrap();
        }
        "writer_runtime_csr" => {
            let options = Options {
                dialect: Some(serde_daphne::Dialect::Runtime),
                ..Options::new()
            };
            let mut writer = options.create(target).unwrap();
            let (rows, cols) = m.dim();
            writer
                .begin(serde_daphne::Header::CsrMatrix {
                    rows: rows as u64,
                    cols: cols as u64,
                    value_type: ValueType::F64,
                })
                .unwrap();
            for r in (0..rows).step_by(100) {
                let band = m.slice(ndarray::s![r..(r + 100).min(rows), ..]);
                let sparse = sprs::CsMat::csr_from_dense(band, 0.0);
                writer.write_csr_tile(r as u64, 0, sparse.view()).unwrap();
            }
            writer.finish().unwrap();
        }
        other => panic!("no writer {other}"),
    }
}

/// A writer's crash points, and for one with sidecars the moment between putting its data
/// in place and its sidecars (each file is then the old or the new one on its own).
fn with_sidecars(mut points: Vec<&'static str>, outputs: &[String]) -> Vec<&'static str> {
    if outputs.len() > 1 {
        points.push("set-partly-replaced");
    }
    points
}

fn writers(dir: &Path) -> Vec<Writer> {
    // The portable paths differ in how a file or a directory is put in place, not in what is
    // written: there, one library writer, one converter to a file and the two converters to
    // directories cover them.
    let every = !portable();
    let mut writers = Vec::new();
    for (kind, target, outputs) in [
        ("to_file", "lib.dbdf", vec![]),
        ("to_file_daphne", "daphne.dbdf", vec!["daphne.dbdf.meta"]),
        ("writer_tiles", "tiles.dbdf", vec![]),
        ("writer_runtime_csr", "csr.dbdf", vec!["csr.dbdf.meta"]),
    ] {
        if !every && kind != "to_file" {
            continue;
        }
        let dir = dir.to_owned();
        let mut all = vec![target.to_owned()];
        all.extend(outputs.iter().map(|s| s.to_string()));
        writers.push(Writer {
            name: kind,
            crash_points: with_sidecars(vec!["file-named"], &all),
            outputs: all,
            command: Box::new(move |v| library(&dir, kind, target, v)),
        });
    }
    // `dbdf convert` to every format (from the two versions of a .dbdf matrix), and `slice`.
    let small = [("m.csv", vec!["m.csv.meta"]), ("m.mtx", vec![])];
    let large = [
        ("m.npy", vec![], vec![]),
        ("m_tiled.dbdf", vec![], vec!["--tile", "700,700"]),
        ("m.fut", vec![], vec![]),
        ("m.bsp.npz", vec![], vec![]),
        ("m.sysds", vec!["m.sysds.mtd"], vec!["--to", "systemds"]),
        ("m.parquet", vec![], vec![]),
        ("m.arrow", vec![], vec![]),
        // Unsynced: a killed process still leaves the old file or the new one.
        ("m_unsynced.dbdf", vec![], vec!["--no-sync"]),
    ];
    let mut add = |target: &str, extra: Vec<&str>, args: Vec<&str>, from: &str, dirs: bool| {
        if !every && !dirs && target != "m.npy" {
            return;
        }
        let (target, from) = (target.to_owned(), from.to_owned());
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut outputs = vec![target.clone()];
        outputs.extend(extra.iter().map(|s| s.to_string()));
        let dir = dir.to_owned();
        // Under SERDE_DAPHNE_PORTABLE directories are swapped in two renames, as on systems
        // without renameat2: a stop between them leaves the target missing.
        let crash_points = with_sidecars(
            if dirs && !every {
                vec!["directory-built", "directory-moved-aside"]
            } else if dirs {
                vec!["directory-built", "directory-swapped"]
            } else {
                vec!["file-named"]
            },
            &outputs,
        );
        writers.push(Writer {
            name: Box::leak(
                format!("convert {from}.. {target} {}", args.join(" ")).into_boxed_str(),
            ),
            outputs,
            command: Box::new(move |v| {
                let mut all = vec![
                    "convert".to_owned(),
                    format!("{from}{v}.dbdf"),
                    target.clone(),
                ];
                all.extend(args.iter().cloned());
                dbdf_cli(&dir, all)
            }),
            crash_points,
        });
    };
    for (target, extra) in small {
        add(target, extra, vec![], "small", false);
    }
    for (target, extra, args) in large {
        add(target, extra, args, "large", false);
    }
    add("m.bsp.zarr", vec![], vec![], "large", true);
    add(
        "parts.sysds",
        vec!["parts.sysds.mtd"],
        vec!["--to", "systemds", "--parts", "3"],
        "large",
        true,
    );
    if !every {
        return writers;
    }
    let dir_owned = dir.to_owned();
    writers.push(Writer {
        name: "slice",
        outputs: vec!["window.npy".into()],
        command: Box::new(move |v| {
            let args = [
                "slice",
                &format!("large{v}.dbdf"),
                "window.npy",
                "--rows",
                "100:1900",
            ];
            dbdf_cli(&dir_owned, args.iter().map(|s| s.to_string()).collect())
        }),
        crash_points: vec!["file-named"],
    });
    writers
}

fn run(mut command: Command) -> Duration {
    let start = Instant::now();
    let out = command.stdout(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed()
}

fn start(mut command: Command) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn kills_at_any_moment_leave_the_old_or_the_new_outputs_and_no_litter() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dbdf_torture_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for v in 0..2u8 {
        serde_daphne::to_file(
            dir.join(format!("large{v}.dbdf")),
            &Dense(matrix(2000, 1500, v)),
        )
        .unwrap();
        serde_daphne::to_file(
            dir.join(format!("small{v}.dbdf")),
            &Dense(matrix(400, 300, v)),
        )
        .unwrap();
    }
    let inputs = listing(&dir);
    let mut moments = Moments(35);
    let mut known = BTreeSet::new();
    for writer in writers(&dir) {
        // The new version, then the old one, each whole: what a kill may leave.
        run((writer.command)(1));
        let new = snapshot(&dir, &writer.outputs);
        let took = run((writer.command)(0));
        let old = snapshot(&dir, &writer.outputs);
        assert_ne!(old, new, "{}: the versions differ", writer.name);
        let mut outcomes = [0usize; 2];
        let check = |what: &str, outcomes: &mut [usize; 2]| {
            let now = snapshot(&dir, &writer.outputs);
            // Each output on its own is the old one or the new one (a data file and its
            // sidecar are replaced one after the other).
            for name in &writer.outputs {
                let got = now.get(name);
                if got.is_none() && what.ends_with("directory-moved-aside") {
                    continue;
                }
                let is_old = got == old.get(name);
                let is_new = got == new.get(name);
                assert!(
                    is_old || is_new,
                    "{}: {name} is neither version {what}",
                    writer.name
                );
            }
            outcomes[usize::from(now == new)] += 1;
        };
        for k in 0..KILLS {
            let at = took.mul_f64(0.02 + 0.96 * moments.next());
            let mut child = start((writer.command)(1));
            std::thread::sleep(at);
            let _ = child.kill();
            child.wait().unwrap();
            check(&format!("after a kill at {at:?} (kill {k})"), &mut outcomes);
        }
        for point in &writer.crash_points {
            let mut command = (writer.command)(1);
            command.env("SERDE_DAPHNE_CRASH_AT", point);
            let status = command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert_eq!(
                status.code(),
                Some(137),
                "{}: stopped at {point}",
                writer.name
            );
            check(&format!("when stopped at {point}"), &mut outcomes);
        }
        // The next write cleans up what the killed ones may have left.
        run((writer.command)(1));
        assert_eq!(snapshot(&dir, &writer.outputs), new, "{}", writer.name);
        known.extend(writer.outputs.iter().cloned());
        let litter: Vec<String> = listing(&dir)
            .into_iter()
            .filter(|n| !inputs.contains(n) && !known.contains(n))
            .collect();
        assert!(
            litter.is_empty(),
            "{}: litter after the next write: {litter:?}",
            writer.name
        );
        eprintln!(
            "torture: {:<45} {KILLS} kills + {} stops: {} old, {} new, no litter",
            writer.name,
            writer.crash_points.len(),
            outcomes[0],
            outcomes[1]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reader reading the target in a loop while a writer replaces it 50 times sees a whole
/// old or new file every time.
#[test]
fn readers_see_a_whole_file_while_it_is_replaced() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dbdf_replace_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.dbdf");
    let versions: Vec<Vec<u8>> = (0..2)
        .map(|v| serde_daphne::to_vec(&Dense(matrix(500, 400, v))).unwrap())
        .collect();
    std::fs::write(&path, &versions[0]).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let reads = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    versions.contains(&bytes),
                    "a partial file ({} bytes)",
                    bytes.len()
                );
                reads += 1;
            }
            reads
        });
        for i in 0..50 {
            let m = Dense(matrix(500, 400, (i % 2) as u8));
            Options {
                sync: false,
                ..Options::new()
            }
            .to_file(&path, &m)
            .unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap()
    });
    assert!(reads > 0);
    assert_eq!(listing(&dir), BTreeSet::from(["m.dbdf".to_owned()]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `.npy` file truncated by another process while `dbdf convert` writes it to SystemDS
/// ends the conversion with an error (or not at all, when the bytes it needed were read),
/// never with a signal, and leaves nothing (issue 35: it was `SIGBUS` through a memory map).
#[test]
fn inputs_truncated_underneath_are_errors_not_crashes() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dbdf_truncated_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    serde_daphne::to_file(dir.join("m.dbdf"), &Dense(matrix(2000, 1500, 1))).unwrap();
    let convert = |args: &[&str]| dbdf_cli(&dir, args.iter().map(|s| s.to_string()).collect());
    run(convert(&["convert", "m.dbdf", "whole.npy"]));
    let took = run(convert(&[
        "convert",
        "whole.npy",
        "out.sysds",
        "--to",
        "systemds",
    ]));
    std::fs::remove_file(dir.join("out.sysds")).unwrap();
    std::fs::remove_file(dir.join("out.sysds.mtd")).unwrap();
    let whole = std::fs::read(dir.join("whole.npy")).unwrap();
    for fraction in [0.1, 0.3, 0.6] {
        std::fs::write(dir.join("t.npy"), &whole).unwrap();
        let mut child = start(convert(&[
            "convert", "t.npy", "t.sysds", "--to", "systemds",
        ]));
        std::thread::sleep(took.mul_f64(fraction));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("t.npy"))
            .unwrap();
        file.set_len(whole.len() as u64 / 3).unwrap();
        let status = child.wait().unwrap();
        assert!(status.code().is_some(), "ended by a signal: {status:?}");
        if !status.success() {
            let left: Vec<String> = listing(&dir)
                .into_iter()
                .filter(|n| n.starts_with(".t.sysds") || n.starts_with("t.sysds"))
                .collect();
            assert!(left.is_empty(), "a failed conversion left {left:?}");
        }
        let _ = std::fs::remove_file(dir.join("t.sysds"));
        let _ = std::fs::remove_file(dir.join("t.sysds.mtd"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
