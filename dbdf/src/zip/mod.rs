//! The part of the zip format NumPy's `.npz` files use: stored members (`numpy.savez`) and,
//! on reading, deflated ones (`numpy.savez_compressed`), with zip64 sizes and offsets where
//! they pass 4 GiB.

use std::borrow::Cow;
use std::io::Write;
use std::sync::Arc;

use crate::input::{le_at, Foreign};

mod members;
pub(crate) use members::{Inflating, StoredArray};
use serde_daphne::lowlevel::check_alloc;
use serde_daphne::{ReadAt, Result};

const ZIP: Foreign = Foreign("NPZ (zip)");

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
const END64: u32 = 0x0606_4b50;
const END64_LOCATOR: u32 = 0x0706_4b50;
const ZIP64_EXTRA: u16 = 0x0001;
/// 1980-01-01 00:00, the earliest DOS date: the output does not depend on the clock.
const DOS_DATE: u16 = (1 << 5) | 1;

/// One member of an archive: its name and its bytes.
#[derive(Debug)]
pub(crate) struct Member<'a> {
    pub(crate) name: String,
    /// Borrowed from the archive when stored, inflated when deflated.
    pub(crate) data: Cow<'a, [u8]>,
    /// Offset of `data` in the archive (`None` when it was inflated).
    pub(crate) offset: Option<usize>,
}

/// Bytes of an archive, read at any offset: in memory, or from a file.
pub(crate) trait Archive {
    /// The archive's length.
    fn len(&self) -> usize;
    /// `len` bytes at `at`, or `None` past the end.
    fn read(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>>;
}

impl Archive for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn read(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        self.get(at..at.checked_add(len)?).map(Cow::Borrowed)
    }
}

/// An archive in a file or an object, its last 64 KiB (where the end records are) held, the
/// rest read at positions when asked for.
pub(crate) struct FileArchive {
    pub(crate) file: Arc<dyn ReadAt>,
    len: usize,
    tail: Vec<u8>,
    tail_at: usize,
}

impl FileArchive {
    /// Opens the archive at `path`.
    ///
    /// # Errors
    /// I/O errors.
    pub(crate) fn open(path: &std::path::Path) -> Result<FileArchive> {
        FileArchive::open_at(Arc::new(std::fs::File::open(path)?))
    }

    /// The archive read through `file` (an object's ranges): its end, in one read.
    ///
    /// # Errors
    /// I/O and request errors.
    pub(crate) fn open_at(file: Arc<dyn ReadAt>) -> Result<FileArchive> {
        let len = usize::try_from(file.size()?)
            .map_err(|_| ZIP.error("the archive is larger than this machine's address space"))?;
        let tail_at = len.saturating_sub(22 + 65_535 + 20);
        let mut tail = vec![0; len - tail_at];
        file.read_exact_at(&mut tail, tail_at as u64)?;
        Ok(FileArchive {
            file,
            len,
            tail,
            tail_at,
        })
    }
}

impl Archive for FileArchive {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        let end = at.checked_add(len).filter(|&end| end <= self.len)?;
        if at >= self.tail_at {
            return Some(Cow::Borrowed(
                &self.tail[at - self.tail_at..end - self.tail_at],
            ));
        }
        let mut bytes = vec![0; len];
        self.file.read_exact_at(&mut bytes, at as u64).ok()?;
        Some(Cow::Owned(bytes))
    }
}

/// The little-endian number at `at` of an archive.
fn le<T: serde_daphne::Element>(archive: &(impl Archive + ?Sized), at: usize) -> Option<T> {
    le_at(&archive.read(at, std::mem::size_of::<T>())?, 0)
}

/// A member as the central directory gives it, its local header checked.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    /// 0 stored, 8 deflated.
    pub(crate) method: u16,
    pub(crate) crc: u32,
    /// Bytes in the archive.
    pub(crate) compressed: u64,
    /// Bytes of the member's data.
    pub(crate) size: u64,
    /// Where its bytes start in the archive.
    pub(crate) start: usize,
}

