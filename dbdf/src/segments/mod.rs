//! DAPHNE's segmented layout, the form its distributed runtime reads and writes (DAPHNE's
//! `doc/HDFSUsage.md`, `src/runtime/local/io/HDFS/`): a matrix or frame as a folder
//! `NAME.hdfs` of row segments `NAME.hdfs_segment_<i>` (i from 1, in row order), each a
//! complete runtime-dialect file of one object with its own `.meta` sidecar, and a local
//! sidecar `NAME.hdfs.meta` beside the folder naming it (`"hdfs": {"HDFSFilename": ...}`).
//!
//! - Reading: any number of segments, in order; each is checked against its sidecar (as any
//!   runtime-dialect file is), all against each other (columns, types, labels) and against
//!   the local sidecar where there is one (the total rows). Windows read only the segments
//!   they overlap.
//! - Writing: DAPHNE's row split for `W` segments (its `LoadPartitioningDistributed`:
//!   `rows / W` rows each, the first `rows % W` one more; never more segments than rows),
//!   each segment exactly what DAPHNE's `WriteDaphneHDFS` writes for its rows (the runtime
//!   dialect's bytes, the sidecar `{"numCols":..,"numRows":..,"valueType":..}`), the folder
//!   replaced in one step, then the local sidecar. DAPHNE reads dense matrices from
//!   segments; CSR matrices and frames are written the same way (each segment a CSR or
//!   frame file with its sidecar), which this crate reads back and DAPHNE does not yet.

mod driver;
mod sink;
mod source;

pub(crate) use driver::Segments;
use std::path::{Path, PathBuf};

use crate::pipe;
use serde_daphne::lowlevel::{sidecar_path, temporary_path};
use serde_daphne::{Error, Result};

pub use sink::SegmentsSink;
pub use source::SegmentsSource;

/// How a write ([`sink`]) splits an object into segments. Plain data: set the fields that differ
/// from [`WriteOptions::default`] (one segment per core of this machine).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// How many segments (DAPHNE's workers); `None` for one per core. An object with fewer
    /// rows gets one segment per row (one for no rows).
    pub segments: Option<usize>,
}

impl WriteOptions {
    /// The segments asked for, or one per core.
    fn count(&self) -> usize {
        self.segments
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
            .max(1)
    }
}

/// The rows of each segment when `rows` are split between `workers`, as DAPHNE splits them
/// (`LoadPartitioningDistributed.h`: worker `i` starts at `i * k + min(i, m)`, with
/// `k = rows / workers`, `m = rows % workers`); workers that would get no rows get no
/// segment, and an object without rows is one segment.
pub(crate) fn row_split(rows: u64, workers: usize) -> Vec<std::ops::Range<u64>> {
    let workers = (workers.max(1) as u64).min(rows.max(1));
    let (k, m) = (rows / workers, rows % workers);
    let start = |i: u64| i * k + i.min(m);
    (0..workers).map(|i| start(i)..start(i + 1)).collect()
}

/// The path of segment `i` (from 1) of the folder at `folder`: `folder/NAME_segment_<i>`.
///
/// # Errors
/// [`serde_daphne::ErrorKind::InvalidValue`] for a folder path without a UTF-8 file name.
pub fn segment_path(folder: &Path, i: usize) -> Result<PathBuf> {
    Ok(folder.join(segment_name(folder_name(folder)?, i)))
}

/// The file name of segment `i` (from 1) of a folder named `folder_name`:
/// `NAME_segment_<i>`, the one place this rule of DAPHNE's layout is written down.
pub fn segment_name(folder_name: &str, i: usize) -> String {
    format!("{}{i}", segment_prefix(folder_name))
}

/// What the names of a folder's segments (and their sidecars) start with.
pub(crate) fn segment_prefix(folder_name: &str) -> String {
    format!("{folder_name}_segment_")
}

fn folder_name(folder: &Path) -> Result<&str> {
    folder.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        Error::invalid(format!(
            "{}: a folder of segments needs a UTF-8 name",
            folder.display()
        ))
    })
}

/// The segments of the folder at `folder` as a source of the pipe ([`SegmentsSource`]).
///
/// # Errors
/// [`serde_daphne::ErrorKind::InvalidValue`] for a folder without segments, a gap in their
/// numbers, or segments that disagree (columns, types, labels) or disagree with the local
/// sidecar; each segment's own errors (malformed bytes, a disagreeing sidecar) with its
/// path; I/O errors.
pub fn source(folder: impl AsRef<Path>) -> Result<SegmentsSource> {
    SegmentsSource::open(folder.as_ref())
}

