//! Writes that leave the old file or the new one, and nothing else, whenever they stop: a
//! crash, an error, or a `kill -9` at any moment.
//!
//! - Files: on Linux a new file is written with no name at all (`O_TMPFILE` in the target's
//!   folder) and named only when complete: linked straight to the target when there is none,
//!   else linked under a temporary name and renamed over the target (`rename(2)` is atomic).
//!   A kill while it is written leaves nothing; only a kill in the instant between that link
//!   and the rename can leave the temporary name. Where the folder's file system or the
//!   system cannot (`O_TMPFILE` unsupported, no `/proc`), the file is written under the
//!   temporary name from the start.
//! - Directories (SystemDS part folders, Zarr groups) are built under a temporary name beside
//!   the target and swapped with it in one step (`renameat2(RENAME_EXCHANGE)` on Linux; two
//!   renames elsewhere), then the old one is removed.
//! - Temporary names are `.{target}.tmp-{pid}-{n}`. Every write to a target first removes the
//!   temporaries of that target whose writing process is gone, so a kill leaves litter at
//!   most until the next write of the same file.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::io::Preallocating;

/// Ends the process on the spot, as `kill -9` would (no destructors, no flushing), when the
/// environment variable `SERDE_DAPHNE_CRASH_AT` names this point: how the crash tests land a
/// kill exactly between two steps of a write. Debug builds only; release builds have none.
pub(crate) fn crash_point(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("SERDE_DAPHNE_CRASH_AT").is_some_and(|at| at == name) {
        std::process::exit(137);
    }
    let _ = name;
}

/// A name for a temporary file beside `path` that no other writer uses.
pub fn temporary_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Counted from a random start: a killed process's litter (kept where no later write of
    // that target removed it) must not clash with a later process given the same id.
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        random.finish() >> 24
    });
    let unique = start.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed));
    path.with_file_name(format!(
        "{}{}-{unique}",
        temporary_prefix(path),
        std::process::id()
    ))
}

/// What every temporary name of `path` starts with, up to the writer's process id.
fn temporary_prefix(path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || "serde_daphne".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!(".{name}.tmp-")
}

/// The folder `path` is in (`.` for a bare file name).
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Removes the temporary files and folders beside `path` that were left by writers of it
/// that no longer run (killed, or crashed); those of running processes (this one included)
/// are theirs. Returns how many were removed. Best effort: what cannot be listed or removed
/// stays.
pub fn remove_stale_temporaries(path: &Path) -> usize {
    remove_stale_temporaries_of(folder_of(path), &[path])
}

/// [`remove_stale_temporaries`] for several targets in `folder`, in one look at it.
pub(crate) fn remove_stale_temporaries_of(folder: &Path, targets: &[&Path]) -> usize {
    let prefixes: Vec<String> = targets.iter().map(|t| temporary_prefix(t)).collect();
    let Ok(entries) = fs::read_dir(folder) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| prefixes.iter().find_map(|p| n.strip_prefix(p.as_str())))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if process_runs(pid) {
            continue;
        }
        let stale = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => fs::remove_dir_all(&stale),
            _ => fs::remove_file(&stale),
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

/// Whether process `pid` still runs; `true` where that cannot be told, so that nothing of a
/// live writer is removed.
fn process_runs(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(target_os = "linux")]
    if Path::new("/proc/self").exists() {
        return Path::new(&format!("/proc/{pid}")).exists();
    }
    // Without /proc (or on other systems) a writer's life cannot be told: keep its files.
    true
}

/// The name a file being written will get: the target's, given in [`Pending::commit`].
/// Dropped uncommitted, it leaves nothing behind (the file, when unnamed, goes with its last
/// handle).
pub(crate) struct Pending {
    target: PathBuf,
    /// The temporary name the file is written under, when it has one from the start.
    named: Option<PathBuf>,
}

