//! MatrixMarket array files (every value, column by column) written as a tiled `.dbdf` a band
//! of tile columns at a time: the values of `tile.1` columns are gathered, then written as
//! the tiles of that band (the streaming writer takes tiles in any order), so memory holds one
//! band of columns, never the matrix.

use std::io::{BufRead, BufReader};
use std::path::Path;

use ndarray::ArrayView2;

use super::entries::Symmetry;
use super::head::{parse_head, read_head, MTX};
use crate::text::parse_value;
use serde_daphne::__private::io::progress::Progress;
use serde_daphne::__private::io::DbdfWriter;
use serde_daphne::__private::options::{Dialect, Options};
use serde_daphne::__private::wire::values::with_value_type;
use serde_daphne::__private::wire::{Element, Header, ValueType};
use serde_daphne::{Error, Result};

/// Writes the MatrixMarket array file at `input` as a `.dbdf` at `output` tiled as `options`
/// say, a band of tile columns at a time (integer files without this crate's type comment
/// are read once more first: they are `u64` when a value exceeds `i64::MAX`). `false` (and
/// nothing written) where the file cannot stream so: coordinate files, symmetric ones (each
/// value is also its mirror's, and a band of columns needs every earlier column), no tile
/// size, or the runtime dialect (one block).
///
/// # Errors
/// [`serde_daphne::ErrorKind::ForeignInput`] naming the line and what is wrong (a malformed value, too few or
/// too many values); [`DbdfWriter`]'s errors; I/O errors. Nothing is left at `output`.
pub(crate) fn array_to_dbdf(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: Option<&Progress>,
) -> Result<bool> {
    let runtime = options.dialect == Some(Dialect::Runtime);
    let Some((tile_rows, tile_cols)) = options.tile.filter(|_| !runtime) else {
        return Ok(false);
    };
    let (tile_rows, band_width) = (u64::from(tile_rows).max(1), u64::from(tile_cols).max(1));
    let file = std::fs::File::open(input)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let (head, _, mut line_number) = read_head(&mut reader).map_err(|e| MTX.error(e))?;
    let head = parse_head(&head).map_err(|e| MTX.error(e))?;
    let streams = !head.coordinate && head.symmetry == Symmetry::General;
    let [rows, cols] = head.dims[..] else {
        return Ok(false);
    };
    if !streams {
        return Ok(false);
    }
    let vt = match head.value_type {
        ValueType::I64 if !head.typed_by_comment => match integer_type(input, line_number)? {
            Some(vt) => vt,
            None => return Ok(false), // the whole read says what is wrong
        },
        vt => vt,
    };
    let mut writer = DbdfWriter::create_with(output, options)?;
    writer.begin(Header::DenseMatrix {
        rows,
        cols,
        value_type: vt,
    })?;
    let mut line = String::new();
    // The next value's text and line number, blank lines skipped.
    let mut next_value = |line: &mut String| -> Result<Option<usize>> {
        loop {
            line.clear();
            if reader.read_line(line)? == 0 {
                return Ok(None);
            }
            line_number += 1;
            if !line.trim().is_empty() {
                return Ok(Some(line_number));
            }
        }
    };
    with_value_type!(vt, T => {
        // Column-major, `rows` values per column of the band.
        let mut band: Vec<T> = Vec::new();
        let mut tile: Vec<T> = Vec::new();
        for c0 in (0..cols).step_by(band_width as usize) {
            let width = band_width.min(cols - c0);
            band.clear();
            for k in 0..rows * width {
                let Some(n) = next_value(&mut line)? else {
                    return Err(MTX.error(format!(
                        "expected {} values after the size line, found {}",
                        rows * cols,
                        c0 * rows + k
                    )));
                };
                let value = parse_value(&line, vt)
                    .and_then(T::from_value)
                    .ok_or_else(|| MTX.error(format!("line {n}: malformed {vt} number {:?}", line.trim())))?;
                band.push(value);
            }
            // Each tile of the band, row-major.
            for r0 in (0..rows).step_by(tile_rows as usize) {
                let height = tile_rows.min(rows - r0);
                tile.clear();
                for r in r0..r0 + height {
                    tile.extend((0..width).map(|c| band[(c * rows + r) as usize]));
                }
                let view = ArrayView2::from_shape((height as usize, width as usize), &tile)
                    .map_err(|e| Error::invalid(e.to_string()))?;
                writer.write_dense_tile(r0, c0, view)?;
            }
            if let Some(report) = progress {
                // Columns done, as values (the file's bytes per value vary).
                report((c0 + width) * rows, rows * cols);
            }
        }
    });
    if let Some(n) = next_value(&mut line)? {
        return Err(MTX.error(format!(
            "line {n}: more than the {} values the size line declares",
            rows * cols
        )));
    }
    writer.finish()?;
    Ok(true)
}

/// The value type of an integer array file without a type comment, from a first pass over
/// its values (after line `head_lines`): `i64`, or `u64` when a value exceeds `i64::MAX`.
/// `None` for a file the whole read refuses (a negative value beside such a one, or a value
/// that is no integer), whose error it words.
fn integer_type(input: &Path, head_lines: usize) -> Result<Option<ValueType>> {
    let mut reader = BufReader::with_capacity(1 << 20, std::fs::File::open(input)?);
    let mut line = String::new();
    let (mut lines, mut negative, mut beyond) = (0usize, false, false);
    while reader.read_line(&mut line)? > 0 {
        lines += 1;
        let text = line.trim();
        if lines > head_lines && !text.is_empty() {
            match text.parse::<i64>() {
                Ok(x) => negative |= x < 0,
                Err(_) if text.parse::<u64>().is_ok() => beyond = true,
                Err(_) => return Ok(None),
            }
        }
        line.clear();
    }
    Ok(match (negative, beyond) {
        (true, true) => None,
        (_, true) => Some(ValueType::U64),
        _ => Some(ValueType::I64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Untyped integer files stream (after a first pass for their type); symmetric ones, and
    /// integers no type holds, are left to the whole read.
    #[test]
    fn which_array_files_stream() {
        let dir =
            std::env::temp_dir().join(format!("serde_daphne_mtx_array_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (input, output) = (dir.join("a.mtx"), dir.join("a.dbdf"));
        let head = "%%MatrixMarket matrix array";
        for (text, streams, vt) in [
            ("integer general\n2 1\n-1\n2\n", true, ValueType::I64),
            (
                "integer general\n2 1\n1\n18446744073709551615\n",
                true,
                ValueType::U64,
            ),
            (
                "integer general\n2 1\n-1\n18446744073709551615\n",
                false,
                ValueType::U64,
            ),
            ("real symmetric\n2 2\n1\n2\n3\n", false, ValueType::F64),
        ] {
            std::fs::write(&input, format!("{head} {text}")).unwrap();
            let _ = std::fs::remove_file(&output);
            let options = Options::new().tile(1, 1);
            assert_eq!(
                array_to_dbdf(&input, &output, &options, None).unwrap(),
                streams,
                "{text}"
            );
            if streams {
                let file = serde_daphne::DbdfFile::open(&output).unwrap();
                assert_eq!(
                    file.objects()[0].header.matrix_value_type(),
                    Some(vt),
                    "{text}"
                );
            } else {
                assert!(!output.exists());
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
