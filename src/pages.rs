//! Huge pages for large new buffers: the first touch of each 4 KiB page of fresh memory costs
//! a page fault, which caps any copy into a new 128 MiB array at about a fifth of memory
//! speed. Advising the kernel (`madvise(MADV_HUGEPAGE)`) before the first touch lets it back
//! the buffer with 2 MiB pages: 512 times fewer faults. The advice changes neither the
//! allocation nor its contents, so the buffer frees as usual.
//!
//! It helps where transparent huge pages are in `madvise` mode (Debian's and Ubuntu's
//! default) and does nothing in `never` mode or on systems other than Linux; in `always` mode
//! the kernel does it anyway. [`set_huge_pages`] turns it off for the process.
//!
//! Two things measured on a virtual machine shape how: huge-page faults taken by two threads
//! at once stall (a 128 MiB read took 20 ms or, one call in three, 150 to 300 ms), so huge
//! pages are faulted in by one thread, with the copies or reads that fill them following on
//! another ([`fill_behind_faults`], [`read_behind_faults`]); and a huge page can be slower to
//! fault in than 512 small ones, depending on where free memory is, so each large buffer is
//! probed first ([`advise`]).

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Buffers smaller than this are left alone: a huge page would be most of them.
const FROM: usize = 4 << 20;

/// The size of a huge page on the platforms this knows (x86-64 and aarch64 with 4 KiB pages).
const HUGE_PAGE: usize = 2 << 20;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Whether reads and writes ask for huge pages for large new buffers (default: yes): a
/// switch for the benchmarks, which measure both.
pub fn set_huge_pages(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether huge pages are asked for (see [`set_huge_pages`]).
pub fn huge_pages() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Advises huge pages for the 2 MiB-aligned part of `fresh`, memory not touched yet, when
/// they fault in faster than small pages now; whether it did. Large buffers only; nothing
/// outside Linux.
///
/// Which kind of page faults in faster depends on the state of memory, not only on the
/// machine: in a virtual machine whose free memory the host takes back (free page reporting
/// does so for whole free 2 MiB blocks), a huge page may come from memory the host must back
/// again. So a buffer of a few huge pages first faults in one huge page and one aligned 2 MiB
/// range of small pages, and the faster decides for the rest.
///
/// A buffer advised huge pages must then be faulted in by one thread at a time (see
/// [`fault_in_on_every_core`]).
pub(crate) fn advise(fresh: &mut [MaybeUninit<u8>]) -> bool {
    if !advised(fresh.len()) {
        return false;
    }
    let at = fresh.as_ptr() as usize;
    let start = at.next_multiple_of(HUGE_PAGE) - at;
    let end = (at + fresh.len()) / HUGE_PAGE * HUGE_PAGE - at;
    if end <= start {
        return false;
    }
    let mut aligned = &mut fresh[start..end];
    if aligned.len() >= PROBE_FROM {
        let (probe, rest) = aligned.split_at_mut(2 * HUGE_PAGE);
        let (huge, small) = probe.split_at_mut(HUGE_PAGE);
        if !advise_range(huge) {
            return false;
        }
        let took_huge = fault_in(huge);
        if fault_in(small) < took_huge {
            return false;
        }
        aligned = rest;
    }
    advise_range(aligned)
}

/// Aligned buffers of at least this many bytes decide by a probe (two of them).
const PROBE_FROM: usize = 8 * HUGE_PAGE;

/// Advises huge pages for `range`, whose ends are 2 MiB-aligned; whether the kernel took it.
fn advise_range(range: &mut [MaybeUninit<u8>]) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: the range is memory the caller borrows exclusively, inside one live allocation,
    // and MADV_HUGEPAGE is advice only: it changes neither the mapping's contents nor its
    // validity, and an error (THP unavailable) leaves everything as it was.
    #[allow(unsafe_code)]
    unsafe {
        libc::madvise(range.as_mut_ptr().cast(), range.len(), libc::MADV_HUGEPAGE) == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = range;
        false
    }
}

/// Touches each 4 KiB page of `fresh` (a zero byte each) and says how long that took.
fn fault_in(fresh: &mut [MaybeUninit<u8>]) -> Duration {
    let started = Instant::now();
    for byte in fresh.iter_mut().step_by(4096) {
        // Through `black_box`: a store of zero into fresh memory must not be dropped.
        *std::hint::black_box(byte) = MaybeUninit::new(0);
    }
    started.elapsed()
}

