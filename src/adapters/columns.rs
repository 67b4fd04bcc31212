//! A frame held as typed columns: [`Columns`], written and read with one bulk copy per
//! column, for programs that keep their data by column (as DAPHNE and pandas do).

use crate::error::ErrorDetails;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::frame::{collect_columns, records_from_columns};
use crate::adapter_protocol;
use crate::error::{Error, Result};
use crate::model::encode::write_frame;
use crate::wire::element::borrowed_columns;
use crate::wire::{DataType, Element, Values, ValuesRef};

/// A frame as named columns, each a `Vec` of one of the ten value types (bools as `u8`).
///
/// Through this crate each column is written as its own dense block from the vector's memory
/// and read straight into a new vector (no per-cell work); [`Columns::from_records`] and
/// [`Columns::to_records`] convert from and to `Vec<R>` of a record struct, as the
/// [`frame`](crate::frame) adapter stores it. Through other serde formats it is a map from
/// label to column, each column tagged with its type (`{"price": {"F64": [1.5]}}` in JSON).
///
/// ```
/// use serde_daphne::{Columns, Values};
///
/// let mut columns = Columns::new();
/// columns.push("id", vec![1u32, 2, 3])?;
/// columns.push("price", vec![9.5f64, 10.0, 10.5])?;
/// let bytes = serde_daphne::to_vec(&columns)?;
/// let back: Columns = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(back.column::<f64>("price"), Some(&[9.5, 10.0, 10.5][..]));
/// assert_eq!(back.values("id"), Some(&Values::U32(vec![1, 2, 3])));
///
/// #[derive(serde::Deserialize, PartialEq, Debug)]
/// struct Row { id: u32, price: f64 }
/// assert_eq!(back.to_records::<Row>()?[2], Row { id: 3, price: 10.5 });
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns {
    rows: usize,
    columns: Vec<(String, Values)>,
}

impl Columns {
    /// A frame without columns (and rows).
    pub fn new() -> Columns {
        Columns::default()
    }

    /// Adds a column at the right.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] when its length differs from the columns before it or its
    /// label is taken.
    pub fn push(&mut self, label: impl Into<String>, values: impl Into<Values>) -> Result<()> {
        let (label, values) = (label.into(), values.into());
        self.rows = check_column(self.rows, self.labels(), &label, values.len())?;
        self.columns.push((label, values));
        Ok(())
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns.
    #[doc(hidden)]
    pub fn width(&self) -> usize {
        self.columns.len()
    }

    /// The labels, left to right.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|(label, _)| label.as_str())
    }

    /// The column labelled `label`.
    #[doc(hidden)]
    pub fn values(&self, label: &str) -> Option<&Values> {
        self.columns
            .iter()
            .find_map(|(l, v)| (l == label).then_some(v))
    }

    /// The column labelled `label` as a slice of `T`, when `T` is its value type.
    pub fn column<T: Element>(&self, label: &str) -> Option<&[T]> {
        self.values(label).and_then(T::slice_of)
    }

    /// The labelled columns, left to right.
    pub fn into_columns(self) -> Vec<(String, Values)> {
        self.columns
    }

    /// The frame with its columns borrowed (what [`Columns`] is written as).
    pub fn view(&self) -> ColumnsView<'_> {
        ColumnsView {
            rows: self.rows,
            columns: borrowed_columns(&self.columns),
        }
    }

    /// The columns of records: each field a column, labelled and typed by the field (as the
    /// [`frame`](crate::frame) adapter writes them).
    ///
    /// # Errors
    /// [`crate::ErrorKind::FrameMismatch`] when a record is not a struct of numbers and bools, or
    /// differs from the first.
    pub fn from_records<R: Serialize>(records: &[R]) -> Result<Columns> {
        Ok(Columns {
            rows: records.len(),
            columns: collect_columns(records)?,
        })
    }

    /// The rows as records, fields matched to columns by label.
    ///
    /// # Errors
    /// [`crate::ErrorKind::FrameMismatch`] when a field has no column, [`crate::ErrorKind::LossyConversion`] when
    /// a value does not fit its field.
    pub fn to_records<R: DeserializeOwned>(&self) -> Result<Vec<R>> {
        let labels: Vec<String> = self.labels().map(str::to_owned).collect();
        let columns: Vec<&Values> = self.columns.iter().map(|(_, v)| v).collect();
        records_from_columns(labels, &columns, self.rows, 0)
    }
}

