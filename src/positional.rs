//! Vectored positional reads of local files (`preadv`), where one system call fills many
//! buffers from consecutive bytes of a file (reads of any source on every core are in
//! `wire/read_at.rs`). Neither moves the file's offset,
//! so threads and other readers can share one handle.
//! Used to read a tile's rows straight into their places in an array: a read into a scratch
//! buffer and a copy out of it made tiled file reads much slower than untiled ones.

use std::fs::File;
use std::io::{self, IoSliceMut};

/// At most this many buffers per call (Linux's `IOV_MAX`).
pub(crate) const MAX_BUFFERS: usize = 1024;

/// Fills `bufs` (at most [`MAX_BUFFERS`]), in order, from the bytes of `file` at `offset`.
///
/// # Errors
/// I/O errors; `UnexpectedEof` if the file ends first.
pub(crate) fn read_exact_vectored_at(
    file: &File,
    mut bufs: &mut [IoSliceMut<'_>],
    mut offset: u64,
) -> io::Result<()> {
    debug_assert!(bufs.len() <= MAX_BUFFERS);
    IoSliceMut::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        let got = preadv(file, bufs, offset)?;
        if got == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        IoSliceMut::advance_slices(&mut bufs, got);
        offset += got as u64;
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn preadv(file: &File, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    if crate::platform::portable() {
        return pread_first(file, bufs, offset);
    }
    let offset = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    loop {
        // SAFETY: `IoSliceMut` is guaranteed ABI-compatible with `iovec` on Unix, and each
        // one describes a live, exclusively borrowed buffer for the duration of the call;
        // the count is the slice's length (at most IOV_MAX, checked by the kernel); the file
        // descriptor is open for as long as `file` is borrowed.
        #[allow(unsafe_code)]
        let got = unsafe {
            libc::preadv(
                file.as_raw_fd(),
                bufs.as_mut_ptr().cast::<libc::iovec>(),
                bufs.len() as libc::c_int,
                offset,
            )
        };
        if got >= 0 {
            return Ok(got as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Elsewhere: one positional read per buffer.
#[cfg(all(unix, not(target_os = "linux")))]
fn preadv(file: &File, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<usize> {
    pread_first(file, bufs, offset)
}

/// One positional read into the first buffer: `preadv`'s stand-in outside Linux (and on
/// Linux under `SERDE_DAPHNE_PORTABLE`, so that the tests run it).
fn pread_first(file: &File, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(&mut bufs[0], offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_fill_in_order_from_the_offset_and_the_end_is_an_error() {
        let path = std::env::temp_dir().join(format!("serde_daphne_preadv_{}", std::process::id()));
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let (mut a, mut b, mut c) = ([0u8; 3], vec![0u8; 5000], [0u8; 0]);
        let mut bufs = [
            IoSliceMut::new(&mut a),
            IoSliceMut::new(&mut c),
            IoSliceMut::new(&mut b),
        ];
        read_exact_vectored_at(&file, &mut bufs, 7).unwrap();
        assert_eq!(&a, &bytes[7..10]);
        assert_eq!(&b[..], &bytes[10..5010]);
        // A positional cursor reads and seeks on its own; the handle's offset stays put.
        use std::io::{Read, Seek, SeekFrom};
        let mut at = crate::wire::read_at::Positional::new(&file, bytes.len() as u64);
        at.seek(SeekFrom::End(-4)).unwrap();
        let mut tail = Vec::new();
        at.read_to_end(&mut tail).unwrap();
        assert_eq!(&tail[..], &bytes[bytes.len() - 4..]);
        let mut first = [0u8; 2];
        (&file).read_exact(&mut first).unwrap();
        assert_eq!(&first, &bytes[..2]);
        let mut long = vec![0u8; 6000];
        let err = read_exact_vectored_at(&file, &mut [IoSliceMut::new(&mut long)], 5000);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        std::fs::remove_file(&path).unwrap();
    }
}
