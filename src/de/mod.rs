//! Deserialize Rust values from the DAPHNE binary format.
//!
//! The mapping mirrors [`crate::ser`]; reading is driven by the Rust type. A sequence reads a
//! column (or row) vector when its elements are numbers, a matrix's rows when they are
//! sequences, and the objects after a count marker otherwise. Values convert to the requested
//! type only when the number is preserved; otherwise [`crate::ErrorKind::LossyConversion`].

/// Methods that deserialize one number through `self.$get()`, a [`ValueDe`].
macro_rules! numbers_via {
    ($get:ident) => {
        numbers_via!(@ $get; deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
            deserialize_i64 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
            deserialize_f32 deserialize_f64);
    };
    (@ $get:ident; $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            self.$get()?.$method(visitor)
        }
    )*};
}

/// Methods for kinds of value the format cannot hold.
macro_rules! unrepresentable {
    ($($method:ident => $what:literal),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
            Err(Error::unrepresentable($what))
        }
    )*};
}

mod seq;
mod value;

use crate::error::ErrorDetails;
use std::io::Read;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{forward_to_deserialize_any, Deserialize};

use crate::adapter_protocol;
use crate::error::{Error, Result};
use crate::model::detect::read_object;
use crate::model::tiled::{read_dense_tiles, read_dense_tiles_at};
use crate::model::{Meta, Object};
use crate::options::{check_alloc, Dialect, Options};
use crate::wire::header::peek_shape;
use crate::wire::{DataType, IoSource, SliceSource, Source};
use seq::{MatrixSeq, ObjectsSeq, TupleSeq};
pub(crate) use value::{CellDe, ValueDe};

/// A deserializer reading DAPHNE objects from a byte source.
///
/// ```
/// let bytes = serde_daphne::to_vec(&(vec![1i32, 2], 0.5f32))?;
/// let mut de = serde_daphne::Deserializer::from_slice(&bytes);
/// let value: (Vec<i32>, f32) = serde::Deserialize::deserialize(&mut de)?;
/// de.end()?;
/// assert_eq!(value, (vec![1, 2], 0.5));
/// # Ok::<(), serde_daphne::Error>(())
/// ```
pub struct Deserializer<S> {
    src: S,
    dialect: Option<Dialect>,
    max_alloc: u64,
    /// What a sidecar says about the first object.
    hint: Option<Meta>,
    /// The file the source reads from start to end, and its length, for the objects read
    /// with positional reads on every core (tiled dense matrices into arrays).
    file: Option<(std::sync::Arc<dyn crate::wire::read_at::ReadAt>, u64)>,
}

impl<'a> Deserializer<SliceSource<'a>> {
    /// Reads from a byte slice, telling each object's dialect from its bytes.
    pub fn from_slice(bytes: &'a [u8]) -> Self {
        Deserializer::from_source(SliceSource::new(bytes))
    }
}

impl<R: Read> Deserializer<IoSource<R>> {
    /// Reads from an `io::Read` with the default options (no read limit; see
    /// [`Deserializer::with_options`]).
    pub fn from_reader(reader: R) -> Self {
        Deserializer::from_source(IoSource::new(reader, u64::MAX))
    }

    /// Declares that the reader holds exactly `len` bytes (a file's size), so that values
    /// are allocated once at their size instead of grown as they arrive.
    pub fn with_input_len(mut self, len: u64) -> Self {
        self.src = self.src.with_known_len(len);
        self
    }
}

impl<S: Source> Deserializer<S> {
    /// Reads from any [`Source`].
    #[doc(hidden)]
    pub fn from_source(src: S) -> Self {
        let options = Options::new();
        Deserializer {
            src,
            dialect: options.dialect,
            max_alloc: options.max_alloc,
            hint: None,
            file: None,
        }
    }

    /// Reads from any [`Source`] with options.
    #[doc(hidden)]
    pub fn from_source_with(src: S, options: &Options) -> Self {
        Deserializer::from_source(src).with_options(options)
    }

