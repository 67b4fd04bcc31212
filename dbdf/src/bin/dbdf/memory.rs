//! How the tool takes memory from the system: buffers of a MiB or more (bands, chunks,
//! blocks, the Arrow crates' arrays, a Parquet dictionary page's values) are mapped here, at
//! a huge page's boundary, and returned to the system when freed (up to 16 MiB of freed ones
//! kept for the next buffer of the same length, until a buffer larger than that is taken or
//! the thread that freed them ends).
//!
//! glibc otherwise raises its mapping threshold after the first large free, and the next
//! bands come from its heaps, where freed memory stays resident (a conversion's peak then
//! grows by about a third).
//!
//! The mappings are not advised huge pages. A huge page needs a whole free 2 MiB block, and
//! in a virtual machine whose host takes back free memory (free page reporting does so for
//! whole free 2 MiB blocks) that is memory the host must back again when it is touched: once
//! another process had run, conversions took markedly longer with the advice. Small pages come
//! from memory freed a moment ago; where nothing was taken back the two measured alike.

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator; on Linux, buffers of [`LARGE`] bytes or more mapped of their own.
pub struct Allocator;

/// Buffers from this size on are mapped here.
#[cfg(target_os = "linux")]
const LARGE: usize = 1 << 20;

/// A huge page (x86-64, aarch64 with 4 KiB pages).
#[cfg(target_os = "linux")]
const HUGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
fn large(layout: Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= HUGE
}

/// Freed mappings kept for the next buffer of the same length, at most [`KEPT_BYTES`] in all:
/// a conversion frees and takes buffers of a few sizes over and over (a band's columns, a
/// Parquet window), and a mapping made afresh is faulted in and cleared by the kernel every
/// time (half of a Parquet conversion's time, in `clear_page_erms`).
#[cfg(target_os = "linux")]
static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(Kept {
    mappings: [(0, 0, 0); KEPT_SLOTS],
    bytes: 0,
});

/// At most this many bytes of freed mappings are kept (resident, counted in the peak).
#[cfg(target_os = "linux")]
const KEPT_BYTES: usize = 16 << 20;

#[cfg(target_os = "linux")]
const KEPT_SLOTS: usize = 16;

/// Freed mappings: (address, length, [`freer`]) triples, zeros where a slot is free.
#[cfg(target_os = "linux")]
struct Kept {
    mappings: [(usize, usize, usize); KEPT_SLOTS],
    bytes: usize,
}

/// The thread's number among those that freed a kept mapping (0 until it does). When the
/// thread ends, the mappings it freed are released: its part of a conversion is over (a
/// MatrixMarket file's parsing passes: their buffers stayed beside the matrix while it was
/// written, over issue 36's bound), and what comes next takes buffers of other lengths.
#[cfg(target_os = "linux")]
struct Freer(std::cell::Cell<usize>);

#[cfg(target_os = "linux")]
impl Drop for Freer {
    fn drop(&mut self) {
        let ended = self.0.get();
        release_kept_where(|freer| freer == ended);
    }
}

#[cfg(target_os = "linux")]
thread_local! {
    static FREER: Freer = const { Freer(std::cell::Cell::new(0)) };
}

#[cfg(target_os = "linux")]
static FREERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// This thread's [`Freer`] number; `None` while the thread ends.
#[cfg(target_os = "linux")]
fn freer() -> Option<usize> {
    let number = |f: &Freer| {
        if f.0.get() == 0 {
            f.0.set(FREERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        }
        f.0.get()
    };
    FREER.try_with(number).ok()
}

/// A kept mapping of exactly `len` bytes, taken out of the cache.
#[cfg(target_os = "linux")]
fn reuse(len: usize) -> Option<*mut u8> {
    let mut kept = KEPT.lock().ok()?;
    let slot = kept.mappings.iter().position(|&(_, l, _)| l == len)?;
    let (address, _, _) = std::mem::take(&mut kept.mappings[slot]);
    kept.bytes -= len;
    Some(address as *mut u8)
}

/// Keeps the freed mapping at `ptr` of `len` bytes for reuse; `false` when the cache is full.
#[cfg(target_os = "linux")]
fn keep(ptr: *mut u8, len: usize) -> bool {
    // Before the lock: the first call in a thread may allocate (its end is registered).
    let Some(freer) = freer() else {
        return false;
    };
    let Ok(mut kept) = KEPT.lock() else {
        return false;
    };
    if kept.bytes + len > KEPT_BYTES {
        return false;
    }
    let Some(slot) = kept.mappings.iter().position(|&(_, l, _)| l == 0) else {
        return false;
    };
    kept.mappings[slot] = (ptr as usize, len, freer);
    kept.bytes += len;
    true
}

/// Unmaps every kept mapping, for a buffer larger than the cache can hold: a new phase of
/// the conversion, which the kept buffers would not serve, and beside which they would only
/// raise the peak (a MatrixMarket file's CSR arrays, a tiled file's sparse band).
#[cfg(target_os = "linux")]
fn release_kept() {
    release_kept_where(|_| true);
}

/// Unmaps the kept mappings whose [`freer`] number passes `which`.
#[cfg(target_os = "linux")]
fn release_kept_where(which: impl Fn(usize) -> bool) {
    let Ok(mut kept) = KEPT.lock() else {
        return;
    };
    let mut released = 0;
    for slot in kept
        .mappings
        .iter_mut()
        .filter(|(_, _, freer)| which(*freer))
    {
        let (address, len, _) = std::mem::take(slot);
        if len > 0 {
            released += len;
            // SAFETY: a mapping of `len` bytes from `map`, freed by its owner and kept here
            // alone; taken out of the cache first, so nothing else can hand it out.
            unsafe { libc::munmap(address as *mut libc::c_void, len) };
        }
    }
    kept.bytes -= released;
}

/// A kept mapping of `len` bytes (`true`), or a fresh one for `size` bytes (see
/// [`release_kept`]).
#[cfg(target_os = "linux")]
fn reuse_or_map(len: usize, size: usize) -> (*mut u8, bool) {
    if let Some(ptr) = reuse(len) {
        return (ptr, true);
    }
    if len > KEPT_BYTES {
        release_kept();
    }
    (map(size), false)
}

/// A fresh mapping of `size` bytes (rounded up to whole huge pages) at a huge page's
/// boundary (which satisfies every alignment [`large`] admits); zeros, as every fresh
/// anonymous mapping. Null on failure.
#[cfg(target_os = "linux")]
fn map(size: usize) -> *mut u8 {
    let len = size.next_multiple_of(HUGE);
    // SAFETY: an anonymous private mapping of a length we chose, at an address the kernel
    // chooses; nothing existing is touched. The parts outside the aligned range are
    // unmapped again, and only ranges inside this mapping are.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let first = p as usize;
        let start = first.next_multiple_of(HUGE);
        if start > first {
            libc::munmap(p, start - first);
        }
        let (end, mapped_end) = (start + len, first + len + HUGE);
        if mapped_end > end {
            libc::munmap(end as *mut libc::c_void, mapped_end - end);
        }
        start as *mut u8
    }
}

