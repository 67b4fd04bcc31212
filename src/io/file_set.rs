//! A file and its sidecars (or a folder and its sidecar) replaced as one unit.
//!
//! Every member is written in full under a temporary name (or none) first; only when all are
//! complete are they put in place, one after another, in the order they were added: the
//! data before the sidecars that describe it, removals last. Each old member is kept until
//! the whole new set is in place, and a failure on the way puts back what had moved, so an
//! I/O error at any step leaves the old set whole (and no temporary name once the next write
//! of the same targets has run).
//!
//! No platform renames several names in one step, so the set has one unguarded moment: a
//! reader looking between two of the renames (microseconds apart) sees the new data beside
//! the old sidecar, and a kill just then leaves that pair until the next write. Data first
//! is the safer order: the old sidecar then describes other data (this crate's readers check
//! a sidecar against the header and say so), where sidecar first would send a reader to data
//! that is not there yet. `docs/hostile-input.md` states the guarantee.
//!
//! How an old member is kept: on Linux the new member and the old one swap names in one step
//! (`renameat2(RENAME_EXCHANGE)`), and swap back on failure; elsewhere an old file is first
//! linked under a temporary name (an old folder moved aside, which leaves the name empty for
//! a moment) and renamed back on failure.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::atomic::{
    crash_point, exchange, finish, folder_of, remove_any, remove_stale_temporaries,
    remove_stale_temporaries_of, temporary_path, Pending, Temporary, Writeback,
};
use super::meta::{meta_json, segments_meta, sidecar_path};
use super::Preallocating;
use crate::error::Result;
use crate::Header;

/// A data file and its sidecars (files or folders), written under temporary names and then
/// put in place together: the old set or the new set, never less than the old set after a
/// failed write. Dropped without [`FileSet::commit`], it leaves nothing.
///
/// ```
/// use serde_daphne::lowlevel::FileSet;
///
/// let dir = std::env::temp_dir().join("serde_daphne_doc_file_set");
/// std::fs::create_dir_all(&dir)?;
/// let mut set = FileSet::new(true);
/// set.bytes(dir.join("t.csv"), b"1,2\n")?;
/// set.bytes(dir.join("t.csv.meta"), br#"{"numRows":1,"numCols":2,"valueType":"si64"}"#)?;
/// set.commit()?; // both in place, or (on an error) both as they were
/// assert_eq!(std::fs::read(dir.join("t.csv"))?, b"1,2\n");
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
pub struct FileSet {
    sync: bool,
    members: Vec<Member>,
}

struct Member {
    target: PathBuf,
    new: New,
}

/// What a member's target becomes.
enum New {
    File(File, Pending),
    Named(Temporary),
    Folder(Temporary),
    Gone,
}

impl std::fmt::Debug for FileSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let targets: Vec<&Path> = self.members.iter().map(|m| m.target.as_path()).collect();
        f.debug_struct("FileSet")
            .field("sync", &self.sync)
            .field("targets", &targets)
            .finish()
    }
}

/// How one member was put in place, and so how to put the old one back.
enum Moved {
    /// Nothing was at the target, and nothing is to be.
    Nothing,
    /// Nothing was at the target: what is there now goes.
    Created(PathBuf),
    /// The old member is at `old`, the target's name swapped with it: swap back.
    Exchanged { target: PathBuf, old: Temporary },
    /// The old member is kept at `old` (a link to it, or moved aside): rename it back.
    Aside { target: PathBuf, old: Temporary },
}

impl FileSet {
    /// An empty set; its files are synced to disk before they are named when `sync`.
    pub fn new(sync: bool) -> FileSet {
        FileSet {
            sync,
            members: Vec::new(),
        }
    }