    /// Reads with `options`: a forced [`Options::dialect`], [`Options::max_alloc`], and for
    /// an `io::Read` the read limit [`Options::max_bytes`].
    ///
    /// ```
    /// use serde_daphne::{Deserializer, ErrorKind, Options};
    ///
    /// let bytes = serde_daphne::to_vec(&vec![1.0f64; 1000])?;
    /// let small = Options { max_bytes: 100, ..Options::new() };
    /// let mut de = Deserializer::from_reader(&bytes[..]).with_options(&small);
    /// let err = <Vec<f64> as serde::Deserialize>::deserialize(&mut de).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    pub fn with_options(mut self, options: &Options) -> Self {
        self.src.limit(options.max_bytes);
        self.dialect = options.dialect;
        self.max_alloc = options.max_alloc;
        self
    }

    /// Uses what a `.meta` sidecar says for the first object: its dialect, its frame labels,
    /// and a check that it agrees with the file.
    #[doc(hidden)]
    pub fn with_hint(mut self, hint: Meta) -> Self {
        self.hint = Some(hint);
        self
    }

    /// Tells the deserializer that its source reads `file` (of `len` bytes) from its start,
    /// so that tiled dense matrices can be read from it on every core.
    pub(crate) fn with_file(
        mut self,
        file: std::sync::Arc<dyn crate::wire::read_at::ReadAt>,
        len: u64,
    ) -> Self {
        self.file = Some((file, len));
        self
    }

    /// Checks that the input is exhausted.
    ///
    /// # Errors
    /// [`crate::ErrorKind::TrailingBytes`] when bytes remain.
    #[doc(hidden)]
    pub fn end(&mut self) -> Result<()> {
        if self.src.at_end()? {
            Ok(())
        } else {
            Err(ErrorDetails::TrailingBytes {
                offset: self.src.offset(),
            }
            .into())
        }
    }

    /// The offset of the next byte to read.
    #[doc(hidden)]
    pub fn offset(&self) -> u64 {
        self.src.offset()
    }

    /// Reads the next object as it is stored.
    ///
    /// # Errors
    /// Any malformed input; [`crate::ErrorKind::UnexpectedEof`] at the end of the input.
    #[doc(hidden)]
    pub fn next_object(&mut self) -> Result<Object> {
        let hint = self.hint.take();
        read_object(&mut self.src, self.dialect, hint.as_ref())
    }

    /// An iterator deserializing one `T` after another until the input ends.
    ///
    /// ```
    /// use serde_daphne::{Deserializer, Object};
    ///
    /// let mut bytes = serde_daphne::to_vec(&1.0f64)?;
    /// bytes.extend(serde_daphne::to_vec(&vec![2u8, 3])?);
    /// let objects: Vec<Object> = Deserializer::from_slice(&bytes)
    ///     .into_iter()
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(objects.len(), 2);
    /// assert_eq!(objects[1].shape(), (2, 1));
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    #[allow(clippy::should_implement_trait)] // serde_json's name for the same thing
    pub fn into_iter<T: DeserializeOwned>(self) -> StreamDeserializer<S, T> {
        StreamDeserializer {
            de: self,
            failed: false,
            item: PhantomData,
        }
    }

    /// Reads the next object for a typed read, refusing one whose values would take more
    /// memory than its bytes in the input plus `max_alloc`. `csr` when read as CSR arrays,
    /// `per_row` bytes of overhead per row (a `Vec` per row for `Vec<Vec<T>>`).
    fn next_object_to_materialize(&mut self, csr: bool, per_row: u128) -> Result<Object> {
        let start = self.src.offset();
        let object = self.next_object()?;
        self.check_materialize(start, object, csr, per_row)
    }

    /// Like [`Deserializer::next_object_to_materialize`] for a dense matrix: a tiled object
    /// held in memory comes assembled into one block (see [`read_dense_tiles`]) when the
    /// adapter said what its values go into.
    fn next_dense_object(&mut self) -> Result<Object> {
        let start = self.src.offset();
        let wanted = adapter_protocol::take_wanted();
        let (Some(wanted), None) = (wanted, &self.hint) else {
            return self.next_object_to_materialize(false, 0);
        };
        if self.dialect == Some(Dialect::Runtime) {
            return self.next_object_to_materialize(false, 0);
        }
        if let Some(bytes) = self.src.in_memory() {
            if let Some((object, len)) = read_dense_tiles(bytes, start, wanted) {
                self.src.take(len, "the object")?;
                return self.check_materialize(start, object, false, 0);
            }
        } else if let Some((file, file_len)) = &self.file {
            if let Some(read) = read_dense_tiles_at(&**file, *file_len, start, wanted) {
                let (object, len) = read?;
                self.src.skip(len, "the object")?;
                return self.check_materialize(start, object, false, 0);
            }
        }
        self.next_object_to_materialize(false, 0)
    }

    /// Refuses `object`, read from byte `start`, when materializing it would take more memory
    /// than its bytes plus `max_alloc` (see [`Deserializer::next_object_to_materialize`]).
    fn check_materialize(
        &self,
        start: u64,
        object: Object,
        csr: bool,
        per_row: u128,
    ) -> Result<Object> {
        let (rows, cols) = object.shape();
        let (rows, cols) = (u128::from(rows), u128::from(cols));
        let header = object.header();
        let needed = match header.matrix_value_type() {
            None => {
                let width: u128 = (0..header.cols())
                    .filter_map(|c| header.value_type_of(c))
                    .map(|vt| vt.size() as u128)
                    .sum();
                rows * width
            }
            Some(vt) if csr => {
                (rows + 1) * 8 + u128::from(object.entries()) * (8 + vt.size() as u128)
            }
            Some(vt) => rows * cols * vt.size() as u128,
        } + rows * per_row;
        check_alloc(start, needed, self.src.offset() - start, self.max_alloc)?;
        Ok(object)
    }

    /// Reads a 1 x 1 object as one value.
    fn scalar(&mut self) -> Result<ValueDe> {
        let object = self.next_object()?;
        let offset = object.offset();
        let (rows, cols) = object.shape();
        match object.get(0, 0) {
            Some(value) if (rows, cols) == (1, 1) => Ok(ValueDe { value, offset }),
            _ => Err(ErrorDetails::ShapeMismatch {
                offset,
                expected: "a number is read from a 1 x 1 object".into(),
                rows,
                cols,
            }
            .into()),
        }
    }

    /// The data type and shape of the next object, without consuming it.
    fn peek(&mut self) -> Result<(DataType, u64, u64)> {
        peek_shape(&mut self.src)?.ok_or(Error::from(ErrorDetails::UnexpectedEof {
            offset: self.src.offset(),
            what: "the next object",
            needed: 1,
            available: 0,
        }))
    }
}

