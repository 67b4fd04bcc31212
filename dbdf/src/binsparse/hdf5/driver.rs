//! What HDF5 virtual file drivers of our own share: the driver table (`H5FD_class_t`), laid
//! out as HDF5 1.10 declares it (the bindings' own copy lacks a field; other versions are
//! refused by name before a driver is registered), the file the library hands back, and the
//! callbacks every driver has alike. No crate wraps a driver of one's own, so its calls and
//! callbacks are made here and in the drivers (`ranges.rs` reads, `stream.rs` writes).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr, CString};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use hdf5_metno as h5;
use hdf5_metno_sys::h5::{haddr_t, herr_t, hsize_t};
use hdf5_metno_sys::h5i::hid_t;
use serde_daphne::{Error, Result};

/// `H5FD_class_t` of HDF5 1.10 (`H5FDpublic.h`); callbacks left out are `None`.
#[repr(C)]
pub(super) struct Class {
    pub name: *const c_char,
    pub maxaddr: haddr_t,
    pub fc_degree: c_int,
    pub terminate: Unused,
    pub sb_size: Unused,
    pub sb_encode: Unused,
    pub sb_decode: Unused,
    pub fapl_size: usize,
    pub fapl_get: Unused,
    pub fapl_copy: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    pub fapl_free: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    pub dxpl_size: usize,
    pub dxpl_copy: Unused,
    pub dxpl_free: Unused,
    pub open: Option<unsafe extern "C" fn(*const c_char, c_uint, hid_t, haddr_t) -> *mut c_void>,
    pub close: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    pub cmp: Option<unsafe extern "C" fn(*const c_void, *const c_void) -> c_int>,
    pub query: Option<unsafe extern "C" fn(*const c_void, *mut c_ulong) -> herr_t>,
    pub get_type_map: Unused,
    pub alloc: Option<unsafe extern "C" fn(*mut c_void, c_int, hid_t, hsize_t) -> haddr_t>,
    pub free: Unused,
    pub get_eoa: Option<unsafe extern "C" fn(*const c_void, c_int) -> haddr_t>,
    pub set_eoa: Option<unsafe extern "C" fn(*mut c_void, c_int, haddr_t) -> herr_t>,
    pub get_eof: Option<unsafe extern "C" fn(*const c_void, c_int) -> haddr_t>,
    pub get_handle: Unused,
    pub read: Option<ReadFn>,
    pub write: Option<WriteFn>,
    pub flush: Unused,
    pub truncate: Unused,
    pub lock: Unused,
    pub unlock: Unused,
    pub fl_map: [c_int; 7],
}

pub(super) type Unused = Option<unsafe extern "C" fn()>;
pub(super) type ReadFn =
    unsafe extern "C" fn(*mut c_void, c_int, hid_t, haddr_t, usize, *mut c_void) -> herr_t;
pub(super) type WriteFn =
    unsafe extern "C" fn(*mut c_void, c_int, hid_t, haddr_t, usize, *const c_void) -> herr_t;

// SAFETY: a table holds a pointer to a static string and function pointers only.
unsafe impl Sync for Class {}

impl Class {
    /// The table of a driver named `name` whose files share a `T`: the callbacks every
    /// driver has alike set (`OpenFile<T>`'s), the others `None`, for a driver to set.
    pub(super) const fn of<T>(name: &'static CStr) -> Class {
        Class {
            name: name.as_ptr(),
            maxaddr: i64::MAX as haddr_t,
            fc_degree: 1, // H5F_CLOSE_WEAK, as `sec2`
            terminate: None,
            sb_size: None,
            sb_encode: None,
            sb_decode: None,
            fapl_size: std::mem::size_of::<Arc<T>>(),
            fapl_get: None,
            fapl_copy: Some(fapl_copy::<T>),
            fapl_free: Some(fapl_free::<T>),
            dxpl_size: 0,
            dxpl_copy: None,
            dxpl_free: None,
            open: None,
            close: Some(close::<T>),
            cmp: Some(cmp::<T>),
            query: Some(query),
            get_type_map: None,
            alloc: None,
            free: None,
            get_eoa: None,
            set_eoa: None,
            get_eof: None,
            get_handle: None,
            read: None,
            write: None,
            flush: None,
            truncate: None,
            lock: None,
            unlock: None,
            fl_map: [0; 7], // H5FD_FLMAP_DEFAULT
        }
    }
}

/// A file open through a driver: the library's public part first (`H5FD_t`, which it fills
/// in; room to spare), then the driver's own, `T` (shared with the caller).
#[repr(C)]
pub(super) struct OpenFile<T> {
    public: [u64; 16],
    pub eoa: haddr_t,
    pub info: Arc<T>,
}

