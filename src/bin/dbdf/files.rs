//! Reading .dbdf files (with their sidecars and a progress bar) and writing outputs safely.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use serde_daphne::io::{read_sidecar, write_atomically};
use serde_daphne::wire::IoSource;
use serde_daphne::{Deserializer, Object, Options};

use crate::Failure;

/// Files smaller than this read without a progress bar.
const PROGRESS_FROM: u64 = 32 << 20;

/// A reader that shows how much of a large file has been read, on a terminal only.
struct Progress<R> {
    inner: R,
    name: String,
    total: u64,
    done: u64,
    shown: u64,
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        let percent = self.done * 100 / self.total.max(1);
        if percent != self.shown {
            self.shown = percent;
            eprint!("\rreading {}: {percent:3}%", self.name);
            if percent == 100 {
                eprintln!();
            }
        }
        Ok(n)
    }
}

/// Whether progress is shown for an input of `total` bytes: large, and both outputs a
/// terminal.
fn shows_progress(total: u64) -> bool {
    total >= PROGRESS_FROM && std::io::stderr().is_terminal() && std::io::stdout().is_terminal()
}

/// `reader` (of `total` bytes of the file at `path`), showing a progress bar when the input
/// is large and both outputs are a terminal.
pub fn with_progress<R: Read + 'static>(reader: R, path: &Path, total: u64) -> Box<dyn Read> {
    if !shows_progress(total) {
        return Box::new(reader);
    }
    Box::new(Progress {
        inner: reader,
        name: path.display().to_string(),
        total,
        done: 0,
        shown: u64::MAX,
    })
}

/// A progress report for the library's conversions reading the file at `path`, printing
/// the percentage read when the file is large and both outputs are a terminal.
pub fn progress_bar(path: &Path) -> Option<impl Fn(u64, u64) + Send + Sync + 'static> {
    let total = std::fs::metadata(path).ok()?.len();
    if !shows_progress(total) {
        return None;
    }
    let name = path.display().to_string();
    let shown = std::sync::atomic::AtomicU64::new(u64::MAX);
    Some(move |done: u64, total: u64| {
        let percent = done * 100 / total.max(1);
        if shown.swap(percent, std::sync::atomic::Ordering::Relaxed) != percent {
            eprint!("\rreading {name}: {percent:3}%");
            if percent == 100 {
                eprintln!();
            }
        }
    })
}

/// Every object of a .dbdf file with the offset where each ends, and the file's size.
pub fn read_objects(path: &Path, options: &Options) -> Result<(Vec<(Object, u64)>, u64), Failure> {
    let fail = |e: serde_daphne::Error| Failure::at(path, e);
    let hint = read_sidecar(path).map_err(fail)?;
    let file = File::open(path).map_err(|e| Failure::at(path, e))?;
    let size = file.metadata().map_err(|e| Failure::at(path, e))?.len();
    let reader = with_progress(file, path, size);
    let src = IoSource::new(reader, options.get_max_bytes()).with_known_len(size);
    let mut de = Deserializer::from_source_with(src, options);
    if let Some(hint) = hint {
        de = de.with_hint(hint);
    }
    let mut objects: Vec<(Object, u64)> = Vec::new();
    loop {
        let start = de.offset();
        let object = de.next_object().map_err(|e| match e.offset() {
            // Bytes after an object that do not even start a header: trailing bytes.
            Some(at) if !objects.is_empty() && at < start + 18 => Failure::at(
                path,
                format!("trailing bytes at byte {start}: they do not start an object ({e})"),
            ),
            _ => fail(e),
        })?;
        objects.push((object, de.offset()));
        if de.offset() >= size {
            break;
        }
    }
    Ok((objects, size))
}

/// Writes `bytes` from `write` to `output` (`-` is standard output), atomically for files:
/// on failure nothing is left behind.
pub fn write_output(
    output: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), Failure>,
) -> Result<(), Failure> {
    if output == Path::new("-") {
        // Built in memory first, so a failure prints nothing.
        let mut bytes = Vec::new();
        write(&mut bytes)?;
        return std::io::stdout()
            .write_all(&bytes)
            .map_err(|e| Failure::plain(format!("standard output: {e}")));
    }
    let mut failure = None;
    let result = write_atomically(output, |file| {
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        if let Err(f) = write(&mut writer) {
            failure = Some(f);
            return Err(serde_daphne::Error::Io(std::io::Error::other("failed")));
        }
        writer.flush()?;
        Ok(())
    });
    match (failure, result) {
        (Some(f), _) => Err(f),
        (None, Err(e)) => Err(Failure::at(output, e)),
        (None, Ok(())) => Ok(()),
    }
}
