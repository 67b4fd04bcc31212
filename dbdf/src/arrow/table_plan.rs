//! How a table is read: the header its schema (and the columns picked) make, and the bands
//! its record batches become.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType as ArrowType, Field, Schema};

use super::{attributes_of, guarded, Nulls, ReadOptions, DATA_TYPE_KEY};
use crate::input::{not_in_daphne, Foreign};
use crate::pipe::{Band, Cells};
use serde_daphne::Column;
use serde_daphne::Element;
use serde_daphne::Header;
use serde_daphne::{DataType, Error, Result, ValueType, Values};

/// The value type a column of `arrow` type is read as, if any.
fn value_type_of(arrow: &ArrowType) -> Option<ValueType> {
    Some(match arrow {
        ArrowType::Boolean | ArrowType::UInt8 => ValueType::U8,
        ArrowType::UInt16 => ValueType::U16,
        ArrowType::UInt32 => ValueType::U32,
        ArrowType::UInt64 => ValueType::U64,
        ArrowType::Int8 => ValueType::I8,
        ArrowType::Int16 => ValueType::I16,
        ArrowType::Int32 => ValueType::I32,
        ArrowType::Int64 => ValueType::I64,
        ArrowType::Float32 => ValueType::F32,
        ArrowType::Float64 => ValueType::F64,
        ArrowType::Dictionary(_, values) => return value_type_of(values),
        _ => return None,
    })
}

/// The DAPHNE data type a schema's metadata records.
fn recorded_data_type(schema: &Schema, format: Foreign) -> Result<Option<DataType>> {
    let Some(recorded) = schema.metadata().get(DATA_TYPE_KEY) else {
        return Ok(None);
    };
    // The names `DataType` displays (the spec's) are the ones written.
    match recorded.parse::<DataType>() {
        Ok(data_type) => Ok(Some(data_type)),
        _ => Err(format.error(format!(
            "the metadata {DATA_TYPE_KEY} is {recorded:?}, not DenseMatrix, CSRMatrix or Frame"
        ))),
    }
}

/// How a table is read: its header (a frame, or a dense matrix whose bands interleave the
/// columns), and the data type its metadata asks the output to be (CSR).
pub(crate) struct TablePlan {
    pub(crate) header: Header,
    pub(crate) kept: Option<DataType>,
    pub(crate) nulls: Nulls,
    /// The schema's user attributes.
    pub(crate) attributes: serde_json::Map<String, serde_json::Value>,
    /// The columns read (positions in the file's schema, increasing, as readers give them)
    /// when not all are, and where each column of the header is among them.
    pub(crate) projection: Option<(Vec<usize>, Vec<usize>)>,
}

impl TablePlan {
    /// The layout of a table of `rows` rows with `schema`, read with `options`.
    ///
    /// # Errors
    /// Columns DAPHNE cannot hold (naming the column and its type); a matrix asked of columns
    /// of several types without a value type.
    pub(crate) fn of(
        schema: &Schema,
        rows: u64,
        options: &ReadOptions,
        format: Foreign,
    ) -> Result<TablePlan> {
        let (picked, projection) = match &options.columns {
            Some(columns) => {
                let labels: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                let picked = columns.positions(&labels)?;
                let mut read = picked.clone();
                read.sort_unstable();
                let places = picked
                    .iter()
                    .map(|p| read.binary_search(p).unwrap_or(0))
                    .collect();
                (picked, Some((read, places)))
            }
            None => ((0..schema.fields().len()).collect(), None),
        };
        let columns = picked
            .iter()
            .map(|&p| {
                let field = &schema.fields()[p];
                let value_type = value_type_of(field.data_type()).ok_or_else(|| {
                    not_in_daphne(
                        format!("column {:?} of type {}", field.name(), field.data_type()),
                        "DAPHNE's binary format holds numbers only (integers, floats, bools as \
                         u8); pick the other columns with --columns (columns= in Python)",
                    )
                })?;
                Ok(Column {
                    label: field.name().clone(),
                    value_type,
                })
            })
            .collect::<Result<Vec<Column>>>()?;
        let recorded = recorded_data_type(schema, format)?;
        let asked = options.data_type.or(recorded);
        let header = match asked {
            Some(data_type) if data_type.is_matrix() => {
                let value_type = match options.value_type {
                    Some(vt) => vt,
                    None => one_value_type(&columns)?,
                };
                Header::matrix(
                    DataType::DenseMatrix,
                    rows,
                    columns.len() as u64,
                    value_type,
                )
            }
            _ => Header::Frame { rows, columns },
        };
        // The recorded type is kept only where it is the one read (and not asked over).
        let kept = match (options.data_type, recorded) {
            (None, Some(DataType::CsrMatrix)) => Some(DataType::CsrMatrix),
            _ => None,
        };
        Ok(TablePlan {
            header,
            kept,
            nulls: options.nulls,
            attributes: attributes_of(schema),
            projection,
        })
    }

