//! Huge pages for large new buffers: the first touch of each 4 KiB page of fresh memory costs
//! a page fault, which caps any copy into a new 128 MiB array at about a fifth of memory
//! speed. Advising the kernel (`madvise(MADV_HUGEPAGE)`) before the first touch lets it back
//! the buffer with 2 MiB pages: 512 times fewer faults. The advice changes neither the
//! allocation nor its contents, so the buffer frees as usual.
//!
//! It helps where transparent huge pages are in `madvise` mode (Debian's and Ubuntu's
//! default) and does nothing in `never` mode or on systems other than Linux; in `always` mode
//! the kernel does it anyway. [`set_huge_pages`] turns it off for the process.

use std::sync::atomic::{AtomicBool, Ordering};

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

/// Advises huge pages for the 2 MiB-aligned part of the `len` bytes at `ptr`, which must not
/// have been touched yet to gain anything. Large buffers only; nothing outside Linux.
pub(crate) fn advise<T>(ptr: *const T, len: usize) {
    if !advised(len) {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside one live allocation the caller owns (its aligned
    // middle), and MADV_HUGEPAGE is advice only: it changes neither the mapping's contents
    // nor its validity, and an error (THP unavailable) leaves everything as it was.
    #[allow(unsafe_code)]
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

/// Advises huge pages for a vector's spare capacity (before it is written).
pub fn advise_huge_pages_spare<T>(v: &Vec<T>) {
    let spare = v.capacity() - v.len();
    advise(
        v.as_ptr().wrapping_add(v.len()),
        spare * std::mem::size_of::<T>(),
    );
}

/// Buffers at least this large are faulted in on every core before they are filled.
const PREFAULT_FROM: usize = 32 << 20;

/// Touches each page of a new, not yet touched buffer from every core, so that the kernel
/// zeroes the fresh pages in parallel: reading a 168 MB file into new vectors spent half its
/// time in the kernel's page clearing on one core (measured with `perf`), before the copy.
/// The values stay what they were (zeros are written over zeros).
pub fn fault_in_on_every_core<T: bytemuck::Zeroable + Send>(buffer: &mut [T]) {
    let threads = crate::threads::workers();
    if std::mem::size_of_val(buffer) < PREFAULT_FROM || threads < 2 {
        return;
    }
    let stride = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    let per_thread = buffer.len().div_ceil(threads);
    crate::threads::on_every_core(buffer.chunks_mut(per_thread), |part| {
        for i in (0..part.len()).step_by(stride) {
            // Through `black_box`: the compiler may know calloc's memory is zero and drop a
            // store of zero into it.
            *std::hint::black_box(&mut part[i]) = T::zeroed();
        }
    });
}

/// Whether a new buffer of `len` bytes is advised huge pages.
fn advised(len: usize) -> bool {
    cfg!(target_os = "linux") && len >= FROM && huge_pages() && !crate::platform::portable()
}

/// Touches each 4 KiB page of a new, not yet touched buffer on the calling thread, so that
/// the copies that fill it next take no page faults. One thread at a time: huge-page faults
/// taken by several threads at once can stall for a long time. Buffers not advised huge
/// pages are left to fault 4 KiB at a time in the copies, on every core, which is faster.
pub(crate) fn fault_in_on_this_thread(buffer: &mut [std::mem::MaybeUninit<u8>]) {
    if !advised(buffer.len()) {
        return;
    }
    for byte in buffer.iter_mut().step_by(4096) {
        *byte = std::mem::MaybeUninit::new(0);
    }
}
