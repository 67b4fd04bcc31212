//! A tiled dense matrix laid out before any value is written: every tile's place in the file
//! is fixed by the shape, the value type and the tile size alone, so that any number of
//! writers, in any processes, fill the tiles in any order with positional writes and no lock
//! (as each chunk of a Zarr array has its own object). The file is built under a temporary
//! name beside the target and renamed over it once every tile is written.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::BlockIndex;
use crate::error::{Error, Result};
use crate::wire::extents::Extents;
use crate::wire::{Element, Header, ValueType};
use crate::DataType;

/// Bytes of a dense block's entry before its values: `rx`, `cx` (u64), `#r`, `#c` (u32),
/// `bt` and `vt` (u8), as `docs/wire-format.md` lays them out.
const DENSE_ENTRY_HEAD: u64 = 8 + 8 + 4 + 4 + 1 + 1;

/// The layout of a dense matrix stored as tiles of one size on the grid from (0, 0), a row of
/// tiles after another, each tile one dense block: where each tile's values go.
///
/// ```
/// use serde_daphne::{DenseLayout, ValueType};
///
/// let target = std::env::temp_dir().join("serde_daphne_doc_layout.dbdf");
/// let layout = DenseLayout::new(3, 4, ValueType::F64, (2, 2))?;
/// let scratch = layout.create_scratch(&target)?;
/// // Any process may write any tile, in any order.
/// for (row, col) in [(2, 2), (0, 0), (2, 0), (0, 2)] {
///     let (rows, cols) = layout.tile_shape(row, col)?;
///     let values: Vec<f64> = (0..rows * cols).map(|i| (row * 10 + col) as f64 + i as f64).collect();
///     layout.write_tile_at(&scratch, row, col, &values)?;
/// }
/// layout.commit(&scratch, &target, false)?;
/// let m: ndarray::Array2<f64> = serde_daphne::from_file::<_, serde_daphne::Dense<f64>>(&target)?.0;
/// // The tile at (2, 2) is 1 x 2: (2, 3) is its second value.
/// assert_eq!(m[[2, 3]], 22.0 + 1.0);
/// # std::fs::remove_file(&target).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseLayout {
    header: Header,
    tile: (u32, u32),
    header_len: u64,
}