    /// The band of rows from `first_row` a record batch is.
    ///
    /// # Errors
    /// Nulls (as [`Nulls`] says); values that do not convert exactly to a matrix's type;
    /// a batch that does not match the schema.
    pub(crate) fn band(&self, batch: RecordBatch, first_row: u64) -> Result<Band> {
        let (names, arrays, rows) = batch.into_parts();
        let mut fields: Vec<(ArrayRef, &Field)> = arrays
            .into_iter()
            .zip(names.fields().iter().map(|f| &**f))
            .collect();
        if let Some((_, places)) = &self.projection {
            if places.len() != fields.len() {
                return Err(Error::invalid("a batch that does not match the schema"));
            }
            let mut in_order: Vec<_> = fields.into_iter().map(Some).collect();
            fields = places.iter().filter_map(|&k| in_order[k].take()).collect();
        }
        let kept: Vec<&Field> = fields.iter().map(|(_, f)| *f).collect();
        // Each array freed once copied: memory holds the band and one column of the batch
        // more, not the batch twice.
        let columns = fields
            .into_iter()
            .map(|(array, field)| column_values(array, field, first_row, self.nulls))
            .collect::<Result<Vec<Values>>>()?;
        let cols = columns.len() as u64;
        let cells = match &self.header {
            Header::Frame { .. } => Cells::Frame(columns),
            header => {
                let vt = header.matrix_value_type().unwrap_or(ValueType::F64);
                Cells::Dense(interleave(columns, rows, vt, &kept, first_row)?)
            }
        };
        Ok(Band {
            first_row,
            first_col: 0,
            rows: rows as u64,
            cols,
            cells,
        })
    }
}

/// The value type all `columns` share.
fn one_value_type(columns: &[Column]) -> Result<ValueType> {
    let first = columns.first().map_or(ValueType::F64, |c| c.value_type);
    match columns.iter().find(|c| c.value_type != first) {
        None => Ok(first),
        Some(other) => Err(Error::invalid(format!(
            "column {:?} is {} but column {:?} is {}: a matrix has one value type; give one \
             (--value-type) or read a frame",
            columns[0].label, first, other.label, other.value_type
        ))),
    }
}