/// The bytes of `values`, which may be uninitialized or values of any type, to write zeros
/// into.
fn as_bytes_mut<T>(values: &mut [MaybeUninit<T>]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: the same memory, exclusively borrowed for the same lifetime; `MaybeUninit<u8>`
    // has alignment 1 and no invalid bit pattern, and what callers write through it (zero
    // bytes into memory not yet holding values, or zeros over zeros) leaves every `T` as it
    // was allowed to be.
    #[allow(unsafe_code)]
    unsafe {
        std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), std::mem::size_of_val(values))
    }
}

/// Advises huge pages for a vector's spare capacity (before it is written) when they fault in
/// faster now (see the module); whether it did.
pub fn advise_huge_pages_spare<T>(v: &mut Vec<T>) -> bool {
    advise_huge_pages(v.spare_capacity_mut())
}

/// Advises huge pages for memory not written yet, as [`advise_huge_pages_spare`].
pub(crate) fn advise_huge_pages<T>(fresh: &mut [MaybeUninit<T>]) -> bool {
    advise(as_bytes_mut(fresh))
}

/// Advises huge pages for a new zeroed buffer, not touched yet, as [`advise_huge_pages_spare`].
pub(crate) fn advise_huge_pages_zeroed<T: bytemuck::Zeroable>(v: &mut [T]) -> bool {
    // Zeros are written over zeros: every `T` stays zero.
    let values: &mut [MaybeUninit<T>] = {
        #[allow(unsafe_code)]
        // SAFETY: `MaybeUninit<T>` has `T`'s layout; initialized values are valid
        // `MaybeUninit`s, and only zero bytes are written through the view, which a
        // `Zeroable` `T` holds.
        unsafe {
            std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len())
        }
    };
    advise(as_bytes_mut(values))
}

/// Buffers at least this large are faulted in on every core before they are filled.
const PREFAULT_FROM: usize = 32 << 20;

/// Touches each page of a new, not yet touched buffer from every core, so that the kernel
/// zeroes the fresh pages in parallel: reading a 168 MB file into new vectors spent half its
/// time in the kernel's page clearing on one core (measured with `perf`), before the copy.
/// The values stay what they were (zeros are written over zeros).
///
/// A buffer that may be in huge pages (4 MiB or more) is touched from this thread only, as
/// the threads that fill it next must not fault them in together: huge-page faults
/// taken by two threads at once stall for up to a hundred milliseconds (a 128 MiB copy on two
/// cores in a virtual machine took 20 ms or 150 ms), while small pages fault well in parallel.
pub fn fault_in_on_every_core<T: bytemuck::Zeroable + Send>(buffer: &mut [T]) {
    let threads = crate::threads::workers();
    let size = std::mem::size_of_val(buffer);
    let huge = advised(size);
    if size < PREFAULT_FROM && !huge {
        return;
    }
    let stride = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    let touch = |part: &mut [T]| {
        for i in (0..part.len()).step_by(stride) {
            // Through `black_box`: the compiler may know calloc's memory is zero and drop a
            // store of zero into it.
            *std::hint::black_box(&mut part[i]) = T::zeroed();
        }
    };
    if threads < 2 || huge {
        return touch(buffer);
    }
    let per_thread = buffer.len().div_ceil(threads);
    crate::threads::on_every_core(buffer.chunks_mut(per_thread), touch);
}

/// Fills `out`, a new buffer advised huge pages, not touched yet: this thread faults its
/// pages in, 2 MiB at a time, and hands each piece to another thread, which fills it with
/// `fill(start, piece)` (`start`: the piece's first index in `out`). Huge pages fault one
/// thread at a time (see [`fault_in_on_every_core`]); this keeps it so while the copies run
/// beside the faults, not after them.
pub(crate) fn fill_behind_faults<T: Send>(
    out: &mut [MaybeUninit<T>],
    fill: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) {
    let per_piece = (HUGE_PAGE / std::mem::size_of::<T>().max(1)).max(1);
    let touch = |piece: &mut [MaybeUninit<T>]| {
        fault_in(as_bytes_mut(piece));
    };
    let fill = |start, piece: &mut [MaybeUninit<T>]| {
        fill(start, piece);
        Ok::<(), std::convert::Infallible>(())
    };
    let Ok(()) = behind_faults(out, per_piece, touch, fill);
}

