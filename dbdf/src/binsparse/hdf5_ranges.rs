//! HDF5 files read by position from any [`ReadAt`] (a remote object's ranges), with no local
//! copy: a read-only HDF5 virtual file driver whose reads are the source's. The HDF5 library
//! opens files through drivers (`sec2` for local files); this one hands each of its reads to
//! the source, so the library reads a bucket as it reads a disk (GDAL's `/vsis3/` below its
//! HDF5 driver does the same).
//!
//! The driver's table (`H5FD_class_t`) is laid out as HDF5 1.10 declares it (the bindings'
//! own copy lacks a field); other versions are refused by name before it is registered.
//! No crate wraps a driver of one's own, so its calls and callbacks are made here.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CString};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use hdf5_metno as h5;
use hdf5_metno_sys::h5::{haddr_t, herr_t};
use hdf5_metno_sys::h5i::hid_t;
use serde_daphne::{Error, ReadAt, Result};

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

/// `H5FD_class_t` of HDF5 1.10 (`H5FDpublic.h`); callbacks left out are `None`.
#[repr(C)]
struct Class {
    name: *const c_char,
    maxaddr: haddr_t,
    fc_degree: c_int,
    terminate: Unused,
    sb_size: Unused,
    sb_encode: Unused,
    sb_decode: Unused,
    fapl_size: usize,
    fapl_get: Unused,
    fapl_copy: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    fapl_free: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    dxpl_size: usize,
    dxpl_copy: Unused,
    dxpl_free: Unused,
    open: Option<unsafe extern "C" fn(*const c_char, c_uint, hid_t, haddr_t) -> *mut c_void>,
    close: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    cmp: Option<unsafe extern "C" fn(*const c_void, *const c_void) -> c_int>,
    query: Option<unsafe extern "C" fn(*const c_void, *mut c_ulong) -> herr_t>,
    get_type_map: Unused,
    alloc: Unused,
    free: Unused,
    get_eoa: Option<unsafe extern "C" fn(*const c_void, c_int) -> haddr_t>,
    set_eoa: Option<unsafe extern "C" fn(*mut c_void, c_int, haddr_t) -> herr_t>,
    get_eof: Option<unsafe extern "C" fn(*const c_void, c_int) -> haddr_t>,
    get_handle: Unused,
    read: Option<ReadFn>,
    write: Option<WriteFn>,
    flush: Unused,
    truncate: Unused,
    lock: Unused,
    unlock: Unused,
    fl_map: [c_int; 7],
}

type Unused = Option<unsafe extern "C" fn()>;
type ReadFn =
    unsafe extern "C" fn(*mut c_void, c_int, hid_t, haddr_t, usize, *mut c_void) -> herr_t;
type WriteFn =
    unsafe extern "C" fn(*mut c_void, c_int, hid_t, haddr_t, usize, *const c_void) -> herr_t;

// SAFETY: the table holds a pointer to a static string and function pointers only.
unsafe impl Sync for Class {}

static CLASS: Class = Class {
    name: c"dbdf-ranges".as_ptr(),
    maxaddr: i64::MAX as haddr_t,
    fc_degree: 1, // H5F_CLOSE_WEAK, as `sec2`
    terminate: None,
    sb_size: None,
    sb_encode: None,
    sb_decode: None,
    fapl_size: std::mem::size_of::<Arc<Ranges>>(),
    fapl_get: None,
    fapl_copy: Some(fapl_copy),
    fapl_free: Some(fapl_free),
    dxpl_size: 0,
    dxpl_copy: None,
    dxpl_free: None,
    open: Some(open_file),
    close: Some(close),
    cmp: Some(cmp),
    query: Some(query),
    get_type_map: None,
    alloc: None,
    free: None,
    get_eoa: Some(get_eoa),
    set_eoa: Some(set_eoa),
    get_eof: Some(get_eof),
    get_handle: None,
    read: Some(read),
    write: Some(write),
    flush: None,
    truncate: None,
    lock: None,
    unlock: None,
    fl_map: [0; 7], // H5FD_FLMAP_DEFAULT
};

/// A file open through the driver: the library's public part first (`H5FD_t`, which it
/// fills in; room to spare), then the driver's own.
#[repr(C)]
struct OpenFile {
    public: [u64; 16],
    eoa: haddr_t,
    ranges: Arc<Ranges>,
}

/// The driver's id, registered once; an error for a library whose table differs.
fn driver() -> Result<hid_t> {
    static ID: OnceLock<std::result::Result<hid_t, String>> = OnceLock::new();
    let id = ID.get_or_init(|| {
        let (major, minor, patch) = h5::library_version();
        if (major, minor) != (1, 10) {
            return Err(format!(
                "reading HDF5 by ranges needs HDF5 1.10; this build links {major}.{minor}.{patch}"
            ));
        }
        // SAFETY: the table is laid out as this library version declares it, and static.
        let id = h5::sync::sync(|| unsafe {
            hdf5_metno_sys::h5fd::H5FDregister(std::ptr::from_ref(&CLASS).cast())
        });
        match id < 0 {
            true => Err("HDF5 refused the driver reading by ranges".into()),
            false => Ok(id),
        }
    });
    id.clone().map_err(Error::invalid)
}

