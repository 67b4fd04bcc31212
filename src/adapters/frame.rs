//! `Vec<R>` of records as a Frame: `#[serde(with = "serde_daphne::frame")]`.
//!
//! `R` is a struct of numbers and bools (stored as u8). Each element is a row; each field a
//! column, labelled with the field name and typed with the field's type. Reading matches
//! columns by label, so the file's column order may differ and extra columns are ignored.
//! Through any other serde format the rows are a plain sequence of structs.
//!
//! An empty `Vec<R>` is written as a 0 x 0 frame: serde shows no field names without a value.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Reading {
//!     sensor: u16,
//!     value: f64,
//!     valid: bool,
//! }
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Log {
//!     #[serde(with = "serde_daphne::frame")]
//!     readings: Vec<Reading>,
//! }
//!
//! let log = Log {
//!     readings: vec![
//!         Reading { sensor: 1, value: 20.5, valid: true },
//!         Reading { sensor: 2, value: -3.0, valid: false },
//!     ],
//! };
//! let bytes = serde_daphne::to_vec(&log)?;
//! let object: serde_daphne::Object = serde_daphne::from_slice(&bytes)?;
//! assert_eq!(object.labels(), ["sensor", "value", "valid"]);
//! assert_eq!(serde_daphne::from_slice::<Log>(&bytes)?, log);
//! # Ok::<(), serde_daphne::Error>(())
//! ```

use crate::error::ErrorDetails;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Impossible, SerializeStruct, Serializer};
use serde::{forward_to_deserialize_any, Deserialize, Serialize};

use crate::adapter_protocol;
use crate::de::CellDe;
use crate::error::{Error, Result};
use crate::model::encode::write_frame;
use crate::model::Object;
use crate::ser::{answer_serializer_methods, ColumnPush, ScalarProbe};
use crate::wire::element::borrowed_columns;
use crate::wire::{DataType, Values};

/// Serializes records as a Frame, one row per record.
///
/// # Errors
/// The serializer's errors; through this crate, [`crate::ErrorKind::FrameMismatch`] when a record is not
/// a struct of numbers and bools.
pub fn serialize<R, S>(rows: &[R], serializer: S) -> Result<S::Ok, S::Error>
where
    R: Serialize,
    S: Serializer,
{
    serializer.serialize_newtype_struct(adapter_protocol::FRAME, &Payload(rows))
}

/// Deserializes records from a Frame, matching fields to columns by label.
///
/// # Errors
/// The deserializer's errors; through this crate, [`crate::ErrorKind::FrameMismatch`] when a field has
/// no column, [`crate::ErrorKind::LossyConversion`] when a value does not fit its field.
pub fn deserialize<'de, R, D>(deserializer: D) -> Result<Vec<R>, D::Error>
where
    R: Deserialize<'de>,
    D: Deserializer<'de>,
{
    deserializer.deserialize_newtype_struct(adapter_protocol::FRAME, RowsVisitor(PhantomData))
}

struct Payload<'a, R>(&'a [R]);

impl<R: Serialize> Serialize for Payload<'_, R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match adapter_protocol::take_capture() {
            Some(options) => {
                let columns = collect_columns(self.0).map_err(adapter_protocol::park)?;
                adapter_protocol::emit(serializer, |sink| {
                    write_frame(sink, self.0.len(), &borrowed_columns(&columns), &options)
                })
            }
            None => serializer.collect_seq(self.0),
        }
    }
}

/// The frame's columns, gathered from the records.
pub(crate) fn collect_columns<R: Serialize>(rows: &[R]) -> Result<Vec<(String, Values)>> {
    let mut columns: Vec<(String, Values)> = Vec::new();
    let mut keys = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        row.serialize(RecordSerializer {
            columns: &mut columns,
            keys: &mut keys,
            first: index == 0,
        })
        .map_err(|e| e.within(&format_args!("[{index}]")))?;
        if index == 0 {
            // Every column gets one value per row: room for all of them at once.
            for (_, values) in &mut columns {
                values.reserve(rows.len() - 1);
            }
        }
    }
    Ok(columns)
}

fn not_a_record() -> Error {
    Error::from(ErrorDetails::FrameMismatch {
        path: String::new(),
        message: "a frame row must be a struct of numbers and bools".into(),
    })
}

/// Adds one record's fields to the columns.
struct RecordSerializer<'a> {
    columns: &'a mut Vec<(String, Values)>,
    /// The first record's field names, as the derived impl passed them.
    keys: &'a mut Vec<&'static str>,
    first: bool,
}

