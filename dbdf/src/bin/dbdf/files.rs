//! Reading .dbdf files (with their sidecars and a progress bar) and writing outputs safely.

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use serde_daphne::lowlevel::read_sidecar;
use serde_daphne::{Deserializer, Object, Options};

use crate::Failure;

/// Inputs smaller than this are handled without a progress bar (they take well under a
/// second).
const PROGRESS_FROM: u64 = 32 << 20;

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no progress bars.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// A progress bar of `total` bytes on standard error, labelled `label`: only for large
/// inputs, only when standard error is a terminal (never in piped or redirected output),
/// never with `--quiet`.
pub fn bar(label: &str, total: u64) -> Option<ProgressBar> {
    if total < PROGRESS_FROM || QUIET.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{msg} [{bar:20}] {bytes}/{total_bytes} {bytes_per_sec}, {eta} left",
    )
    .ok()?
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(label.to_owned());
    Some(bar)
}

/// `reader` (of `total` bytes of the file at `path`), showing a progress bar.
pub fn with_progress<R: Read + 'static>(reader: R, path: &Path, total: u64) -> Box<dyn Read> {
    match bar(&format!("reading {}", file_name(path)), total) {
        Some(bar) => Box::new(bar.wrap_read(reader)),
        None => Box::new(reader),
    }
}

/// A reader that moves a progress bar on by every byte it reads (seeks move nothing).
pub struct Counted<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R> Counted<R> {
    /// `inner`, counted on `bar`.
    pub fn new(inner: R, bar: ProgressBar) -> Self {
        Counted { inner, bar }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }

    // Forwarded: window reads fill many buffers with one system call.
    fn read_vectored(&mut self, bufs: &mut [std::io::IoSliceMut<'_>]) -> std::io::Result<usize> {
        let n = self.inner.read_vectored(bufs)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for Counted<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// The last part of `path`, to keep the bar on one line.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A progress report for the library's long operations on the file at `path` (`what`, such
/// as "converting"), drawn as a bar; `None` when no bar is shown.
pub fn progress_bar(what: &str, path: &Path) -> Option<impl Fn(u64, u64) + Send + Sync + 'static> {
    let total = std::fs::metadata(path).ok()?.len();
    let bar = bar(&format!("{what} {}", file_name(path)), total)?;
    Some(move |done: u64, total: u64| {
        // A conversion reports its reading, then its writing: one bar, started again.
        if bar.is_finished() && done < total {
            bar.reset();
        }
        if bar.length() != Some(total) {
            bar.set_length(total);
        }
        bar.set_position(done);
        if done >= total {
            // Drawn whole once (draws in between are rate-limited), then cleared.
            bar.finish();
            bar.finish_and_clear();
        }
    })
}

/// Every object of a .dbdf file with the offset where each ends, and the file's size.
pub fn read_objects(path: &Path, options: &Options) -> Result<(Vec<(Object, u64)>, u64), Failure> {
    let fail = |e: serde_daphne::Error| Failure::at(path, e);
    if path.is_dir() {
        return Err(crate::remote::not_a_format(path));
    }
    let hint = read_sidecar(path).map_err(fail)?;
    let file = File::open(path).map_err(|e| Failure::at(path, e))?;
    let size = file.metadata().map_err(|e| Failure::at(path, e))?.len();
    let reader = with_progress(file, path, size);
    let mut de = Deserializer::from_reader(reader)
        .with_options(options)
        .with_input_len(size);
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
