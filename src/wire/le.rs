//! Values as little-endian bytes: decoding runs of them (on every core for large runs),
//! writing them, reading one, counting the non-zero ones, and zeroed vectors. The element
//! trait's provided methods are the public face of these; the crate calls them directly.

use std::io::{self, Write};

use std::mem::MaybeUninit;

use crate::error::{Error, ErrorDetails, Result};

/// The plain-bytes types whose little-endian order can be restored: the ten element types.
pub(crate) trait LeValue: bytemuck::Pod + Send + SwapIfBigEndian {}
impl<T: bytemuck::Pod + Send + SwapIfBigEndian> LeValue for T {}

/// Byte order swapping for `Element::to_le`, written once for all ten types.
pub trait SwapIfBigEndian: Sized {
    /// The value with its bytes in little-endian order.
    fn swap_if_big_endian(self) -> Self;
}

macro_rules! impl_swap {
    ($($t:ty => $bits:ty),*) => {$(
        impl SwapIfBigEndian for $t {
            #[inline]
            fn swap_if_big_endian(self) -> Self {
                bytemuck::cast(<$bits>::to_le(bytemuck::cast::<$t, $bits>(self)))
            }
        }
    )*};
}
impl_swap!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, i8 => u8, i16 => u16, i32 => u32,
    i64 => u64, f32 => u32, f64 => u64);

/// `len` zeros, allocated fallibly and zeroed by the allocator: pages that stay zero (a
/// large matrix stored as empty blocks) are never touched.
pub fn zeroed_vec<T: bytemuck::Zeroable>(len: usize) -> Result<Vec<T>> {
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| {
        Error::from(ErrorDetails::OutOfMemory {
            bytes: (len as u128).saturating_mul(std::mem::size_of::<T>() as u128),
        })
    })
}

/// Appends the little-endian bytes of `src` to `out`: one copy on little-endian hosts.
pub(crate) fn extend_le<T: LeValue>(out: &mut Vec<u8>, src: &[T]) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(src));
    } else {
        out.reserve(std::mem::size_of_val(src));
        for &x in src {
            out.extend_from_slice(bytemuck::bytes_of(&x.swap_if_big_endian()));
        }
    }
}

/// Writes the little-endian bytes of `src`: one `write_all` on little-endian hosts.
pub(crate) fn write_le<T: LeValue, W: Write + ?Sized>(w: &mut W, src: &[T]) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        w.write_all(bytemuck::cast_slice(src))
    } else {
        let mut buf = Vec::with_capacity(64 * 1024);
        for chunk in src.chunks(64 * 1024 / std::mem::size_of::<T>().max(1)) {
            buf.clear();
            extend_le(&mut buf, chunk);
            w.write_all(&buf)?;
        }
        Ok(())
    }
}

/// Decodes little-endian values; `bytes.len()` must be a multiple of the element size.
///
/// One copy into a new vector that is never initialised first: a zeroed allocation would cost
/// an extra pass wherever the allocator reuses memory (every vector below glibc's mmap
/// threshold), about a third of the time of a 2 MiB read.
pub(crate) fn decode_le<T: LeValue>(bytes: &[u8]) -> Result<Vec<T>> {
    let mut v = copied_from_bytes::<T>(bytes)?;
    if cfg!(target_endian = "big") {
        v.iter_mut().for_each(|x| *x = x.swap_if_big_endian());
    }
    Ok(v)
}

/// `bytes` as values of `T` in host order, copied once into a new vector; `bytes.len()`
/// must be a multiple of the element size.
#[allow(unsafe_code)]
fn copied_from_bytes<T: bytemuck::Pod + Send>(bytes: &[u8]) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    assert_eq!(bytes.len() % size, 0, "whole values only");
    let n = bytes.len() / size;
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::from(ErrorDetails::OutOfMemory {
            bytes: bytes.len() as u128,
        })
    })?;
    let spare = &mut v.spare_capacity_mut()[..n];
    // SAFETY (both copies): `dst` is `src.len() / size` values of spare capacity, exactly
    // `src.len()` bytes, in a new allocation that cannot overlap `src`; `T: Pod`, so any bytes
    // are valid values, and `u8` has no alignment to violate.
    let copy = |dst: &mut [MaybeUninit<T>], src: &[u8]| unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<u8>(), src.len());
    };
    let parallel = bytes.len() >= COPY_IN_PARALLEL_FROM;
    crate::pages::fill_fresh(spare, parallel, |start, dst| {
        copy(dst, &bytes[start * size..][..dst.len() * size]);
    });
    // SAFETY: the copies above wrote all `n` values (the chunks of `spare` cover it).
    unsafe {
        v.set_len(n);
    }
    Ok(v)
}

/// Copies of at least this many bytes into new memory run on every core.
const COPY_IN_PARALLEL_FROM: usize = 16 << 20;

/// Reads one little-endian value from the start of `bytes` (which must be long enough).
#[inline]
pub(crate) fn read_le<T: LeValue>(bytes: &[u8]) -> T {
    bytemuck::pod_read_unaligned::<T>(&bytes[..std::mem::size_of::<T>()]).swap_if_big_endian()
}

/// How many of `values` are not zero (not all bits zero). Counted on the raw bits with
/// shifts and adds that vectorise on every x86-64, since zero means all bits zero.
pub(crate) fn count_nonzero<T: bytemuck::Pod>(values: &[T]) -> usize {
    macro_rules! count {
        ($u:ty) => {{
            let words: &[$u] = bytemuck::cast_slice(values);
            let mut n = 0usize;
            for piece in words.chunks(1 << 12) {
                let mut lane: u32 = 0;
                for &w in piece {
                    lane += ((w | w.wrapping_neg()) >> (<$u>::BITS - 1)) as u32;
                }
                n += lane as usize;
            }
            n
        }};
    }
    match std::mem::size_of::<T>() {
        1 => count!(u8),
        2 => count!(u16),
        4 => count!(u32),
        _ => count!(u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy large enough to be split between threads, of an odd number of values, lands
    /// whole and in order.
    #[test]
    fn large_decodes_split_between_threads_keep_every_value() {
        let n = (COPY_IN_PARALLEL_FROM / 8) * 3 + 7;
        let bytes: Vec<u8> = (0..n as u64)
            .flat_map(|i| (i * 3 + 1).to_le_bytes())
            .collect();
        let values: Vec<u64> = decode_le(&bytes).unwrap();
        assert_eq!(values.len(), n);
        assert!(values
            .iter()
            .enumerate()
            .all(|(i, &x)| x == i as u64 * 3 + 1));
        let mut zeros = zeroed_vec::<u32>(n).unwrap();
        crate::pages::fault_in_on_every_core(&mut zeros);
        assert!(zeros.iter().all(|&x| x == 0));
    }
}