/// Registers `class` once (its id kept in `id`); an error for a library whose table
/// differs, naming `what` the driver does.
pub(super) fn register(
    id: &'static OnceLock<std::result::Result<hid_t, String>>,
    class: &'static Class,
    what: &str,
) -> Result<hid_t> {
    let id = id.get_or_init(|| {
        let (major, minor, patch) = h5::library_version();
        if (major, minor) != (1, 10) {
            return Err(format!(
                "{what} needs HDF5 1.10; this build links {major}.{minor}.{patch}"
            ));
        }
        // SAFETY: the table is laid out as this library version declares it, and static.
        let id = h5::sync::sync(|| unsafe {
            hdf5_metno_sys::h5fd::H5FDregister(std::ptr::from_ref(class).cast())
        });
        match id < 0 {
            true => Err(format!("HDF5 refused the driver for {what}")),
            false => Ok(id),
        }
    });
    id.clone().map_err(Error::invalid)
}

/// Opens (or creates) the file `name` through `driver`, whose files share `info`: `open`
/// is `H5Fopen` or `H5Fcreate` given the name and the access property list. `None` when
/// the library refused.
pub(super) fn open_with<T>(
    driver: hid_t,
    info: &Arc<T>,
    name: &Path,
    open: impl FnOnce(*const c_char, hid_t) -> hid_t,
) -> Option<h5::File> {
    let name = CString::new(name.to_string_lossy().into_owned()).unwrap_or_default();
    let id = h5::sync::sync(|| {
        use hdf5_metno_sys::h5p;
        // SAFETY: the property list is made and closed here; the driver's information is
        // the `Arc` it copies (`fapl_copy`) and frees (`fapl_free`).
        unsafe {
            let fapl = h5p::H5Pcreate(*h5p::H5P_CLS_FILE_ACCESS);
            if fapl < 0 {
                return -1;
            }
            let info = std::ptr::from_ref(info).cast::<c_void>();
            let id = match h5p::H5Pset_driver(fapl, driver, info) {
                0.. => open(name.as_ptr(), fapl),
                _ => -1,
            };
            h5p::H5Pclose(fapl);
            id
        }
    });
    if id < 0 {
        return None;
    }
    // SAFETY: `id` is a file the library just opened, handed over to its owner.
    unsafe { h5::from_id::<h5::File>(id) }.ok()
}

/// The driver's information copied: another handle on the same `T`.
unsafe extern "C" fn fapl_copy<T>(info: *const c_void) -> *mut c_void {
    // SAFETY: the library passes the information it was given, an `Arc<T>`.
    let info = unsafe { &*info.cast::<Arc<T>>() };
    Box::into_raw(Box::new(Arc::clone(info))).cast()
}

unsafe extern "C" fn fapl_free<T>(info: *mut c_void) -> herr_t {
    // SAFETY: `info` is a copy `fapl_copy` made, freed once.
    drop(unsafe { Box::from_raw(info.cast::<Arc<T>>()) });
    0
}

/// A new file on the information of the access property list `fapl`; null without it.
///
/// # Safety
/// `fapl` is the property list the library opens the file with, whose driver is one whose
/// information is an `Arc<T>`.
pub(super) unsafe fn new_file<T>(fapl: hid_t) -> *mut c_void {
    // SAFETY: the property list's driver information is a copy `fapl_copy` made.
    let info = unsafe { hdf5_metno_sys::h5p::H5Pget_driver_info(fapl) };
    if info.is_null() {
        return std::ptr::null_mut();
    }
    let info = Arc::clone(unsafe { &*info.cast::<Arc<T>>() });
    let file = OpenFile {
        public: [0; 16],
        eoa: 0,
        info,
    };
    Box::into_raw(Box::new(file)).cast()
}

/// The file `open` made, as the library hands it back.
///
/// # Safety
/// `file` is a pointer `new_file::<T>` returned, not yet closed.
pub(super) unsafe fn opened<'a, T>(file: *const c_void) -> &'a OpenFile<T> {
    unsafe { &*file.cast::<OpenFile<T>>() }
}

unsafe extern "C" fn close<T>(file: *mut c_void) -> herr_t {
    // SAFETY: the library closes each file it opened once.
    drop(unsafe { Box::from_raw(file.cast::<OpenFile<T>>()) });
    0
}

unsafe extern "C" fn cmp<T>(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: both are files `open` returned.
    let (a, b) = unsafe { (opened::<T>(a), opened::<T>(b)) };
    c_int::from(!Arc::ptr_eq(&a.info, &b.info))
}

/// No feature flags: no aggregation of small blocks, no accumulated metadata.
unsafe extern "C" fn query(_: *const c_void, flags: *mut c_ulong) -> herr_t {
    if !flags.is_null() {
        // SAFETY: the library passes room for the flags.
        unsafe { *flags = 0 };
    }
    0
}
