//! Rows of an object's columns written into the JVM's column buffers, each value in the type
//! Spark gives the column ([`dbdf::plan::Widened`]), as the Python source gives them.

use std::ops::Range;

use dbdf::plan::Widened;
use serde_daphne::{with_value_type, DbdfFile, Element, Error, FileReader, Header, Result, Values};

/// Rows `rows` of the columns at `columns` of object `object` into `outs`, one buffer per
/// column, each holding at least the rows in the column's widened type.
///
/// # Errors
/// An object that is not a matrix or frame; columns or rows outside it; a buffer too small
/// for its column's rows; the file's errors.
pub fn read_rows(
    file: &mut DbdfFile<FileReader>,
    object: usize,
    rows: Range<u64>,
    columns: &[usize],
    outs: &mut [&mut [u8]],
) -> Result<()> {
    if columns.len() != outs.len() {
        return Err(Error::invalid(format!(
            "{} columns asked for, {} buffers given",
            columns.len(),
            outs.len()
        )));
    }
    if columns.is_empty() {
        return Ok(());
    }
    let header = match file.objects().get(object) {
        Some(info) => info.header.clone(),
        None => return Err(Error::invalid(format!("the file has no object {object}"))),
    };
    let n = usize::try_from(rows.end.saturating_sub(rows.start))
        .map_err(|_| Error::invalid("more rows than this machine addresses"))?;
    match header {
        Header::Frame { .. } => {
            let frame = file.read_frame_columns(object, rows, columns)?;
            for (values, out) in frame.into_columns()?.iter().zip(outs.iter_mut()) {
                put_values(values, n, out)?;
            }
            Ok(())
        }
        Header::DenseMatrix { value_type, .. } | Header::CsrMatrix { value_type, .. } => {
            with_value_type!(value_type, T => matrix::<T>(file, object, rows, columns, outs))
        }
        other => Err(Error::invalid(format!(
            "a {} is not a table",
            other.data_type()
        ))),
    }
}

/// The window of the columns' span, then each column out of it.
fn matrix<T: Widened>(
    file: &mut DbdfFile<FileReader>,
    object: usize,
    rows: Range<u64>,
    columns: &[usize],
    outs: &mut [&mut [u8]],
) -> Result<()> {
    let lo = columns.iter().copied().min().unwrap_or(0);
    let hi = columns.iter().copied().max().map_or(0, |c| c + 1);
    let window = file.read_window::<T>(object, rows, lo as u64..hi as u64)?;
    for (&col, out) in columns.iter().zip(outs.iter_mut()) {
        let column = window.column(col - lo);
        put(column.iter().copied(), column.len(), out)?;
    }
    Ok(())
}

fn put_values(values: &Values, n: usize, out: &mut [u8]) -> Result<()> {
    with_value_type!(values.value_type(), T => {
        let given = T::slice_of(values).unwrap_or_default();
        if given.len() != n {
            return Err(Error::invalid(format!("a column of {} rows, {n} asked for", given.len())));
        }
        put(given.iter().copied(), n, out)
    })
}

/// `n` values widened into `out`, byte by byte: the JVM's buffers need not be aligned for
/// the widest types (a 128-bit decimal).
fn put<T: Widened>(values: impl Iterator<Item = T>, n: usize, out: &mut [u8]) -> Result<()> {
    let size = std::mem::size_of::<T::Out>();
    let bytes = n
        .checked_mul(size)
        .filter(|&b| b <= out.len())
        .ok_or_else(|| {
            Error::invalid(format!(
                "a column buffer of {} bytes for {n} values of {size} bytes",
                out.len()
            ))
        })?;
    for (cell, v) in out[..bytes].chunks_exact_mut(size).zip(values) {
        cell.copy_from_slice(bytemuck::bytes_of(&v.widened()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::read_rows;
    use serde_daphne::{Columns, DbdfFile};

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dbdf-spark-fill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn unsigned_columns_widen_exactly_into_spark_types() {
        let mut columns = Columns::new();
        columns.push("u8", vec![0u8, 255, 7]).unwrap();
        columns.push("u64", vec![0u64, u64::MAX, 1 << 63]).unwrap();
        columns.push("f32", vec![1.5f32, -0.0, f32::MAX]).unwrap();
        let path = temp("f.dbdf");
        serde_daphne::to_file(&path, &columns).unwrap();
        let mut file = DbdfFile::open(&path).unwrap();
        // Rows 1..3 of u64, u8 and f32, in that order.
        let (mut a, mut b, mut c) = (vec![0u8; 32], vec![0u8; 4], vec![0u8; 8]);
        let mut outs = [&mut a[..], &mut b[..], &mut c[..]];
        read_rows(&mut file, 0, 1..3, &[1, 0, 2], &mut outs).unwrap();
        let decimals: Vec<i128> = a
            .chunks(16)
            .map(|d| i128::from_le_bytes(d.try_into().unwrap()))
            .collect();
        assert_eq!(decimals, vec![u64::MAX as i128, 1i128 << 63]);
        assert_eq!(b, [255, 0, 7, 0]); // i16 little-endian: 255, 7
        assert_eq!(c[..4], (-0.0f32).to_le_bytes());
        assert_eq!(c[4..], f32::MAX.to_le_bytes());
        // A buffer too small for its rows is refused, nothing written past it.
        let mut small = [0u8; 2];
        let err = read_rows(&mut file, 0, 0..3, &[0], &mut [&mut small[..]]).unwrap_err();
        assert!(
            err.to_string()
                .contains("a column buffer of 2 bytes for 3 values"),
            "{err}"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_matrix_window_is_split_into_the_columns_asked_for() {
        let m = ndarray::Array2::from_shape_fn((5, 4), |(i, j)| (10 * i + j) as i32);
        let path = temp("m.dbdf");
        serde_daphne::to_file(&path, &serde_daphne::DenseView(m.view())).unwrap();
        let mut file = DbdfFile::open(&path).unwrap();
        let (mut a, mut b) = (vec![0u8; 12], vec![0u8; 12]);
        read_rows(&mut file, 0, 2..5, &[3, 1], &mut [&mut a[..], &mut b[..]]).unwrap();
        let ints = |v: &[u8]| -> Vec<i32> {
            v.chunks(4)
                .map(|d| i32::from_le_bytes(d.try_into().unwrap()))
                .collect()
        };
        assert_eq!(ints(&a), vec![23, 33, 43]);
        assert_eq!(ints(&b), vec![21, 31, 41]);
        std::fs::remove_file(&path).unwrap();
    }
}