struct RecordFields<'a> {
    columns: &'a mut Vec<(String, Values)>,
    keys: &'a mut Vec<&'static str>,
    first: bool,
    field: usize,
}

impl RecordFields<'_> {
    /// A field of the first record (a new column), a field whose name is equal but not the
    /// same pointer, and every mismatch (nothing was pushed before this is called).
    #[cold]
    #[inline(never)]
    fn field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<()> {
        let not_a_number = || {
            Error::from(ErrorDetails::FrameMismatch {
                path: key.into(),
                message: "a frame column holds numbers or bools only".into(),
            })
        };
        if self.first {
            let v = value.serialize(ScalarProbe)?.ok_or_else(not_a_number)?;
            let mut values = Values::new(v.value_type());
            values.push(v);
            self.columns.push((key.to_owned(), values));
            self.keys.push(key);
        } else {
            let (label, values) = self.columns.get_mut(self.field).ok_or_else(|| {
                Error::from(ErrorDetails::FrameMismatch {
                    path: key.into(),
                    message: "the record has more fields than the first record".into(),
                })
            })?;
            let first_key = self.keys[self.field];
            let pushed = (std::ptr::eq(first_key, key) || first_key == key)
                && value
                    .serialize(ColumnPush(values))?
                    .ok_or_else(not_a_number)?;
            if !pushed {
                return Err(ErrorDetails::FrameMismatch {
                    path: key.into(),
                    message: format!(
                        "the record does not match the first record's column \"{label}\" ({})",
                        values.value_type()
                    ),
                }
                .into());
            }
        }
        self.field += 1;
        Ok(())
    }
}

impl SerializeStruct for RecordFields<'_> {
    type Ok = ();
    type Error = Error;

    /// A record after the first, whose field has the first record's name (the same
    /// `&'static str`, as derived impls pass it) and column type: pushed in place. Anything
    /// else takes [`RecordFields::field`], out of line.
    #[inline]
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        if !self.first {
            if let (Some((_, values)), Some(&first_key)) =
                (self.columns.get_mut(self.field), self.keys.get(self.field))
            {
                if std::ptr::eq(first_key, key)
                    && matches!(value.serialize(ColumnPush(values)), Ok(Some(true)))
                {
                    self.field += 1;
                    return Ok(());
                }
            }
        }
        self.field(key, value)
    }

    fn end(self) -> Result<()> {
        if !self.first && self.field != self.columns.len() {
            return Err(ErrorDetails::FrameMismatch {
                path: String::new(),
                message: "the record has fewer fields than the first record".into(),
            }
            .into());
        }
        Ok(())
    }
}

impl<'a> Serializer for RecordSerializer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = RecordFields<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    answer_serializer_methods! { Err(not_a_record());
    serialize_bool serialize_i8 serialize_i16 serialize_i32 serialize_i64 serialize_i128
    serialize_u8 serialize_u16 serialize_u32 serialize_u64 serialize_u128 serialize_f32
    serialize_f64 serialize_char serialize_str serialize_bytes serialize_none serialize_some
    serialize_unit serialize_unit_struct serialize_unit_variant serialize_newtype_variant
    serialize_seq serialize_tuple serialize_tuple_struct serialize_tuple_variant
    serialize_map serialize_struct_variant }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        if adapter_protocol::is_marker(name) {
            return Err(not_a_record());
        }
        value.serialize(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Ok(RecordFields {
            columns: self.columns,
            keys: self.keys,
            first: self.first,
            field: 0,
        })
    }
}

struct RowsVisitor<R>(PhantomData<R>);

impl<'de, R: Deserialize<'de>> Visitor<'de> for RowsVisitor<R> {
    type Value = Vec<R>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a frame")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Vec<R>, D::Error> {
        match adapter_protocol::take_object() {
            Some(object) => rows_from_object(object).map_err(adapter_protocol::park_de),
            None => Vec::<R>::deserialize(d),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Vec<R>, A::Error> {
        Vec::<R>::deserialize(de::value::SeqAccessDeserializer::new(seq))
    }
}

/// The records of a frame object.
pub(crate) fn rows_from_object<'de, R: Deserialize<'de>>(object: Object) -> Result<Vec<R>> {
    if object.data_type() != DataType::Frame {
        return Err(ErrorDetails::DataTypeMismatch {
            offset: object.offset(),
            expected: "a Frame",
            found: object.data_type(),
        }
        .into());
    }
    let labels: Vec<String> = object.labels().into_iter().map(str::to_owned).collect();
    let rows = object.shape().0 as usize;
    let offset = object.offset();
    let columns = object.into_columns()?;
    let columns: Vec<&Values> = columns.iter().collect();
    records_from_columns(labels, &columns, rows, offset)
}