    /// Adds a new file at `target`, written now through `write` into a file with no name
    /// (or a temporary one) in `target`'s folder.
    ///
    /// # Errors
    /// Whatever `write` returns; I/O errors creating the file. The set is unchanged then.
    pub fn file(
        &mut self,
        target: impl AsRef<Path>,
        write: impl FnOnce(&mut File) -> Result<()>,
    ) -> Result<()> {
        let target = target.as_ref();
        let (mut file, pending) = Pending::create(target)?;
        let writeback = Writeback::start(&file, self.sync);
        let written = write(&mut file);
        drop(writeback);
        written?;
        self.pending(target, file, pending);
        Ok(())
    }

    /// Adds a new file at `target`, written now through `write` into a 1 MiB buffer over
    /// it (what the formats' writers share).
    ///
    /// # Errors
    /// As [`FileSet::file`].
    pub fn buffered(
        &mut self,
        target: impl AsRef<Path>,
        write: impl FnOnce(&mut (dyn Write + Send)) -> Result<()>,
    ) -> Result<()> {
        self.file(target, |file| {
            let mut out = BufWriter::with_capacity(1 << 20, Preallocating::new(file));
            write(&mut out)?;
            Ok(out.flush()?)
        })
    }

    /// Adds a new file at `target` holding `bytes`.
    ///
    /// # Errors
    /// As [`FileSet::file`].
    pub fn bytes(&mut self, target: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        self.file(target, |f| Ok(f.write_all(bytes)?))
    }

    /// Adds a file already written under no name or a temporary one.
    pub(crate) fn pending(&mut self, target: &Path, file: File, pending: Pending) {
        self.members.push(Member {
            target: target.to_owned(),
            new: New::File(file, pending),
        });
    }

    /// The new file the set holds for `target`, if it holds one written through it.
    pub(crate) fn file_of(&self, target: &Path) -> Option<&File> {
        self.members.iter().find_map(|m| match &m.new {
            New::File(file, _) if m.target == target => Some(file),
            _ => None,
        })
    }

    /// Adds the finished file at `temporary` (a temporary name beside `target`, as
    /// [`super::temporary_path`] gives), to be named `target`; removed if the set is dropped
    /// or fails.
    pub(crate) fn named(&mut self, target: &Path, temporary: PathBuf) {
        self.members.push(Member {
            target: target.to_owned(),
            new: New::Named(Temporary(temporary)),
        });
    }

