//! Tiled dense matrices read and written block-parallel: read straight into one row-major
//! vector (what a typed read into an `Array2` wants, without a vector per tile and a second
//! copy out of it), and written into `to_vec`'s output with each tile's values copied from
//! the array's rows on every core.

use crate::error::ErrorDetails;
use std::io::Write;
use std::mem::MaybeUninit;

use crate::error::{Error, Result};
use crate::model::detect::detect;
use crate::model::encode::{encode_tile, places, tile_dims, write_header};
use crate::model::matrix_ref::{MatrixCells, MatrixRef};
use crate::model::object::{Block, Object};
use crate::model::tiling::Coverage;
use crate::options::{Dialect, Options};
use crate::threads::{on_every_core, workers};
use crate::wire::block::decode_block_head;
use crate::wire::element::widens_exactly;
use crate::wire::sink::Sink;
use crate::wire::source::SliceSource;
use crate::wire::values::{with_value_type, zeroed_vec};
use crate::wire::{BlockData, BlockPlace, BlockType, DataType, Element, Header, Source, ValueType};

/// Below this many bytes of values one thread fills the matrix: starting threads costs more.
const PARALLEL_FROM: usize = 4 << 20;

/// The largest tile the parallel writer makes whole before placing it (an empty block, a
/// small sparse one); a larger one sends the matrix to the usual writer.
const MADE_WHOLE_AT_MOST: usize = 64 << 10;

/// A dense block: where it goes and where its values' little-endian bytes start in the
/// input.
struct Tile {
    place: BlockPlace,
    body_at: u64,
}

/// A spec-dialect matrix stored as several dense blocks of one value type, found block by
/// block: what [`read_dense_tiles`] and [`read_dense_tiles_at`] fill an array from.
struct Tiles {
    header: Header,
    value_type: ValueType,
    whole: BlockPlace,
    tiles: Vec<Tile>,
    /// The object's length in the input.
    len: u64,
}

/// Finds every block of the spec-dialect matrix at `src`'s position, skipping each body
/// ([`Source::skip`]: a file source jumps); `None` unless it is several dense blocks of one value type that widens
/// exactly to its header's and to `wanted`, covering the matrix, or for malformed input.
fn scan<S: Source>(src: &mut S, wanted: ValueType) -> Option<Tiles> {
    let start = src.offset();
    if detect(src, None).ok()? != Dialect::Spec {
        return None;
    }
    let header = Header::decode(src).ok()?;
    let target = header.matrix_value_type()?;
    if header.data_type() == DataType::Frame {
        return None;
    }
    let (rows, cols) = header.shape();
    let mut coverage = Coverage::new(rows, cols, false);
    let mut tiles = Vec::new();
    let mut stored = None;
    while !coverage.complete() {
        let at = src.offset();
        let row = src.u64("").ok()?;
        let col = src.u64("").ok()?;
        let head = decode_block_head(src).ok()?;
        let vt = head.value_type?;
        if head.block_type != BlockType::Dense || *stored.get_or_insert(vt) != vt {
            return None;
        }
        let place = BlockPlace {
            row,
            col,
            rows: head.rows,
            cols: head.cols,
        };
        coverage.add(at, place, true).ok()?;
        let body_at = src.offset();
        src.skip(u64::try_from(head.body_len()).ok()?, "").ok()?;
        tiles.push(Tile { place, body_at });
    }
    coverage.finish().ok()?;
    let value_type = stored?;
    if tiles.len() < 2 || !widens_exactly(value_type, target) || !widens_exactly(value_type, wanted)
    {
        return None;
    }
    let whole = BlockPlace {
        row: 0,
        col: 0,
        rows: u32::try_from(rows).ok()?,
        cols: u32::try_from(cols).ok()?,
    };
    if whole.rows == 0 || whole.cols == 0 {
        return None;
    }
    let len = src.offset() - start;
    Some(Tiles {
        header,
        value_type,
        whole,
        tiles,
        len,
    })
}