/// The records of a frame of `rows` rows held as labelled columns (read at `offset`, for
/// errors).
pub(crate) fn records_from_columns<'de, R: Deserialize<'de>>(
    labels: Vec<String>,
    columns: &[&Values],
    rows: usize,
    offset: u64,
) -> Result<Vec<R>> {
    // Room for every record when the columns' values show the rows are there; grown as
    // records arrive otherwise (a frame without columns has only the header's claim).
    let records = match columns.first() {
        Some(column) => column.len(),
        None => rows.min(1 << 12),
    };
    let mut out = Vec::with_capacity(records);
    crate::pages::fault_in_spare(&mut out, records);
    let frame = FrameData {
        labels,
        columns,
        offset,
        fields: std::cell::OnceCell::new(),
    };
    for row in 0..rows {
        let record = R::deserialize(RecordDe { frame: &frame, row })
            .map_err(|e| e.within(&format_args!("[{row}]")))?;
        out.push(record);
    }
    Ok(out)
}

struct FrameData<'a> {
    labels: Vec<String>,
    columns: &'a [&'a Values],
    offset: u64,
    /// The column of each field of the record struct, found once per frame (keyed by the
    /// address of serde's field list).
    fields: std::cell::OnceCell<(usize, Vec<usize>)>,
}

impl FrameData<'_> {
    /// The column holding each of `fields`.
    fn columns_of(&self, fields: &'static [&'static str]) -> Result<Vec<usize>> {
        let mut wanted = Vec::with_capacity(fields.len());
        for field in fields {
            match self.labels.iter().position(|l| l == field) {
                Some(c) => wanted.push(c),
                None => {
                    return Err(ErrorDetails::FrameMismatch {
                        path: (*field).into(),
                        message: format!(
                            "the frame has no column labelled \"{field}\" (its columns: {})",
                            self.labels.join(", ")
                        ),
                    }
                    .into())
                }
            }
        }
        Ok(wanted)
    }
}

/// One row of a frame, read as a struct (or map) keyed by label.
struct RecordDe<'a> {
    frame: &'a FrameData<'a>,
    row: usize,
}

impl<'de> Deserializer<'de> for RecordDe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_map(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let wanted = (0..self.frame.labels.len()).collect();
        visitor.visit_map(RecordMap {
            record: self,
            wanted,
            next: 0,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let key = fields.as_ptr() as usize;
        let cached = match self.frame.fields.get() {
            Some((k, wanted)) if *k == key => wanted,
            Some(_) => &self.frame.columns_of(fields)?,
            None => {
                let wanted = self.frame.columns_of(fields)?;
                &self.frame.fields.get_or_init(|| (key, wanted)).1
            }
        };
        // Fields in declaration order, as a sequence: what derived structs read fastest (no
        // key matching), and what non-self-describing formats such as postcard give them.
        visitor.visit_seq(RecordSeq {
            frame: self.frame,
            row: self.row,
            wanted: cached,
            next: 0,
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct seq tuple tuple_struct enum identifier ignored_any
    }
}

struct RecordSeq<'a> {
    frame: &'a FrameData<'a>,
    row: usize,
    wanted: &'a [usize],
    next: usize,
}

impl<'de> SeqAccess<'de> for RecordSeq<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some(&column) = self.wanted.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        read_cell(self.frame, column, self.row, seed).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.wanted.len() - self.next)
    }
}

/// Deserializes the cell at `row` of `column`.
fn read_cell<'de, V: DeserializeSeed<'de>>(
    frame: &FrameData<'_>,
    column: usize,
    row: usize,
    seed: V,
) -> Result<V::Value> {
    seed.deserialize(CellDe {
        column: frame.columns[column],
        row,
        offset: frame.offset,
    })
    .map_err(|e| e.within(&frame.labels[column]))
}

struct RecordMap<'a> {
    record: RecordDe<'a>,
    wanted: Vec<usize>,
    next: usize,
}

impl<'de> MapAccess<'de> for RecordMap<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some(&column) = self.wanted.get(self.next) else {
            return Ok(None);
        };
        let label = self.record.frame.labels[column].as_str();
        seed.deserialize(de::value::StrDeserializer::<Error>::new(label))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let column = self.wanted[self.next];
        self.next += 1;
        read_cell(self.record.frame, column, self.record.row, seed)
    }
}