impl Serialize for Columns {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.view().serialize(serializer)
    }
}

/// The rows a frame has once a column of `len` values labelled `label` joins the columns
/// labelled `labels` (of `rows` rows, if any).
fn check_column<'a>(
    rows: usize,
    labels: impl Iterator<Item = &'a str>,
    label: &str,
    len: usize,
) -> Result<usize> {
    let mut labels = labels.peekable();
    if labels.peek().is_some() && len != rows {
        return Err(Error::invalid(format!(
            "column \"{label}\" has {len} values but the frame has {rows} rows"
        )));
    }
    if labels.any(|l| l == label) {
        return Err(Error::invalid(format!(
            "the frame has two columns \"{label}\""
        )));
    }
    Ok(len)
}

/// A frame of borrowed columns: written as [`Columns`] is (each column a dense block copied
/// straight from its slice) without owning them, for columns that live elsewhere (numpy
/// arrays, Arrow buffers). It reads back as [`Columns`].
///
/// ```
/// use serde_daphne::{Columns, ColumnsView};
///
/// let (ids, prices) = (vec![1u32, 2, 3], vec![9.5f64, 10.0, 10.5]);
/// let mut view = ColumnsView::new();
/// view.push("id", &ids)?;
/// view.push("price", &prices[..])?;
/// let bytes = serde_daphne::to_vec(&view)?;
/// let back: Columns = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(back.column::<f64>("price"), Some(&prices[..]));
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ColumnsView<'a> {
    rows: usize,
    columns: Vec<(&'a str, ValuesRef<'a>)>,
}

impl<'a> ColumnsView<'a> {
    /// A frame without columns (and rows).
    pub fn new() -> ColumnsView<'a> {
        ColumnsView::default()
    }

    /// Adds a column at the right.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidValue`] when its length differs from the columns before it or its
    /// label is taken.
    pub fn push(&mut self, label: &'a str, values: impl Into<ValuesRef<'a>>) -> Result<()> {
        let values = values.into();
        let labels = self.columns.iter().map(|(l, _)| *l);
        self.rows = check_column(self.rows, labels, label, values.len())?;
        self.columns.push((label, values));
        Ok(())
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The labelled columns, left to right.
    pub fn columns(&self) -> &[(&'a str, ValuesRef<'a>)] {
        &self.columns
    }
}

impl Serialize for ColumnsView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(adapter_protocol::FRAME, &Payload(self))
    }
}

struct Payload<'a, 'b>(&'a ColumnsView<'b>);

impl Serialize for Payload<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let view = self.0;
        match adapter_protocol::take_capture() {
            Some(options) => adapter_protocol::emit(serializer, |sink| {
                write_frame(sink, view.rows, &view.columns, &options)
            }),
            None => serializer.collect_map(view.columns.iter().copied()),
        }
    }
}

impl<'de> Deserialize<'de> for Columns {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Columns, D::Error> {
        deserializer.deserialize_newtype_struct(adapter_protocol::FRAME, ColumnsVisitor)
    }
}

struct ColumnsVisitor;

impl<'de> Visitor<'de> for ColumnsVisitor {
    type Value = Columns;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a frame (a map from label to typed column)")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Columns, D::Error> {
        match adapter_protocol::take_object() {
            Some(object) => from_object(object).map_err(adapter_protocol::park_de),
            None => d.deserialize_map(self),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Columns, A::Error> {
        let mut columns = Columns::new();
        while let Some((label, values)) = map.next_entry::<String, Values>()? {
            columns.push(label, values).map_err(de::Error::custom)?;
        }
        Ok(columns)
    }
}

/// A frame object's columns, moved out of it.
fn from_object(object: crate::model::Object) -> Result<Columns> {
    if object.data_type() != DataType::Frame {
        return Err(ErrorDetails::DataTypeMismatch {
            offset: object.offset(),
            expected: "a Frame",
            found: object.data_type(),
        }
        .into());
    }
    let rows = object.shape().0;
    let labels: Vec<String> = object.labels().into_iter().map(str::to_owned).collect();
    let rows = usize::try_from(rows).map_err(|_| {
        Error::from(ErrorDetails::TooLarge {
            offset: object.offset(),
            what: "the frame",
            bytes: u128::from(rows),
        })
    })?;
    let columns = object.into_columns()?;
    Ok(Columns {
        rows,
        columns: labels.into_iter().zip(columns).collect(),
    })
}