/// Opens the HDF5 file `data` (named `name` in messages), read only, through the driver.
///
/// # Errors
/// A library whose driver table differs; the library's error opening it, or the first
/// error a read met.
pub(super) fn open(data: Arc<dyn ReadAt>, name: &Path) -> Result<(h5::File, Arc<Ranges>)> {
    let driver = driver()?;
    let ranges = Arc::new(Ranges {
        len: data.size()?,
        data,
        failed: Mutex::new(None),
    });
    let name = CString::new(name.to_string_lossy().into_owned()).unwrap_or_default();
    let id = h5::sync::sync(|| {
        use hdf5_metno_sys::{h5f, h5p};
        // SAFETY: the property list is made and closed here; the driver's information is
        // the `Arc` it copies (`fapl_copy`) and frees (`fapl_free`).
        unsafe {
            let fapl = h5p::H5Pcreate(*h5p::H5P_CLS_FILE_ACCESS);
            if fapl < 0 {
                return -1;
            }
            let info = std::ptr::from_ref(&ranges).cast::<c_void>();
            let id = match h5p::H5Pset_driver(fapl, driver, info) {
                0.. => h5f::H5Fopen(name.as_ptr(), h5f::H5F_ACC_RDONLY, fapl),
                _ => -1,
            };
            h5p::H5Pclose(fapl);
            id
        }
    });
    if id < 0 {
        if let Some(e) = ranges.take_error() {
            return Err(e.into());
        }
        return Err(Error::invalid("cannot open as HDF5"));
    }
    // SAFETY: `id` is a file the library just opened, handed over to its owner.
    let file = unsafe { h5::from_id::<h5::File>(id) };
    Ok((file.map_err(|e| Error::invalid(e.to_string()))?, ranges))
}

/// The driver's information copied: another handle on the same [`Ranges`].
unsafe extern "C" fn fapl_copy(info: *const c_void) -> *mut c_void {
    // SAFETY: the library passes the information it was given, an `Arc<Ranges>`.
    let ranges = unsafe { &*info.cast::<Arc<Ranges>>() };
    Box::into_raw(Box::new(Arc::clone(ranges))).cast()
}

unsafe extern "C" fn fapl_free(info: *mut c_void) -> herr_t {
    // SAFETY: `info` is a copy `fapl_copy` made, freed once.
    drop(unsafe { Box::from_raw(info.cast::<Arc<Ranges>>()) });
    0
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
    // SAFETY: the property list's driver information is a copy `fapl_copy` made.
    let info = unsafe { hdf5_metno_sys::h5p::H5Pget_driver_info(fapl) };
    if info.is_null() {
        return std::ptr::null_mut();
    }
    let ranges = Arc::clone(unsafe { &*info.cast::<Arc<Ranges>>() });
    let file = OpenFile {
        public: [0; 16],
        eoa: 0,
        ranges,
    };
    Box::into_raw(Box::new(file)).cast()
}

/// The file `open` made, as the library hands it back.
///
/// # Safety
/// `file` is a pointer `open` returned, not yet closed.
unsafe fn opened<'a>(file: *const c_void) -> &'a OpenFile {
    unsafe { &*file.cast::<OpenFile>() }
}

unsafe extern "C" fn close(file: *mut c_void) -> herr_t {
    // SAFETY: the library closes each file it opened once.
    drop(unsafe { Box::from_raw(file.cast::<OpenFile>()) });
    0
}

unsafe extern "C" fn cmp(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: both are files `open` returned.
    let (a, b) = unsafe { (opened(a), opened(b)) };
    c_int::from(!Arc::ptr_eq(&a.ranges, &b.ranges))
}

unsafe extern "C" fn query(_: *const c_void, flags: *mut c_ulong) -> herr_t {
    if !flags.is_null() {
        // SAFETY: the library passes room for the flags; reads need no feature.
        unsafe { *flags = 0 };
    }
    0
}

unsafe extern "C" fn get_eoa(file: *const c_void, _: c_int) -> haddr_t {
    // SAFETY: a file `open` returned.
    unsafe { opened(file) }.eoa
}

unsafe extern "C" fn set_eoa(file: *mut c_void, _: c_int, addr: haddr_t) -> herr_t {
    // SAFETY: a file `open` returned, which the library holds alone.
    unsafe { (*file.cast::<OpenFile>()).eoa = addr };
    0
}

unsafe extern "C" fn get_eof(file: *const c_void, _: c_int) -> haddr_t {
    // SAFETY: a file `open` returned.
    unsafe { opened(file) }.ranges.len
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
        (&opened(file).ranges, buf)
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

    use super::super::hdf5::{read, read_at};

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
