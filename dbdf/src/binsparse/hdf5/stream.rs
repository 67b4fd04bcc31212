//! HDF5 files written as a stream, with no local copy and no seek back: a write-only HDF5
//! virtual file driver that keeps the file's first bytes (its head) in memory and hands the
//! bytes past them over in order. The driver places what the library allocates (`alloc`):
//! metadata from the file's start, raw data after a reserve for the metadata still to come
//! (made when the first raw block is placed). The library rewrites metadata until the file
//! is closed (the superblock last), always within the head, which its output takes last
//! ([`crate::storage::FileOut::finish_with_head`]); raw data is written once, in the order
//! it is placed. A write or read back past the head fails with the reason kept.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use hdf5_metno as h5;
use hdf5_metno_sys::h5::{haddr_t, herr_t, hsize_t};
use hdf5_metno_sys::h5i::hid_t;
use serde_daphne::{Error, Result};

use super::driver::{self, opened, Class};

/// `H5FD_MEM_DRAW`: raw data; every other kind of block is metadata.
const RAW: c_int = 3;

/// `HADDR_UNDEF`: an allocation refused.
const UNDEFINED: haddr_t = haddr_t::MAX;

/// Where raw data starts is rounded up to this.
const ALIGN: u64 = 4096;

/// A file being written through the driver: its head, the bytes after it not yet taken,
/// and where blocks go.
pub(super) struct Streamed {
    state: Mutex<State>,
}

struct State {
    /// How many first bytes are held.
    head_len: u64,
    /// The head as written so far.
    head: Vec<u8>,
    /// Bytes past the head written and not yet taken, from `tail_at` on.
    tail: Vec<u8>,
    tail_at: u64,
    /// The end of the metadata placed, from the file's start.
    meta_end: u64,
    /// Where raw data starts, once its first block is placed: the metadata's limit.
    raw_start: Option<u64>,
    raw_end: u64,
    /// Bytes kept for metadata when the first raw block is placed.
    reserve: u64,
    /// Whether the raw blocks placed now are the global heap's (metadata written again
    /// until the file closes, which the library allocates as raw data).
    heap: bool,
    /// Why a write, read or allocation failed (the library says only that it did).
    failed: Option<String>,
}

