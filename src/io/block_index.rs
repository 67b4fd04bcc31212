//! The block index: a sidecar (`NAME.dbdf.index`) holding the bytes of every header in a file
//! (objects' headers, blocks' positions and headers) at their offsets, so that a reader opens
//! a file of any size with one read of the index instead of a walk over its headers: the
//! walk runs over the index's bytes alone and finds the same objects. Reads of the file are
//! checked against those bytes. Its layout is in `docs/wire-format.md` ("The block index").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file_reader::FileReader;
use super::index::{index_all, ObjectInfo};
use super::meta::parse_meta;
use crate::error::{Error, ErrorDetails, Result};
use crate::options::Options;
use crate::wire::extents::{Extents, ExtentsReader};
use crate::wire::read_at::ReadAt;
use crate::wire::SeekSource;

/// The index's first bytes.
const MAGIC: &[u8; 8] = b"DBDFINDX";
/// The layout's version.
const VERSION: u32 = 1;
/// Magic, version, flags, file length, the `.meta` text's length.
const HEAD_LEN: usize = 8 + 4 + 4 + 8 + 4;

/// A block index: every header of a `.dbdf` file, at its offset, with the file's length and
/// the `.meta` sidecar it was read with. Made by walking a file once
/// ([`BlockIndex::of_read_at`], [`BlockIndex::of_file`]); used by
/// [`crate::Options::open_indexed`].
///
/// ```
/// use std::sync::Arc;
/// use serde_daphne::{BlockIndex, DbdfFile, Options, ReadAt};
///
/// let tiled = Options { tile: Some((2, 2)), ..Options::new() };
/// let m = ndarray::Array2::<f64>::from_shape_fn((4, 4), |(i, j)| (4 * i + j) as f64);
/// let bytes = tiled.to_vec(&serde_daphne::DenseView(m.view()))?;
/// let source: Arc<dyn ReadAt> = Arc::new(bytes);
/// let index = BlockIndex::of_read_at(source.clone(), &Options::new(), None)?;
/// let stored = index.to_vec();
///
/// let index = BlockIndex::from_slice(&stored)?;
/// let mut file = Options::new().open_indexed(source, Arc::new(index))?;
/// assert_eq!(file.objects()[0].blocks.len(), 4);
/// assert_eq!(file.read_window::<f64>(0, 3..4, 3..4)?[[0, 0]], 15.0);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockIndex {
    file_len: u64,
    meta: Option<String>,
    extents: Arc<Extents>,
}

/// Where the block index of the file at `path` is kept: `path` with `.index` added.
pub(crate) fn index_path(path: impl AsRef<Path>) -> PathBuf {
    super::appended(path.as_ref(), ".index")
}

impl BlockIndex {
    /// Walks the headers of `source` (with the `.meta` sidecar text `meta`, for a
    /// runtime-dialect file that has one) and keeps every byte the walk read.
    ///
    /// # Errors
    /// As [`crate::Options::open_at`].
    pub fn of_read_at(
        source: Arc<dyn ReadAt>,
        options: &Options,
        meta: Option<String>,
    ) -> Result<BlockIndex> {
        let file_len = source.size()?;
        let mut src = FileReader::source_over(source, file_len).recording();
        index_all(&mut src, options, hint(meta.as_deref())?)?;
        let extents = src.take_record().unwrap_or_default();
        Ok(BlockIndex {
            file_len,
            meta,
            extents: Arc::new(extents),
        })
    }

    /// [`BlockIndex::of_read_at`] for the file at `path`, with its `.meta` sidecar if there is
    /// one.
    ///
    /// # Errors
    /// As [`crate::DbdfFile::open`].
    pub fn of_file(path: impl AsRef<Path>, options: &Options) -> Result<BlockIndex> {
        let path = path.as_ref();
        let meta = match std::fs::read_to_string(super::sidecar_path(path)) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let file: Arc<dyn ReadAt> = Arc::new(std::fs::File::open(path)?);
        BlockIndex::of_read_at(file, options, meta)
    }

    /// The index of a file of `file_len` bytes from the bytes a walk over its headers read.
    pub(crate) fn of_extents(extents: Extents, file_len: u64) -> BlockIndex {
        BlockIndex {
            file_len,
            meta: None,
            extents: Arc::new(extents),
        }
    }

    /// The index of a file of `file_len` bytes written as a stream, from the bytes its writer
    /// kept of it (each header, and some after): a walk over them alone keeps what an index
    /// keeps. `None` where that walk fails (it needs bytes not kept).
    pub(crate) fn of_kept(kept: Extents, file_len: u64) -> Option<BlockIndex> {
        let reader = ExtentsReader {
            extents: &kept,
            pos: 0,
            len: file_len,
        };
        let mut src = SeekSource::new(reader, file_len)
            .with_exact_reads()
            .recording();
        index_all(&mut src, &Options::new(), None).ok()?;
        Some(BlockIndex::of_extents(src.take_record()?, file_len))
    }

