//! How the tool takes memory from the system: buffers of a MiB or more (bands, chunks,
//! blocks, the Arrow crates' arrays) are mapped on their own and returned to the system when
//! freed, and those of 2 MiB or more are mapped here, in whole huge pages aligned to them.
//!
//! glibc otherwise raises its mapping threshold after the first large free, and the next
//! bands come from its heaps, where freed memory stays resident (a conversion's peak then
//! grows by about a third). But memory mapped afresh for every band is faulted in again
//! 4 KiB at a time, several times the page faults and CPU of glibc's heaps. glibc's own
//! mappings start a few bytes past a page, so advice for huge pages covers only their
//! aligned middle (a band still took a third of its pages 4 KiB at a time); mappings of
//! whole, aligned huge pages take none, within the same peak memory.

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator; on Linux, buffers of [`LARGE`] bytes or more mapped in huge pages.
pub struct Allocator;

/// Buffers from this size on are mapped here.
#[cfg(target_os = "linux")]
const LARGE: usize = 2 << 20;

/// A huge page (x86-64, aarch64 with 4 KiB pages).
#[cfg(target_os = "linux")]
const HUGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
fn large(layout: Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= HUGE
}

/// A fresh mapping of `size` bytes (rounded up to whole huge pages) at a huge page's
/// boundary, advised to use huge pages; zeros, as every fresh anonymous mapping. Null on
/// failure.
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
        if serde_daphne::__private_0_1_0::huge_pages() {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
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
            return map(layout.size());
        }
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if large(layout) {
            // A fresh anonymous mapping is zeros.
            return map(layout.size());
        }
        // SAFETY: forwarded as given.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        #[cfg(target_os = "linux")]
        if large(layout) {
            // SAFETY: `ptr` came from `map` with this layout's size (see above).
            unsafe {
                libc::munmap(ptr.cast(), layout.size().next_multiple_of(HUGE));
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
