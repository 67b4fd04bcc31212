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
//! fail with [`crate::ErrorKind::Unrepresentable`] naming the field path.

mod answer;
mod chunks;
mod probe;
mod seq;
mod sized;

use std::io::Write;

use serde::ser::{self, Impossible, Serialize};

use crate::adapter_protocol;
use crate::codes::with_value;
use crate::error::{Error, Result};
use crate::model::encode::{write_matrix, MatrixRef};
use crate::options::Options;
use crate::wire::runtime;
use crate::wire::sink::Sink;
use crate::wire::values::with_values;
use crate::wire::{DataType, Value, Values};
use answer::answer;
pub(crate) use answer::answer as answer_serializer_methods;
use chunks::ChunkSink;
pub(crate) use probe::{ColumnPush, ScalarProbe};
pub use seq::SeqSerializer;

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
    /// Only the output's length is wanted (`writer` counts): encoders may skip building bytes.
    counting: bool,
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
            counting: false,
        }
    }

    /// A serializer that only measures its output: `writer` must count the bytes it is
    /// given, and stands for what the encoders skip with as many zeros.
    pub(crate) fn counting(writer: W, options: Options) -> Self {
        Serializer {
            counting: true,
            ..Serializer::with_options(writer, options)
        }
    }

    /// The options in force.
    #[doc(hidden)]
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
            None if self.counting => Sink::counting(&mut self.writer),
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
                &MatrixRef::dense_unchecked(rows, cols, v),
                options,
            ))
        })
    }

    fn write_scalar(&mut self, value: Value) -> Result<()> {
        self.with_sink(|sink, options| {
            if options.runtime_writer()? {
                return runtime::write_scalar(sink, value);
            }
            with_value!(value, x => write_matrix(
                sink,
                DataType::DenseMatrix,
                &MatrixRef::dense_unchecked(1, 1, std::slice::from_ref(&x)),
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
            return adapter_protocol::with_capture(&options, &mut None, self.counting, || {
                value.serialize(ChunkSink { writer })
            })
            .map_err(adapter_protocol::recover);
        }
        // An adapter appends to the output itself; anything sent as chunks follows it.
        let mut chunks = Vec::new();
        let result = adapter_protocol::with_capture(&options, &mut self.direct, false, || {
            value.serialize(ChunkSink {
                writer: &mut chunks,
            })
        });
        if let Some(out) = &mut self.direct {
            out.extend_from_slice(&chunks);
        }
        result.map_err(adapter_protocol::recover)
    }
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

    answer! { Err(Error::unrepresentable("128-bit integers")); serialize_i128 serialize_u128 }
    answer! { Err(Error::unrepresentable("chars")); serialize_char }
    answer! { Err(Error::unrepresentable("strings")); serialize_str }
    answer! { Err(Error::unrepresentable("byte strings")); serialize_bytes }
    answer! { Err(Error::unrepresentable("unit structs")); serialize_unit_struct }
    answer! { Err(Error::unrepresentable("options")); serialize_none serialize_some }
    answer! { Err(Error::unrepresentable("unit values")); serialize_unit }
    answer! { Err(Error::unrepresentable("enums"));
    serialize_unit_variant serialize_newtype_variant serialize_tuple_variant
    serialize_struct_variant }
    answer! { Err(Error::unrepresentable("maps")); serialize_map }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        if adapter_protocol::is_marker(name) {
            self.capture(value)
        } else {
            value.serialize(self)
        }
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
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Ok(StructSerializer { ser: self })
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

/// Serializes `value` to `writer` with the default options ([`Options::to_writer`] with
/// others).
///
/// ```
/// let mut out = Vec::new();
/// serde_daphne::to_writer(&mut out, &vec![1.5f64, 2.5])?; // a 2 x 1 DenseMatrix
/// assert_eq!(serde_daphne::from_reader::<_, Vec<f64>>(&out[..])?, [1.5, 2.5]);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// I/O errors, and [`crate::ErrorKind::Unrepresentable`]/[`crate::ErrorKind::InvalidValue`] for values the format
/// cannot hold.
pub fn to_writer<W: Write, T: ?Sized + Serialize>(writer: W, value: &T) -> Result<()> {
    Options::new().to_writer(writer, value)
}

/// Serializes `value` into a new byte vector with the default options ([`Options::to_vec`]
/// with others).
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
    Options::new().to_vec(value)
}

/// Writing with options: each function of the crate's root has its method here, which
/// writes with these options instead of the defaults.
impl Options {
    /// Serializes `value` to `writer` with these options, as [`to_writer`] does with the
    /// defaults.
    ///
    /// # Errors
    /// As [`to_writer`]; [`crate::ErrorKind::NotInDialect`] for what the runtime dialect
    /// cannot express.
    pub fn to_writer<W: Write, T: ?Sized + Serialize>(&self, writer: W, value: &T) -> Result<()> {
        let mut ser = Serializer::with_options(writer, self.clone());
        value.serialize(&mut ser)
    }

    /// Serializes `value` into a new byte vector with these options, as [`to_vec`] does with
    /// the defaults.
    ///
    /// # Errors
    /// As [`Options::to_writer`].
    pub fn to_vec<T: ?Sized + Serialize>(&self, value: &T) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.append_to_vec(&mut out, value)?;
        Ok(out)
    }

    /// Appends the encoding of `value` to `out` with these options, reusing its capacity.
    ///
    /// The encoding is built in `out` itself, so sparse blocks, which cannot be copied from the
    /// source in one piece, are not built in a buffer and copied again as through [`to_writer`].
    ///
    /// ```
    /// use serde_daphne::Options;
    ///
    /// let mut out = Vec::with_capacity(1 << 10);
    /// Options::new().append_to_vec(&mut out, &vec![1.5f64, 2.5])?;
    /// assert_eq!(serde_daphne::from_slice::<Vec<f64>>(&out)?, [1.5, 2.5]);
    /// out.clear(); // the capacity stays for the next one
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Options::to_writer`]; on an error `out` is left as it was.
    pub fn append_to_vec<T: ?Sized + Serialize>(&self, out: &mut Vec<u8>, value: &T) -> Result<()> {
        let start = out.len();
        let mut ser = Serializer {
            writer: std::io::sink(),
            options: self.clone(),
            direct: Some(std::mem::take(out)),
            counting: false,
        };
        let result = value.serialize(&mut ser);
        *out = ser.direct.take().unwrap_or_default();
        if result.is_err() {
            out.truncate(start);
        }
        result
    }
}
