//! HDF5 files read by position from any [`ReadAt`] (a remote object's ranges), with no local
//! copy: a read-only HDF5 virtual file driver whose reads are the source's. The HDF5 library
//! opens files through drivers (`sec2` for local files); this one hands each of its reads to
//! the source, so the library reads a bucket as it reads a disk (GDAL's `/vsis3/` below its
//! HDF5 driver does the same).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use hdf5_metno as h5;
use hdf5_metno_sys::h5::{haddr_t, herr_t};
use hdf5_metno_sys::h5i::hid_t;
use serde_daphne::{Error, ReadAt, Result};

use super::driver::{self, opened, Class};

/// What a file opened through the driver reads, and the first error its reads met (the
/// library reports only that a read failed).
pub(super) struct Ranges {
    data: Arc<dyn ReadAt>,
    len: u64,
    failed: Mutex<Option<io::Error>>,
}

impl Ranges {
    /// The error a read of the source met, if one did (taken).
    pub(super) fn take_error(&self) -> Option<io::Error> {
        self.failed.lock().ok()?.take()
    }
}

static CLASS: Class = Class {
    open: Some(open_file),
    get_eoa: Some(get_eoa),
    set_eoa: Some(set_eoa),
    get_eof: Some(get_eof),
    read: Some(read),
    write: Some(write),
    ..Class::of::<Ranges>(c"dbdf-ranges")
};

/// Opens the HDF5 file `data` (named `name` in messages), read only, through the driver.
///
/// # Errors
/// A library whose driver table differs; the library's error opening it, or the first
/// error a read met.
pub(super) fn open(data: Arc<dyn ReadAt>, name: &Path) -> Result<(h5::File, Arc<Ranges>)> {
    static ID: OnceLock<std::result::Result<hid_t, String>> = OnceLock::new();
    let driver = driver::register(&ID, &CLASS, "reading HDF5 by ranges")?;
    let ranges = Arc::new(Ranges {
        len: data.size()?,
        data,
        failed: Mutex::new(None),
    });
    let file = driver::open_with(driver, &ranges, name, |name, fapl| {
        // SAFETY: a file name and an access property list the caller made.
        unsafe { hdf5_metno_sys::h5f::H5Fopen(name, hdf5_metno_sys::h5f::H5F_ACC_RDONLY, fapl) }
    });
    match file {
        Some(file) => Ok((file, ranges)),
        None => Err(match ranges.take_error() {
            Some(e) => e.into(),
            None => Error::invalid("cannot open as HDF5"),
        }),
    }
}

unsafe extern "C" fn open_file(
    _: *const c_char,
    flags: c_uint,
    fapl: hid_t,
    _: haddr_t,
) -> *mut c_void {
    if flags != hdf5_metno_sys::h5f::H5F_ACC_RDONLY {
        return std::ptr::null_mut();
    }
    // SAFETY: the library opens the file with the property list this driver was set on.
    unsafe { driver::new_file::<Ranges>(fapl) }
}

unsafe extern "C" fn get_eoa(file: *const c_void, _: c_int) -> haddr_t {
    // SAFETY: a file `open` returned.
    unsafe { opened::<Ranges>(file) }.eoa
}

unsafe extern "C" fn set_eoa(file: *mut c_void, _: c_int, addr: haddr_t) -> herr_t {
    // SAFETY: a file `open` returned, which the library holds alone.
    unsafe { (*file.cast::<driver::OpenFile<Ranges>>()).eoa = addr };
    0
}

unsafe extern "C" fn get_eof(file: *const c_void, _: c_int) -> haddr_t {
    // SAFETY: a file `open` returned.
    unsafe { opened::<Ranges>(file) }.info.len
}

/// `size` bytes at `addr` from the source; those past its end read as zeros, as `sec2`
/// reads them.
unsafe extern "C" fn read(
    file: *mut c_void,
    _: c_int,
    _: hid_t,
    addr: haddr_t,
    size: usize,
    buf: *mut c_void,
) -> herr_t {
    // SAFETY: a file `open` returned; the library passes `size` bytes of room at `buf`.
    let (ranges, buf) = unsafe {
        let buf = std::slice::from_raw_parts_mut(buf.cast::<u8>(), size);
        (&opened::<Ranges>(file).info, buf)
    };
    let within = ranges.len.saturating_sub(addr).min(size as u64) as usize;
    let (data, past) = buf.split_at_mut(within);
    past.fill(0);
    match ranges.data.read_exact_at(data, addr) {
        Ok(()) => 0,
        Err(e) => {
            if let Ok(mut failed) = ranges.failed.lock() {
                failed.get_or_insert(e);
            }
            -1
        }
    }
}

unsafe extern "C" fn write(
    _: *mut c_void,
    _: c_int,
    _: hid_t,
    _: haddr_t,
    _: usize,
    _: *const c_void,
) -> herr_t {
    -1 // read only
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::Path;
    use std::sync::Arc;

    use serde_daphne::ReadAt;

    use super::super::{read, read_at};

    /// A file whose reads past `fail_from` fail, as a request refused halfway.
    #[derive(Debug)]
    struct FailingFrom(std::fs::File, u64);

    impl ReadAt for FailingFrom {
        fn size(&self) -> io::Result<u64> {
            self.0.size()
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            match offset + buf.len() as u64 > self.1 {
                true => Err(io::Error::other("the request was refused")),
                false => self.0.read_exact_at(buf, offset),
            }
        }
    }

    /// Every golden HDF5 file the Binsparse reference wrote reads by ranges as it reads by
    /// path (its matrix, or the same refusal); a read that fails is the error.
    #[test]
    fn golden_hdf5_files_read_by_ranges_as_by_path() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/binsparse");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "h5") {
                continue;
            }
            files += 1;
            let by_path = read(&path, u64::MAX);
            let file = Arc::new(std::fs::File::open(&path).unwrap());
            let by_ranges = read_at(file, &path, u64::MAX);
            match (by_path, by_ranges) {
                (Ok(a), Ok(b)) => assert_eq!(
                    (a.object, a.format, a.attributes),
                    (b.object, b.format, b.attributes),
                    "{}",
                    path.display()
                ),
                (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{}: {a}; {b}", path.display()),
                (a, b) => panic!(
                    "{}: {:?} by path, {:?} by ranges",
                    path.display(),
                    a.err(),
                    b.err()
                ),
            }
            let len = std::fs::metadata(&path).unwrap().len();
            let failing = Arc::new(FailingFrom(std::fs::File::open(&path).unwrap(), len / 2));
            let e = read_at(failing, &path, u64::MAX).unwrap_err();
            assert!(
                e.to_string().contains("the request was refused"),
                "{}: {e}",
                path.display()
            );
        }
        assert!(files >= 20, "{files} golden HDF5 files");
    }
}