    /// Adds a new folder at `target`, built now by `write` in a temporary folder beside it.
    /// An earlier folder at `target` is replaced only when it is empty or `may_replace`
    /// accepts it.
    ///
    /// # Errors
    /// Whatever `write` returns; [`std::io::ErrorKind::AlreadyExists`] when `target` holds
    /// something else; I/O errors creating the folder.
    pub fn folder(
        &mut self,
        target: impl AsRef<Path>,
        may_replace: impl Fn(&Path) -> bool,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let target = target.as_ref();
        if let Ok(meta) = target.symlink_metadata() {
            let replaceable =
                meta.is_dir() && (fs::read_dir(target)?.next().is_none() || may_replace(target));
            if !replaceable {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not a directory this write may replace; remove it first",
                        target.display()
                    ),
                )
                .into());
            }
        }
        remove_stale_temporaries(target);
        let temp = temporary_path(target);
        fs::create_dir(&temp)?;
        let temp = Temporary(temp);
        write(&temp.0)?;
        self.members.push(Member {
            target: target.to_owned(),
            new: New::Folder(temp),
        });
        Ok(())
    }

    /// Adds the removal of whatever is at `target` (a sidecar an earlier write left that
    /// would describe another file); nothing there is no error.
    pub fn remove(&mut self, target: impl AsRef<Path>) {
        self.members.push(Member {
            target: target.as_ref().to_owned(),
            new: New::Gone,
        });
    }

    /// Adds DAPHNE's `.meta` sidecar for the object with `header` at `path` (without
    /// `numNonZeros`, as DAPHNE's CSV and dense files have it); for a scalar, which has
    /// none, the removal of any sidecar there.
    ///
    /// # Errors
    /// [`crate::ErrorKind::NotInDialect`] for value types DAPHNE's sidecars cannot name (the
    /// set is unchanged then); I/O errors.
    pub fn sidecar(&mut self, path: impl AsRef<Path>, header: &Header) -> Result<()> {
        let sidecar = sidecar_path(&path);
        match meta_json(header, None)? {
            Some(json) => self.bytes(sidecar, json.as_bytes()),
            None => {
                self.remove(sidecar);
                Ok(())
            }
        }
    }

    /// Adds the local sidecar of the folder of segments at `folder` (see
    /// [`crate::lowlevel::segments_meta`]).
    ///
    /// # Errors
    /// As [`crate::lowlevel::segments_meta`].
    pub fn segments_sidecar(&mut self, folder: impl AsRef<Path>, header: &Header) -> Result<()> {
        let json = segments_meta(folder.as_ref(), header)?;
        self.bytes(sidecar_path(folder), json.as_bytes())
    }

    /// Puts every member in place, in the order added, keeping each old one until all are;
    /// on failure puts back what had moved, so the old set stays as it was.
    ///
    /// # Errors
    /// I/O errors syncing, naming or renaming; where an old member could not be put back
    /// either (two failures in a row), the message says where it is kept.
    pub fn commit(self) -> Result<()> {
        let sync = self.sync;
        let several = self.members.len() > 1;
        clear_stale(&self.members);
        let mut named = Vec::with_capacity(self.members.len());
        let mut folders = false;
        for member in self.members {
            let new = match member.new {
                New::File(file, pending) => Some(pending.into_temporary(file, sync)?),
                New::Named(temp) => Some(temp),
                New::Folder(temp) => {
                    folders = true;
                    Some(temp)
                }
                New::Gone => None,
            };
            named.push((member.target, new));
        }
        crash_point(if folders {
            "directory-built"
        } else {
            "file-named"
        });
        let mut moved = Vec::with_capacity(named.len());
        for (i, (target, new)) in named.into_iter().enumerate() {
            match put(target.clone(), new) {
                Ok(done) => moved.push(done),
                Err(error) => {
                    // The first member is the one callers name; a sidecar names itself.
                    let mut message = match i {
                        0 => error.to_string(),
                        _ => format!("{}: {error}", target.display()),
                    };
                    for note in put_back(moved) {
                        message = format!("{message}; {note}");
                    }
                    return Err(std::io::Error::new(error.kind(), message).into());
                }
            }
            if several {
                crash_point("set-partly-replaced");
            }
        }
        // The old members go (as their temporaries drop), then the new names are made durable.
        let mut synced: Vec<PathBuf> = Vec::new();
        for done in moved {
            let target = match done {
                Moved::Nothing => continue,
                Moved::Created(target)
                | Moved::Exchanged { target, .. }
                | Moved::Aside { target, .. } => target,
            };
            let folder = folder_of(&target).to_owned();
            if !synced.contains(&folder) {
                finish(&target, sync)?;
                synced.push(folder);
            }
        }
        Ok(())
    }
}

/// Removes what killed writers left of the members to remove, in one look per folder (the
/// other members' were cleared when they were made).
fn clear_stale(members: &[Member]) {
    let gone: Vec<&Path> = (members.iter())
        .filter(|m| matches!(m.new, New::Gone))
        .map(|m| m.target.as_path())
        .collect();
    let mut seen: Vec<&Path> = Vec::new();
    for target in &gone {
        let folder = folder_of(target);
        if !seen.contains(&folder) {
            let here: Vec<&Path> = (gone.iter().copied())
                .filter(|t| folder_of(t) == folder)
                .collect();
            remove_stale_temporaries_of(folder, &here);
            seen.push(folder);
        }
    }
}