/// Where the tiles' bytes are.
#[derive(Clone, Copy)]
enum Bodies<'a> {
    /// The input, whose first byte is byte `base`.
    Memory { bytes: &'a [u8], base: u64 },
    /// A file, read with positional reads.
    #[cfg(unix)]
    File(&'a dyn crate::wire::read_at::ReadAt),
}

impl Tiles {
    /// The object (read from byte `base`), its values filled from `bodies` on every core.
    fn assemble(self, base: u64, bodies: Bodies<'_>) -> Option<Result<Object>> {
        let (rows, cols) = (self.whole.rows as usize, self.whole.cols as usize);
        let values = with_value_type!(self.value_type, T => {
            let mut out = zeroed_vec::<T>(rows.checked_mul(cols)?).ok()?;
            let size = std::mem::size_of::<T>();
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
            if let Err(e) = fill(bytes, cols * size, size, &self.tiles, bodies) {
                return Some(Err(e));
            }
            if cfg!(target_endian = "big") {
                out.iter_mut().for_each(|x| *x = x.to_le());
            }
            T::into_values(out)
        });
        let blocks = vec![Block {
            place: self.whole,
            data: BlockData::Dense(values),
        }];
        Some(Ok(Object::read_in(
            self.header,
            blocks,
            base,
            Dialect::Spec,
        )))
    }
}

/// Reads the spec-dialect matrix at the start of `bytes` (byte `base` of the input) when it
/// is stored as several dense blocks of one value type that widens exactly to `wanted`, as
/// one dense block of that type, the blocks copied in parallel into one vector. Returns the
/// object and the bytes it took.
///
/// `None` for any other object, and for malformed input: the caller then reads it the
/// general way, which reports the error. Nothing is allocated before every block has been
/// found in `bytes`, so the vector is never larger than the bytes that fill it.
pub(crate) fn read_dense_tiles(
    bytes: &[u8],
    base: u64,
    wanted: ValueType,
) -> Option<(Object, usize)> {
    let mut src = SliceSource::with_base(bytes, base);
    let found = scan(&mut src, wanted)?;
    let len = found.len as usize;
    let object = found.assemble(base, Bodies::Memory { bytes, base })?;
    Some((object.ok()?, len))
}

/// [`read_dense_tiles`] for the object at byte `start` of `file` (of `file_len` bytes, so
/// that no block is believed past its end), each core reading its band of rows from every
/// tile with positional reads. `None` as there; an error only for a failed read (the file
/// changed under the reader, or the disk failed).
pub(crate) fn read_dense_tiles_at(
    file: &dyn crate::wire::read_at::ReadAt,
    file_len: u64,
    start: u64,
    wanted: ValueType,
) -> Option<Result<(Object, u64)>> {
    #[cfg(unix)]
    {
        // Positional reads: the file's offset, which its other readers track, stays put.
        let mut src = crate::wire::SeekSource::new(
            crate::wire::read_at::Positional::new(file, file_len),
            file_len,
        );
        src.seek_to(start);
        let found = scan(&mut src, wanted)?;
        let len = found.len;
        let object = found.assemble(start, Bodies::File(file))?;
        Some(object.map(|o| (o, len)))
    }
    #[cfg(not(unix))]
    {
        let _ = (file, file_len, start, wanted);
        None
    }
}

/// Fills `out` (new zeroed memory, row-major bytes, `row_bytes` to a matrix row, values of
/// `size` bytes) from every tile, in bands of rows on every core, each band faulted in just
/// before it is filled (see `pages`).
fn fill(
    out: &mut [u8],
    row_bytes: usize,
    size: usize,
    tiles: &[Tile],
    bodies: Bodies<'_>,
) -> Result<()> {
    let parallel = out.len() >= PARALLEL_FROM;
    crate::pages::fill_fresh_rows(out, row_bytes, parallel, |start, band| {
        fill_rows(band, start / row_bytes, row_bytes, size, tiles, bodies)
    })
}

/// Fills the rows of every tile that fall in `band`, rows `first..` of the matrix, with
/// the little-endian bytes stored: from memory row by row; from a file, a run of a tile's
/// rows (contiguous in its body) read with one vectored read into their places.
fn fill_rows(
    band: &mut [u8],
    first: usize,
    row_bytes: usize,
    size: usize,
    tiles: &[Tile],
    bodies: Bodies<'_>,
) -> Result<()> {
    let end = first + band.len() / row_bytes;
    for tile in tiles {
        let p = tile.place;
        let (r0, col_at, width) = (
            p.row as usize,
            p.col as usize * size,
            p.cols as usize * size,
        );
        let (from, to) = (r0.max(first), (r0 + p.rows as usize).min(end));
        let mut place = |r: usize, row: &[u8]| {
            let at = (r - first) * row_bytes + col_at;
            band[at..at + width].copy_from_slice(row);
        };
        match bodies {
            Bodies::Memory { bytes, base } => {
                let body = (tile.body_at - base) as usize;
                for r in from..to {
                    place(r, &bytes[body + (r - r0) * width..][..width]);
                }
            }
            #[cfg(unix)]
            Bodies::File(file) => {
                // Each row read straight into its place: runs of rows, one call each.
                let mut r = from;
                while r < to {
                    let n = (to - r).min(crate::positional::MAX_BUFFERS);
                    let mut rows: Vec<std::io::IoSliceMut<'_>> = band
                        .chunks_exact_mut(row_bytes)
                        .skip(r - first)
                        .take(n)
                        .map(|row| std::io::IoSliceMut::new(&mut row[col_at..col_at + width]))
                        .collect();
                    let at = tile.body_at + ((r - r0) * width) as u64;
                    file.read_exact_vectored_at(&mut rows, at)?;
                    r += n;
                }
            }
        }
    }
    Ok(())
}

/// Writes a dense matrix of several tiles into a direct sink's output (`to_vec`,
/// `append_to_vec`): each tile's position and block header are made first, one tile after
/// another (the writer's choices as always), then every dense tile's values are copied
/// from the array's rows into their place on every core. Returns `false`, having written
/// nothing, where this does not apply (a buffered sink, one tile, a small matrix, the
/// runtime dialect, a tile stored other than dense and not small); the caller writes the
/// matrix the usual way.
///
/// # Errors
/// As the usual writer; [`crate::ErrorKind::OutOfMemory`] when the output cannot grow.
pub(crate) fn write_dense_tiles<T: Element, W: Write>(
    sink: &mut Sink<W>,
    data_type: DataType,
    matrix: &MatrixRef<'_, T>,
    options: &Options,
) -> Result<bool> {
    let (rows, cols) = (matrix.rows as u64, matrix.cols as u64);
    let values = std::mem::size_of_val(match matrix.layout {
        MatrixCells::Dense(data) => data,
        _ => return Ok(false),
    });
    let places: Vec<BlockPlace> = places(rows, cols, tile_dims(options)).collect();
    if !sink.is_direct() || options.runtime_writer()? || places.len() < 2 || values < PARALLEL_FROM
    {
        return Ok(false);
    }
    let size = std::mem::size_of::<T>();
    let mut pieces = Vec::with_capacity(places.len());
    let mut total = 0;
    for place in places {
        let (head, rows_follow) = encode_tile(matrix, place, options)?;
        if head.len() > MADE_WHOLE_AT_MOST {
            // A tile made whole (sparse, narrowed) is held until the copy: for many of them
            // that would be a second output. The usual writer streams them instead.
            return Ok(false);
        }
        let body = if rows_follow {
            place.rows as usize * place.cols as usize * size
        } else {
            0
        };
        total += head.len() + body;
        pieces.push((place, head, body));
    }
    write_header(sink, &Header::matrix(data_type, rows, cols, T::VALUE_TYPE))?;
    let out = sink.output_mut();
    out.try_reserve(total).map_err(|_| {
        Error::from(ErrorDetails::OutOfMemory {
            bytes: total as u128,
        })
    })?;
    crate::pages::fault_in_spare(out, total);
    // Each tile's bytes, in order, then gathered into a run per thread of about equal size.
    let mut rest = &mut out.spare_capacity_mut()[..total];
    let per_thread = total.div_ceil(workers());
    let mut runs: Vec<Vec<_>> = vec![Vec::new()];
    let mut in_run = 0;
    for (place, head, body) in &pieces {
        let (room, after) = rest.split_at_mut(head.len() + body);
        rest = after;
        if in_run >= per_thread {
            runs.push(Vec::new());
            in_run = 0;
        }
        in_run += room.len();
        if let Some(run) = runs.last_mut() {
            run.push((room, *place, head, *body > 0));
        }
    }
    let written = on_every_core(runs, |run| {
        let mut written = 0;
        for (room, place, head, rows_follow) in run {
            let room_len = room.len();
            let (head_room, mut body_room) = room.split_at_mut(head.len());
            write_bytes(head_room, head);
            let rows = matrix.dense_rows(place).filter(|_| rows_follow);
            for row in rows.into_iter().flatten() {
                let (row_room, after) = body_room.split_at_mut(std::mem::size_of_val(row));
                write_bytes(row_room, bytemuck::cast_slice(row));
                body_room = after;
            }
            // Every byte of the room, or the length set below would expose uninitialised
            // memory: a real check, as the copies it guards are.
            assert!(
                body_room.is_empty(),
                "a tile's rows left part of its room unwritten"
            );
            written += room_len;
        }
        written
    });
    assert_eq!(
        written.iter().sum::<usize>(),
        total,
        "the rooms cover the reservation"
    );
    let len = out.len() + total;
    // SAFETY: the runs above wrote every byte of the `total` bytes of spare capacity (both
    // asserted): each tile's room is its head's bytes plus, when its rows follow, exactly the
    // rows' bytes (`encode_tile` said the block is dense in `T`'s type: rows x cols values),
    // and the rooms split the spare capacity without gaps.
    #[allow(unsafe_code)]
    unsafe {
        out.set_len(len);
    }
    Ok(true)
}

/// Copies `src` into `dst`, which is exactly as long.
fn write_bytes(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    assert_eq!(dst.len(), src.len());
    // SAFETY: `dst` has room for `src.len()` bytes (checked) and, being spare capacity of
    // another vector, cannot overlap `src`; bytes have no alignment or validity to violate.
    #[allow(unsafe_code)]
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<u8>(), src.len());
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;

    use super::*;
    use crate::error::ErrorDetails;
    use crate::{from_slice, Dense, DenseView, Options};

    fn matrix(rows: usize, cols: usize) -> Array2<u16> {
        Array2::from_shape_fn((rows, cols), |(r, c)| (r * 1000 + c + 1) as u16)
    }

    /// Tiles of every shape (partial edge tiles, one column, one row), read in one and in
    /// several threads, land where the general read puts them; widening reads too.
    #[test]
    fn tiles_assemble_into_the_matrix() {
        for (rows, cols, tile) in [
            (7, 5, (3, 2)),
            (4, 9, (4, 1)),
            (9, 4, (1, 4)),
            (2100, 1300, (1000, 500)),
        ] {
            let a = matrix(rows, cols);
            let options = Options {
                tile: Some((tile.0, tile.1)),
                ..Options::new()
            };
            let bytes = options.to_vec(&DenseView(a.view())).unwrap();
            let (object, len) = read_dense_tiles(&bytes, 0, ValueType::U16).unwrap();
            assert_eq!(len, bytes.len());
            assert_eq!(
                object.into_dense_vec::<u16>().unwrap(),
                a.as_slice().unwrap()
            );
            assert_eq!(from_slice::<Dense<u16>>(&bytes).unwrap().0, a);
            let wide: Dense<f64> = from_slice(&bytes).unwrap();
            assert_eq!(wide.0, a.mapv(f64::from));
        }
    }

    /// Tiles written in parallel into `to_vec`'s output (after bytes already there) are
    /// the bytes the buffered writer makes, whatever blocks the options choose: dense tiles
    /// copied on every core, all-zero tiles empty, narrowed or sparse tiles made whole.
    #[test]
    fn tiles_written_in_parallel_are_the_buffered_bytes() {
        use crate::BlockPolicy;
        let mut a = matrix(2100, 1300);
        a.slice_mut(ndarray::s![..1000, 500..1000]).fill(0);
        a.slice_mut(ndarray::s![1000..2000, ..500])
            .mapv_inplace(|x| x % 7);
        let tiled = Options {
            tile: Some((1000, 500)),
            ..Options::new()
        };
        for options in [
            tiled.clone(),
            Options {
                narrow: true,
                ..tiled.clone()
            },
            Options {
                block_policy: BlockPolicy::Smallest,
                ..tiled.clone()
            },
            Options {
                block_policy: BlockPolicy::Sparse,
                ..tiled.clone()
            },
        ] {
            let mut buffered = Vec::new();
            options
                .to_writer(&mut buffered, &DenseView(a.view()))
                .unwrap();
            let mut direct = b"before".to_vec();
            options
                .append_to_vec(&mut direct, &DenseView(a.view()))
                .unwrap();
            assert!(direct[6..] == buffered[..], "{options:?}");
            assert_eq!(from_slice::<Dense<u16>>(&direct[6..]).unwrap().0, a);
        }
    }

    /// Objects this path does not take go the general way: one block, narrowing a value
    /// type the reader would have to check, blocks of several types, and malformed input,
    /// whose error is the general read's.
    #[test]
    fn other_objects_are_left_to_the_general_read() {
        let a = matrix(6, 6);
        let untiled = Options::new().to_vec(&DenseView(a.view())).unwrap();
        assert!(read_dense_tiles(&untiled, 0, ValueType::U16).is_none());
        let tiled = Options {
            tile: Some((4, 4)),
            ..Options::new()
        }
        .to_vec(&DenseView(a.view()))
        .unwrap();
        assert!(read_dense_tiles(&tiled, 0, ValueType::U8).is_none());
        assert!(read_dense_tiles(&tiled, 0, ValueType::I16).is_none());
        let mut mixed = a.clone();
        mixed.slice_mut(ndarray::s![4.., 4..]).fill(0);
        let mixed = Options {
            tile: Some((4, 4)),
            ..Options::new()
        }
        .to_vec(&DenseView(mixed.view()))
        .unwrap();
        assert!(read_dense_tiles(&mixed, 0, ValueType::U16).is_none());
        let truncated = &tiled[..tiled.len() - 1];
        assert!(read_dense_tiles(truncated, 0, ValueType::U16).is_none());
        let general = Object::decode(&mut SliceSource::new(truncated)).unwrap_err();
        let typed = from_slice::<Dense<u16>>(truncated).unwrap_err();
        assert!(matches!(
            typed.details(),
            ErrorDetails::UnexpectedEof { .. }
        ));
        assert_eq!(typed.to_string(), general.to_string());
    }
}