impl Pending {
    /// A new, empty file for `target`, in its folder (first clearing stale temporaries of
    /// `target`), open for reading and writing, and the name it will get.
    pub(crate) fn create(target: &Path) -> Result<(File, Pending)> {
        remove_stale_temporaries(target);
        #[cfg(target_os = "linux")]
        if let Some(file) = (!crate::platform::portable())
            .then(|| unnamed::create(target))
            .flatten()
        {
            let pending = Pending {
                target: target.to_owned(),
                named: None,
            };
            return Ok((file, pending));
        }
        let named = temporary_path(target);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&named)?;
        let pending = Pending {
            target: target.to_owned(),
            named: Some(named),
        };
        Ok((file, pending))
    }

    /// Syncs `file` (when `sync`), then gives it the target's name, replacing whatever had
    /// it, and makes the new name durable (when `sync`, where the platform allows).
    pub(crate) fn commit(mut self, file: File, sync: bool) -> Result<()> {
        if sync {
            file.sync_all()?;
        }
        let target = self.target.clone();
        let named = match self.named.take() {
            Some(named) => named,
            #[cfg(target_os = "linux")]
            None => match unnamed::link(&file, &target)? {
                unnamed::Linked::AsTarget => return finish(&target, sync),
                unnamed::Linked::As(named) => named,
            },
            #[cfg(not(target_os = "linux"))]
            None => unreachable!("unnamed files are made on Linux only"),
        };
        drop(file);
        crash_point("file-named");
        if let Err(e) = fs::rename(&named, &target) {
            let _ = fs::remove_file(&named);
            return Err(e.into());
        }
        finish(&target, sync)
    }

    /// Syncs `file` (when `sync`) and gives it a temporary name beside the target (its own,
    /// when it has one already): the first half of [`Pending::commit`], for files put in
    /// place together with others ([`super::FileSet`]).
    pub(crate) fn into_temporary(mut self, file: File, sync: bool) -> Result<Temporary> {
        if sync {
            file.sync_all()?;
        }
        if let Some(named) = self.named.take() {
            return Ok(Temporary(named));
        }
        #[cfg(target_os = "linux")]
        {
            let named = temporary_path(&self.target);
            unnamed::link_as(&file, &named)?;
            Ok(Temporary(named))
        }
        #[cfg(not(target_os = "linux"))]
        unreachable!("unnamed files are made on Linux only")
    }
}

/// A file or folder under a temporary name, removed when dropped unless taken.
pub(crate) struct Temporary(pub(crate) PathBuf);

impl Temporary {
    /// The path, no longer removed when dropped.
    pub(crate) fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            // Best effort: what stays is a temporary name the next write clears.
            let _ = remove_any(&self.0);
        }
    }
}

/// Removes the file or folder at `path`; nothing there is no error.
pub(crate) fn remove_any(path: &Path) -> std::io::Result<()> {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => Ok(()),
    }
}

/// Swaps the names of `a` and `b` (files or folders) in one step: `Ok(false)` where the
/// file system or the system cannot (then nothing changed).
pub(crate) fn exchange(a: &Path, b: &Path) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    if !crate::platform::portable() {
        return unnamed::exchange(a, b);
    }
    let _ = (a, b);
    Ok(false)
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(named) = self.named.take() {
            let _ = fs::remove_file(named);
        }
    }
}

