//! Filling large new buffers. The first touch of each page of fresh memory is a page fault,
//! in which the kernel finds a free page and clears it: a 128 MiB buffer takes 32768 of them
//! in 4 KiB pages, or 64 in 2 MiB (huge) pages, which the kernel uses where advised
//! (`madvise(MADV_HUGEPAGE)`; transparent huge pages in `madvise` mode, Debian's and
//! Ubuntu's default). Which kind faults in faster depends on where the free memory is, not
//! only on the machine, so it is measured for each buffer as it fills:
//!
//! - **a probe**: one huge page and 2 MiB of small pages are faulted in and timed first, and
//!   the rest of the buffer is advised huge pages only when the huge one was faster;
//! - **a watch**: each further 2 MiB piece is faulted in, and timed, before it is filled;
//!   once the huge pages have lost more against the probe's small pages than a quarter of
//!   what small pages would take for the whole buffer, the rest turns to small pages
//!   (`MADV_NOHUGEPAGE`);
//! - pieces are faulted in and filled on every core;
//! - small pages are faulted in a piece at a time in one call where the kernel can
//!   (`MADV_POPULATE_WRITE`, Linux 5.14 on), not by a trap per page, which takes them in
//!   about two thirds of the time. Huge pages are faulted in by a touch: populating them
//!   holds the address space's lock across what can be a long fault (a huge page the host
//!   must back again), which stalls the other cores' faults with it.
//!
//! The watch is what makes it robust. In a virtual machine whose free memory the host takes
//! back (free page reporting returns whole free 2 MiB blocks to the host), a huge page the
//! host must back again faults in several times slower than 512 small pages, while one still
//! backed faults in several times faster. A buffer's first huge pages tend to be backed ones
//! (blocks freed a moment ago), so a probe alone chose huge pages, and a buffer filled a few
//! seconds after the last one took ten times as long as in small pages. Among buffers filled
//! one after another, a few huge pages are slow and the rest fast: the allowance keeps them.
//!
//! Nothing changes outside Linux, in `never` mode, or with [`set_huge_pages`] off: there,
//! large buffers are filled on every core in small pages.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buffers smaller than this are left alone: a huge page would be most of them.
const FROM: usize = 4 << 20;

/// The size of a huge page on the platforms this knows (x86-64 and aarch64 with 4 KiB pages).
const HUGE_PAGE: usize = 2 << 20;

/// Buffers whose huge-page-aligned part is at least this large probe for themselves; smaller
/// ones go by the last probe's small pages, or stay in small pages before any probe. Every
/// large buffer probes, even right after another: the probe's huge page is also how a
/// process gets back memory the host backs in huge pages once it was taken back.
const PROBE_FROM: usize = 8 * HUGE_PAGE;

/// Zeroed buffers at least this large are faulted in before they are filled even in small
/// pages, so that the kernel clears their pages on every core.
const PREFAULT_FROM: usize = 32 << 20;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// The last probe's time for 2 MiB of small pages, in nanoseconds; 0 before the first.
static SMALL_PIECE_NANOS: AtomicU64 = AtomicU64::new(0);