// SAFETY: small buffers are the system allocator's, with their own arguments. Large ones
// (Linux) are mappings of their own, at least `size` bytes, aligned to a huge page (which
// satisfies every alignment `large` admits), zeroed, and unmapped with the same rounded
// length on deallocation; `large(layout)` tells the two apart the same way on every call,
// since a layout is given back unchanged to `dealloc` and `realloc`.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if large(layout) {
            let len = layout.size().next_multiple_of(HUGE);
            return reuse_or_map(len, layout.size()).0;
        }
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if large(layout) {
            let len = layout.size().next_multiple_of(HUGE);
            let (ptr, reused) = reuse_or_map(len, layout.size());
            if reused {
                // SAFETY: a kept mapping of `len` bytes, this buffer's alone from now on.
                unsafe { std::ptr::write_bytes(ptr, 0, layout.size()) };
            }
            // A fresh anonymous mapping is zeros.
            return ptr;
        }
        // SAFETY: forwarded as given.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        #[cfg(target_os = "linux")]
        if large(layout) {
            let len = layout.size().next_multiple_of(HUGE);
            if !keep(ptr, len) {
                // SAFETY: `ptr` came from `map` with this layout's size (see above).
                unsafe {
                    libc::munmap(ptr.cast(), len);
                }
            }
            return;
        }
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: the caller guarantees `new_size` with `layout.align()` is a valid layout.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            if large(layout) || large(new_layout) {
                // SAFETY: a new buffer from this allocator; the old one's bytes copied (as
                // many as both hold), then freed with its own layout.
                unsafe {
                    let new = self.alloc(new_layout);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    return new;
                }
            }
        }
        // SAFETY: forwarded as given.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Sets glibc's mapping threshold to 1 MiB (see the module's documentation).
pub fn release_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The kept bytes (the lock released before an assertion can fail: its panic frees).
    fn kept_bytes() -> usize {
        KEPT.lock().unwrap().bytes
    }

    #[test]
    fn a_kept_mapping_is_reused_and_zeroed_again_when_zeros_are_asked() {
        let layout = Layout::from_size_align(3 << 20, 64).unwrap();
        // SAFETY: each buffer is used within its layout and freed once, with it.
        unsafe {
            let first = Allocator.alloc_zeroed(layout);
            assert!(!first.is_null());
            std::ptr::write_bytes(first, 0xAB, layout.size());
            Allocator.dealloc(first, layout);
            // The same length again: the kept mapping, cleared.
            let again = Allocator.alloc_zeroed(layout);
            assert_eq!(again, first);
            let bytes = std::slice::from_raw_parts(again, layout.size());
            assert!(bytes.iter().all(|&b| b == 0));
            Allocator.dealloc(again, layout);
            let plain = Allocator.alloc(layout);
            assert!(!plain.is_null() && (plain as usize).is_multiple_of(HUGE));
            std::ptr::write_bytes(plain, 1, layout.size());
            Allocator.dealloc(plain, layout);
            // (In one test: the cache is the process's.) A buffer larger than the cache
            // empties it; one that fits it does not.
            assert_eq!(kept_bytes(), 4 << 20);
            let small = Layout::from_size_align(1 << 20, 64).unwrap();
            Allocator.dealloc(Allocator.alloc(small), small);
            assert_eq!(kept_bytes(), 6 << 20);
            let large = Layout::from_size_align(KEPT_BYTES + 1, 64).unwrap();
            let big = Allocator.alloc(large);
            assert!(!big.is_null());
            assert_eq!(kept_bytes(), 0);
            Allocator.dealloc(big, large);
            // What a thread freed is kept while it runs, released when it ends; what this
            // thread freed stays.
            let before = kept_bytes();
            std::thread::spawn(move || {
                Allocator.dealloc(Allocator.alloc(small), small);
                assert_eq!(kept_bytes(), before + (2 << 20));
            })
            .join()
            .unwrap();
            assert_eq!(kept_bytes(), before);
        }
    }
}
