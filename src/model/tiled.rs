//! Tiled dense matrices read straight into one row-major vector, block-parallel: what a typed
//! read into an `Array2` wants, without a vector per tile and a second copy out of it.

use crate::model::detect::detect;
use crate::model::object::{Block, Object};
use crate::model::tiling::Coverage;
use crate::options::Dialect;
use crate::threads::{on_every_core, workers};
use crate::wire::block::decode_block_head;
use crate::wire::element::widens_exactly;
use crate::wire::source::SliceSource;
use crate::wire::values::{copy_le_into, with_value_type, zeroed_vec};
use crate::wire::{BlockData, BlockPlace, BlockType, DataType, Element, Header, Source, ValueType};

/// Below this many bytes of values one thread fills the matrix: starting threads costs more.
const PARALLEL_FROM: usize = 4 << 20;

/// A dense block: where it goes and its values' little-endian bytes.
struct Tile<'a> {
    place: BlockPlace,
    body: &'a [u8],
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
    if detect(&mut src.clone(), None).ok()? != Dialect::Spec {
        return None;
    }
    let header = Header::decode(&mut src).ok()?;
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
        let head = decode_block_head(&mut src).ok()?;
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
        let len = usize::try_from(head.body_len()).ok()?;
        let start = (src.offset() - base) as usize;
        src.take(len, "").ok()?;
        tiles.push(Tile {
            place,
            body: &bytes[start..start + len],
        });
    }
    coverage.finish().ok()?;
    let vt = stored?;
    if tiles.len() < 2 || !widens_exactly(vt, target) || !widens_exactly(vt, wanted) {
        return None;
    }
    let whole = BlockPlace {
        row: 0,
        col: 0,
        rows: u32::try_from(rows).ok()?,
        cols: u32::try_from(cols).ok()?,
    };
    let (rows, cols) = (whole.rows as usize, whole.cols as usize);
    if rows == 0 || cols == 0 {
        return None;
    }
    let values = with_value_type!(vt, T => {
        let mut out = zeroed_vec::<T>(rows.checked_mul(cols)?).ok()?;
        fill(&mut out, cols, &tiles);
        T::into_values(out)
    });
    let blocks = vec![Block {
        place: whole,
        data: BlockData::Dense(values),
    }];
    let len = (src.offset() - base) as usize;
    Some((Object::read_in(header, blocks, base, Dialect::Spec), len))
}

/// Copies every tile into `out` (row-major, `cols` wide), each thread a band of rows.
fn fill<T: Element>(out: &mut [T], cols: usize, tiles: &[Tile<'_>]) {
    let rows = out.len() / cols;
    let threads = if std::mem::size_of_val(out) < PARALLEL_FROM {
        1
    } else {
        workers().min(rows)
    };
    let per_thread = rows.div_ceil(threads);
    on_every_core(
        out.chunks_mut(per_thread * cols).enumerate(),
        |(k, band)| fill_rows(band, k * per_thread, cols, tiles),
    );
}

/// Copies the rows of every tile that fall in `band`, rows `first..` of the matrix.
fn fill_rows<T: Element>(band: &mut [T], first: usize, cols: usize, tiles: &[Tile<'_>]) {
    let end = first + band.len() / cols;
    let size = std::mem::size_of::<T>();
    for tile in tiles {
        let p = tile.place;
        let (r0, c0, width) = (p.row as usize, p.col as usize, p.cols as usize);
        for r in r0.max(first)..(r0 + p.rows as usize).min(end) {
            let row = &tile.body[(r - r0) * width * size..][..width * size];
            let at = (r - first) * cols + c0;
            copy_le_into(row, &mut band[at..at + width]);
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;

    use super::*;
    use crate::{from_slice, to_vec_with, Dense, DenseView, Error, Options};

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
            let options = Options::new().tile(tile.0, tile.1);
            let bytes = to_vec_with(&DenseView(a.view()), &options).unwrap();
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

    /// Objects this path does not take go the general way: one block, narrowing a value
    /// type the reader would have to check, blocks of several types, and malformed input,
    /// whose error is the general read's.
    #[test]
    fn other_objects_are_left_to_the_general_read() {
        let a = matrix(6, 6);
        let untiled = to_vec_with(&DenseView(a.view()), &Options::new()).unwrap();
        assert!(read_dense_tiles(&untiled, 0, ValueType::U16).is_none());
        let tiled = to_vec_with(&DenseView(a.view()), &Options::new().tile(4, 4)).unwrap();
        assert!(read_dense_tiles(&tiled, 0, ValueType::U8).is_none());
        assert!(read_dense_tiles(&tiled, 0, ValueType::I16).is_none());
        let mut mixed = a.clone();
        mixed.slice_mut(ndarray::s![4.., 4..]).fill(0);
        let mixed = to_vec_with(&DenseView(mixed.view()), &Options::new().tile(4, 4)).unwrap();
        assert!(read_dense_tiles(&mixed, 0, ValueType::U16).is_none());
        let truncated = &tiled[..tiled.len() - 1];
        assert!(read_dense_tiles(truncated, 0, ValueType::U16).is_none());
        let general = Object::decode(&mut SliceSource::new(truncated)).unwrap_err();
        let typed = from_slice::<Dense<u16>>(truncated).unwrap_err();
        assert!(matches!(typed, Error::UnexpectedEof { .. }));
        assert_eq!(typed.to_string(), general.to_string());
    }
}