    /// The length of the file indexed.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The `.meta` sidecar's text the file was indexed with.
    pub fn meta(&self) -> Option<&str> {
        self.meta.as_deref()
    }

    /// The objects of the file, found by walking the index's bytes alone; the first run of
    /// bytes, which holds the first object's header, is returned to be compared with the file.
    pub(crate) fn objects(&self, options: &Options) -> Result<Vec<ObjectInfo>> {
        let reader = ExtentsReader {
            extents: &self.extents,
            pos: 0,
            len: self.file_len,
        };
        let mut src = SeekSource::new(reader, self.file_len).with_exact_reads();
        index_all(&mut src, options, hint(self.meta.as_deref())?).map_err(|e| {
            Error::from(ErrorDetails::StaleIndex {
                offset: e.offset().unwrap_or(0),
                message: format!("walking the index's bytes alone failed ({e})"),
            })
        })
    }

    /// The first run of header bytes, at offset 0.
    pub(crate) fn first_run(&self) -> Option<(u64, &[u8])> {
        self.extents.runs().next()
    }

    pub(crate) fn extents(&self) -> &Arc<Extents> {
        &self.extents
    }

    /// The index's bytes (its layout is in `docs/wire-format.md`).
    pub fn to_vec(&self) -> Vec<u8> {
        let runs = self.extents.len();
        let meta = self.meta.as_deref().unwrap_or("").as_bytes();
        let mut out = Vec::with_capacity(HEAD_LEN + meta.len() + 8 + 12 * runs);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.file_len.to_le_bytes());
        out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        out.extend_from_slice(meta);
        out.extend_from_slice(&(runs as u64).to_le_bytes());
        for (at, bytes) in self.extents.runs() {
            out.extend_from_slice(&at.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        }
        for (_, bytes) in self.extents.runs() {
            out.extend_from_slice(bytes);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads an index from its bytes, checking every size against the bytes there before
    /// allocating, and its checksum.
    ///
    /// # Errors
    /// [`crate::ErrorKind::StaleIndex`] for bytes that are not a whole, undamaged index of
    /// this version, with the offset in the index where they fail.
    pub fn from_slice(bytes: &[u8]) -> Result<BlockIndex> {
        let bad = |offset: usize, message: &str| {
            Error::from(ErrorDetails::StaleIndex {
                offset: offset as u64,
                message: format!("the index is damaged: {message} (at byte {offset} of it)"),
            })
        };
        if bytes.len() < HEAD_LEN + 12 || &bytes[..8] != MAGIC {
            return Err(bad(0, "it does not start with DBDFINDX"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(bad(body.len(), "its checksum does not match its bytes"));
        }
        let mut at = 8;
        let mut take = |n: usize| -> Result<&[u8]> {
            let got = body
                .get(at..at + n)
                .ok_or_else(|| bad(at, "it ends early"))?;
            at += n;
            Ok(got)
        };
        let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
        let u64_at = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let version = u32_at(take(4)?);
        if version != VERSION {
            return Err(bad(8, &format!("version {version}, not {VERSION}")));
        }
        take(4)?;
        let file_len = u64_at(take(8)?);
        let meta_len = u32_at(take(4)?) as usize;
        let meta = take(meta_len)?;
        let meta = match meta_len {
            0 => None,
            _ => Some(
                std::str::from_utf8(meta)
                    .map_err(|_| bad(HEAD_LEN, "its .meta text is not UTF-8"))?
                    .to_owned(),
            ),
        };
        let count = u64_at(take(8)?);
        let table_at = HEAD_LEN + meta_len + 8;
        let table_len = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(12))
            .filter(|&n| n <= body.len() - table_at)
            .ok_or_else(|| bad(table_at - 8, "it lists more runs than it holds"))?;
        let table = take(table_len)?;
        let runs: Vec<(u64, u32)> = table
            .chunks_exact(12)
            .map(|r| (u64_at(&r[..8]), u32_at(&r[8..])))
            .collect();
        let data = body[table_at + table_len..].to_vec();
        let extents = Extents::from_parts(&runs, data)
            .filter(|e| e.end() <= file_len)
            .ok_or_else(|| {
                bad(
                    table_at,
                    "its runs are not in order, overlap, or do not add up",
                )
            })?;
        Ok(BlockIndex {
            file_len,
            meta,
            extents: Arc::new(extents),
        })
    }
}

/// The `.meta` sidecar kept in an index, parsed.
pub(super) fn hint(meta: Option<&str>) -> Result<Option<crate::model::Meta>> {
    let path = Path::new("the .meta sidecar kept in the block index");
    meta.map(|text| parse_meta(text, path)).transpose()
}