/// Whether reads and writes ask for huge pages for large new buffers (default: yes): a
/// switch for the benchmarks, which measure both.
pub fn set_huge_pages(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether huge pages are asked for (see [`set_huge_pages`]).
pub fn huge_pages() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Whether a new buffer of `len` bytes may be advised huge pages.
fn advised(len: usize) -> bool {
    cfg!(target_os = "linux") && len >= FROM && huge_pages() && !crate::platform::portable()
}

/// Fills `out`, new memory not touched yet, with `fill(start, piece)` (`start`: the piece's
/// first index in `out`), on every core when `parallel`, in huge pages while they fault in
/// faster (see the module).
pub(crate) fn fill_fresh<T: Send>(
    out: &mut [MaybeUninit<T>],
    parallel: bool,
    fill: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) {
    let fill = |start, piece: &mut [MaybeUninit<T>]| {
        fill(start, piece);
        Ok::<(), std::convert::Infallible>(())
    };
    let Ok(()) = in_pieces(out, 1, parallel, touch_uninit, fill);
}

/// Reads into `buf`, a new zeroed buffer not touched yet, with `read(start, piece)` on every
/// core, as [`fill_fresh`] fills. The error of the first failed piece is returned, and no
/// piece starts after a failure.
#[cfg_attr(not(unix), allow(dead_code))] // the positional paths are Unix's
pub(crate) fn read_fresh<E: Send>(
    buf: &mut [u8],
    read: impl Fn(usize, &mut [u8]) -> Result<(), E> + Sync,
) -> Result<(), E> {
    in_pieces(buf, 1, true, touch_zeros, read)
}

/// Fills `out`, a new zeroed buffer not touched yet, as [`read_fresh`] reads, in pieces of
/// whole rows of `row` bytes: `fill(start, piece)` gets rows from byte `start` on.
pub(crate) fn fill_fresh_rows<E: Send>(
    out: &mut [u8],
    row: usize,
    parallel: bool,
    fill: impl Fn(usize, &mut [u8]) -> Result<(), E> + Sync,
) -> Result<(), E> {
    in_pieces(out, row, parallel, touch_zeros, fill)
}

/// Faults in a new zeroed buffer, not touched yet, on every core and in huge pages where they
/// fault in faster now (see the module), so that what fills it next takes no page faults.
/// The values stay zero.
pub fn fault_in_on_every_core<T: bytemuck::Zeroable>(buffer: &mut [T]) {
    let values: &mut [MaybeUninit<T>] = {
        // SAFETY: `MaybeUninit<T>` has `T`'s layout and initialized values are valid
        // `MaybeUninit`s; only zero bytes are written through the view, over zeros, which a
        // `Zeroable` `T` holds.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast(), buffer.len())
        }
    };
    fault_in_fresh(values);
}

/// Faults in the next `additional` values of `v`'s spare capacity (fewer if it has less), as
/// [`fault_in_on_every_core`]: for a vector about to be filled by pushes.
pub fn fault_in_spare<T>(v: &mut Vec<T>, additional: usize) {
    let spare = v.spare_capacity_mut();
    let len = additional.min(spare.len());
    fault_in_fresh(&mut spare[..len]);
}

/// Faults in `fresh`, memory not touched yet, as [`fault_in_on_every_core`].
pub(crate) fn fault_in_fresh<T>(fresh: &mut [MaybeUninit<T>]) {
    let bytes = as_bytes_mut(fresh);
    if bytes.len() < FROM {
        return;
    }
    // Pieces are faulted in before the fill (populated, in small pages). Where the kernel
    // cannot populate, small pages are touched here, only where the kernel's clearing is
    // worth spreading over the cores (over pages already in, it costs little).
    let all = bytes.len() >= PREFAULT_FROM;
    let touch_rest = |_, piece: &mut [MaybeUninit<u8>]| {
        if all {
            touch_uninit(piece);
        }
        Ok::<(), std::convert::Infallible>(())
    };
    let Ok(()) = in_pieces(bytes, 1, true, touch_uninit, touch_rest);
}

/// Huge pages advised for part of a new buffer, watched as they fault in.
struct Watch {
    /// The advised range: its address and length in bytes, both 2 MiB-aligned.
    at: usize,
    len: usize,
    /// What 2 MiB of small pages took to fault in, in nanoseconds.
    small: i64,
    /// Nanoseconds the huge pages have saved so far against small ones, plus the loss
    /// allowed; the range turns to small pages when it falls below zero.
    credit: std::sync::atomic::AtomicI64,
    huge: AtomicBool,
}

impl Watch {
    /// A watch over `len` bytes at `at` (advised huge pages here), against `small` for
    /// 2 MiB of small pages. Huge pages may lose a quarter of what small pages would take
    /// for the whole range before it turns to small pages: a few slow huge pages among fast
    /// ones are worth keeping, a run of them is not.
    fn new(at: usize, len: usize, small: Duration, saved: Duration) -> Watch {
        let small = i64::try_from(small.as_nanos()).unwrap_or(i64::MAX).max(1);
        let pieces = i64::try_from(len / HUGE_PAGE).unwrap_or(i64::MAX);
        let allowed = small.saturating_mul(pieces) / 4;
        let saved = i64::try_from(saved.as_nanos()).unwrap_or(0);
        Watch {
            at,
            len,
            small,
            credit: std::sync::atomic::AtomicI64::new(allowed.saturating_add(saved)),
            huge: AtomicBool::new(advise(at, len, Advice::Huge)),
        }
    }