/// The cells of one column, nulls dealt with as `nulls` says.
fn column_values(array: ArrayRef, field: &Field, first_row: u64, nulls: Nulls) -> Result<Values> {
    if let ArrowType::Dictionary(..) = array.data_type() {
        let dictionary = array.as_any_dictionary();
        let decoded = arrow_select::take::take(dictionary.values(), dictionary.keys(), None)
            .map_err(|e| Error::invalid(format!("column {:?}: {e}", field.name())))?;
        return column_values(decoded, field, first_row, nulls);
    }
    let float = matches!(array.data_type(), ArrowType::Float32 | ArrowType::Float64);
    let fill = match (array.logical_null_count(), nulls, float) {
        (0, ..) => None,
        (_, Nulls::Zero, _) => Some(false),
        (_, Nulls::Nan, true) => Some(true),
        (..) => {
            let row = (0..array.len()).find(|&r| array.is_null(r)).unwrap_or(0);
            let hint = match (nulls, float) {
                (Nulls::Nan, false) => "NaN is no integer: --nulls zero fills them with 0",
                _ => {
                    "DAPHNE has no nulls: --nulls nan (floating columns) or --nulls zero fills them"
                }
            };
            return Err(not_in_daphne(
                format!(
                    "the null at row {} of column {:?}",
                    first_row + row as u64,
                    field.name()
                ),
                hint,
            ));
        }
    };
    fn primitive<T: ArrowPrimitiveType>(
        array: ArrayRef,
        fill: Option<bool>,
        nan: T::Native,
    ) -> Vec<T::Native> {
        let (_, values, nulls) = array.as_primitive::<T>().clone().into_parts();
        drop(array);
        // The decoder's own buffer, where this array alone holds it and it is a `Vec`'s (the
        // Parquet reader's values of a type it stores as they are): moved, not copied.
        let mut values = match values.into_inner().into_vec::<T::Native>() {
            Ok(values) => values,
            Err(shared) => {
                let src = ScalarBuffer::<T::Native>::from(shared);
                // A fresh buffer, faulted in first: a band's columns are new memory every time.
                let mut values = Vec::with_capacity(src.len());
                serde_daphne::lowlevel::fault_in_spare(&mut values, src.len());
                values.extend_from_slice(&src);
                values
            }
        };
        if let (Some(nan_fill), Some(mask)) = (fill, nulls) {
            let with = if nan_fill { nan } else { T::Native::default() };
            for r in mask
                .iter()
                .enumerate()
                .filter(|(_, valid)| !valid)
                .map(|(r, _)| r)
            {
                values[r] = with;
            }
        }
        values
    }
    Ok(match array.data_type() {
        ArrowType::Boolean => {
            let array = array.as_boolean();
            // A null's value bit may be set: nulls become 0.
            let bits = match array.nulls() {
                Some(valid) => array.values() & valid.inner(),
                None => array.values().clone(),
            };
            // 64 values a word (the word's bits spread to bytes, vectorised), not a lookup
            // per value.
            let mut values = Vec::with_capacity(bits.len().next_multiple_of(64));
            for word in bits.bit_chunks().iter_padded() {
                values.extend((0..64).map(|j| (word >> j) as u8 & 1));
            }
            values.truncate(bits.len());
            Values::U8(values)
        }
        ArrowType::UInt8 => Values::U8(primitive::<UInt8Type>(array, fill, 0)),
        ArrowType::UInt16 => Values::U16(primitive::<UInt16Type>(array, fill, 0)),
        ArrowType::UInt32 => Values::U32(primitive::<UInt32Type>(array, fill, 0)),
        ArrowType::UInt64 => Values::U64(primitive::<UInt64Type>(array, fill, 0)),
        ArrowType::Int8 => Values::I8(primitive::<Int8Type>(array, fill, 0)),
        ArrowType::Int16 => Values::I16(primitive::<Int16Type>(array, fill, 0)),
        ArrowType::Int32 => Values::I32(primitive::<Int32Type>(array, fill, 0)),
        ArrowType::Int64 => Values::I64(primitive::<Int64Type>(array, fill, 0)),
        ArrowType::Float32 => Values::F32(primitive::<Float32Type>(array, fill, f32::NAN)),
        ArrowType::Float64 => Values::F64(primitive::<Float64Type>(array, fill, f64::NAN)),
        other => {
            return Err(not_in_daphne(
                format!("column {:?} of type {other}", field.name()),
                "DAPHNE's binary format holds numbers only",
            ))
        }
    })
}

/// Columns of `rows` values each as one row-major matrix of `value_type` (each value
/// converted exactly).
fn interleave(
    columns: Vec<Values>,
    rows: usize,
    value_type: ValueType,
    fields: &[&Field],
    first_row: u64,
) -> Result<Values> {
    let cols = columns.len();
    serde_daphne::with_value_type!(value_type, T => {
        let mut out = vec![T::default(); rows * cols];
        for (c, column) in columns.into_iter().enumerate() {
            let column = typed_column::<T>(column, fields[c], first_row)?;
            for (r, x) in column.into_iter().enumerate() {
                out[r * cols + c] = x;
            }
        }
        Ok(T::into_values(out))
    })
}

/// A column's values as `T`, converted exactly.
fn typed_column<T: Element>(column: Values, field: &Field, first_row: u64) -> Result<Vec<T>> {
    let column = match column.value_type() == T::VALUE_TYPE {
        true => column,
        false => {
            let copy = column.clone();
            column.convert(T::VALUE_TYPE).map_err(|at| {
                Error::invalid(format!(
                    "column {:?} row {}: {} is not exactly a {}",
                    field.name(),
                    first_row + at as u64,
                    copy.get(at).map_or_else(String::new, |v| v.to_string()),
                    T::VALUE_TYPE
                ))
            })?
        }
    };
    T::try_from_values(column).map_err(|_| Error::invalid("internal: a converted column's type"))
}

/// A table's record batches, in order.
pub(crate) type Batches<'a> = Box<dyn Iterator<Item = Result<RecordBatch>> + Send + 'a>;

/// A part of a table decoded by one thread (a Parquet row group; an IPC file whole): its
/// first row, and how to open its batches.
pub(crate) struct Unit<'a> {
    pub(crate) first_row: u64,
    pub(crate) open: Box<dyn FnOnce() -> Result<Batches<'a>> + Send + 'a>,
}

/// What a decoding thread hands over: a band, or the end of a unit.
enum Piece {
    Band(Band),
    End,
}

