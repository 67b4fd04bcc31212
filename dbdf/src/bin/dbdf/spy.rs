//! `dbdf spy`: the sparsity pattern, as braille in the terminal or as a PNG.

use std::path::Path;
use std::process::ExitCode;

use dbdf::convert::Format;
use serde_daphne::{Header, Options};

use crate::files::read_objects;
use crate::{emit, Failure};
use dbdf::convert::write_output;

/// Visits every non-zero (row, column) of the matrix drawn, once.
type Visit<'v> = Box<dyn FnMut(&mut dyn FnMut(u64, u64)) -> Result<(), Failure> + 'v>;

/// Non-zero counts on a `width x height` grid over a `rows x cols` matrix.
fn density(
    (rows, cols): (u64, u64),
    visit: &mut Visit<'_>,
    width: usize,
    height: usize,
) -> Result<Vec<u64>, Failure> {
    let mut grid = vec![0u64; width * height];
    visit(&mut |r, c| {
        let y = (u128::from(r) * height as u128 / u128::from(rows.max(1))) as usize;
        let x = (u128::from(c) * width as u128 / u128::from(cols.max(1))) as usize;
        grid[y.min(height - 1) * width + x.min(width - 1)] += 1;
    })?;
    Ok(grid)
}

/// The first object of `file` (in `from`'s format, by default the extension's): its
/// header, its non-zeros where the format counts them, and a visit of its non-zeros. A
/// `.dbdf` file is read whole; other formats band by band.
fn first_object<'f>(
    file: &'f Path,
    from: Option<Format>,
) -> Result<(Header, Option<u64>, Visit<'f>), Failure> {
    if crate::inputs::format_of(file, from) == Format::Dbdf {
        let (objects, _) = read_objects(file, &Options::new())?;
        let object = objects.into_iter().next().map(|(o, _)| o);
        let object = object.ok_or_else(|| Failure::at(file, "holds no object to draw"))?;
        let (header, nnz) = (object.header().clone(), object.nnz());
        let visit = move |f: &mut dyn FnMut(u64, u64)| {
            object.for_each_nonzero(|r, c, _| f(r, c));
            Ok(())
        };
        return Ok((header, Some(nnz), Box::new(visit)));
    }
    let options = crate::inputs::options(from);
    let mut opened = crate::inputs::open(file, &options)?;
    let header = opened.source.headers().first().cloned();
    let header = header.ok_or_else(|| Failure::at(file, "holds no object to draw"))?;
    let visit = move |f: &mut dyn FnMut(u64, u64)| {
        let source = &mut opened.source;
        source
            .for_each_band(0, 1, &mut |band| {
                band.for_each_nonzero(|r, c, _| f(r, c));
                Ok(true)
            })
            .map_err(|e| Failure::at(file, e))
    };
    Ok((header, None, Box::new(visit)))
}

/// Height for a picture `width` wide keeping the matrix's aspect (`cell_aspect` = a cell's
/// height over its width).
fn height_for(rows: u64, cols: u64, width: usize, cell_aspect: f64, max: usize) -> usize {
    let h = (rows as f64 / cols.max(1) as f64 * width as f64 / cell_aspect).round() as usize;
    h.clamp(1, max)
}

/// Draws the first object of `file`, in `from`'s format (by default the extension's).
pub fn run(
    file: &Path,
    from: Option<Format>,
    width: Option<usize>,
    png: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let (header, nnz, mut visit) = first_object(file, from)?;
    if !header.data_type().is_matrix() {
        return Err(Failure::at(
            file,
            format!("a {} has no sparsity pattern to draw", header.data_type()),
        ));
    }
    let (rows, cols) = header.shape();
    if let Some(png) = png {
        let w = width.unwrap_or(512).clamp(1, 8192);
        let h = height_for(rows, cols, w, 1.0, 8192);
        let grid = density((rows, cols), &mut visit, w, h)?;
        let cells = (rows as f64 / h as f64).max(1.0) * (cols as f64 / w as f64).max(1.0);
        // Any non-zero cell is clearly dark; full cells are black.
        let pixels: Vec<u8> = grid
            .iter()
            .map(|&n| {
                if n == 0 {
                    255
                } else {
                    (96.0 * (1.0 - (n as f64 / cells).min(1.0))) as u8
                }
            })
            .collect();
        write_output(png, |out| {
            out.write_all(&encode_png(w, h, &pixels))
                .map_err(|e| Failure::at(png, e))
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    // Braille: 2 x 4 dots per character.
    let chars_w = width.unwrap_or(64).clamp(1, 1000);
    let (dots_w, dots_h) = (chars_w * 2, height_for(rows, cols, chars_w * 2, 1.0, 4000));
    let grid = density((rows, cols), &mut visit, dots_w, dots_h)?;
    const BITS: [[u32; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
    let mut text = format!(
        "{}: {} {rows} x {cols}, {} non-zeros\n",
        file.display(),
        header.data_type(),
        nnz.unwrap_or_else(|| grid.iter().sum())
    );
    for cy in 0..dots_h.div_ceil(4) {
        let mut line = String::with_capacity(chars_w * 3);
        for cx in 0..chars_w {
            let mut bits = 0;
            for (dx, column) in BITS.iter().enumerate() {
                for (dy, bit) in column.iter().enumerate() {
                    let (x, y) = (cx * 2 + dx, cy * 4 + dy);
                    if y < dots_h && grid[y * dots_w + x] > 0 {
                        bits |= bit;
                    }
                }
            }
            line.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
        }
        text += &line;
        text.push('\n');
    }
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// A grayscale PNG: IHDR, one zlib-compressed IDAT (miniz_oxide), IEND, each with its
/// CRC-32 (crc32fast), both crates the library already uses.
fn encode_png(width: usize, height: usize, pixels: &[u8]) -> Vec<u8> {
    let mut raw = Vec::with_capacity((width + 1) * height);
    for row in pixels.chunks(width.max(1)) {
        raw.push(0); // no filter
        raw.extend_from_slice(row);
    }
    let zlib = miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&(width as u32).to_be_bytes());
    ihdr.extend_from_slice(&(height as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit grayscale
    for (kind, data) in [
        (b"IHDR", &ihdr[..]),
        (b"IDAT", &zlib[..]),
        (b"IEND", &[][..]),
    ] {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = png.len();
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        let crc = crc32fast::hash(&png[start..]);
        png.extend_from_slice(&crc.to_be_bytes());
    }
    png
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_chunks_decode_to_the_pixels() {
        let pixels = [0u8, 255, 128, 7, 8, 9];
        let png = encode_png(3, 2, &pixels);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: 13 bytes, 3 x 2, 8-bit grayscale.
        assert_eq!(&png[8..16], b"\0\0\0\x0dIHDR");
        assert_eq!(&png[16..29], &[0, 0, 0, 3, 0, 0, 0, 2, 8, 0, 0, 0, 0]);
        let idat_len = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
        assert_eq!(&png[37..41], b"IDAT");
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&png[41..41 + idat_len]).unwrap();
        assert_eq!(raw, [0, 0, 255, 128, 0, 7, 8, 9]);
        // Every PNG ends with the same IEND chunk, CRC included (PNG specification).
        assert_eq!(&png[png.len() - 12..], b"\0\0\0\0IEND\xae\x42\x60\x82");
    }
}