/// The members of an archive as its central directory lists them (names, methods, sizes,
/// where each starts), without reading their bytes.
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] with the offset of what is malformed.
pub(crate) fn entries(bytes: &(impl Archive + ?Sized)) -> Result<Vec<Entry>> {
    let len = bytes.len();
    let truncated = |at: usize| ZIP.at(at, "the archive ends inside a record (truncated?)");
    // The end record is in the last 64 KiB + 22 bytes (its comment is at most 65535 bytes).
    let search_from = len.saturating_sub(22 + 65_535);
    let end = (search_from..len.saturating_sub(21))
        .rev()
        .find(|&at| le::<u32>(bytes, at) == Some(END))
        .ok_or_else(|| ZIP.at(len, "not a zip archive (no end of central directory)"))?;
    let mut count = u64::from(le::<u16>(bytes, end + 10).ok_or_else(|| truncated(end))?);
    let mut directory = u64::from(le::<u32>(bytes, end + 16).ok_or_else(|| truncated(end))?);
    if end >= 20 && le::<u32>(bytes, end - 20) == Some(END64_LOCATOR) {
        let at = le::<u64>(bytes, end - 12).ok_or_else(|| truncated(end - 20))?;
        let at = usize::try_from(at)
            .ok()
            .filter(|&at| le::<u32>(bytes, at) == Some(END64))
            .ok_or_else(|| {
                ZIP.at(
                    end - 20,
                    "the zip64 end record is not where its locator says",
                )
            })?;
        count = le::<u64>(bytes, at + 32).ok_or_else(|| truncated(at))?;
        directory = le::<u64>(bytes, at + 48).ok_or_else(|| truncated(at))?;
    }
    let mut at = usize::try_from(directory)
        .ok()
        .filter(|&d| d <= end)
        .ok_or_else(|| ZIP.at(end, "the central directory starts past the end record"))?;
    // Each central record takes at least 46 bytes: the count cannot claim more than fit.
    if count > ((end - at) / 46) as u64 {
        return Err(ZIP.at(
            end,
            format!("{count} members cannot fit the central directory"),
        ));
    }
    let directory = bytes.read(at, end - at).ok_or_else(|| truncated(at))?;
    let base = at;
    let mut entries = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let rel = at - base;
        let bytes_at = |off: usize, n: usize| directory.get(rel + off..rel + off + n);
        if le_at::<u32>(&directory, rel) != Some(CENTRAL) {
            return Err(ZIP.at(at, "expected a central directory record"));
        }
        let field16 = |off: usize| le_at::<u16>(&directory, rel + off).ok_or_else(|| truncated(at));
        let field32 = |off: usize| le_at::<u32>(&directory, rel + off).ok_or_else(|| truncated(at));
        let method = field16(10)?;
        let crc = field32(16)?;
        let mut compressed = u64::from(field32(20)?);
        let mut size = u64::from(field32(24)?);
        let (name_len, extra_len, comment_len) = (
            field16(28)? as usize,
            field16(30)? as usize,
            field16(32)? as usize,
        );
        let mut local = u64::from(field32(42)?);
        let name = bytes_at(46, name_len).ok_or_else(|| truncated(at))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let extra = bytes_at(46 + name_len, extra_len).ok_or_else(|| truncated(at))?;
        read_zip64_extra(extra, &mut [&mut size, &mut compressed, &mut local]);
        if method != 0 && method != 8 {
            return Err(ZIP.at(
                at,
                format!(
                    "the member {name:?} uses compression method {method}; only stored (0) and \
                     deflated (8) members are read"
                ),
            ));
        }
        if method == 0 && compressed != size {
            return Err(ZIP.at(at, format!("the stored member {name:?} has two sizes")));
        }
        let local = usize::try_from(local).map_err(|_| truncated(at))?;
        if le::<u32>(bytes, local) != Some(LOCAL) {
            return Err(ZIP.at(local, format!("no local header for {name:?} here")));
        }
        let skip = 30
            + le::<u16>(bytes, local + 26).ok_or_else(|| truncated(local))? as usize
            + le::<u16>(bytes, local + 28).ok_or_else(|| truncated(local))? as usize;
        let start = local + skip;
        let inside = usize::try_from(compressed)
            .ok()
            .and_then(|n| start.checked_add(n))
            .is_some_and(|end| end <= len);
        if !inside {
            return Err(ZIP.at(start, format!("the member {name:?} runs past the end")));
        }
        entries.push(Entry {
            name,
            method,
            crc,
            compressed,
            size,
            start,
        });
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(entries)
}

