//! Zarr's bytes-to-bytes codecs: zstd, gzip, zlib (Zarr v2), blosc and crc32c. Decoding is
//! bounded: no codec produces more than the chunk's size justifies, whatever its input says.

use std::io::Read;

use super::ZARR;
use serde_daphne::Result;

/// One bytes-to-bytes codec of an array's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Codec {
    /// Zstandard frames (zarr-python's default compressor).
    Zstd,
    /// A gzip stream (RFC 1952).
    Gzip,
    /// A zlib stream (RFC 1950), numcodecs' `zlib` in Zarr v2.
    Zlib,
    /// A c-blosc 1 frame (shuffle and inner compressor told by its header).
    Blosc,
    /// A CRC-32C of the bytes, appended as 4 little-endian bytes.
    Crc32c,
}

impl Codec {
    /// The codec a Zarr v3 `name` (or a Zarr v2 compressor `id`) names.
    pub(super) fn named(name: &str, v2: bool) -> Option<Codec> {
        Some(match name {
            "zstd" => Codec::Zstd,
            "gzip" => Codec::Gzip,
            "zlib" if v2 => Codec::Zlib,
            "blosc" => Codec::Blosc,
            "crc32c" => Codec::Crc32c,
            _ => return None,
        })
    }

    /// Undoes this codec on `input`, producing at most `limit` bytes; `key` names the chunk
    /// in errors.
    pub(super) fn decode(self, input: &[u8], limit: usize, key: &str) -> Result<Vec<u8>> {
        let fail = |e: &dyn std::fmt::Display| ZARR.error(format!("{key}: {self:?}: {e}"));
        Ok(match self {
            Codec::Zstd => zstd::stream::read::Decoder::with_buffer(input)
                .and_then(|decoder| bounded(decoder, limit))
                .map_err(|e| fail(&e))?,
            Codec::Gzip => {
                bounded(flate2::read::MultiGzDecoder::new(input), limit).map_err(|e| fail(&e))?
            }
            Codec::Zlib => {
                bounded(flate2::read::ZlibDecoder::new(input), limit).map_err(|e| fail(&e))?
            }
            Codec::Blosc => blosc::decompress(input, limit).map_err(|e| fail(&e))?,
            Codec::Crc32c => {
                let Some(split) = input.len().checked_sub(4) else {
                    return Err(fail(&"shorter than its 4-byte checksum"));
                };
                let (data, stored) = input.split_at(split);
                let stored = u32::from_le_bytes(stored.try_into().expect("4 bytes"));
                let computed = crc32c::crc32c(data);
                if stored != computed {
                    return Err(fail(&format_args!(
                        "checksum {stored:#010x} stored, {computed:#010x} computed (the chunk \
                         is damaged)"
                    )));
                }
                data.to_vec()
            }
        })
    }
}

/// Compresses a chunk as the crate writes it: zstd at its default level (zarr-python's
/// `level: 0`), the only codec written.
pub(super) fn compress(chunk: &[u8]) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(chunk, 0)
}

/// Reads all of `decoder` into a vector, failing past `limit` bytes.
fn bounded(decoder: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    decoder.take(limit as u64 + 1).read_to_end(&mut out)?;
    if out.len() > limit {
        return Err(std::io::Error::other(format!(
            "decodes to more than the {limit} bytes the chunk holds"
        )));
    }
    Ok(out)
}

/// c-blosc 1, through the library numcodecs and zarrs use (no maintained crate wraps it
/// safely, so the two calls are made here).
#[allow(unsafe_code)]
mod blosc {
    use std::ffi::c_void;

    /// Decompresses one blosc frame of at most `limit` bytes.
    pub(super) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
        let mut size = 0usize;
        // SAFETY: the pointer and length describe `input`, which blosc_cbuffer_validate
        // only reads within; `size` is a valid place for its output.
        let valid = unsafe {
            blosc_src::blosc_cbuffer_validate(input.as_ptr().cast(), input.len(), &mut size)
        };
        if valid != 0 {
            return Err(format!(
                "not a blosc frame of {} bytes (its header disagrees)",
                input.len()
            ));
        }
        if size > limit {
            return Err(format!(
                "decompresses to {size} bytes, more than the {limit} the chunk holds"
            ));
        }
        let mut out = vec![0u8; size];
        // SAFETY: blosc_cbuffer_validate accepted `input` as one frame of exactly its length,
        // which is what makes decompressing it safe (c-blosc's contract), and `out` has
        // room for the `size` bytes the frame holds.
        let written = unsafe {
            blosc_src::blosc_decompress_ctx(
                input.as_ptr().cast(),
                out.as_mut_ptr().cast::<c_void>(),
                out.len(),
                1,
            )
        };
        if usize::try_from(written).ok() != Some(size) {
            return Err(format!(
                "the blosc frame is damaged (c-blosc error {written})"
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_refuses_more_than_the_chunk_holds() {
        let data = vec![7u8; 1000];
        let zstd = compress(&data).unwrap();
        assert_eq!(Codec::Zstd.decode(&zstd, 1000, "c/0").unwrap(), data);
        let e = Codec::Zstd.decode(&zstd, 999, "c/0").unwrap_err();
        assert!(e.to_string().contains("c/0"), "{e}");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &data).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(Codec::Gzip.decode(&gz, 1000, "k").unwrap(), data);
        assert!(Codec::Gzip.decode(&gz, 10, "k").is_err());
    }

    /// `data` followed by its CRC-32C, as the crc32c codec stores it.
    fn with_crc(data: &[u8]) -> Vec<u8> {
        [data, &crc32c::crc32c(data).to_le_bytes()].concat()
    }

    #[test]
    fn a_damaged_checksum_is_named() {
        let mut framed = with_crc(b"abc");
        assert_eq!(Codec::Crc32c.decode(&framed, 16, "k").unwrap(), b"abc");
        // The CRC-32C check value of "123456789" is 0xE3069283 (RFC 3720).
        let check = with_crc(b"123456789");
        assert_eq!(check[9..], 0xE306_9283u32.to_le_bytes());
        framed[0] ^= 1;
        let e = Codec::Crc32c.decode(&framed, 16, "values/c/0").unwrap_err();
        assert!(e.to_string().contains("damaged"), "{e}");
        assert!(Codec::Crc32c.decode(b"ab", 16, "k").is_err());
    }

    #[test]
    fn blosc_refuses_frames_that_lie() {
        for bad in [
            &b""[..],
            &[2u8, 1, 0, 8, 255, 255, 255, 127, 0, 0, 0, 0, 16, 0, 0, 0][..],
        ] {
            assert!(Codec::Blosc.decode(bad, 1 << 20, "k").is_err());
        }
    }
}
