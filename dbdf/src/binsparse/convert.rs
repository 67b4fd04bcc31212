//! Binsparse arrays to DAPHNE objects and back: index checks, orientation, structures.

use super::{element_error, Array, Format, ValueKind, BINSPARSE};
use crate::input::index_values;
use crate::input::not_in_daphne;
use crate::npy::transpose;
use serde_daphne::lowlevel::CsrFill;
use serde_daphne::lowlevel::RowCounts;
use serde_daphne::with_value_type;
use serde_daphne::with_values;
use serde_daphne::DataType;
use serde_daphne::Element;
use serde_daphne::ErrorDetails;
use serde_daphne::Object;
use serde_daphne::Value;
use serde_daphne::ValueType;
use serde_daphne::Values;
use serde_daphne::{Error, Result};

/// The value array as the descriptor types it: converted exactly from the container's type,
/// `bint8` checked to be 0 or 1; `expected` elements.
pub(super) fn values_as(array: Array, kind: ValueKind, expected: u64) -> Result<Values> {
    let Array {
        values,
        name,
        offset,
        first,
    } = array;
    if values.len() as u64 != expected {
        return Err(BINSPARSE.error(format!(
            "{name} has {} elements, the descriptor implies {expected}",
            values.len()
        )));
    }
    // The values are moved, never copied, when the container's type is the descriptor's.
    let size = values.value_type().size();
    let at = |k: usize, message: String| element_error(&name, offset, size, (first, k), message);
    if kind.bint8 {
        let bytes = match values {
            Values::U8(v) => v,
            Values::I8(v) => v.into_iter().map(|x| x as u8).collect(),
            other => {
                return Err(BINSPARSE.error(format!(
                    "{name} is bint8 in the descriptor but {} in the file",
                    other.value_type()
                )))
            }
        };
        if let Some(k) = bytes.iter().position(|&b| b > 1) {
            return Err(at(
                k,
                format!("the bint8 value {} is neither 0 nor 1", bytes[k]),
            ));
        }
        return Ok(Values::U8(bytes));
    }
    values
        .convert(kind.value_type)
        .map_err(|k| at(k, format!("not exact as {}", kind.value_type)))
}

/// `n` copies of the one value of `values` (an iso array).
pub(super) fn repeat(values: &Values, n: u64) -> Result<Values> {
    let n = usize::try_from(n).map_err(|_| {
        Error::from(ErrorDetails::OutOfMemory {
            bytes: u128::from(n),
        })
    })?;
    with_values!(values, v => {
        let mut out = Vec::new();
        out.try_reserve_exact(n).map_err(|_| Error::from(ErrorDetails::OutOfMemory {
            bytes: (n * std::mem::size_of_val(&v[0])) as u128,
        }))?;
        out.resize(n, v[0]);
        Ok(Element::into_values(out))
    })
}

/// Whether every value has the same bits as the first.
pub(super) fn all_equal(values: &Values) -> bool {
    with_values!(values, v => v.iter().all(|x| bytemuck::bytes_of(x) == bytemuck::bytes_of(&v[0])))
}

/// An index array as `usize`, each element below `bound`.
pub(super) fn indices(array: &Array, bound: u64, what: &str) -> Result<Vec<usize>> {
    index_values(&array.values, bound).map_err(|fault| match fault {
        Some((k, x)) => array.error_at(
            k,
            format!("{x} is not a valid {what} (0 to {})", bound as i128 - 1),
        ),
        None => BINSPARSE.error(format!(
            "{} holds floating-point numbers, not indices",
            array.name
        )),
    })
}

fn dim(shape: &[u64], k: usize) -> u64 {
    shape.get(k).copied().unwrap_or(1)
}

/// Pointers into `nnz` entries: `len` + 1 of them, starting at 0, never decreasing, ending at
/// `nnz`.
fn pointers(array: &Array, len: u64, nnz: u64) -> Result<Vec<usize>> {
    if array.values.len() as u64 != len + 1 {
        return Err(BINSPARSE.error(format!(
            "{} has {} elements, {} expected",
            array.name,
            array.values.len(),
            len + 1
        )));
    }
    let p = indices(array, nnz + 1, "position")?;
    if p[0] != 0 {
        return Err(array.error_at(0, "the first pointer is not 0"));
    }
    if let Some(k) = p.windows(2).position(|w| w[1] < w[0]) {
        return Err(array.error_at(k + 1, "pointers decrease"));
    }
    if p[len as usize] as u64 != nnz {
        return Err(array.error_at(len as usize, format!("the last pointer is not {nnz}")));
    }
    Ok(p)
}

