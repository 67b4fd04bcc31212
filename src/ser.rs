//! Serialize Rust values into the DAPHNE binary format.
//!
//! The mapping of serde's data model:
//!
//! | Rust value | DAPHNE objects |
//! |---|---|
//! | number, `bool` | one 1 x 1 DenseMatrix (`bool` as u8) |
//! | `Vec<T>`, slice, array of numbers | one n x 1 DenseMatrix (a column vector) |
//! | `Vec<Vec<T>>` of equal lengths | one DenseMatrix, a row per inner vector |
//! | struct, tuple struct | its fields' objects back to back, in order |
//! | tuple | a column vector when all elements are numbers of one type; else objects back to back |
//! | other sequences | a count marker (a 0 x n DenseMatrix), then the n elements' objects |
//! | empty sequence | a 0 x 0 DenseMatrix |
//! | newtype struct | its content |
//! | `Array2`, `CsMat`, `Vec<Record>` with the adapters, [`crate::Object`] | one DenseMatrix, CSRMatrix, Frame, or the object as is |
//!
//! Strings, maps, enums, `Option`, unit and 128-bit integers have no representation: they
//! fail with [`Error::Unrepresentable`] naming the field path.

use std::io::Write;

use serde::ser::{self, Impossible, Serialize};

use crate::error::{Error, Result};
use crate::handoff;
use crate::model::encode::{write_matrix, MatrixRef};
use crate::options::Options;
use crate::wire::element::with_value;
use crate::wire::runtime;
use crate::wire::sink::Sink;
use crate::wire::values::with_values;
use crate::wire::{DataType, Value, Values};

/// A serializer that writes DAPHNE objects to an `io::Write`.
///
/// ```
/// use serde::Serialize;
///
/// let mut out = Vec::new();
/// let mut ser = serde_daphne::Serializer::new(&mut out);
/// 2.5f64.serialize(&mut ser)?;
/// vec![1u8, 2, 3].serialize(&mut ser)?;
/// let mut de = serde_daphne::Deserializer::from_slice(&out);
/// let x: f64 = serde::Deserialize::deserialize(&mut de)?;
/// let v: Vec<u8> = serde::Deserialize::deserialize(&mut de)?;
/// de.end()?;
/// assert_eq!((x, v), (2.5, vec![1, 2, 3]));
/// # Ok::<(), serde_daphne::Error>(())
/// ```
pub struct Serializer<W> {
    writer: W,
    options: Options,
    /// When set, the output: everything is appended here and `writer` is unused.
    direct: Option<Vec<u8>>,
}

impl<W: Write> Serializer<W> {
    /// A serializer with the default [`Options`].
    pub fn new(writer: W) -> Self {
        Serializer::with_options(writer, Options::new())
    }

