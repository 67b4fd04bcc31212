//! The index of a file: every object's header and every block's place, type and byte range,
//! read from headers alone (block bodies are seeked past), in O(number of blocks).

use crate::error::ErrorDetails;
use std::io::{Read, Seek};
use std::ops::Range;

use crate::error::Result;
use crate::model::detect::{check_hint_header, detect};
use crate::model::encode::places;
use crate::model::runtime::header_of;
use crate::model::tiling::Coverage;
use crate::model::Meta;
use crate::options::{Dialect, Options};
use crate::wire::block::{decode_block_head, BlockHead};
use crate::wire::header::FIXED_HEADER_LEN;
use crate::wire::runtime::{decode_head, RuntimeHead};
use crate::wire::{BlockPlace, BlockType, DataType, Header, SeekSource, Source, ValueType};

/// What the index knows of one object.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectInfo {
    /// The header (for runtime frames, labels from the `.meta` sidecar or `col_<i>`).
    pub header: Header,
    /// The dialect the object is in.
    pub dialect: Dialect,
    /// The object's bytes in the file.
    pub range: Range<u64>,
    /// Its blocks, in file order. A runtime-dialect object is one block covering it (a
    /// frame's is marked dense, with no value type: its rows interleave the columns).
    pub blocks: Vec<BlockInfo>,
    pub(crate) layout: StoredBody,
}

/// What the index knows of one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// Where the block lies in its object.
    pub place: BlockPlace,
    /// How it stores its values.
    pub block_type: BlockType,
    /// The stored values' type (`None` for empty blocks).
    pub value_type: Option<ValueType>,
    /// Whether the block has a spec block header (a runtime object's "block" has none).
    pub(crate) spec: bool,
    /// Where its values start, from the start of `range` (its header's length).
    body_offset: u32,
    /// The stored entries of a sparse or ultra-sparse block (see [`BlockInfo::nnz`]).
    stored: u64,
    /// The block entry's bytes in the file (position, header and values).
    pub range: Range<u64>,
}

// A file of a million tiles has an index of a million of these.
const _: () = assert!(std::mem::size_of::<BlockInfo>() <= 56);

impl BlockInfo {
    fn new(
        place: BlockPlace,
        block_type: BlockType,
        value_type: Option<ValueType>,
        nnz: Option<u64>,
        range: Range<u64>,
        body: u64,
        spec: bool,
    ) -> Result<BlockInfo> {
        // Block headers are tens of bytes; a runtime header holds a frame's labels too.
        let body_offset =
            u32::try_from(body - range.start).map_err(|_| ErrorDetails::TooLarge {
                offset: range.start,
                what: "a header of 4 GiB or more",
                bytes: u128::from(body - range.start),
            })?;
        Ok(BlockInfo {
            place,
            block_type,
            value_type,
            spec,
            body_offset,
            stored: nnz.unwrap_or(0),
            range,
        })
    }

    /// The stored entries of a sparse or ultra-sparse block (`None` for others).
    pub fn nnz(&self) -> Option<u64> {
        match self.block_type {
            BlockType::Sparse | BlockType::UltraSparse => Some(self.stored),
            _ => None,
        }
    }

    /// Where its values start (after its header).
    pub(crate) fn body(&self) -> u64 {
        self.range.start + u64::from(self.body_offset)
    }

    /// The block's header, from the fields above (kept once, not twice: a file of a million
    /// blocks has an index of that many).
    pub(crate) fn head(&self) -> Option<BlockHead> {
        // The non-zero count follows the position (16 bytes), shape (8), type and value type.
        let nnz_offset = match self.block_type {
            BlockType::Empty => 0,
            _ => self.range.start + 26,
        };
        self.spec.then_some(BlockHead {
            rows: self.place.rows,
            cols: self.place.cols,
            block_type: self.block_type,
            value_type: self.value_type,
            nnz: self.nnz(),
            nnz_offset,
        })
    }
}