/// The members of a zip archive, each checked against its CRC-32. A deflated member may
/// inflate to at most the archive's size plus `max_alloc` bytes.
pub(crate) fn members(bytes: &[u8], max_alloc: u64) -> Result<Vec<Member<'_>>> {
    let mut members = Vec::new();
    for entry in entries(bytes)? {
        let (start, compressed) = (entry.start, entry.compressed);
        let stored = &bytes[start..start + compressed as usize];
        let (data, offset) = if entry.method == 0 {
            if crc32fast::hash(stored) != entry.crc {
                return Err(crc_error(&entry.name, start));
            }
            (Cow::Borrowed(stored), Some(start))
        } else {
            let limit = (bytes.len() as u64, max_alloc);
            (Cow::Owned(inflate(&entry, stored, limit)?), None)
        };
        members.push(Member {
            name: entry.name,
            data,
            offset,
        });
    }
    Ok(members)
}

/// A deflated member's bytes from its `stored` ones, checked against its size and CRC-32;
/// it may inflate to at most the archive's length plus `max_alloc` bytes.
pub(crate) fn inflate(
    entry: &Entry,
    stored: &[u8],
    (archive_len, max_alloc): (u64, u64),
) -> Result<Vec<u8>> {
    let (name, start, size) = (&entry.name, entry.start, entry.size);
    // Inflated only up to the size the directory declares, itself bounded by what the
    // archive justifies.
    check_alloc(start as u64, u128::from(size), archive_len, max_alloc)?;
    let inflated = miniz_oxide::inflate::decompress_to_vec_with_limit(stored, size as usize)
        .map_err(|e| {
            ZIP.at(
                start,
                format!("the member {name:?} does not inflate ({:?})", e.status),
            )
        })?;
    if inflated.len() as u64 != size {
        return Err(ZIP.at(
            start,
            format!(
                "the member {name:?} inflates to {} bytes, not {size}",
                inflated.len()
            ),
        ));
    }
    if crc32fast::hash(&inflated) != entry.crc {
        return Err(crc_error(name, start));
    }
    Ok(inflated)
}

/// Checks a stored member's CRC-32, reading it from `file` in order, 4 MiB at a time (a
/// remote one read ahead).
pub(crate) fn check_stored_crc(file: &Arc<dyn ReadAt>, entry: &Entry) -> Result<()> {
    use std::io::Read;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; (4 << 20).min(entry.size as usize)];
    let start = entry.start as u64;
    let mut member = crate::storage::Stream::new(Arc::clone(file), start..start + entry.size)?;
    let mut left = entry.size;
    while left > 0 {
        let n = buf.len().min(left as usize);
        member.read_exact(&mut buf[..n])?;
        crc.update(&buf[..n]);
        left -= n as u64;
    }
    match crc.finalize() == entry.crc {
        true => Ok(()),
        false => Err(crc_error(&entry.name, entry.start)),
    }
}

/// A member whose bytes fail its CRC-32.
pub(crate) fn crc_error(name: &str, start: usize) -> serde_daphne::Error {
    ZIP.at(start, format!("the member {name:?} fails its CRC-32 check"))
}

/// Replaces each field that is `0xFFFFFFFF` by the next value of the zip64 extra field, in
/// the order the format gives (size, compressed size, offset).
fn read_zip64_extra(mut extra: &[u8], fields: &mut [&mut u64]) {
    while extra.len() >= 4 {
        let id = u16::from_le_bytes([extra[0], extra[1]]);
        let len = usize::from(u16::from_le_bytes([extra[2], extra[3]]));
        let body = &extra[4..(4 + len).min(extra.len())];
        if id == ZIP64_EXTRA {
            let mut values = body
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()));
            for field in fields.iter_mut().filter(|f| ***f == 0xFFFF_FFFF) {
                if let Some(v) = values.next() {
                    **field = v;
                }
            }
            return;
        }
        extra = &extra[(4 + len).min(extra.len())..];
    }
}

/// A writer counting the bytes it passes on.
struct Counted<'w, W> {
    inner: &'w mut W,
    written: u64,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(bytes)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a zip archive of stored members, as they come.