/// Syncs `target`'s folder, so that its new name survives a power loss (when `sync`).
pub(crate) fn finish(target: &Path, sync: bool) -> Result<()> {
    if sync {
        if let Ok(dir) = File::open(folder_of(target)) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// A scratch file beside `target` that has no name while it is used (the streaming writer's
/// spills): on Linux unnamed from the start, elsewhere unlinked as soon as it is open (where
/// the system allows that), so that nothing is left whatever happens.
pub fn scratch_file(target: &Path) -> Result<File> {
    #[cfg(target_os = "linux")]
    if let Some(file) = (!crate::platform::portable())
        .then(|| unnamed::create(target))
        .flatten()
    {
        return Ok(file);
    }
    let named = temporary_path(target);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&named)?;
    // Unix keeps an unlinked file until its last handle closes; Windows refuses, and the
    // name then stays until the next write of the target removes it.
    let _ = fs::remove_file(&named);
    Ok(file)
}

/// Writes a file through `write`, atomically: an unnamed file (or a temporary name), synced,
/// then named `path`; an unfinished write leaves nothing.
///
/// # Errors
/// Whatever `write` returns, and I/O errors creating, syncing or renaming the file.
pub fn write_atomically(
    path: impl AsRef<Path>,
    write: impl FnOnce(&mut File) -> Result<()>,
) -> Result<()> {
    write_atomically_synced(path.as_ref(), true, write)
}

/// Writes a file through `write` and a 1 MiB buffer, atomically: what the neighbouring
/// formats' `write` functions share.
///
/// # Errors
/// Whatever `write` returns, and I/O errors creating, syncing or renaming the file.
pub fn write_buffered(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<Preallocating<'_>>) -> Result<()>,
) -> Result<()> {
    write_atomically(path, |file| {
        let mut buffered = BufWriter::with_capacity(1 << 20, Preallocating::new(file));
        write(&mut buffered)?;
        buffered.flush()?;
        Ok(())
    })
}

/// [`write_atomically`], with the sync to disk optional ([`crate::Options::sync`]).
///
/// # Errors
/// As [`write_atomically`].
pub(crate) fn write_atomically_synced(
    path: &Path,
    sync: bool,
    write: impl FnOnce(&mut File) -> Result<()>,
) -> Result<()> {
    let (mut file, pending) = Pending::create(path)?;
    let writeback = Writeback::start(&file, sync);
    let written = write(&mut file);
    drop(writeback);
    written?;
    pending.commit(file, sync)
}

/// A second thread that has the kernel write a file's dirty pages to disk every 50 ms while
/// the file is being written, so that the disk works while the writer encodes and the final
/// sync waits only for the tail, not for the whole file.
/// Stopped (and joined) when dropped.
pub(crate) struct Writeback {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writeback {
    /// Starts writing back `file` while it is written, when it will be `synced` (and a second
    /// handle on it can be had).
    pub(crate) fn start(file: &File, synced: bool) -> Option<Writeback> {
        let file = synced.then(|| file.try_clone().ok()).flatten()?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(std::time::Duration::from_millis(50))
            {
                // Advice only: an error here is met again by the final sync.
                let _ = file.sync_data();
            }
        });
        Some(Writeback {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(target_os = "linux")]
mod unnamed {
    //! Linux's files without names: `O_TMPFILE`, and `linkat(2)` to give one a name.

    use std::ffi::CString;
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    use std::path::{Path, PathBuf};

    /// An unnamed file in `target`'s folder, or `None` where the file system or the system
    /// cannot make one (or could not name it later: no `/proc`).
    pub(super) fn create(target: &Path) -> Option<File> {
        let dir = super::folder_of(target);
        if !Path::new("/proc/self/fd").is_dir() {
            return None;
        }
        OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE)
            .open(dir)
            .ok()
    }

    /// Where [`link`] put the file.
    pub(super) enum Linked {
        /// Under the target's name (there was no file by that name).
        AsTarget,
        /// Under this temporary name, to be renamed over the target.
        As(PathBuf),
    }

    /// Gives the unnamed `file` a name: `target` itself when that is free, else a temporary
    /// name beside it.
    pub(super) fn link(file: &File, target: &Path) -> io::Result<Linked> {
        if !target.exists() {
            match link_as(file, target) {
                Ok(()) => return Ok(Linked::AsTarget),
                // Someone made the target meanwhile: replace it as below.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        let named = super::temporary_path(target);
        link_as(file, &named)?;
        Ok(Linked::As(named))
    }

    pub(super) fn link_as(file: &File, name: &Path) -> io::Result<()> {
        let to = CString::new(name.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // Through /proc, which any process may do (linkat with AT_EMPTY_PATH needs
        // CAP_DAC_READ_SEARCH); open(2) documents this use of O_TMPFILE files.
        let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: both paths are NUL-terminated C strings that outlive the call, and linkat
        // reads nothing else of this process's memory.
        #[allow(unsafe_code)]
        let done = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Swaps the directories (or files) at `a` and `b` in one step; `Ok(false)` where the
    /// file system or the kernel cannot.
    pub(super) fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
        let a = CString::new(a.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let b = CString::new(b.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: both paths are NUL-terminated C strings that outlive the call.
        #[allow(unsafe_code)]
        let done = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if done == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(false),
            _ => Err(error),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::io::Write;

    /// A fresh folder for one test.
    pub(in crate::io) fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("serde_daphne_atomic_{name}_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The names in `dir`, sorted.
    pub(in crate::io) fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_has_no_name_until_it_is_complete() {
        let dir = dir("unnamed");
        let target = dir.join("m.dbdf");
        let (mut file, pending) = Pending::create(&target).unwrap();
        file.write_all(b"new").unwrap();
        match &pending.named {
            // Unnamed (Linux, on file systems with O_TMPFILE, such as ext4 and tmpfs):
            // nothing in the folder while it is written, so a kill now leaves nothing.
            None => assert_eq!(names(&dir), Vec::<String>::new()),
            // Elsewhere the temporary name, which the next write would clear after a kill.
            Some(named) => {
                let name = named.file_name().unwrap().to_string_lossy().into_owned();
                assert_eq!(names(&dir), [name]);
            }
        }
        pending.commit(file, false).unwrap();
        assert_eq!(names(&dir), ["m.dbdf"]);
        // Replacing: the old file until the new one is named, then the new one alone.
        let (mut file, pending) = Pending::create(&target).unwrap();
        file.write_all(b"newer").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        pending.commit(file, true).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"newer");
        assert_eq!(names(&dir), ["m.dbdf"]);
        // Dropped uncommitted: nothing changes, nothing is left.
        let (mut file, pending) = Pending::create(&target).unwrap();
        file.write_all(b"lost").unwrap();
        drop((file, pending));
        assert_eq!(fs::read(&target).unwrap(), b"newer");
        assert_eq!(names(&dir), ["m.dbdf"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporaries_of_dead_writers_go_with_the_next_write() {
        let dir = dir("stale");
        let target = dir.join("m.dbdf");
        // A process id that runs no process (beyond Linux's default pid_max), and our own.
        let dead = dir.join(".m.dbdf.tmp-4194999-0");
        let dead_dir = dir.join(".m.dbdf.tmp-4194999-1");
        let live = dir.join(format!(".m.dbdf.tmp-{}-77", std::process::id()));
        let other = dir.join(".n.dbdf.tmp-4194999-0");
        fs::write(&dead, b"half").unwrap();
        fs::create_dir(&dead_dir).unwrap();
        fs::write(dead_dir.join("part-0"), b"half").unwrap();
        fs::write(&live, b"busy").unwrap();
        fs::write(&other, b"not ours").unwrap();
        write_atomically(&target, |f| Ok(f.write_all(b"whole")?)).unwrap();
        let mut expected = vec![
            ".n.dbdf.tmp-4194999-0".to_owned(),
            format!(".m.dbdf.tmp-{}-77", std::process::id()),
            "m.dbdf".to_owned(),
        ];
        if !cfg!(target_os = "linux") {
            // Elsewhere a writer's life cannot be told, and nothing is removed.
            expected.extend([
                ".m.dbdf.tmp-4194999-0".into(),
                ".m.dbdf.tmp-4194999-1".into(),
            ]);
        }
        expected.sort();
        assert_eq!(names(&dir), expected);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scratch_files_have_no_name() {
        let dir = dir("scratch");
        let mut file = scratch_file(&dir.join("m.dbdf")).unwrap();
        file.write_all(b"spilled").unwrap();
        if cfg!(unix) {
            assert_eq!(names(&dir), Vec::<String>::new());
        }
        drop(file);
        fs::remove_dir_all(&dir).unwrap();
    }
}