impl ObjectInfo {
    /// Stored entries: cells of dense blocks plus non-zeros of sparse ones.
    #[doc(hidden)]
    pub fn stored(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| match b.block_type {
                BlockType::Empty => 0,
                BlockType::Dense => u64::from(b.place.rows) * u64::from(b.place.cols),
                _ => b.stored,
            })
            .sum()
    }

    /// The bytes this object takes held whole in its natural form: every cell of a dense
    /// matrix or frame; a CSR matrix's row offsets and stored entries (index and value).
    #[doc(hidden)]
    pub fn natural_bytes(&self) -> u128 {
        let rows = u128::from(self.header.rows());
        let size = |vt: ValueType| vt.size() as u128;
        match &self.header {
            Header::Frame { columns, .. } => {
                rows * columns.iter().map(|c| size(c.value_type)).sum::<u128>()
            }
            Header::CsrMatrix { value_type, .. } => {
                (rows + 1) * 8 + u128::from(self.stored()) * (8 + size(*value_type))
            }
            header => {
                let cells = rows * u128::from(header.cols());
                cells * header.matrix_value_type().map_or(8, size)
            }
        }
    }
}

/// How an object's values are laid out, for reading parts of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StoredBody {
    /// The spec's blocks (in [`ObjectInfo::blocks`]).
    Blocks,
    /// The runtime's one layout per data type.
    Runtime(RuntimeHead),
}

/// Indexes every object of `src`, from its start to its end.
pub(crate) fn index_all<R: Read + Seek>(
    src: &mut SeekSource<R>,
    options: &Options,
    mut hint: Option<Meta>,
) -> Result<Vec<ObjectInfo>> {
    let mut objects = Vec::new();
    while !src.at_end()? {
        let start = src.offset();
        // A sidecar describes the first object only.
        match index_object(src, options, hint.take().as_ref()) {
            Ok(object) => objects.push(object),
            // After an object, bytes that do not even hold a fixed header are trailing bytes.
            Err(e) if !objects.is_empty() && e.offset().is_some_and(|at| at < start + 18) => {
                return Err(ErrorDetails::TrailingBytes { offset: start }.into());
            }
            Err(e) => return Err(e),
        }
    }
    if objects.is_empty() {
        return Err(ErrorDetails::UnexpectedEof {
            offset: 0,
            what: "an object's header (the file is empty)",
            needed: FIXED_HEADER_LEN as u64,
            available: 0,
        }
        .into());
    }
    Ok(objects)
}

fn index_object<R: Read + Seek>(
    src: &mut SeekSource<R>,
    options: &Options,
    hint: Option<&Meta>,
) -> Result<ObjectInfo> {
    let start = src.offset();
    let dialect = match options.dialect {
        Some(dialect) => dialect,
        None => detect(src, hint)?,
    };
    src.seek_to(start);
    let object = match dialect {
        Dialect::Spec => index_spec(src)?,
        Dialect::Runtime => index_runtime(src, hint)?,
    };
    if let Some(hint) = hint {
        check_hint_header(&object.header, hint)?;
    }
    Ok(object)
}

fn index_spec<R: Read + Seek>(src: &mut SeekSource<R>) -> Result<ObjectInfo> {
    let start = src.offset();
    let header = Header::decode(src)?;
    let (rows, cols) = header.shape();
    let mut coverage = Coverage::new(rows, cols, header.data_type() == DataType::Frame);
    let mut blocks = Vec::new();
    while !coverage.complete() {
        let offset = src.offset();
        let row = src.u64("a block's row index")?;
        let col = src.u64("a block's column index")?;
        let head = decode_block_head(src)?;
        let place = BlockPlace {
            row,
            col,
            rows: head.rows,
            cols: head.cols,
        };
        let body = src.offset();
        skip_values(src, head.body_len(), "a block's values")?;
        coverage.add(offset, place, head.stored() > 0)?;
        let (bt, vt) = (head.block_type, head.value_type);
        let info = BlockInfo::new(place, bt, vt, head.nnz, offset..src.offset(), body, true)?;
        debug_assert_eq!(info.head(), Some(head), "the header the index keeps");
        blocks.push(info);
    }
    coverage.finish()?;
    blocks.shrink_to_fit();
    Ok(ObjectInfo {
        header,
        dialect: Dialect::Spec,
        range: start..src.offset(),
        blocks,
        layout: StoredBody::Blocks,
    })
}

