//! Sequences and tuples: a state machine that decides from the elements whether a sequence is
//! a column vector, a matrix of rows, or objects back to back.

use std::io::Write;

use serde::ser::{self, Serialize};

use super::probe::{RowProbe, ScalarProbe};
use super::Serializer;
use crate::error::{Error, Result};
use crate::wire::{Value, Values};

/// What a sequence turned out to hold, decided by its first element.
enum SeqState {
    Start,
    /// Numbers: a column vector.
    Numbers(Values),
    /// Rows of numbers: a matrix.
    Rows {
        cols: usize,
        count: usize,
        values: Option<Values>,
    },
    /// Anything else: objects back to back.
    Objects {
        buffer: Option<Vec<u8>>,
    },
}

/// Writes a sequence or tuple, choosing its representation from its elements.
#[doc(hidden)]
pub struct SeqSerializer<'a, W> {
    ser: &'a mut Serializer<W>,
    len: Option<usize>,
    tuple: bool,
    index: usize,
    state: SeqState,
}

impl<'a, W: Write> SeqSerializer<'a, W> {
    pub fn new(ser: &'a mut Serializer<W>, len: Option<usize>, tuple: bool) -> Self {
        SeqSerializer {
            ser,
            len,
            tuple,
            index: 0,
            state: SeqState::Start,
        }
    }

    /// Switches to objects mode, writing the count marker (sequences only) and any numbers a
    /// tuple had collected as 1 x 1 objects.
    fn start_objects(&mut self) -> Result<()> {
        let collected = match std::mem::replace(&mut self.state, SeqState::Start) {
            SeqState::Numbers(values) => Some(values),
            _ => None,
        };
        let buffer = if self.tuple {
            None
        } else if let Some(len) = self.len {
            self.ser.write_count_marker(len)?;
            None
        } else {
            Some(Vec::new())
        };
        self.state = SeqState::Objects { buffer };
        if let Some(values) = collected {
            for v in (0..values.len()).filter_map(|i| values.get(i)) {
                self.write_object(&ValueSer(v))?;
            }
        }
        Ok(())
    }

    fn write_object<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        match &mut self.state {
            SeqState::Objects {
                buffer: Some(buffer),
            } => {
                let mut nested = Serializer::with_options(buffer, self.ser.options.clone());
                value.serialize(&mut nested)
            }
            _ => value.serialize(&mut *self.ser),
        }
    }

    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        match &mut self.state {
            SeqState::Start => {
                if let Some(v) = value.serialize(ScalarProbe)? {
                    let mut values = Values::new(v.value_type());
                    values.push(v);
                    self.state = SeqState::Numbers(values);
                } else if let (false, Some(row)) = (self.tuple, value.serialize(RowProbe)?) {
                    self.state = SeqState::Rows {
                        cols: row.as_ref().map_or(0, Values::len),
                        count: 1,
                        values: row,
                    };
                } else {
                    self.start_objects()?;
                    self.write_object(value)?;
                }
            }
            SeqState::Numbers(values) => match value.serialize(ScalarProbe)? {
                Some(v) if v.value_type() == values.value_type() => {
                    values.push(v);
                }
                Some(v) if !self.tuple => {
                    if !values.push(v) {
                        return Err(Error::invalid(format!(
                            "the sequence holds {} values, and {v} does not convert to that type exactly",
                            values.value_type()
                        )));
                    }
                }
                _ if self.tuple => {
                    self.start_objects()?;
                    self.write_object(value)?;
                }
                _ => {
                    return Err(Error::invalid(
                        "the sequence mixes numbers with other values",
                    ))
                }
            },
            SeqState::Rows {
                cols,
                count,
                values,
            } => {
                let row = value.serialize(RowProbe)?.ok_or_else(|| {
                    Error::invalid("the sequence mixes rows of numbers with other values")
                })?;
                let len = row.as_ref().map_or(0, Values::len);
                if len != *cols {
                    return Err(Error::invalid(format!(
                        "ragged rows: this row has {len} values but the first row has {cols}"
                    )));
                }
                match (values.as_mut(), row) {
                    (Some(all), Some(row)) => {
                        for v in (0..row.len()).filter_map(|i| row.get(i)) {
                            if !all.push(v) {
                                return Err(Error::invalid(format!(
                                    "the rows hold {} values, and {v} does not convert to that type exactly",
                                    all.value_type()
                                )));
                            }
                        }
                    }
                    (None, row) => *values = row,
                    (Some(_), None) => {}
                }
                *count += 1;
            }
            SeqState::Objects { .. } => self.write_object(value)?,
        }
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        match std::mem::replace(&mut self.state, SeqState::Start) {
            SeqState::Start if self.tuple => Ok(()),
            SeqState::Start => self.ser.write_count_marker(0),
            SeqState::Numbers(values) => self.ser.write_dense(values.len(), 1, &values),
            SeqState::Rows {
                cols,
                count,
                values,
            } => {
                let values = values.unwrap_or(Values::F64(Vec::new()));
                self.ser.write_dense(count, cols, &values)
            }
            SeqState::Objects { buffer: None } => match self.len {
                // The count marker was written from the declared length.
                Some(len) if !self.tuple && len != self.index => Err(Error::invalid(format!(
                    "the sequence declared {len} elements but produced {}",
                    self.index
                ))),
                _ => Ok(()),
            },
            SeqState::Objects {
                buffer: Some(buffer),
            } => {
                self.ser.write_count_marker(self.index)?;
                self.ser.writer.write_all(&buffer)?;
                Ok(())
            }
        }
    }
}

macro_rules! impl_seq {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<W: Write> ser::$trait for SeqSerializer<'_, W> {
            type Ok = ();
            type Error = Error;

            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
                let index = self.index;
                self.element(value)
                    .map_err(|e| e.within(&format_args!("[{index}]")))?;
                self.index += 1;
                Ok(())
            }

            fn end(self) -> Result<()> {
                self.finish()
            }
        }
    )*};
}
impl_seq!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

/// Serializes one `Value` as its number.
struct ValueSer(Value);

impl Serialize for ValueSer {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Value::U8(x) => s.serialize_u8(x),
            Value::U16(x) => s.serialize_u16(x),
            Value::U32(x) => s.serialize_u32(x),
            Value::U64(x) => s.serialize_u64(x),
            Value::I8(x) => s.serialize_i8(x),
            Value::I16(x) => s.serialize_i16(x),
            Value::I32(x) => s.serialize_i32(x),
            Value::I64(x) => s.serialize_i64(x),
            Value::F32(x) => s.serialize_f32(x),
            Value::F64(x) => s.serialize_f64(x),
        }
    }
}