/// What the driver's file holds when closed: the head (the whole file when nothing
/// followed it), and the bytes after it not yet taken.
pub(super) struct Closed {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

static CLASS: Class = Class {
    open: Some(open_file),
    alloc: Some(alloc),
    get_eoa: Some(get_eoa),
    set_eoa: Some(set_eoa),
    get_eof: Some(get_eoa),
    read: Some(read),
    write: Some(write),
    ..Class::of::<Streamed>(c"dbdf-stream")
};

impl Streamed {
    /// Creates an HDF5 file (named `name` in messages) through the driver, holding its
    /// first `head_len` bytes.
    ///
    /// # Errors
    /// A library whose driver table differs; the library refusing to create it.
    pub(super) fn create(name: &Path, head_len: u64) -> Result<(h5::File, Arc<Streamed>)> {
        static ID: OnceLock<std::result::Result<hid_t, String>> = OnceLock::new();
        let driver = driver::register(&ID, &CLASS, "writing HDF5 as a stream")?;
        let streamed = Arc::new(Streamed {
            state: Mutex::new(State {
                head_len,
                head: Vec::new(),
                tail: Vec::new(),
                tail_at: head_len,
                meta_end: 0,
                raw_start: None,
                raw_end: 0,
                reserve: ALIGN,
                heap: false,
                failed: None,
            }),
        });
        let file = driver::open_with(driver, &streamed, name, |name, fapl| {
            use hdf5_metno_sys::{h5f, h5p};
            // SAFETY: a file name and an access property list the caller made.
            unsafe { h5f::H5Fcreate(name, h5f::H5F_ACC_TRUNC, h5p::H5P_DEFAULT, fapl) }
        });
        match file {
            Some(file) => Ok((file, streamed)),
            None => Err(streamed.error("cannot create an HDF5 file")),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `bytes` for metadata before the first raw block (placed after them).
    pub(super) fn reserve(&self, bytes: u64) {
        self.state().reserve = bytes;
    }

    /// Runs `write`, which writes to the global heap (a variable-length string) and no raw
    /// data, with the heap's blocks placed as metadata.
    pub(super) fn heap<T>(&self, write: impl FnOnce() -> T) -> T {
        self.state().heap = true;
        let done = write();
        self.state().heap = false;
        done
    }

    /// The bytes past the head written since last taken.
    pub(super) fn take_tail(&self) -> Vec<u8> {
        let mut state = self.state();
        let tail = std::mem::take(&mut state.tail);
        state.tail_at += tail.len() as u64;
        tail
    }

    /// The error for what failed: why the driver refused, else `what` the library did.
    pub(super) fn error(&self, what: &str) -> Error {
        match self.state().failed.take() {
            Some(why) => Error::invalid(format!("{what}: {why}")),
            None => Error::invalid(what.to_owned()),
        }
    }

    /// The file's bytes once closed: the head (the whole file when it is not longer), and
    /// the bytes after it not yet taken, up to its end.
    pub(super) fn closed(&self) -> Closed {
        let mut state = self.state();
        let end = state.meta_end.max(state.raw_end);
        let mut head = std::mem::take(&mut state.head);
        let mut tail = std::mem::take(&mut state.tail);
        if end <= state.head_len && state.tail_at == state.head_len && tail.is_empty() {
            head.resize(end as usize, 0);
        } else {
            head.resize(state.head_len as usize, 0);
            let written = state.tail_at + tail.len() as u64;
            tail.resize(tail.len() + end.saturating_sub(written) as usize, 0);
        }
        Closed { head, tail }
    }
}

impl State {
    fn write(&mut self, addr: u64, bytes: &[u8]) -> std::result::Result<(), String> {
        let within = self.head_len.saturating_sub(addr).min(bytes.len() as u64) as usize;
        let (head, past) = bytes.split_at(within);
        if !head.is_empty() {
            let (from, to) = (addr as usize, addr as usize + head.len());
            if self.head.len() < to {
                self.head.resize(to, 0);
            }
            self.head[from..to].copy_from_slice(head);
        }
        if past.is_empty() {
            return Ok(());
        }
        let at = addr.max(self.head_len);
        let next = self.tail_at + self.tail.len() as u64;
        if at < next {
            return Err(format!(
                "HDF5 wrote {} bytes at {at}, before the {next} already sent (a file written \
                 as a stream is never rewritten)",
                past.len()
            ));
        }
        self.tail.resize(self.tail.len() + (at - next) as usize, 0);
        self.tail.extend_from_slice(past);
        Ok(())
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> std::result::Result<(), String> {
        if addr + buf.len() as u64 > self.head_len {
            return Err(format!(
                "HDF5 read back {} bytes at {addr}, already sent",
                buf.len()
            ));
        }
        buf.fill(0);
        let have = self.head.len().saturating_sub(addr as usize).min(buf.len());
        buf[..have].copy_from_slice(&self.head[addr as usize..addr as usize + have]);
        Ok(())
    }

    fn alloc(&mut self, raw: bool, size: u64) -> std::result::Result<u64, String> {
        if raw {
            let reserve = self.meta_end + self.reserve;
            let start = *self
                .raw_start
                .get_or_insert(reserve.div_ceil(ALIGN) * ALIGN);
            let at = self.raw_end.max(start);
            self.raw_end = at + size;
            return Ok(at);
        }
        let at = self.meta_end;
        match self.raw_start {
            Some(limit) if at + size > limit => Err(format!(
                "its metadata outgrew the {limit} bytes kept for it before its data"
            )),
            _ => {
                self.meta_end = at + size;
                Ok(at)
            }
        }
    }

    fn eoa(&self) -> u64 {
        self.meta_end.max(self.raw_end)
    }

    /// The library moving the end: a block at the end grown or given back.
    fn set_eoa(&mut self, addr: u64) {
        match self.raw_start {
            Some(start) if addr >= start => {
                // Never below what was sent: that stays in the file.
                let sent = self.tail_at + self.tail.len() as u64;
                let floor = if sent > self.head_len { sent } else { start };
                self.raw_end = addr.max(floor);
            }
            Some(start) => self.meta_end = addr.min(start),
            None => self.meta_end = addr,
        }
    }
}

unsafe extern "C" fn open_file(
    _: *const c_char,
    flags: c_uint,
    fapl: hid_t,
    _: haddr_t,
) -> *mut c_void {
    if flags & hdf5_metno_sys::h5f::H5F_ACC_RDWR == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: the library opens the file with the property list this driver was set on.
    unsafe { driver::new_file::<Streamed>(fapl) }
}

/// `f`'s answer on the state of `file`, or `failed` with the reason kept (the library is
/// told only that a call failed).
///
/// # Safety
/// `file` is a pointer `open` returned, not yet closed.
unsafe fn on_state<T>(
    file: *const c_void,
    failed: T,
    f: impl FnOnce(&mut State) -> std::result::Result<T, String>,
) -> T {
    let mut state = unsafe { opened::<Streamed>(file) }.info.state();
    let answer = f(&mut state);
    answer.unwrap_or_else(|why| {
        state.failed.get_or_insert(why);
        failed
    })
}

unsafe extern "C" fn alloc(file: *mut c_void, kind: c_int, _: hid_t, size: hsize_t) -> haddr_t {
    // SAFETY: a file `open` returned.
    unsafe {
        on_state(file, UNDEFINED, |state| {
            let raw = kind == RAW && !state.heap;
            state.alloc(raw, size)
        })
    }
}

unsafe extern "C" fn get_eoa(file: *const c_void, _: c_int) -> haddr_t {
    // SAFETY: a file `open` returned.
    unsafe { on_state(file, UNDEFINED, |state| Ok(state.eoa())) }
}

unsafe extern "C" fn set_eoa(file: *mut c_void, _: c_int, addr: haddr_t) -> herr_t {
    // SAFETY: a file `open` returned.
    unsafe {
        on_state(file, -1, |state| {
            state.set_eoa(addr);
            Ok(0)
        })
    }
}

unsafe extern "C" fn read(
    file: *mut c_void,
    _: c_int,
    _: hid_t,
    addr: haddr_t,
    size: usize,
    buf: *mut c_void,
) -> herr_t {
    // SAFETY: a file `open` returned; the library passes `size` bytes of room at `buf`.
    unsafe {
        let buf = std::slice::from_raw_parts_mut(buf.cast::<u8>(), size);
        on_state(file, -1, |state| state.read(addr, buf).map(|()| 0))
    }
}

unsafe extern "C" fn write(
    file: *mut c_void,
    _: c_int,
    _: hid_t,
    addr: haddr_t,
    size: usize,
    buf: *const c_void,
) -> herr_t {
    // SAFETY: a file `open` returned; the library passes `size` bytes at `buf`.
    unsafe {
        let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), size);
        on_state(file, -1, |state| state.write(addr, bytes).map(|()| 0))
    }
}

#[cfg(test)]
mod tests {
    use super::State;