/// Checks that each segment of `minor` (per `ptr`) is strictly increasing.
pub(super) fn check_sorted(array: &Array, ptr: &[usize], minor: &[usize]) -> Result<()> {
    for w in ptr.windows(2) {
        if let Some(k) = minor[w[0]..w[1]].windows(2).position(|p| p[1] <= p[0]) {
            return Err(array.error_at(
                w[0] + k + 1,
                "indices within a row or column must increase (sorted, no duplicates)",
            ));
        }
    }
    Ok(())
}

/// Pointers over `len` from sorted major indices, checked increasing together with `minor`.
fn pointers_from_sorted(
    major: &[usize],
    minor: &[usize],
    len: u64,
    arrays: (&Array, &Array),
) -> Result<Vec<usize>> {
    for k in 1..major.len() {
        if (major[k], minor[k]) <= (major[k - 1], minor[k - 1]) {
            return Err(arrays.0.error_at(
                k,
                "coordinates must be sorted (and not repeat) in the format's order",
            ));
        }
    }
    let mut counts = RowCounts::new(len as usize)?;
    major.iter().for_each(|&m| counts.add(m));
    Ok(counts.into_offsets())
}

/// Compressed arrays over the major dimension.
struct Compressed {
    major: u64,
    minor: u64,
    ptr: Vec<usize>,
    idx: Vec<usize>,
    values: Values,
}

impl Compressed {
    /// The same matrix compressed over the other dimension (entries stay sorted).
    fn transposed(self) -> Result<Compressed> {
        let mut counts = RowCounts::new(self.minor as usize)?;
        self.idx.iter().for_each(|&i| counts.add(i));
        // Each entry goes to row `idx` of the transpose, keeping its position `k` to permute
        // the values by.
        let mut fill = CsrFill::<usize>::new(counts.into_offsets())?;
        for m in 0..self.major as usize {
            for k in self.ptr[m]..self.ptr[m + 1] {
                fill.push(self.idx[k], m, k);
            }
        }
        let (ptr, idx, order) = fill
            .finish()
            .ok_or_else(|| BINSPARSE.error("internal: uneven transpose"))?;
        Ok(Compressed {
            major: self.minor,
            minor: self.major,
            ptr,
            idx,
            values: self.values.permuted(&order),
        })
    }
}