impl DenseLayout {
    /// The layout of a `rows x cols` dense matrix of `value_type` in tiles of `tile` (rows,
    /// columns; those of the last row and column of tiles are cut at the edges).
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] for a matrix without cells (it has no tiles to
    /// write) or a tile with a zero dimension; a file longer than `u64::MAX` bytes.
    pub fn new(rows: u64, cols: u64, value_type: ValueType, tile: (u32, u32)) -> Result<Self> {
        if rows == 0 || cols == 0 {
            return Err(Error::invalid(format!(
                "a {rows} x {cols} matrix has no tiles to write: write it whole"
            )));
        }
        if tile.0 == 0 || tile.1 == 0 {
            return Err(Error::invalid(format!(
                "a tile of {} x {} has no cells",
                tile.0, tile.1
            )));
        }
        let header = Header::matrix(DataType::DenseMatrix, rows, cols, value_type);
        let layout = DenseLayout {
            header_len: header.encoded_len() as u64,
            header,
            tile,
        };
        let (grid_rows, grid_cols) = layout.grid();
        let values = (u128::from(rows) * u128::from(cols)).checked_mul(value_type.size() as u128);
        let total = (u128::from(grid_rows) * u128::from(grid_cols))
            .checked_mul(u128::from(DENSE_ENTRY_HEAD))
            .zip(values)
            .and_then(|(heads, values)| heads.checked_add(values))
            .and_then(|body| body.checked_add(u128::from(layout.header_len)))
            .unwrap_or(u128::MAX);
        if total > u128::from(u64::MAX) {
            return Err(Error::invalid(format!(
                "a {rows} x {cols} matrix of {value_type} is {total} bytes: too large for a file"
            )));
        }
        Ok(layout)
    }

    /// The matrix's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The tile size, rows and columns.
    pub fn tile(&self) -> (u32, u32) {
        self.tile
    }

    /// How many rows and columns of tiles the matrix has.
    fn grid(&self) -> (u64, u64) {
        let (rows, cols) = self.header.shape();
        (
            rows.div_ceil(u64::from(self.tile.0)),
            cols.div_ceil(u64::from(self.tile.1)),
        )
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        let (grid_rows, _) = self.grid();
        self.band_start(grid_rows)
    }

    /// Each tile's top-left cell, a row of tiles after another (the order of the file).
    pub(crate) fn tile_origins(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        let (grid_rows, grid_cols) = self.grid();
        let (tr, tc) = (u64::from(self.tile.0), u64::from(self.tile.1));
        (0..grid_rows * grid_cols).map(move |k| (k / grid_cols * tr, k % grid_cols * tc))
    }

    /// The shape of the tile whose top-left cell is (`row`, `col`).
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] when no tile starts there.
    pub fn tile_shape(&self, row: u64, col: u64) -> Result<(usize, usize)> {
        let (rows, cols) = self.header.shape();
        let (tr, tc) = (u64::from(self.tile.0), u64::from(self.tile.1));
        if !row.is_multiple_of(tr) || !col.is_multiple_of(tc) || row >= rows || col >= cols {
            return Err(Error::invalid(format!(
                "no tile starts at ({row}, {col}): tiles of {tr} x {tc} tile a {rows} x {cols} \
                 matrix from (0, 0)"
            )));
        }
        Ok((tr.min(rows - row) as usize, tc.min(cols - col) as usize))
    }

    /// Where the entries of the row of tiles starting at tile row `band` begin.
    fn band_start(&self, band: u64) -> u64 {
        let (rows, cols) = self.header.shape();
        let (_, grid_cols) = self.grid();
        let size = self.header.matrix_value_type().map_or(1, ValueType::size) as u64;
        let rows_before = (band * u64::from(self.tile.0)).min(rows);
        self.header_len + band * grid_cols * DENSE_ENTRY_HEAD + rows_before * cols * size
    }

    /// Where the entry of the tile at (`row`, `col`) starts (its block's `rx`).
    fn entry_start(&self, row: u64, col: u64) -> u64 {
        let (tr, tc) = (u64::from(self.tile.0), u64::from(self.tile.1));
        let size = self.header.matrix_value_type().map_or(1, ValueType::size) as u64;
        let band_rows = self.tile_shape(row, 0).map_or(0, |(r, _)| r as u64);
        // Tiles to the left in this row of tiles are full width.
        self.band_start(row / tr) + (col / tc) * (DENSE_ENTRY_HEAD + band_rows * tc * size)
    }

    /// Where the values of the tile at (`row`, `col`) start in the file, and how many bytes
    /// they take.
    ///
    /// # Errors
    /// As [`DenseLayout::tile_shape`].
    fn tile_values(&self, row: u64, col: u64) -> Result<(u64, u64)> {
        let (rows, cols) = self.tile_shape(row, col)?;
        let size = self.header.matrix_value_type().map_or(1, ValueType::size) as u64;
        Ok((
            self.entry_start(row, col) + DENSE_ENTRY_HEAD,
            (rows * cols) as u64 * size,
        ))
    }

    /// Creates the file at a new temporary path beside `target` (removing those its dead
    /// writers left), at its full length, with the header and every block's entry head in
    /// place; the values read as zeros until written. Returns the path, for
    /// [`DenseLayout::write_tile_at`] and [`DenseLayout::commit`].
    ///
    /// # Errors
    /// I/O errors.
    pub fn create_scratch(&self, target: &Path) -> Result<PathBuf> {
        super::remove_stale_temporaries(target);
        let scratch = super::temporary_path(target);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&scratch)?;
        let written = self.write_heads(&file);
        if written.is_err() {
            let _ = std::fs::remove_file(&scratch);
        }
        written.map(|()| scratch)
    }

    fn write_heads(&self, file: &File) -> Result<()> {
        file.set_len(self.file_len())?;
        write_all_at(file, &self.header_bytes()?, 0)?;
        for (row, col) in self.tile_origins() {
            write_all_at(
                file,
                &self.entry_head(row, col)?,
                self.entry_start(row, col),
            )?;
        }
        Ok(())
    }

    fn header_bytes(&self) -> Result<Vec<u8>> {
        let mut header = Vec::with_capacity(self.header_len as usize);
        self.header.encode(&mut header)?;
        Ok(header)
    }

    /// The entry head of the tile at (`row`, `col`): its position, shape and types.
    fn entry_head(&self, row: u64, col: u64) -> Result<Vec<u8>> {
        let (rows, cols) = self.tile_shape(row, col)?;
        let vt = self.header.matrix_value_type().unwrap_or(ValueType::F64);
        let mut head = Vec::with_capacity(DENSE_ENTRY_HEAD as usize);
        head.extend_from_slice(&row.to_le_bytes());
        head.extend_from_slice(&col.to_le_bytes());
        head.extend_from_slice(&(rows as u32).to_le_bytes());
        head.extend_from_slice(&(cols as u32).to_le_bytes());
        head.push(crate::BlockType::Dense.code());
        head.push(vt.code());
        Ok(head)
    }

    /// How many of the file's first bytes [`DenseLayout::block_index`] takes.
    pub const PREFIX: usize = crate::wire::probe::MATRIX_PROBE_LEN;

    /// The file's bytes for the rows `first_row..` that `values` holds (whole rows, every
    /// column, row-major, in the matrix's value type), from the start of the row of tiles
    /// `first_row` begins (the header first, from row 0) to the end of the one the rows end
    /// with; and the offset they go at. The rows must be whole rows of tiles (the last may
    /// end with the matrix): a part of an upload whose parts any process sends, in the
    /// order of the file.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] for rows that are not whole rows of tiles, or
    /// values of another type.
    pub fn band_bytes<T: Element>(&self, first_row: u64, values: &[T]) -> Result<(u64, Vec<u8>)> {
        let (rows, cols) = self.header.shape();
        let tr = u64::from(self.tile.0);
        let band_rows = values.len() as u64 / cols;
        let end_row = first_row.saturating_add(band_rows);
        let whole = values.len() as u64 == band_rows * cols
            && first_row.is_multiple_of(tr)
            && end_row <= rows
            && (end_row.is_multiple_of(tr) || end_row == rows);
        if !whole || band_rows == 0 || self.header.matrix_value_type() != Some(T::VALUE_TYPE) {
            return Err(Error::invalid(format!(
                "{} {} values from row {first_row} are not whole rows of tiles of {tr} rows \
                 of a {rows} x {cols} matrix of {}",
                values.len(),
                T::VALUE_TYPE,
                self.header
                    .matrix_value_type()
                    .map_or_else(|| "?".into(), |v| v.to_string())
            )));
        }
        let at = match first_row {
            0 => 0,
            _ => self.band_start(first_row / tr),
        };
        let end = self.band_start(end_row.div_ceil(tr));
        let mut out = Vec::with_capacity((end - at) as usize);
        if first_row == 0 {
            out.extend_from_slice(&self.header_bytes()?);
        }
        let tc = self.tile.1 as usize;
        for row in (first_row..end_row).step_by(tr as usize) {
            let height = tr.min(end_row - row) as usize;
            let band = &values[((row - first_row) * cols) as usize..][..height * cols as usize];
            for col in (0..cols).step_by(tc) {
                out.extend_from_slice(&self.entry_head(row, col)?);
                let c0 = col as usize;
                let c1 = (c0 + tc).min(cols as usize);
                for r in 0..height {
                    T::write_le(
                        &band[r * cols as usize + c0..r * cols as usize + c1],
                        &mut out,
                    )?;
                }
            }
        }
        debug_assert_eq!(at + out.len() as u64, end);
        Ok((at, out))
    }

    /// The block index of the file ([`BlockIndex`]) from the layout and `prefix`, the file's
    /// first bytes (the first [`DenseLayout::band_bytes`]' first [`DenseLayout::PREFIX`]):
    /// what a walk over the finished file would give (telling its dialect reads a few bytes
    /// past the first tile's head).
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] for a prefix too short or of another file.
    pub fn block_index(&self, prefix: &[u8]) -> Result<BlockIndex> {
        let expected = (Self::PREFIX as u64).min(self.file_len()) as usize;
        let header = self.header_bytes()?;
        if prefix.len() != expected || !prefix.starts_with(&header) {
            return Err(Error::invalid(format!(
                "{} bytes are not the first {expected} of this layout's file",
                prefix.len()
            )));
        }
        let mut kept = Extents::default();
        kept.push(0, prefix);
        for (row, col) in self.tile_origins() {
            kept.push(self.entry_start(row, col), &self.entry_head(row, col)?);
        }
        BlockIndex::of_kept(kept.finish(), self.file_len())
            .ok_or_else(|| Error::invalid("internal: a dense layout's headers do not walk"))
    }

    /// Writes the values of the tile at (`row`, `col`) (row-major, exactly the tile's cells,
    /// in the matrix's value type) into `file` at their place.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] for no tile there, a count of values other than
    /// the tile's or values of another type; I/O errors.
    fn write_tile<T: Element>(&self, file: &File, row: u64, col: u64, values: &[T]) -> Result<()> {
        let (rows, cols) = self.tile_shape(row, col)?;
        let vt = self.header.matrix_value_type();
        if vt != Some(T::VALUE_TYPE) {
            return Err(Error::invalid(format!(
                "{} values for a matrix of {}",
                T::VALUE_TYPE,
                vt.map_or_else(|| "?".into(), |v| v.to_string())
            )));
        }
        if values.len() != rows * cols {
            return Err(Error::invalid(format!(
                "the tile at ({row}, {col}) has {rows} x {cols} cells, not {}",
                values.len()
            )));
        }
        let (at, _) = self.tile_values(row, col)?;
        let mut out = AtWriter { file, at };
        T::write_le(values, &mut out)?;
        Ok(())
    }

    /// Writes the values of the tile at (`row`, `col`) (row-major, exactly the tile's cells,
    /// in the matrix's value type) at their place in the file at `scratch`, which
    /// [`DenseLayout::create_scratch`] made (never created here: a scratch file removed by
    /// an aborted write stays removed).
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] for no tile there, a count of values other than
    /// the tile's or values of another type; the file missing or of another length; I/O
    /// errors.
    pub fn write_tile_at<T: Element>(
        &self,
        scratch: &Path,
        row: u64,
        col: u64,
        values: &[T],
    ) -> Result<()> {
        let file = OpenOptions::new().write(true).open(scratch)?;
        self.check_len(&file, scratch)?;
        self.write_tile(&file, row, col, values)
    }

    fn check_len(&self, file: &File, path: &Path) -> Result<()> {
        let len = file.metadata()?.len();
        if len != self.file_len() {
            return Err(Error::invalid(format!(
                "{} is {len} bytes, not the {} of this layout: another write's file",
                path.display(),
                self.file_len()
            )));
        }
        Ok(())
    }

    /// Names the finished file at `scratch` `target` (replacing it in one step, with a
    /// `.meta` or `.index` an earlier file left there, as one set: [`super::FileSet`]),
    /// synced to disk first when `sync`. Call it once every tile is written: a tile never
    /// written reads as zeros.
    ///
    /// # Errors
    /// A file of another length (then it stays where it is); I/O errors (then the old file
    /// stays, and the scratch file is removed).
    pub fn commit(&self, scratch: &Path, target: &Path, sync: bool) -> Result<()> {
        let file = File::open(scratch)?;
        self.check_len(&file, scratch)?;
        if sync {
            file.sync_all()?;
        }
        let mut set = super::FileSet::new(sync);
        set.named(target, scratch.to_owned());
        set.remove(super::sidecar_path(target));
        set.remove(super::index_path(target));
        set.commit()
    }
}