    fn state(head_len: u64) -> State {
        State {
            head_len,
            head: Vec::new(),
            tail: Vec::new(),
            tail_at: head_len,
            meta_end: 0,
            raw_start: None,
            raw_end: 0,
            reserve: 100,
            heap: false,
            failed: None,
        }
    }

    /// Metadata goes from the start, raw data after the reserve (aligned), each block once;
    /// metadata past the reserve is refused.
    #[test]
    fn blocks_are_placed_metadata_first_then_raw_data_in_order() {
        let mut s = state(1 << 20);
        assert_eq!(s.alloc(false, 96), Ok(0));
        assert_eq!(s.alloc(false, 40), Ok(96));
        assert_eq!(s.alloc(true, 10), Ok(4096));
        assert_eq!(s.alloc(true, 5), Ok(4106));
        assert_eq!(s.alloc(false, 3000), Ok(136));
        assert!(s
            .alloc(false, 4000)
            .unwrap_err()
            .contains("4096 bytes kept"));
        assert_eq!(s.eoa(), 4111);
        // Given back at the end, then grown again.
        s.set_eoa(4106);
        assert_eq!(s.alloc(true, 7), Ok(4106));
    }

    /// Bytes within the head may be rewritten; past it they go in order, a gap as zeros,
    /// and a write or read back there fails.
    #[test]
    fn the_head_is_rewritten_and_the_rest_written_once_in_order() {
        let mut s = state(8);
        s.write(2, b"ab").unwrap();
        s.write(6, b"cdef").unwrap();
        s.write(0, b"xy").unwrap();
        s.write(12, b"g").unwrap();
        assert_eq!(s.head, b"xyab\0\0cd");
        assert_eq!(s.tail, b"ef\0\0g");
        let e = s.write(9, b"h").unwrap_err();
        assert!(e.contains("at 9, before the 13 already sent"), "{e}");
        let mut buf = [9; 4];
        s.read(4, &mut buf).unwrap();
        assert_eq!(&buf, b"\0\0cd");
        assert!(s.read(6, &mut buf).is_err());
    }
}