/// A sink of the pipe writing the folder of segments at `folder` and its local sidecar
/// ([`SegmentsSink`]).
pub fn sink(folder: impl AsRef<Path>, options: &WriteOptions) -> SegmentsSink<'static> {
    SegmentsSink::new(folder.as_ref(), options)
}

/// Starts a write of the folder of segments `target` by several writers (a job's tasks in
/// any process that sees the folder's parent): a new hidden scratch folder beside `target`,
/// named as every temporary of `target` is (`.NAME.tmp-PID-N`, here with `-writer` after
/// it, so that a later write of `target` removes it once this process is gone), and in it
/// the folder, named as `target`, where the writers put their segments and sidecars before
/// [`commit`] moves them in place: `(scratch, staged)`. [`discard`] removes the scratch
/// folder whatever becomes of the job.
///
/// # Errors
/// I/O errors creating the folders.
pub fn stage(target: &Path, writer: &str) -> Result<(PathBuf, PathBuf)> {
    let name = folder_name(target)?;
    let mut scratch = temporary_path(target).into_os_string();
    scratch.push(format!("-{writer}"));
    let scratch = PathBuf::from(scratch);
    let staged = scratch.join(name);
    std::fs::create_dir_all(&staged)?;
    Ok((scratch, staged))
}

/// Removes a scratch folder of [`stage`], which tasks of a failed job may still be writing
/// into: a failed job's other tasks run on after the driver gives up (Spark calls `abort`
/// and Dask's `compute` raises without waiting for them). Renamed first, the folder takes no
/// new file, since a task names its files from the scratch folder's old path. A folder that
/// is gone already is no error.
pub fn discard(scratch: &Path) {
    let mut gone = scratch.as_os_str().to_owned();
    gone.push("-removed");
    let gone = PathBuf::from(gone);
    let removing = match std::fs::rename(scratch, &gone) {
        Ok(()) => gone.as_path(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(_) => scratch,
    };
    let _ = std::fs::remove_dir_all(removing);
}

/// Puts the folder of segments `staged` (written by several writers, each a segment and
/// its sidecar, as Dask's workers write them; named as `folder` is) in place at `folder`:
/// checks that the segments read as one object, moves them into a folder swapped in whole
/// for any earlier one, writes the local sidecar, and removes `staged`.
///
/// # Errors
/// As [`source`], for the staged segments (then nothing moves); I/O errors.
pub fn commit(staged: &Path, folder: &Path) -> Result<()> {
    if folder_name(staged)? != folder_name(folder)? {
        return Err(Error::invalid(format!(
            "{} is staged for another folder than {}",
            staged.display(),
            folder.display()
        )));
    }
    let source = SegmentsSource::open(staged)?;
    let header = crate::pipe::Source::headers(&source)[0].clone();
    drop(source);
    // The folder and its local sidecar as one set: both or neither.
    let mut set = serde_daphne::lowlevel::FileSet::new(false);
    set.folder(folder, sink::is_segment_folder, |dir| {
        for entry in std::fs::read_dir(staged)? {
            let entry = entry?;
            std::fs::rename(entry.path(), dir.join(entry.file_name()))?;
        }
        Ok(())
    })?;
    set.segments_sidecar(folder, &header)?;
    set.commit()?;
    // Emptied, in the caller's scratch folder, which its caller removes in any case.
    let _ = std::fs::remove_dir(staged);
    Ok(())
}

/// Puts the segments a job's writers wrote in place at `folder`, through [`commit`]: `parts`
/// are their files (each with its `.meta` sidecar beside it, as `PATH.meta`) in row order,
/// with their rows. Parts without rows make no segment unless all are without (the layout
/// needs one). With `append`, the segments `folder` holds come first (hard links where the
/// file system has them, else copies): the old folder stays whole until the commit. The
/// parts are moved into `staged`, named as its segments.
///
/// # Errors
/// An existing folder's segments that do not read as one object, or that disagree with the
/// parts; I/O errors.
pub fn commit_parts(
    staged: &Path,
    folder: &Path,
    parts: &[(PathBuf, u64)],
    append: bool,
) -> Result<()> {
    let name = folder_name(staged)?;
    let mut earlier = Vec::new();
    if append && folder.exists() {
        let count = pipe::Source::files(&SegmentsSource::open(folder)?).map_or(0, |f| f.len());
        for k in 1..=count {
            earlier.push(segment_path(folder, k)?);
        }
    }
    let with_rows: Vec<&PathBuf> = parts
        .iter()
        .filter(|(_, rows)| *rows > 0)
        .map(|(p, _)| p)
        .collect();
    let kept = match with_rows.is_empty() {
        true => parts.iter().take(1).map(|(p, _)| p).collect(),
        false => with_rows,
    };
    let places = earlier
        .iter()
        .map(|p| (p, true))
        .chain(kept.into_iter().map(|p| (p, false)));
    for (k, (path, link)) in places.enumerate() {
        let segment = staged.join(segment_name(name, k + 1));
        for (from, to) in [
            (path.clone(), segment.clone()),
            (sidecar_path(path), sidecar_path(&segment)),
        ] {
            match link {
                true => std::fs::hard_link(&from, &to)
                    .or_else(|_| std::fs::copy(&from, &to).map(drop))?,
                false => std::fs::rename(&from, &to)?,
            }
        }
    }
    commit(staged, folder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipe::Source;
    use serde_daphne::Object;

    /// The object the folder holds, through its source.
    fn read(folder: &Path) -> Result<Object> {
        Ok(pipe::read_objects(&mut source(folder)?)?.remove(0))
    }

    /// DAPHNE's split (`LoadPartitioningDistributed.h`), worked by hand.
    #[test]
    fn a_staged_folder_is_named_as_every_temporary_and_discarded_whole() {
        let dir = std::env::temp_dir().join(format!("dbdf-stage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("m.hdfs");
        let (scratch, staged) = stage(&target, "dask").unwrap();
        let name = scratch.file_name().unwrap().to_str().unwrap().to_owned();
        let prefix = format!(".m.hdfs.tmp-{}-", std::process::id());
        assert!(
            name.starts_with(&prefix) && name.ends_with("-dask"),
            "{name}"
        );
        assert_eq!(staged, scratch.join("m.hdfs"));
        assert!(staged.is_dir());
        std::fs::write(staged.join("late"), b"a task's file").unwrap();
        discard(&scratch);
        discard(&scratch);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }

    /// A job's parts: the empty one makes no segment; an append keeps the old segments first.
    #[test]
    fn a_jobs_parts_become_segments_after_those_an_append_keeps() {
        let dir = std::env::temp_dir().join(format!("dbdf-parts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let m = |rows: u64, at: f64| {
            let values = (0..rows * 2).map(|v| v as f64 + at).collect::<Vec<f64>>();
            Object::dense(rows, 2, serde_daphne::Values::F64(values)).unwrap()
        };
        // Each task's file: one segment (and its sidecar) of a folder of its own.
        let part = |k: usize, object: &Object| {
            let folder = dir.join(format!("task{k}.hdfs"));
            let one = WriteOptions { segments: Some(1) };
            let sink = Box::new(sink(&folder, &one));
            pipe::write_objects(std::slice::from_ref(object), sink).unwrap();
            (segment_path(&folder, 1).unwrap(), object.shape().0)
        };
        let target = dir.join("t.hdfs");
        let (scratch, staged) = stage(&target, "test").unwrap();
        let parts = [
            part(1, &m(3, 0.0)),
            part(2, &m(0, 0.0)),
            part(3, &m(2, 6.0)),
        ];
        commit_parts(&staged, &target, &parts, false).unwrap();
        discard(&scratch);
        let rows = |s: SegmentsSource| {
            s.files()
                .unwrap()
                .into_iter()
                .map(|(_, r)| r)
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(source(&target).unwrap()), [0..3, 3..5]);
        assert_eq!(read(&target).unwrap(), m(5, 0.0));
        let (scratch, staged) = stage(&target, "test").unwrap();
        commit_parts(&staged, &target, &[part(4, &m(1, 10.0))], true).unwrap();
        discard(&scratch);
        assert_eq!(rows(source(&target).unwrap()), [0..3, 3..5, 5..6]);
        assert_eq!(read(&target).unwrap(), m(6, 0.0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rows_split_as_daphne_splits_them() {
        assert_eq!(row_split(10, 2), vec![0..5, 5..10]);
        assert_eq!(row_split(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(row_split(10, 4), vec![0..3, 3..6, 6..8, 8..10]);
        assert_eq!(row_split(2, 4), vec![0..1, 1..2]);
        assert_eq!(row_split(0, 4), vec![0..0]);
        assert_eq!(row_split(7, 0), vec![0..7]);
    }
}