/// Calls `each` with the bands the `units`' batches are, a multiple of `multiple` rows high,
/// until it returns `false`. Up to `threads` threads decode the units (unit `u` by thread
/// `u % threads`) and make their batches bands while `each` takes the band before; each
/// hands its band over, not queued, so memory holds a band per thread and the one taken.
/// Every row the header announces must come, and no more.
///
/// # Errors
/// The batches' errors, the layout's and `each`'s; rows other than the header's.
pub(crate) fn stream_bands(
    units: Vec<Unit<'_>>,
    threads: usize,
    layout: &TablePlan,
    format: Foreign,
    multiple: u64,
    each: &mut dyn FnMut(Band) -> Result<bool>,
) -> Result<()> {
    let (rows, cols) = layout.header.shape();
    let count = units.len();
    let threads = threads.clamp(1, count.max(1));
    let mut shares: Vec<Vec<Unit>> = (0..threads).map(|_| Vec::new()).collect();
    for (u, unit) in units.into_iter().enumerate() {
        shares[u % threads].push(unit);
    }
    let mut regroup = crate::pipe::Regroup::new(multiple);
    std::thread::scope(|scope| {
        let receivers: Vec<_> = shares
            .into_iter()
            .map(|share| {
                let (send, receive) = std::sync::mpsc::sync_channel::<Result<Piece>>(0);
                scope.spawn(move || decode_units(share, layout, format, send));
                receive
            })
            .collect();
        let mut read = 0;
        'units: for u in 0..count {
            // A thread that stopped without ending its unit sent its error, or panicked.
            while let Ok(piece) = receivers[u % threads].recv() {
                let band = match piece? {
                    Piece::Band(band) => band,
                    Piece::End => continue 'units,
                };
                read += band.rows;
                if read > rows || band.cols != cols {
                    break 'units;
                }
                if !regroup.push(band, each)? {
                    return Ok(());
                }
            }
            break;
        }
        if read != rows {
            return Err(format.error(format!(
                "the file says {rows} rows, but its columns hold {}",
                match read > rows {
                    true => "more".to_owned(),
                    false => read.to_string(),
                }
            )));
        }
        regroup.finish(each).map(drop)
    })
}

/// A decoding thread: its units' batches as bands, each unit's followed by its end, sent
/// until the first error (sent too) or until nobody takes them.
fn decode_units(
    units: Vec<Unit<'_>>,
    layout: &TablePlan,
    format: Foreign,
    send: std::sync::mpsc::SyncSender<Result<Piece>>,
) {
    for unit in units {
        let mut first_row = unit.first_row;
        let mut batches = match guarded(format, unit.open) {
            Ok(batches) => batches,
            Err(e) => {
                let _ = send.send(Err(e));
                return;
            }
        };
        loop {
            let band = match guarded(format, || Ok(batches.next())) {
                Ok(Some(batch)) => batch.and_then(|b| layout.band(b, first_row)),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            let failed = band.is_err();
            if let Ok(band) = &band {
                first_row += band.rows;
            }
            if send.send(band.map(Piece::Band)).is_err() || failed {
                return;
            }
        }
        if send.send(Ok(Piece::End)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array};
    use std::sync::Arc;

    fn field(name: &str, kind: ArrowType) -> Field {
        Field::new(name, kind, true)
    }

    #[test]
    fn a_column_only_its_array_holds_is_moved_and_a_shared_one_copied() {
        let values = vec![1.5, 2.5, 3.5];
        let at = values.as_ptr();
        let alone: ArrayRef = Arc::new(Float64Array::from(values));
        let moved = column_values(alone, &field("x", ArrowType::Float64), 0, Nulls::Refuse);
        match moved.unwrap() {
            Values::F64(v) => assert_eq!((v.as_ptr(), v), (at, vec![1.5, 2.5, 3.5])),
            other => panic!("{other:?}"),
        }
        // Held by another array too, or a slice of it: copied, the others unchanged.
        let whole = Int32Array::from(vec![4, 5, 6, 7]);
        let kept = whole.clone();
        for (array, expected) in [
            (Arc::new(whole.clone()) as ArrayRef, vec![4, 5, 6, 7]),
            (Arc::new(whole.slice(1, 2)) as ArrayRef, vec![5, 6]),
        ] {
            let kind = field("k", ArrowType::Int32);
            match column_values(array, &kind, 0, Nulls::Refuse).unwrap() {
                Values::I32(mut v) => {
                    assert_eq!(v, expected);
                    assert_ne!(v.as_ptr(), kept.values().as_ptr());
                    v[0] = -1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(kept.values().to_vec(), vec![4, 5, 6, 7]);
        // Nulls filled in the moved buffer.
        let with_null: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None]));
        match column_values(with_null, &field("n", ArrowType::Float64), 0, Nulls::Nan).unwrap() {
            Values::F64(v) => assert!(v[0] == 1.0 && v[1].is_nan()),
            other => panic!("{other:?}"),
        }
    }
}
