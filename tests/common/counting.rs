//! A counting global allocator, for test binaries that bound what they allocate: a binary
//! includes this file (`#[path]`), which installs it, and measures with [`peak_during`].
//! Tests in such a binary take turns ([`SERIAL`]): the counters are global.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, its live bytes and their peak counted.
pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// `ptr`, with `size` bytes more live (and the peak raised) where the allocation succeeded.
fn counted(ptr: *mut u8, size: usize) -> *mut u8 {
    if !ptr.is_null() {
        let now = CURRENT.fetch_add(size, Ordering::SeqCst) + size;
        PEAK.fetch_max(now, Ordering::SeqCst);
    }
    ptr
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        counted(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        counted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: `ptr` came from this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        }
        counted(new, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The counters are global: tests in this binary take turns.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Peak bytes allocated (above what was live before) while running `f`.
pub fn peak_during(f: impl FnOnce()) -> usize {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}