/// Reads into `buf`, a new buffer (zeroed by the allocator) that may be in huge pages, as
/// [`fill_behind_faults`] fills: this thread faults it in 2 MiB at a time, another reads each
/// piece with `read(start, piece)`. The first error is returned, and no piece is read after it.
#[cfg_attr(not(unix), allow(dead_code))] // the positional paths are Unix's
pub(crate) fn read_behind_faults<E: Send>(
    buf: &mut [u8],
    read: impl Fn(usize, &mut [u8]) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let touch = |piece: &mut [u8]| {
        for i in (0..piece.len()).step_by(4096) {
            // Zeros over the allocator's zeros, before the read overwrites them.
            *std::hint::black_box(&mut piece[i]) = 0;
        }
    };
    behind_faults(buf, HUGE_PAGE, touch, read)
}

/// `buf` in pieces of `per_piece` items: this thread `touch`es each (faulting it in) and
/// hands it to another thread, which `fill`s it, stopping at its first error; on one core,
/// each piece is filled in turn.
fn behind_faults<X: Send, E: Send>(
    buf: &mut [X],
    per_piece: usize,
    touch: impl Fn(&mut [X]),
    fill: impl Fn(usize, &mut [X]) -> Result<(), E> + Sync,
) -> Result<(), E> {
    if crate::threads::workers() < 2 {
        for (k, piece) in buf.chunks_mut(per_piece).enumerate() {
            fill(k * per_piece, piece)?;
        }
        return Ok(());
    }
    let (faulted, pieces) = std::sync::mpsc::channel::<(usize, &mut [X])>();
    std::thread::scope(|scope| {
        let fill = &fill;
        let filler = scope.spawn(move || {
            for (start, piece) in pieces {
                fill(start, piece)?;
            }
            Ok(())
        });
        for (k, piece) in buf.chunks_mut(per_piece).enumerate() {
            touch(piece);
            if faulted.send((k * per_piece, piece)).is_err() {
                break; // the filler stopped at an error
            }
        }
        drop(faulted);
        filler
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// Whether a new buffer of `len` bytes may be in huge pages, to fill as
/// [`read_behind_faults`] does.
#[cfg_attr(not(unix), allow(dead_code))] // the positional paths are Unix's
pub(crate) fn may_be_huge(len: usize) -> bool {
    advised(len) && crate::threads::workers() > 1
}

/// Touches each 4 KiB page of a new buffer advised huge pages, not touched yet, on the
/// calling thread, so that the copies that fill it next on every core take no page faults
/// (see [`fault_in_on_every_core`]).
pub(crate) fn fault_in_on_this_thread(buffer: &mut [MaybeUninit<u8>]) {
    fault_in(buffer);
}

/// Whether a new buffer of `len` bytes is advised huge pages.
fn advised(len: usize) -> bool {
    cfg!(target_os = "linux") && len >= FROM && huge_pages() && !crate::platform::portable()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(unsafe_code)]
    fn pieces_filled_behind_the_faults_cover_the_buffer_once_in_place() {
        // 5 MiB and 3 values of u32: two whole 2 MiB pieces and a short one.
        let n = (5 << 20) / 4 + 3;
        let mut v: Vec<u32> = Vec::with_capacity(n);
        let huge = advise_huge_pages(&mut v.spare_capacity_mut()[..n]);
        assert!(!huge || advised(n * 4));
        fill_behind_faults(&mut v.spare_capacity_mut()[..n], |start, piece| {
            for (k, value) in piece.iter_mut().enumerate() {
                *value = MaybeUninit::new((start + k) as u32 * 3);
            }
        });
        let filled = v.spare_capacity_mut()[..n]
            .iter()
            .enumerate()
            // SAFETY: every value was written above (the pieces cover the buffer); checked
            // against the value written at each index.
            .all(|(i, x)| unsafe { x.assume_init() } == i as u32 * 3);
        assert!(filled);
    }

    #[test]
    fn reads_behind_the_faults_fill_every_piece_or_stop_at_the_first_error() {
        let mut buf = vec![0u8; (5 << 20) + 3];
        let read = |start: usize, piece: &mut [u8]| -> Result<(), usize> {
            piece
                .iter_mut()
                .enumerate()
                .for_each(|(k, b)| *b = ((start + k) % 251) as u8);
            Ok(())
        };
        read_behind_faults(&mut buf, read).unwrap();
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        let read = |start: usize, _: &mut [u8]| match start {
            0 => Ok(()),
            at => Err(at),
        };
        assert_eq!(read_behind_faults(&mut buf, read), Err(HUGE_PAGE));
    }
}