/// Writes at a position of a file, as a [`Write`] that moves on by what it wrote.
struct AtWriter<'f> {
    file: &'f File,
    at: u64,
}

impl Write for AtWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_all_at(self.file, buf, self.at)?;
        self.at += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], at: u64) -> io::Result<()> {
    // In pieces, for the page cache (see `MOST_PER_WRITE`).
    for (k, piece) in buf.chunks(super::MOST_PER_WRITE).enumerate() {
        let offset = at + (k * super::MOST_PER_WRITE) as u64;
        std::os::unix::fs::FileExt::write_all_at(file, piece, offset)?;
    }
    Ok(())
}

#[cfg(windows)]
fn write_all_at(file: &File, mut buf: &[u8], mut at: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_write(file, buf, at) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout's bytes are what the streaming writer writes for the same tiles in the
    /// same order (the writer's own layout rules, not this file's arithmetic).
    #[test]
    fn same_bytes_as_the_writer() {
        let dir = std::env::temp_dir().join(format!("dense_layout_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (rows, cols, tile) in [(5u64, 7u64, (2u32, 3u32)), (4, 4, (4, 4)), (1, 9, (5, 2))] {
            let target = dir.join(format!("m{rows}x{cols}.dbdf"));
            let layout = DenseLayout::new(rows, cols, ValueType::I32, tile).unwrap();
            let scratch = layout.create_scratch(&target).unwrap();
            let value = |r: u64, c: u64| (r * 100 + c) as i32;
            for (row, col) in layout.tile_origins().rev() {
                let (tr, tc) = layout.tile_shape(row, col).unwrap();
                let values: Vec<i32> = (0..tr * tc)
                    .map(|i| value(row + (i / tc) as u64, col + (i % tc) as u64))
                    .collect();
                layout.write_tile_at(&scratch, row, col, &values).unwrap();
            }
            // A runtime sidecar and a block index of an earlier file there go with it.
            std::fs::write(crate::io::sidecar_path(&target), b"{}").unwrap();
            std::fs::write(crate::io::index_path(&target), b"old").unwrap();
            layout.commit(&scratch, &target, false).unwrap();
            assert!(!crate::io::sidecar_path(&target).exists());
            assert!(!crate::io::index_path(&target).exists());
            let m = ndarray::Array2::from_shape_fn((rows as usize, cols as usize), |(r, c)| {
                value(r as u64, c as u64)
            });
            let options = crate::Options {
                tile: Some(tile),
                block_policy: crate::BlockPolicy::Dense,
                ..crate::Options::new()
            };
            let expected = options.to_vec(&crate::Dense(m)).unwrap();
            assert_eq!(std::fs::read(&target).unwrap(), expected, "{rows} x {cols}");
        }
        assert_eq!(
            crate::io::atomic::tests::names(&dir),
            ["m1x9.dbdf", "m4x4.dbdf", "m5x7.dbdf"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Bands of whole rows of tiles, in order, are the file the writer writes, and the
    /// layout's block index is the one a walk over that file gives.
    #[test]
    fn bands_make_the_writers_bytes_and_index() {
        // The last: one tile, which reads as either dialect until its length tells.
        let cases = [
            (5u64, 7u64, (2u32, 3u32), 4u64),
            (9, 4, (3, 4), 3),
            (2, 3, (2, 3), 2),
        ];
        for (rows, cols, tile, per) in cases {
            let layout = DenseLayout::new(rows, cols, ValueType::I32, tile).unwrap();
            let m = ndarray::Array2::from_shape_fn((rows as usize, cols as usize), |(r, c)| {
                (r * 100 + c) as i32
            });
            let mut file = Vec::new();
            for first in (0..rows).step_by(per as usize) {
                let end = (first + per).min(rows) as usize;
                let band = m.slice(ndarray::s![first as usize..end, ..]).to_owned();
                let (at, bytes) = layout.band_bytes(first, band.as_slice().unwrap()).unwrap();
                assert_eq!(at, file.len() as u64);
                file.extend(bytes);
            }
            let options = crate::Options {
                tile: Some(tile),
                block_policy: crate::BlockPolicy::Dense,
                ..crate::Options::new()
            };
            let expected = options.to_vec(&crate::Dense(m)).unwrap();
            assert_eq!(file, expected, "{rows} x {cols}");
            let source: std::sync::Arc<dyn crate::ReadAt> = std::sync::Arc::new(expected.clone());
            let walked = BlockIndex::of_read_at(source, &crate::Options::new(), None).unwrap();
            let prefix = &file[..DenseLayout::PREFIX.min(file.len())];
            assert_eq!(
                layout.block_index(prefix).unwrap().to_vec(),
                walked.to_vec()
            );
            assert!(layout.block_index(&file[..10]).is_err());
        }
        let layout = DenseLayout::new(5, 7, ValueType::I32, (2, 3)).unwrap();
        assert!(
            layout.band_bytes(1, &[0i32; 14]).is_err(),
            "not a row of tiles' first"
        );
        assert!(
            layout.band_bytes(0, &[0i32; 7]).is_err(),
            "half a row of tiles"
        );
        assert!(layout.band_bytes(0, &[0f64; 14]).is_err(), "another type");
        assert!(
            layout.band_bytes(4, &[0i32; 7]).is_ok(),
            "the last row of tiles"
        );
    }

    #[test]
    fn refuses_what_is_not_a_tile() {
        let layout = DenseLayout::new(5, 7, ValueType::F64, (2, 3)).unwrap();
        assert!(layout.tile_shape(1, 0).is_err());
        assert!(layout.tile_shape(6, 0).is_err());
        let file = tempfile_in_target();
        assert!(layout.write_tile(&file, 0, 0, &[1.0f64; 5]).is_err());
        assert!(layout.write_tile(&file, 0, 0, &[1i32; 6]).is_err());
        assert!(DenseLayout::new(0, 3, ValueType::F64, (2, 2)).is_err());
        assert!(DenseLayout::new(3, 3, ValueType::F64, (0, 2)).is_err());
        assert!(DenseLayout::new(u64::MAX, u64::MAX, ValueType::F64, (1, 1)).is_err());
    }

    fn tempfile_in_target() -> File {
        crate::io::scratch_file(&std::env::temp_dir().join("dense_layout.dbdf")).unwrap()
    }
}