    /// Faults in `piece` with `touch`, timed when it is in the range and huge pages are
    /// still wanted there.
    fn fault_in<X>(&self, piece: &mut [X], touch: &impl Fn(&mut [X])) {
        let at = piece.as_ptr() as usize;
        let inside = at >= self.at && at < self.at + self.len;
        if !inside || !self.huge.load(Ordering::Relaxed) {
            return fault_in_small(piece, touch);
        }
        let took = timed(|| touch(piece));
        let took = i64::try_from(took.as_nanos()).unwrap_or(i64::MAX);
        let saved = self.small.saturating_sub(took);
        let credit = self
            .credit
            .fetch_add(saved, Ordering::Relaxed)
            .saturating_add(saved);
        if credit < 0 && self.huge.swap(false, Ordering::Relaxed) {
            advise(self.at, self.len, Advice::Small);
        }
    }
}

/// `buf` in pieces of whole units of `unit` items: this thread and, when `parallel`, every
/// other core take the next piece, fault it in with `touch` if huge pages are tried for it
/// (see the module), and `fill` it. Stops at the first error; the error of the lowest piece
/// that failed is returned.
fn in_pieces<X: Send, E: Send>(
    buf: &mut [X],
    unit: usize,
    parallel: bool,
    touch: impl Fn(&mut [X]) + Sync,
    fill: impl Fn(usize, &mut [X]) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let unit = unit.max(1);
    // Without huge pages, a large buffer's pieces are populated one at a time just before
    // each is filled, while the kernel's zeros are still in the cache.
    let populated = std::mem::size_of_val(buf) >= FROM;
    let (watch, per_piece) = match probe(buf, &touch) {
        Some((watch, per_piece)) => (Some(watch), per_piece),
        None if populated => (None, HUGE_PAGE / size_of_item::<X>()),
        None => (None, crate::threads::share(buf.len(), parallel)),
    };
    let per_piece = per_piece.next_multiple_of(unit);
    let first = match &watch {
        // The first piece ends where the first huge page starts, when pieces may end anywhere.
        Some(_) if unit == 1 => {
            (buf.as_ptr() as *const u8).align_offset(HUGE_PAGE) / size_of_item::<X>()
        }
        _ => 0,
    };
    let (head, rest) = buf.split_at_mut(first.min(buf.len()));
    let pieces = (!head.is_empty()).then_some((0, head)).into_iter().chain(
        rest.chunks_mut(per_piece.max(1))
            .enumerate()
            .map(|(k, piece)| (first + k * per_piece, piece)),
    );
    let pieces = Mutex::new(pieces);
    let failed: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let work = |_| {
        while !stop.load(Ordering::Relaxed) {
            let next = pieces.lock().unwrap_or_else(|p| p.into_inner()).next();
            let Some((start, piece)) = next else { return };
            match &watch {
                Some(watch) => watch.fault_in(piece, &touch),
                // The faults the fill would take one page at a time, taken in one call.
                None if populated => populate(piece),
                None => {}
            }
            if let Err(e) = fill(start, piece) {
                stop.store(true, Ordering::Relaxed);
                let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
                if failed.as_ref().is_none_or(|(at, _)| start < *at) {
                    *failed = Some((start, e));
                }
                return;
            }
        }
    };
    let threads = if parallel {
        crate::threads::workers()
    } else {
        1
    };
    crate::threads::on_every_core(0..threads, work);
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Decides whether `buf`, memory not touched yet, tries huge pages: probes its first two
/// huge pages (faulting them in with `touch`) when it is large enough, otherwise goes by the
/// last probe. Returns the watch over the rest and the items in a huge page.
fn probe<X>(buf: &mut [X], touch: &impl Fn(&mut [X])) -> Option<(Watch, usize)> {
    let size = size_of_item::<X>();
    let at = buf.as_ptr() as usize;
    let skip = (at as *const u8).align_offset(HUGE_PAGE);
    let whole_bytes = (std::mem::size_of_val(buf).checked_sub(skip)?) / HUGE_PAGE * HUGE_PAGE;
    if !advised(std::mem::size_of_val(buf))
        || !HUGE_PAGE.is_multiple_of(size)
        || !skip.is_multiple_of(size)
        || whole_bytes == 0
    {
        return None;
    }
    let per_piece = HUGE_PAGE / size;
    let aligned = &mut buf[skip / size..][..whole_bytes / size];
    let (aligned, small, saved) = if whole_bytes >= PROBE_FROM {
        let (huge, rest) = aligned.split_at_mut(per_piece);
        let (small, rest) = rest.split_at_mut(per_piece);
        if !advise(huge.as_ptr() as usize, HUGE_PAGE, Advice::Huge) {
            return None;
        }
        let took_huge = timed(|| touch(huge));
        // Touched, not populated: across cores, populated small pages cost more than one
        // thread's probe of them shows, and this keeps huge pages where they measured
        // faster over whole buffers (the small pages they turn to are populated).
        let small = timed(|| touch(small));
        let nanos = u64::try_from(small.as_nanos()).unwrap_or(u64::MAX).max(1);
        SMALL_PIECE_NANOS.store(nanos, Ordering::Relaxed);
        if took_huge > small {
            return None;
        }
        (rest, small, small - took_huge)
    } else {
        match SMALL_PIECE_NANOS.load(Ordering::Relaxed) {
            0 => return None,
            nanos => (aligned, Duration::from_nanos(nanos), Duration::ZERO),
        }
    };
    let (at, len) = (aligned.as_ptr() as usize, std::mem::size_of_val(aligned));
    Some((Watch::new(at, len, small, saved), per_piece))
}

/// How long `f` took.
fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

/// The size of an item, for pieces of a buffer of them (never 0).
fn size_of_item<X>() -> usize {
    std::mem::size_of::<X>().max(1)
}

/// Which pages a range should fault in as.
#[derive(Clone, Copy)]
enum Advice {
    Huge,
    Small,
}

/// Advises the kernel to back `len` bytes at `at`, 2 MiB-aligned memory of a buffer the
/// caller borrows, with huge or small pages from their next fault on; whether it took it.
fn advise(at: usize, len: usize, advice: Advice) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies in one live allocation the caller borrows exclusively (its
    // pieces may be lent to other threads meanwhile), and MADV_HUGEPAGE and MADV_NOHUGEPAGE
    // are advice only: they change neither the mapping's contents nor its validity, and an
    // error (THP unavailable) leaves everything as it was.
    #[allow(unsafe_code)]
    unsafe {
        let advice = match advice {
            Advice::Huge => libc::MADV_HUGEPAGE,
            Advice::Small => libc::MADV_NOHUGEPAGE,
        };
        libc::madvise(at as *mut libc::c_void, len, advice) == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (at, len, advice);
        false
    }
}

/// Faults in `piece` in small pages: in one call where the kernel can ([`populate`]), then
/// by `touch`, which takes what that left (a part page at either end, or all of it where
/// the call is not there) and costs little over pages already in.
fn fault_in_small<X>(piece: &mut [X], touch: &impl Fn(&mut [X])) {
    populate(piece);
    touch(piece);
}

/// Whether `MADV_POPULATE_WRITE` is still worth trying (the kernel refuses it before 5.14).
#[cfg(target_os = "linux")]
static POPULATE: AtomicBool = AtomicBool::new(true);

/// Whether [`populate`] asks the kernel: not for the portable paths, nor once it refused.
#[cfg(target_os = "linux")]
fn populating() -> bool {
    POPULATE.load(Ordering::Relaxed) && !crate::platform::portable()
}

/// Faults in the whole pages of `buf` with one `madvise(MADV_POPULATE_WRITE)`: the kernel
/// prepares each page as a first write to it would, without a trap per page. No byte
/// changes. Does nothing outside Linux, for the portable paths, or where the kernel refuses
/// (then the pages fault in as they are touched).
fn populate<X>(buf: &[X]) {
    #[cfg(target_os = "linux")]
    if populating() {
        // SAFETY: `sysconf` only reads a value.
        #[allow(unsafe_code)]
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page = usize::try_from(page).unwrap_or(4096).max(1);
        let at = buf.as_ptr() as usize;
        let (first, end) = (at.next_multiple_of(page), at + std::mem::size_of_val(buf));
        let last = end / page * page;
        if first >= last {
            return;
        }
        // SAFETY: whole pages inside `buf`, memory this process has mapped; populating
        // stores nothing, so no byte changes, and it is sound while other threads hold
        // other parts of the same pages. An error leaves the pages as they were.
        #[allow(unsafe_code)]
        let failed = unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_POPULATE_WRITE,
            )
        } != 0;
        if failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            POPULATE.store(false, Ordering::Relaxed);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Touches each 4 KiB page of `fresh` (a zero byte each), faulting it in.
fn touch_uninit<T>(fresh: &mut [MaybeUninit<T>]) {
    for byte in as_bytes_mut(fresh).iter_mut().step_by(4096) {
        // Through `black_box`: a store of zero into fresh memory must not be dropped.
        *std::hint::black_box(byte) = MaybeUninit::new(0);
    }
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

/// Touches each 4 KiB page of `zeros`, a new zeroed buffer (a zero over each zero),
/// faulting it in.
fn touch_zeros(zeros: &mut [u8]) {
    for i in (0..zeros.len()).step_by(4096) {
        // Through `black_box`: a store of zero into calloc's memory must not be dropped.
        *std::hint::black_box(&mut zeros[i]) = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 17 MiB and 3 values: large enough to probe, and to be split between threads.
    const LEN: usize = (17 << 20) / 4 + 3;

    #[test]
    #[allow(unsafe_code)]
    fn pieces_filled_fresh_cover_the_buffer_once_in_place() {
        let mut v: Vec<u32> = Vec::with_capacity(LEN);
        let calls = AtomicU64::new(0);
        fill_fresh(&mut v.spare_capacity_mut()[..LEN], true, |start, piece| {
            calls.fetch_add(1, Ordering::Relaxed);
            for (k, value) in piece.iter_mut().enumerate() {
                *value = MaybeUninit::new((start + k) as u32 * 3);
            }
        });
        // Split between threads where there are several cores.
        assert!(calls.into_inner() >= crate::threads::workers().min(2) as u64);
        // SAFETY: every value was written above (the pieces cover the buffer); checked
        // against the value written at each index.
        unsafe { v.set_len(LEN) };
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32 * 3));
    }

    #[test]
    fn reads_fill_every_piece_or_return_the_first_failed_one() {
        let mut buf = vec![0u8; LEN * 4];
        let read = |start: usize, piece: &mut [u8]| -> Result<(), usize> {
            piece
                .iter_mut()
                .enumerate()
                .for_each(|(k, b)| *b = ((start + k) % 251) as u8);
            Ok(())
        };
        read_fresh(&mut buf, read).unwrap();
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        // Every piece but the first fails: the second piece's error is returned, whichever
        // thread failed first (nothing fails where one core reads the buffer as one piece).
        let starts = Mutex::new(Vec::new());
        let read = |start: usize, _: &mut [u8]| {
            starts.lock().unwrap().push(start);
            match start {
                0 => Ok(()),
                at => Err(at),
            }
        };
        let failed = read_fresh(&mut buf, read).err();
        let starts = starts.into_inner().unwrap();
        assert_eq!(failed, starts.iter().filter(|&&s| s > 0).min().copied());
        assert!(failed.is_some() || crate::threads::workers() == 1);
    }

    #[test]
    fn huge_pages_that_lose_more_than_allowed_turn_the_rest_to_small_pages() {
        let mut buf = vec![0u8; 10 * HUGE_PAGE];
        let skip = buf.as_ptr().align_offset(HUGE_PAGE);
        let at = buf.as_ptr() as usize + skip;
        // Small pages "took" 1 ns: every huge page loses, and the allowance (a quarter of 8
        // pieces' 1 ns) is gone at the first.
        let watch = Watch::new(at, 8 * HUGE_PAGE, Duration::from_nanos(1), Duration::ZERO);
        let advised = watch.huge.load(Ordering::Relaxed);
        let (outside, aligned) = buf.split_at_mut(skip);
        watch.fault_in(outside, &touch_zeros);
        assert_eq!(
            watch.huge.load(Ordering::Relaxed),
            advised,
            "outside: not timed"
        );
        watch.fault_in(&mut aligned[..HUGE_PAGE], &touch_zeros);
        assert!(!watch.huge.load(Ordering::Relaxed));
        assert!(buf.iter().all(|&b| b == 0));
        // Small pages "took" an hour: huge pages save, and stay.
        let mut buf = vec![0u8; 10 * HUGE_PAGE];
        let skip = buf.as_ptr().align_offset(HUGE_PAGE);
        let at = buf.as_ptr() as usize + skip;
        let hour = Duration::from_secs(3600);
        let watch = Watch::new(at, 8 * HUGE_PAGE, hour, Duration::ZERO);
        let advised = watch.huge.load(Ordering::Relaxed);
        for piece in buf[skip..].chunks_mut(HUGE_PAGE).take(8) {
            watch.fault_in(piece, &touch_zeros);
        }
        assert_eq!(watch.huge.load(Ordering::Relaxed), advised);
    }

    #[test]
    fn pieces_of_whole_rows_cover_the_buffer_once() {
        // Rows of 8000 bytes: a huge page holds no whole number of them.
        let (row, rows) = (8000, 2500);
        let mut out = vec![0u8; row * rows];
        let calls = AtomicU64::new(0);
        fill_fresh_rows(&mut out, row, true, |start, band| {
            assert!(start.is_multiple_of(row) && band.len().is_multiple_of(row));
            calls.fetch_add(1, Ordering::Relaxed);
            for (k, b) in band.iter_mut().enumerate() {
                *b = ((start + k) / row % 251) as u8;
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(calls.into_inner() >= crate::threads::workers().min(2) as u64);
        assert!(out
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i / row % 251) as u8));
    }

    /// Pages of `bytes` (page-aligned) that are in memory, by `mincore`.
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn resident_pages(bytes: &[u8], page: usize) -> usize {
        let mut flags = vec![0u8; bytes.len() / page];
        // SAFETY: `bytes` is mapped and page-aligned, and `flags` has a byte for each of its
        // pages.
        let done = unsafe {
            libc::mincore(
                bytes.as_ptr() as *mut libc::c_void,
                bytes.len(),
                flags.as_mut_ptr(),
            )
        };
        assert_eq!(done, 0, "mincore: {}", std::io::Error::last_os_error());
        flags.iter().filter(|&&f| f & 1 == 1).count()
    }

    #[test]
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn populating_faults_in_the_whole_pages_and_changes_no_byte() {
        // SAFETY: `sysconf` only reads a value.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
        let len = 64 * page;
        // A mapping of its own: no page of it is in memory before its first touch.
        // SAFETY: a new private anonymous mapping, unmapped below and used only meanwhile.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        // SAFETY: the `len` bytes just mapped, zeros, borrowed only here.
        let bytes = unsafe { std::slice::from_raw_parts_mut(at.cast::<u8>(), len) };
        assert_eq!(resident_pages(bytes, page), 0);
        // Values in the first and the last page; the buffer populated from mid-page to
        // mid-page, so that only its 62 whole pages are populated.
        bytes[..100].iter_mut().for_each(|b| *b = 7);
        bytes[len - 100..].iter_mut().for_each(|b| *b = 9);
        populate(&bytes[page / 2..len - page / 2]);
        let expected = if populating() { 64 } else { 2 };
        assert_eq!(resident_pages(bytes, page), expected);
        assert!(bytes[..100].iter().all(|&b| b == 7));
        assert!(bytes[100..len - 100].iter().all(|&b| b == 0));
        assert!(bytes[len - 100..].iter().all(|&b| b == 9));
        // SAFETY: the mapping made above, no longer borrowed.
        assert_eq!(unsafe { libc::munmap(at, len) }, 0);
    }

    #[test]
    fn faulting_in_keeps_zeros_and_leaves_spare_capacity_spare() {
        let mut zeros = vec![0u64; (33 << 20) / 8 + 1];
        fault_in_on_every_core(&mut zeros);
        assert!(zeros.iter().all(|&x| x == 0));
        let mut v: Vec<u8> = Vec::with_capacity(40 << 20);
        v.push(7);
        fault_in_spare(&mut v, 1 << 30);
        assert_eq!(v, [7]);
    }
}