/// A DAPHNE object from a format's index arrays (in [`Format::arrays`] order, without the
/// values) and its values.
pub(super) fn build(
    format: Format,
    shape: &[u64],
    nnz: u64,
    arrays: Vec<Array>,
    values: Values,
) -> Result<Object> {
    let (rows, cols) = (dim(shape, 0), dim(shape, 1));
    let dense = |values: Values| {
        if u128::from(rows) * u128::from(cols) != u128::from(nnz) {
            return Err(BINSPARSE.error(format!(
                "a dense {rows} x {cols} matrix with {nnz} stored values"
            )));
        }
        Object::dense(rows, cols, values).map_err(|e| BINSPARSE.error(e.to_string()))
    };
    let column_major = matches!(format, Format::Csc | Format::Dcsc | Format::Cooc);
    let (major, minor) = if column_major {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let last = arrays.last();
    if let Some(last) = last.filter(|_| !format.is_dense()) {
        if last.values.len() as u64 != nnz {
            return Err(BINSPARSE.error(format!(
                "{} has {} elements, number_of_stored_values is {nnz}",
                last.name,
                last.values.len()
            )));
        }
    }
    let (ptr, idx) = match (format, &arrays[..]) {
        (Format::Dvec | Format::Dmat | Format::Dmatr, []) => return dense(values),
        (Format::Dmatc, []) => {
            return dense(transpose(&values, cols as usize, rows as usize));
        }
        (Format::Cvec, [i0]) => {
            let idx = indices(i0, rows, "index")?;
            let zeros = vec![0; idx.len()];
            (pointers_from_sorted(&idx, &zeros, rows, (i0, i0))?, zeros)
        }
        (Format::Csr | Format::Csc, [p1, i1]) => {
            let ptr = pointers(p1, major, nnz)?;
            let idx = indices(i1, minor, "index")?;
            check_sorted(i1, &ptr, &idx)?;
            (ptr, idx)
        }
        (Format::Dcsr | Format::Dcsc, [i0, p1, i1]) => {
            let outer = indices(i0, major, "index")?;
            if let Some(k) = outer.windows(2).position(|w| w[1] <= w[0]) {
                return Err(i0.error_at(k + 1, "indices must increase (sorted, no duplicates)"));
            }
            let short = pointers(p1, outer.len() as u64, nnz)?;
            let idx = indices(i1, minor, "index")?;
            check_sorted(i1, &short, &idx)?;
            let mut counts = RowCounts::new(major as usize)?;
            for (j, &m) in outer.iter().enumerate() {
                counts.add_n(m, short[j + 1] - short[j]);
            }
            (counts.into_offsets(), idx)
        }
        (Format::Coo | Format::Coor | Format::Cooc, [i0, i1]) => {
            let outer = indices(i0, major, "index")?;
            let idx = indices(i1, minor, "index")?;
            if outer.len() != idx.len() {
                return Err(
                    BINSPARSE.error(format!("{} and {} differ in length", i0.name, i1.name))
                );
            }
            (pointers_from_sorted(&outer, &idx, major, (i0, i1))?, idx)
        }
        _ => unreachable!("the arrays fetched are the format's"),
    };
    let compressed = Compressed {
        major,
        minor,
        ptr,
        idx,
        values,
    };
    let csr = if column_major {
        compressed.transposed()?
    } else {
        compressed
    };
    Object::csr(rows, cols, csr.ptr, csr.idx, csr.values)
        .map_err(|e| BINSPARSE.error(e.to_string()))
}

/// The mirror of a stored value: itself, or its negation for skew-symmetric structures.
fn mirror(value: Value, skew: bool) -> Option<Value> {
    if !skew {
        return Some(value);
    }
    Some(match value {
        Value::F32(x) => Value::F32(-x),
        Value::F64(x) => Value::F64(-x),
        Value::I8(x) => Value::I8(x.checked_neg()?),
        Value::I16(x) => Value::I16(x.checked_neg()?),
        Value::I32(x) => Value::I32(x.checked_neg()?),
        Value::I64(x) => Value::I64(x.checked_neg()?),
        unsigned if unsigned.is_zero() => unsigned,
        _ => return None,
    })
}

/// Fills in the triangle a structure leaves out.
pub(super) fn apply_structure(object: Object, structure: &str) -> Result<Object> {
    let (skew, lower) = match structure {
        "symmetric_lower" => (false, true),
        "symmetric_upper" => (false, false),
        "skew_symmetric_lower" => (true, true),
        "skew_symmetric_upper" => (true, false),
        "hermitian_lower" | "hermitian_upper" => {
            return Err(not_in_daphne(
                format!("a matrix with the structure {structure}"),
                "Hermitian matrices are complex; DAPHNE has no complex value types",
            ))
        }
        other => return Err(BINSPARSE.error(format!("unknown structure {other:?}"))),
    };
    let (rows, cols) = object.shape();
    if rows != cols {
        return Err(BINSPARSE.error(format!(
            "a {rows} x {cols} matrix with the structure {structure}"
        )));
    }
    let stored_side = |r: usize, c: usize| if lower { r >= c } else { r <= c };
    let vt = object
        .header()
        .matrix_value_type()
        .expect("Binsparse builds matrices");
    let mirrored = |v: Value, r: usize, c: usize| {
        mirror(v, skew).ok_or_else(|| {
            BINSPARSE.error(format!(
                "the value {v} at ({r}, {c}) has no negation in {vt} for {structure}"
            ))
        })
    };
    if object.data_type() == DataType::DenseMatrix {
        let mut values = object.dense_values()?;
        let n = rows as usize;
        for r in 0..n {
            for c in 0..n {
                if !stored_side(r, c) {
                    let v = values.get(c * n + r).expect("in range");
                    values.set(r * n + c, mirrored(v, c, r)?);
                }
            }
        }
        return Object::dense(rows, cols, values);
    }
    let parts = with_value_type!(vt, T => object.csr_parts::<T>().map(|p| (p.row_offsets, p.col_indices, T::into_values(p.values))))?;
    let (ptr, idx, values) = parts;
    // Every stored cell, and its mirror image across the diagonal, placed by row; each
    // entry keeps its stored index `k` and whether it is mirrored, as `2k + mirrored`.
    let mut counts = RowCounts::new(rows as usize)?;
    for r in 0..rows as usize {
        for &c in &idx[ptr[r]..ptr[r + 1]] {
            if !stored_side(r, c) {
                return Err(BINSPARSE.error(format!(
                    "the entry ({r}, {c}) is outside the {} triangle that {structure} stores",
                    if lower { "lower" } else { "upper" }
                )));
            }
            counts.add(r);
            if r != c {
                counts.add(c);
            }
        }
    }
    let mut fill = CsrFill::<usize>::new(counts.into_offsets())?;
    for r in 0..rows as usize {
        for (k, &c) in idx.iter().enumerate().take(ptr[r + 1]).skip(ptr[r]) {
            fill.push(r, c, 2 * k);
            if r != c {
                fill.push(c, r, 2 * k + 1);
            }
        }
    }
    let (new_ptr, new_idx, entries) = fill
        .finish()
        .ok_or_else(|| BINSPARSE.error("internal: uneven structure expansion"))?;
    let mut out = Values::new(vt);
    for r in 0..rows as usize {
        for (&entry, &c) in entries[new_ptr[r]..new_ptr[r + 1]]
            .iter()
            .zip(&new_idx[new_ptr[r]..new_ptr[r + 1]])
        {
            let v = values.get(entry / 2).expect("in range");
            // A mirrored entry at (r, c) was stored at (c, r).
            out.push(if entry % 2 == 1 {
                mirrored(v, c, r)?
            } else {
                v
            });
        }
    }
    Object::csr(rows, cols, new_ptr, new_idx, out)
}

/// Index values as an array of `index_type`.
fn index_array(values: &[usize], index_type: ValueType, name: &str) -> Result<Values> {
    let max = values.iter().copied().max().unwrap_or(0);
    let fits = Value::U64(max as u64).convert(index_type).is_some();
    if !fits || matches!(index_type, ValueType::F32 | ValueType::F64) {
        return Err(BINSPARSE.cannot_hold(
            format!("the {name} value {max}"),
            format!("it does not fit the index type {index_type}: choose a wider one"),
        ));
    }
    Ok(with_value_type!(index_type, T => T::into_values(
        values.iter().map(|&x| T::from_value(Value::U64(x as u64)).expect("checked to fit")).collect()
    )))
}

/// The shape and arrays (in [`Format::arrays`] order) that store `object` as `format`.
pub(super) fn split(
    object: &Object,
    format: Format,
    index_type: ValueType,
) -> Result<(Vec<u64>, Vec<Values>)> {
    if object.data_type() == DataType::Frame {
        return Err(BINSPARSE.cannot_hold(
            "a Frame",
            "Binsparse stores matrices of one value type; convert each column on its own",
        ));
    }
    let (rows, cols) = object.shape();
    let shape = if format.is_vector() {
        if cols != 1 {
            return Err(BINSPARSE.cannot_hold(
                format!("a {rows} x {cols} matrix as {format}"),
                "vectors are n x 1 matrices",
            ));
        }
        vec![rows]
    } else {
        vec![rows, cols]
    };
    if format.is_dense() {
        let values = object.dense_values()?;
        let values = if format == Format::Dmatc {
            transpose(&values, rows as usize, cols as usize)
        } else {
            values
        };
        return Ok((shape, vec![values]));
    }
    let vt = object.header().matrix_value_type().expect("not a frame");
    let (ptr, idx, values) = with_value_type!(vt, T => object.csr_parts::<T>().map(|p| (p.row_offsets, p.col_indices, T::into_values(p.values))))?;
    let mut compressed = Compressed {
        major: rows,
        minor: cols,
        ptr,
        idx,
        values,
    };
    if matches!(format, Format::Csc | Format::Dcsc | Format::Cooc) {
        compressed = compressed.transposed()?;
    }
    let Compressed {
        major,
        ptr,
        idx,
        values,
        ..
    } = compressed;
    let expand = || {
        (0..major as usize)
            .flat_map(|m| std::iter::repeat_n(m, ptr[m + 1] - ptr[m]))
            .collect::<Vec<_>>()
    };
    let arrays = match format {
        Format::Cvec => vec![index_array(&expand(), index_type, "index")?, values],
        Format::Csr | Format::Csc => vec![
            index_array(&ptr, index_type, "pointer")?,
            index_array(&idx, index_type, "index")?,
            values,
        ],
        Format::Dcsr | Format::Dcsc => {
            let outer: Vec<usize> = (0..major as usize)
                .filter(|&m| ptr[m + 1] > ptr[m])
                .collect();
            let mut short = vec![0usize];
            short.extend(outer.iter().map(|&m| ptr[m + 1]));
            vec![
                index_array(&outer, index_type, "index")?,
                index_array(&short, index_type, "pointer")?,
                index_array(&idx, index_type, "index")?,
                values,
            ]
        }
        Format::Coo | Format::Coor | Format::Cooc => vec![
            index_array(&expand(), index_type, "index")?,
            index_array(&idx, index_type, "index")?,
            values,
        ],
        Format::Dvec | Format::Dmat | Format::Dmatr | Format::Dmatc => unreachable!("dense"),
    };
    Ok((shape, arrays))
}