/// Puts `new` (none: nothing) in place at `target`, keeping what was there.
fn put(target: PathBuf, new: Option<Temporary>) -> std::io::Result<Moved> {
    let old_is_dir = match target.symlink_metadata() {
        Ok(meta) => Some(meta.is_dir()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let in_the_way = || {
        // As rename(2) would: a file does not take a folder's name, and a stale sidecar is
        // a file, so a folder is not one.
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "a folder has this name; remove it first",
        )
    };
    let Some(new) = new else {
        match old_is_dir {
            None => return Ok(Moved::Nothing),
            Some(true) => return Err(in_the_way()),
            Some(false) => {}
        }
        let aside = temporary_path(&target);
        fs::rename(&target, &aside)?;
        return Ok(Moved::Aside {
            target,
            old: Temporary(aside),
        });
    };
    if old_is_dir == Some(true) && !new.0.is_dir() {
        return Err(in_the_way());
    }
    let Some(old_is_dir) = old_is_dir else {
        fs::rename(&new.0, &target)?;
        new.keep();
        return Ok(Moved::Created(target));
    };
    if exchange(&new.0, &target)? {
        if old_is_dir {
            crash_point("directory-swapped");
        }
        return Ok(Moved::Exchanged { target, old: new });
    }
    let aside = temporary_path(&target);
    if !old_is_dir && fs::hard_link(&target, &aside).is_ok() {
        let old = Temporary(aside);
        fs::rename(&new.0, &target)?;
        new.keep();
        return Ok(Moved::Aside { target, old });
    }
    // Without links (folders, some file systems) the old one moves aside: its name is empty
    // until the new one takes it.
    fs::rename(&target, &aside)?;
    crash_point("directory-moved-aside");
    if let Err(e) = fs::rename(&new.0, &target) {
        if again(|| fs::rename(&aside, &target)).is_err() {
            return Err(std::io::Error::new(
                e.kind(),
                format!("{e}; {}", kept_note(&target, &aside)),
            ));
        }
        return Err(e);
    }
    new.keep();
    Ok(Moved::Aside {
        target,
        old: Temporary(aside),
    })
}

/// Puts back, last first, what [`put`] moved; returns a note for each old member that could
/// not be put back (kept under a temporary name, which it then keeps).
fn put_back(moved: Vec<Moved>) -> Vec<String> {
    let mut kept = Vec::new();
    for done in moved.into_iter().rev() {
        match done {
            Moved::Nothing => {}
            Moved::Created(target) => {
                // Best effort: what is left is the new member alone, with no old one lost.
                let _ = again(|| remove_any(&target));
            }
            Moved::Exchanged { target, old } => {
                // Swapped back, `old` holds the new member and goes with it.
                if again(|| exchange(&old.0, &target).map(drop)).is_err() {
                    kept.push(kept_note(&target, &old.keep()));
                }
            }
            Moved::Aside { target, old } => {
                let back = again(|| {
                    if target.is_dir() {
                        let new = temporary_path(&target);
                        fs::rename(&target, &new)?;
                        let _ = remove_any(&new);
                    }
                    fs::rename(&old.0, &target)
                });
                match back {
                    Ok(()) => drop(old.keep()),
                    Err(_) => kept.push(kept_note(&target, &old.keep())),
                }
            }
        }
    }
    kept
}

fn kept_note(target: &Path, old: &Path) -> String {
    format!(
        "the old {} could not be put back and is kept as {}",
        target.display(),
        old.display()
    )
}

/// `step`, tried up to five times: putting an old file back must outlast a passing error.
fn again(mut step: impl FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match step() {
            Ok(()) => return Ok(()),
            Err(_) if tries < 4 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(1 << tries));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes a directory through `write`, as atomically as directories allow: it is written
/// under a temporary name beside `path`, then put in place as [`FileSet`] puts a folder. An
/// earlier directory at `path` is replaced only when it is empty or `may_replace` accepts
/// it. An unfinished write leaves nothing under `path`'s name.
///
/// # Errors
/// Whatever `write` returns; [`std::io::ErrorKind::AlreadyExists`] when `path` holds
/// something else; I/O errors creating, renaming or removing directories.
pub fn replace_directory(
    path: &Path,
    may_replace: impl Fn(&Path) -> bool,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let mut set = FileSet::new(false);
    set.folder(path, may_replace, write)?;
    set.commit()
}

#[cfg(test)]
#[path = "file_set_tests.rs"]
mod tests;