/// Iterator over the values of a stream of objects; see [`Deserializer::into_iter`].
pub struct StreamDeserializer<S, T> {
    de: Deserializer<S>,
    failed: bool,
    item: PhantomData<T>,
}

impl<S: Source, T: DeserializeOwned> Iterator for StreamDeserializer<S, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if self.failed {
            return None;
        }
        let result = match self.de.src.at_end() {
            Ok(true) => return None,
            Ok(false) => T::deserialize(&mut self.de),
            Err(e) => Err(e),
        };
        self.failed = result.is_err();
        Some(result)
    }
}

impl<'de, S: Source> de::Deserializer<'de> for &mut Deserializer<S> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Error::unrepresentable(
            "self-describing values (deserialize_any; read a serde_daphne::Object instead)",
        ))
    }

    numbers_via!(scalar);

    unrepresentable! {
        deserialize_i128 => "128-bit integers",
        deserialize_u128 => "128-bit integers",
        deserialize_char => "chars",
        deserialize_str => "strings",
        deserialize_string => "strings",
        deserialize_bytes => "byte strings",
        deserialize_byte_buf => "byte strings",
        deserialize_option => "options",
        deserialize_unit => "unit values",
        deserialize_map => "maps",
        deserialize_identifier => "identifiers",
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, _: V) -> Result<V::Value> {
        Err(Error::unrepresentable("unit structs"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value> {
        Err(Error::unrepresentable("enums"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if adapter_protocol::is_marker(name) {
            let object = match name {
                adapter_protocol::OBJECT => self.next_object()?,
                // A record takes memory even when the frame has no columns.
                adapter_protocol::FRAME => self.next_object_to_materialize(false, 16)?,
                adapter_protocol::DENSE => self.next_dense_object()?,
                name => self.next_object_to_materialize(name == adapter_protocol::CSR, 0)?,
            };
            adapter_protocol::with_object(object, || visitor.visit_newtype_struct(Parked))
                .map_err(adapter_protocol::recover)
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let (data_type, rows, cols) = self.peek()?;
        if data_type == DataType::DenseMatrix && rows == 0 {
            self.next_object()?;
            let count = usize::try_from(cols).map_err(|_| {
                Error::from(ErrorDetails::TooLarge {
                    offset: self.offset(),
                    what: "a sequence",
                    bytes: u128::from(cols),
                })
            })?;
            return visitor.visit_seq(ObjectsSeq {
                de: self,
                remaining: count,
                index: 0,
                fields: None,
            });
        }
        // Read as rows, each row may be a `Vec` of its own.
        let row_overhead = std::mem::size_of::<Vec<u8>>() as u128;
        let object = self.next_object_to_materialize(false, row_overhead)?;
        visitor.visit_seq(MatrixSeq::new(object)?)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        visitor.visit_seq(TupleSeq {
            de: self,
            len,
            index: 0,
            vector: None,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_seq(ObjectsSeq {
            de: self,
            remaining: fields.len(),
            index: 0,
            fields: Some(fields),
        })
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.next_object()?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The stand-in handed to an adapter's visitor while its object is parked.
struct Parked;

impl<'de> de::Deserializer<'de> for Parked {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Error::invalid(
            "internal: a serde_daphne adapter payload was read by a foreign visitor",
        ))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// Deserializes a `T` from a byte slice holding exactly its objects.
///
/// ```
/// let bytes = serde_daphne::to_vec(&vec![vec![1.0f64, 2.0], vec![3.0, 4.0]])?;
/// let matrix: Vec<Vec<f64>> = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(matrix, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// Malformed input (with its byte offset), values that do not fit `T`, and
/// [`crate::ErrorKind::TrailingBytes`] when bytes follow.
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T> {
    Options::new().from_slice(bytes)
}

/// Deserializes a `T` from an `io::Read`, which must end after its objects.
///
/// # Errors
/// As [`from_slice`], and I/O errors.
pub fn from_reader<R: Read, T: DeserializeOwned>(reader: R) -> Result<T> {
    Options::new().from_reader(reader)
}

impl Options {
    /// Deserializes a `T` from a byte slice with these options (such as a forced
    /// [`Options::dialect`]), as [`from_slice`] does with the defaults.
    ///
    /// ```
    /// use serde_daphne::{Dialect, ErrorKind, Options};
    ///
    /// let runtime = Options { dialect: Some(Dialect::Runtime), ..Options::new() };
    /// let bytes = runtime.to_vec(&vec![1.0f64, 2.0])?;
    /// assert_eq!(runtime.from_slice::<Vec<f64>>(&bytes)?, [1.0, 2.0]);
    /// // The specification's bytes are not read as the runtime's: its value type codes differ.
    /// let spec = serde_daphne::to_vec(&vec![1.0f64, 2.0])?;
    /// let err = runtime.from_slice::<Vec<f64>>(&spec).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::UnknownValueType);
    /// # Ok::<(), serde_daphne::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`from_slice`].
    // Named as ron's `Options::from_str`: the options read a value from the input.
    #[allow(clippy::wrong_self_convention)]
    pub fn from_slice<'a, T: Deserialize<'a>>(&self, bytes: &'a [u8]) -> Result<T> {
        let mut de = Deserializer::from_slice(bytes).with_options(self);
        let value = T::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// Deserializes a `T` from an `io::Read` with these options (such as
    /// [`Options::max_bytes`]), as [`from_reader`] does with the defaults.
    ///
    /// # Errors
    /// As [`from_reader`]; [`crate::ErrorKind::LimitExceeded`] past the read limit.
    #[allow(clippy::wrong_self_convention)]
    pub fn from_reader<R: Read, T: DeserializeOwned>(&self, reader: R) -> Result<T> {
        let mut de = Deserializer::from_reader(reader).with_options(self);
        let value = T::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
}