    /// A serializer with the given options.
    pub fn with_options(writer: W, options: Options) -> Self {
        Serializer {
            writer,
            options,
            direct: None,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Gives the writer back.
    pub fn into_inner(self) -> W {
        self.writer
    }

    /// Runs `write` on a sink onto the output.
    fn with_sink(
        &mut self,
        write: impl FnOnce(&mut Sink<&mut W>, &Options) -> Result<()>,
    ) -> Result<()> {
        let mut sink = match self.direct.take() {
            Some(out) => Sink::direct(&mut self.writer, out),
            None => Sink::new(&mut self.writer),
        };
        let result = write(&mut sink, &self.options);
        if sink.is_direct() {
            self.direct = Some(sink.into_output());
            return result;
        }
        result?;
        sink.finish()?;
        Ok(())
    }

    fn write_dense(&mut self, rows: usize, cols: usize, values: &Values) -> Result<()> {
        self.with_sink(|sink, options| {
            with_values!(values, v => write_matrix(
                sink,
                DataType::DenseMatrix,
                &MatrixRef::dense(rows, cols, v),
                options,
            ))
        })
    }

    fn write_scalar(&mut self, value: Value) -> Result<()> {
        self.with_sink(|sink, options| {
            if options.writes_runtime() {
                return runtime::write_scalar(sink, value);
            }
            with_value!(value, x => write_matrix(
                sink,
                DataType::DenseMatrix,
                &MatrixRef::dense(1, 1, std::slice::from_ref(&x)),
                options,
            ))
        })
    }

    /// The count marker before a sequence of `count` objects: a 0 x `count` DenseMatrix.
    fn write_count_marker(&mut self, count: usize) -> Result<()> {
        self.write_dense(0, count, &Values::U64(Vec::new()))
    }

    fn capture<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let options = self.options.clone();
        if self.direct.is_none() {
            let writer = &mut self.writer;
            return handoff::with_capture(&options, &mut None, || {
                value.serialize(ChunkSink { writer })
            })
            .map_err(handoff::recover);
        }
        // An adapter appends to the output itself; anything sent as chunks follows it.
        let mut chunks = Vec::new();
        let result = handoff::with_capture(&options, &mut self.direct, || {
            value.serialize(ChunkSink {
                writer: &mut chunks,
            })
        });
        if let Some(out) = &mut self.direct {
            out.extend_from_slice(&chunks);
        }
        result.map_err(handoff::recover)
    }
}

/// Leaf methods that fail with `$err`.
macro_rules! reject_leaves {
    ($err:expr; $($method:ident($ty:ty))*) => {$(
        fn $method(self, _: $ty) -> Result<Self::Ok> {
            Err($err)
        }
    )*};
}

impl<'a, W: Write> ser::Serializer for &'a mut Serializer<W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = SeqSerializer<'a, W>;
    type SerializeTuple = SeqSerializer<'a, W>;
    type SerializeTupleStruct = SeqSerializer<'a, W>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = StructSerializer<'a, W>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.write_scalar(Value::U8(u8::from(v)))
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.write_scalar(Value::I8(v))
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.write_scalar(Value::I16(v))
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.write_scalar(Value::I32(v))
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.write_scalar(Value::I64(v))
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.write_scalar(Value::U8(v))
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.write_scalar(Value::U16(v))
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.write_scalar(Value::U32(v))
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        self.write_scalar(Value::U64(v))
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.write_scalar(Value::F32(v))
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.write_scalar(Value::F64(v))
    }

    reject_leaves! { Error::unrepresentable("128-bit integers");
    serialize_i128(i128) serialize_u128(u128) }
    reject_leaves! { Error::unrepresentable("chars"); serialize_char(char) }
    reject_leaves! { Error::unrepresentable("strings"); serialize_str(&str) }
    reject_leaves! { Error::unrepresentable("byte strings"); serialize_bytes(&[u8]) }
    reject_leaves! { Error::unrepresentable("unit structs"); serialize_unit_struct(&'static str) }

    fn serialize_none(self) -> Result<()> {
        Err(Error::unrepresentable("options"))
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<()> {
        Err(Error::unrepresentable("options"))
    }
    fn serialize_unit(self) -> Result<()> {
        Err(Error::unrepresentable("unit values"))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<()> {
        Err(Error::unrepresentable("enums"))
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        if handoff::is_marker(name) {
            self.capture(value)
        } else {
            value.serialize(self)
        }
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(Error::unrepresentable("enums"))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq> {
        Ok(SeqSerializer::new(self, len, false))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        Ok(SeqSerializer::new(self, Some(len), true))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Ok(SeqSerializer::new(self, Some(len), true))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Error::unrepresentable("enums"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(Error::unrepresentable("maps"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Ok(StructSerializer { ser: self })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Error::unrepresentable("enums"))
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// Writes a struct's fields as objects back to back.
#[doc(hidden)]
pub struct StructSerializer<'a, W> {
    ser: &'a mut Serializer<W>,
}

impl<W: Write> ser::SerializeStruct for StructSerializer<'_, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(&mut *self.ser).map_err(|e| e.within(&key))
    }

    fn end(self) -> Result<()> {
        Ok(())
    }
}

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
    fn new(ser: &'a mut Serializer<W>, len: Option<usize>, tuple: bool) -> Self {
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

/// Accepts any compound value and throws it away, ending in `Ok(None)`.
pub(crate) struct Discard<T>(std::marker::PhantomData<T>);

impl<T> Discard<T> {
    fn new() -> Self {
        Discard(std::marker::PhantomData)
    }
}

macro_rules! impl_discard {
    ($($trait:ident { $($method:ident ($($key:ty)?)),* }),*) => {$(
        impl<T> ser::$trait for Discard<T> {
            type Ok = Option<T>;
            type Error = Error;
            $(fn $method<V: ?Sized + Serialize>(&mut self, $(_: $key,)? _: &V) -> Result<()> {
                Ok(())
            })*
            fn end(self) -> Result<Option<T>> {
                Ok(None)
            }
        }
    )*};
}
impl_discard!(
    SerializeSeq { serialize_element() },
    SerializeTuple { serialize_element() },
    SerializeTupleStruct { serialize_field() },
    SerializeTupleVariant { serialize_field() },
    SerializeStruct { serialize_field(&'static str) },
    SerializeStructVariant { serialize_field(&'static str) }
);

impl<T> ser::SerializeMap for Discard<T> {
    type Ok = Option<T>;
    type Error = Error;
    fn serialize_key<V: ?Sized + Serialize>(&mut self, _: &V) -> Result<()> {
        Ok(())
    }
    fn serialize_value<V: ?Sized + Serialize>(&mut self, _: &V) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Option<T>> {
        Ok(None)
    }
}

/// Answers `Some(value)` when the serialized value is a number (or bool), `None` otherwise.
pub(crate) struct ScalarProbe;

macro_rules! probe_numbers {
    ($wrap:expr) => {
        fn serialize_bool(self, v: bool) -> Result<Self::Ok> {
            Ok($wrap(Value::U8(u8::from(v))))
        }
        fn serialize_i8(self, v: i8) -> Result<Self::Ok> {
            Ok($wrap(Value::I8(v)))
        }
        fn serialize_i16(self, v: i16) -> Result<Self::Ok> {
            Ok($wrap(Value::I16(v)))
        }
        fn serialize_i32(self, v: i32) -> Result<Self::Ok> {
            Ok($wrap(Value::I32(v)))
        }
        fn serialize_i64(self, v: i64) -> Result<Self::Ok> {
            Ok($wrap(Value::I64(v)))
        }
        fn serialize_u8(self, v: u8) -> Result<Self::Ok> {
            Ok($wrap(Value::U8(v)))
        }
        fn serialize_u16(self, v: u16) -> Result<Self::Ok> {
            Ok($wrap(Value::U16(v)))
        }
        fn serialize_u32(self, v: u32) -> Result<Self::Ok> {
            Ok($wrap(Value::U32(v)))
        }
        fn serialize_u64(self, v: u64) -> Result<Self::Ok> {
            Ok($wrap(Value::U64(v)))
        }
        fn serialize_f32(self, v: f32) -> Result<Self::Ok> {
            Ok($wrap(Value::F32(v)))
        }
        fn serialize_f64(self, v: f64) -> Result<Self::Ok> {
            Ok($wrap(Value::F64(v)))
        }
    };
}

macro_rules! reject_leaves_ok {
    ($($method:ident($ty:ty))*) => {$(
        fn $method(self, _: $ty) -> Result<Self::Ok> {
            Ok(None)
        }
    )*};
}

/// The methods of a probe that answer `Ok(None)`: everything but numbers, sequences and
/// tuples.
macro_rules! probe_nothing {
    () => {
        reject_leaves_ok! { serialize_char(char) serialize_str(&str) serialize_bytes(&[u8])
        serialize_unit_struct(&'static str) serialize_i128(i128) serialize_u128(u128) }
        fn serialize_none(self) -> Result<Self::Ok> {
            Ok(None)
        }
        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok> {
            Ok(None)
        }
        fn serialize_unit(self) -> Result<Self::Ok> {
            Ok(None)
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
        ) -> Result<Self::Ok> {
            Ok(None)
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            name: &'static str,
            value: &T,
        ) -> Result<Self::Ok> {
            if handoff::is_marker(name) {
                Ok(None)
            } else {
                value.serialize(self)
            }
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            Ok(None)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant> {
            Ok(Discard::new())
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
            Ok(Discard::new())
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
            Ok(Discard::new())
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant> {
            Ok(Discard::new())
        }
    };
}

impl ser::Serializer for ScalarProbe {
    type Ok = Option<Value>;
    type Error = Error;
    type SerializeSeq = Discard<Value>;
    type SerializeTuple = Discard<Value>;
    type SerializeTupleStruct = Discard<Value>;
    type SerializeTupleVariant = Discard<Value>;
    type SerializeMap = Discard<Value>;
    type SerializeStruct = Discard<Value>;
    type SerializeStructVariant = Discard<Value>;

    probe_numbers!(Some);
    probe_nothing!();

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Ok(Discard::new())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Ok(Discard::new())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Ok(Discard::new())
    }
}

/// Answers `Some(row)` when the serialized value is a sequence of numbers of one type
/// (`Some(None)` for an empty one), `None` otherwise.
struct RowProbe;

/// Collects a row's numbers.
#[doc(hidden)]
pub struct RowCollector {
    values: Option<Values>,
    is_row: bool,
}

impl RowCollector {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if !self.is_row {
            return Ok(());
        }
        match (value.serialize(ScalarProbe)?, &mut self.values) {
            (Some(v), Some(values)) => self.is_row = values.push(v),
            (Some(v), None) => {
                let mut values = Values::new(v.value_type());
                values.push(v);
                self.values = Some(values);
            }
            (None, _) => self.is_row = false,
        }
        Ok(())
    }

    fn done(self) -> Result<Option<Option<Values>>> {
        Ok(self.is_row.then_some(self.values))
    }
}

macro_rules! impl_row_collector {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for RowCollector {
            type Ok = Option<Option<Values>>;
            type Error = Error;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
                self.push(value)
            }
            fn end(self) -> Result<Self::Ok> {
                self.done()
            }
        }
    )*};
}
impl_row_collector!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::Serializer for RowProbe {
    type Ok = Option<Option<Values>>;
    type Error = Error;
    type SerializeSeq = RowCollector;
    type SerializeTuple = RowCollector;
    type SerializeTupleStruct = RowCollector;
    type SerializeTupleVariant = Discard<Option<Values>>;
    type SerializeMap = Discard<Option<Values>>;
    type SerializeStruct = Discard<Option<Values>>;
    type SerializeStructVariant = Discard<Option<Values>>;

    probe_numbers!(|_| None);
    probe_nothing!();

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Ok(RowCollector {
            values: None,
            is_row: true,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.serialize_seq(Some(len))
    }
}

/// Receives an adapter's encoded object as a sequence of byte chunks and writes them out.
struct ChunkSink<'a, W> {
    writer: &'a mut W,
}

fn not_chunks() -> Error {
    Error::invalid("internal: an adapter payload must be a sequence of byte chunks")
}

macro_rules! reject_all_leaves {
    () => {
        reject_leaves! { not_chunks(); serialize_bool(bool) serialize_i8(i8) serialize_i16(i16)
        serialize_i32(i32) serialize_i64(i64) serialize_u8(u8) serialize_u16(u16)
        serialize_u32(u32) serialize_u64(u64) serialize_f32(f32) serialize_f64(f64)
        serialize_char(char) serialize_str(&str) serialize_unit_struct(&'static str) }
        fn serialize_none(self) -> Result<Self::Ok> {
            Err(not_chunks())
        }
        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok> {
            Err(not_chunks())
        }
        fn serialize_unit(self) -> Result<Self::Ok> {
            Err(not_chunks())
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
        ) -> Result<Self::Ok> {
            Err(not_chunks())
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            Err(not_chunks())
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            Err(not_chunks())
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
            Err(not_chunks())
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct> {
            Err(not_chunks())
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant> {
            Err(not_chunks())
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
            Err(not_chunks())
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
            Err(not_chunks())
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant> {
            Err(not_chunks())
        }
    };
}

impl<'a, W: Write> ser::Serializer for ChunkSink<'a, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Self;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    reject_all_leaves!();

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        self.writer.write_all(v)?;
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self> {
        Ok(self)
    }
}

impl<W: Write> ser::SerializeSeq for ChunkSink<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        value.serialize(ChunkSink {
            writer: &mut *self.writer,
        })
    }
    fn end(self) -> Result<()> {
        Ok(())
    }
}

/// Serializes `value` to `writer` with the default options.
///
/// # Errors
/// I/O errors, and [`Error::Unrepresentable`]/[`Error::InvalidValue`] for values the format
/// cannot hold.
pub fn to_writer<W: Write, T: ?Sized + Serialize>(writer: W, value: &T) -> Result<()> {
    to_writer_with(writer, value, &Options::new())
}

/// Serializes `value` to `writer` with the given options.
///
/// # Errors
/// As [`to_writer`].
pub fn to_writer_with<W: Write, T: ?Sized + Serialize>(
    writer: W,
    value: &T,
    options: &Options,
) -> Result<()> {
    let mut ser = Serializer::with_options(writer, options.clone());
    value.serialize(&mut ser)
}

/// Serializes `value` into a new byte vector with the default options.
///
/// ```
/// let bytes = serde_daphne::to_vec(&7u8)?;
/// // version 1, DenseMatrix, 1 x 1, u8; one block at (0, 0): 1 x 1, dense, u8, the value 7.
/// assert_eq!(bytes.len(), 19 + 16 + 10 + 1);
/// assert_eq!(&bytes[..2], &[1, 1]);
/// assert_eq!(bytes[bytes.len() - 1], 7);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// As [`to_writer`].
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> Result<Vec<u8>> {
    to_vec_with(value, &Options::new())
}

/// Serializes `value` into a new byte vector with the given options.
///
/// # Errors
/// As [`to_writer`].
pub fn to_vec_with<T: ?Sized + Serialize>(value: &T, options: &Options) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    append_to_vec_with(&mut out, value, options)?;
    Ok(out)
}

/// Appends the encoding of `value` to `out` with the default options, reusing its capacity.
///
/// The encoding is built in `out` itself, so sparse blocks, which cannot be copied from the
/// source in one piece, are not built in a buffer and copied again as through [`to_writer`].
///
/// ```
/// let mut out = Vec::with_capacity(1 << 10);
/// serde_daphne::append_to_vec(&mut out, &vec![1.5f64, 2.5])?;
/// assert_eq!(serde_daphne::from_slice::<Vec<f64>>(&out)?, [1.5, 2.5]);
/// out.clear(); // the capacity stays for the next one
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// As [`to_writer`]; on an error `out` is left as it was.
pub fn append_to_vec<T: ?Sized + Serialize>(out: &mut Vec<u8>, value: &T) -> Result<()> {
    append_to_vec_with(out, value, &Options::new())
}

/// Appends the encoding of `value` to `out` with the given options (see [`append_to_vec`]).
///
/// # Errors
/// As [`to_writer`]; on an error `out` is left as it was.
pub fn append_to_vec_with<T: ?Sized + Serialize>(
    out: &mut Vec<u8>,
    value: &T,
    options: &Options,
) -> Result<()> {
    let start = out.len();
    let mut ser = Serializer {
        writer: std::io::sink(),
        options: options.clone(),
        direct: Some(std::mem::take(out)),
    };
    let result = value.serialize(&mut ser);
    *out = ser.direct.take().unwrap_or_default();
    if result.is_err() {
        out.truncate(start);
    }
    result
}