/// Seeks past `len` bytes of values, which must all be in the input.
fn skip_values<R: Read + Seek>(
    src: &mut SeekSource<R>,
    len: u128,
    what: &'static str,
) -> Result<()> {
    let available = src.remaining().unwrap_or(0);
    if len > u128::from(available) {
        return Err(ErrorDetails::UnexpectedEof {
            offset: src.offset(),
            what,
            needed: u64::try_from(len).unwrap_or(u64::MAX),
            available,
        }
        .into());
    }
    src.skip(len as u64, what)
}

/// The most blocks a runtime object's dimensions may need (as whole reads allow).
const MAX_RUNTIME_TILES: u128 = 1 << 12;

fn index_runtime<R: Read + Seek>(
    src: &mut SeekSource<R>,
    hint: Option<&Meta>,
) -> Result<ObjectInfo> {
    let start = src.offset();
    let head = decode_head(src)?;
    let (rows, cols) = (head.rows, head.cols);
    let fits = u32::try_from(rows).is_ok() && u32::try_from(cols).is_ok();
    // A CSR matrix's windows are read from its arrays, whatever its shape; a dense one's
    // through a block's geometry.
    let csr = head.data_type == DataType::CsrMatrix;
    if !fits && !csr && u128::from(rows) * u128::from(cols) > 0 {
        return Err(ErrorDetails::TooLarge {
            offset: start,
            what: "a runtime-dialect object with a dimension of 2^32 or more for lazy reading \
                   (the runtime cannot write one; read it whole with from_file)",
            bytes: u128::from(rows) * u128::from(cols),
        }
        .into());
    }
    skip_values(src, head.body_len(), "the object's values")?;
    let header = header_of(&head, hint.and_then(|h| h.labels.clone()));
    let block_type = match head.data_type {
        DataType::CsrMatrix => BlockType::Sparse,
        _ => BlockType::Dense,
    };
    let range = start..src.offset();
    let value_type = header.matrix_value_type();
    let block = |place, block_type| {
        BlockInfo::new(
            place,
            block_type,
            value_type,
            head.nnz,
            range.clone(),
            head.body,
            false,
        )
    };
    let blocks = if fits {
        let place = BlockPlace {
            row: 0,
            col: 0,
            rows: rows as u32,
            cols: cols as u32,
        };
        vec![block(place, block_type)?]
    } else {
        // Tiles of the largest block size, as a whole read gives (empty without cells).
        let max = u64::from(u32::MAX);
        let cells = u128::from(rows) * u128::from(cols) > 0;
        let tiles = |n: u64| u128::from(n.div_ceil(max).max(1));
        let count = match cells {
            true => tiles(rows) * tiles(cols),
            false => tiles(rows.max(cols)),
        };
        if count > MAX_RUNTIME_TILES {
            return Err(ErrorDetails::TooLarge {
                offset: start,
                what: "a runtime-dialect object this large (its dimensions need over 4,096 blocks)",
                bytes: u128::from(rows) * u128::from(cols),
            }
            .into());
        }
        places(rows, cols, (max, max))
            .map(|place| block(place, if cells { block_type } else { BlockType::Empty }))
            .collect::<Result<_>>()?
    };
    Ok(ObjectInfo {
        header,
        dialect: Dialect::Runtime,
        range,
        blocks,
        layout: StoredBody::Runtime(head),
    })
}