pub(crate) struct ZipWriter<W: Write> {
    writer: W,
    written: u64,
    directory: Vec<u8>,
    count: u64,
}

impl<W: Write> ZipWriter<W> {
    pub(crate) fn new(writer: W) -> Self {
        ZipWriter {
            writer,
            written: 0,
            directory: Vec::new(),
            count: 0,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Adds a member made of `parts`, one after another.
    pub(crate) fn member(&mut self, name: &str, parts: &[&[u8]]) -> Result<()> {
        let size: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let mut hasher = crc32fast::Hasher::new();
        parts.iter().for_each(|p| hasher.update(p));
        self.member_with(name, size, hasher.finalize(), |w| {
            parts.iter().try_for_each(|p| w.write_all(p))
        })
    }

    /// Adds a member of `size` bytes whose CRC-32 is `crc`, its bytes written by `data`
    /// (which must write exactly `size` bytes: a member streamed from elsewhere).
    pub(crate) fn member_with(
        &mut self,
        name: &str,
        size: u64,
        crc: u32,
        data: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.entry(name, (size, size, 0), crc, data)
    }

    /// Adds a member of `bytes`, deflated (as `numpy.savez_compressed` writes them).
    pub(crate) fn deflated(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let packed = miniz_oxide::deflate::compress_to_vec(bytes, 6);
        let sizes = (bytes.len() as u64, packed.len() as u64, 8);
        self.entry(name, sizes, crc32fast::hash(bytes), |w| {
            w.write_all(&packed)
        })
    }

    /// Adds a member of `size` bytes, `stored` bytes in the archive by `method` (0 stored,
    /// 8 deflated), written by `data`.
    fn entry(
        &mut self,
        name: &str,
        (size, stored, method): (u64, u64, u16),
        crc: u32,
        data: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let offset = self.written;
        let big = size.max(stored) >= 0xFFFF_FFFF;
        let mut local = Vec::with_capacity(30 + name.len() + 20);
        local.extend_from_slice(&LOCAL.to_le_bytes());
        local.extend_from_slice(&(if big { 45u16 } else { 20 }).to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes()); // flags
        local.extend_from_slice(&method.to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes()); // time
        local.extend_from_slice(&DOS_DATE.to_le_bytes());
        local.extend_from_slice(&crc.to_le_bytes());
        let small = if big { 0xFFFF_FFFF } else { size as u32 };
        let small_stored = if big { 0xFFFF_FFFF } else { stored as u32 };
        local.extend_from_slice(&small_stored.to_le_bytes());
        local.extend_from_slice(&small.to_le_bytes());
        local.extend_from_slice(&(name.len() as u16).to_le_bytes());
        local.extend_from_slice(&(if big { 20u16 } else { 0 }).to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        if big {
            local.extend_from_slice(&ZIP64_EXTRA.to_le_bytes());
            local.extend_from_slice(&16u16.to_le_bytes());
            local.extend_from_slice(&size.to_le_bytes());
            local.extend_from_slice(&stored.to_le_bytes());
        }
        self.put(&local)?;
        let mut counted = Counted {
            inner: &mut self.writer,
            written: 0,
        };
        data(&mut counted)?;
        let written = counted.written;
        if written != stored {
            return Err(ZIP.error(format!(
                "the member {name} was announced as {stored} bytes but {written} were written"
            )));
        }
        self.written += stored;
        // Its central directory record, with zip64 fields for what passes 32 bits.
        let far = offset >= 0xFFFF_FFFF;
        let mut extra = Vec::new();
        if big {
            extra.extend_from_slice(&size.to_le_bytes());
            extra.extend_from_slice(&stored.to_le_bytes());
        }
        if far {
            extra.extend_from_slice(&offset.to_le_bytes());
        }
        let d = &mut self.directory;
        d.extend_from_slice(&CENTRAL.to_le_bytes());
        let version: u16 = if big || far { 45 } else { 20 };
        d.extend_from_slice(&version.to_le_bytes()); // made by
        d.extend_from_slice(&version.to_le_bytes()); // needed
        d.extend_from_slice(&0u16.to_le_bytes()); // flags
        d.extend_from_slice(&method.to_le_bytes());
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&DOS_DATE.to_le_bytes());
        d.extend_from_slice(&crc.to_le_bytes());
        d.extend_from_slice(&small_stored.to_le_bytes());
        d.extend_from_slice(&small.to_le_bytes());
        d.extend_from_slice(&(name.len() as u16).to_le_bytes());
        let extra_len = if extra.is_empty() { 0 } else { 4 + extra.len() };
        d.extend_from_slice(&(extra_len as u16).to_le_bytes());
        d.extend_from_slice(&[0; 10]); // comment length, disk, internal and external attributes
        let small_offset = if far { 0xFFFF_FFFF } else { offset as u32 };
        d.extend_from_slice(&small_offset.to_le_bytes());
        d.extend_from_slice(name.as_bytes());
        if !extra.is_empty() {
            d.extend_from_slice(&ZIP64_EXTRA.to_le_bytes());
            d.extend_from_slice(&(extra.len() as u16).to_le_bytes());
            d.extend_from_slice(&extra);
        }
        self.count += 1;
        Ok(())
    }

    /// Writes the central directory and the end records; returns the writer.
    pub(crate) fn finish(mut self) -> Result<W> {
        let start = self.written;
        let directory = std::mem::take(&mut self.directory);
        self.put(&directory)?;
        let len = directory.len() as u64;
        let zip64 = start >= 0xFFFF_FFFF || self.count >= 0xFFFF;
        let mut end = Vec::new();
        if zip64 {
            let end64 = self.written;
            end.extend_from_slice(&END64.to_le_bytes());
            end.extend_from_slice(&44u64.to_le_bytes());
            end.extend_from_slice(&45u16.to_le_bytes());
            end.extend_from_slice(&45u16.to_le_bytes());
            end.extend_from_slice(&[0; 8]); // this disk, the directory's disk
            end.extend_from_slice(&self.count.to_le_bytes());
            end.extend_from_slice(&self.count.to_le_bytes());
            end.extend_from_slice(&len.to_le_bytes());
            end.extend_from_slice(&start.to_le_bytes());
            end.extend_from_slice(&END64_LOCATOR.to_le_bytes());
            end.extend_from_slice(&0u32.to_le_bytes());
            end.extend_from_slice(&end64.to_le_bytes());
            end.extend_from_slice(&1u32.to_le_bytes());
        }
        let count = self.count.min(0xFFFF) as u16;
        end.extend_from_slice(&END.to_le_bytes());
        end.extend_from_slice(&[0; 4]);
        end.extend_from_slice(&count.to_le_bytes());
        end.extend_from_slice(&count.to_le_bytes());
        end.extend_from_slice(&(len.min(0xFFFF_FFFF) as u32).to_le_bytes());
        end.extend_from_slice(&(start.min(0xFFFF_FFFF) as u32).to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        self.put(&end)?;
        Ok(self.writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_come_back_with_their_bytes() {
        let mut zip = ZipWriter::new(Vec::new());
        zip.member("a.npy", &[b"hello ", b"world"]).unwrap();
        zip.member("b.npy", &[]).unwrap();
        let bytes = zip.finish().unwrap();
        let members = members(&bytes, 0).unwrap();
        let got: Vec<_> = members
            .iter()
            .map(|m| (m.name.as_str(), &m.data[..]))
            .collect();
        assert_eq!(got, [("a.npy", &b"hello world"[..]), ("b.npy", &b""[..])]);
        let at = members[0].offset.unwrap();
        assert_eq!(&bytes[at..][..5], b"hello");
        // A flipped byte fails the CRC, at the member's data.
        let mut bad = bytes.clone();
        bad[at] ^= 1;
        let err = super::members(&bad, 0).unwrap_err();
        assert_eq!(err.offset(), Some(at as u64));
    }

    #[test]
    fn zip64_fields_are_read_where_the_small_ones_are_full() {
        let mut fields = [0xFFFF_FFFFu64, 7, 0xFFFF_FFFF];
        let mut extra = vec![1, 0, 16, 0];
        extra.extend_from_slice(&5_000_000_000u64.to_le_bytes());
        extra.extend_from_slice(&6_000_000_000u64.to_le_bytes());
        let [a, b, c] = &mut fields;
        read_zip64_extra(&extra, &mut [a, b, c]);
        assert_eq!(fields, [5_000_000_000, 7, 6_000_000_000]);
    }
}
