//! The sink an adapter's encoded object arrives in, as a sequence of byte chunks.

use std::io::Write;

use serde::ser::{self, Impossible, Serialize};

use super::answer::answer;
use crate::error::{Error, Result};

/// Receives an adapter's encoded object as a sequence of byte chunks and writes them out.
pub(super) struct ChunkSink<'a, W> {
    pub(super) writer: &'a mut W,
}

fn not_chunks() -> Error {
    Error::invalid("internal: an adapter payload must be a sequence of byte chunks")
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

    answer! { Err(not_chunks());
    serialize_bool serialize_i8 serialize_i16 serialize_i32 serialize_i64 serialize_i128
    serialize_u8 serialize_u16 serialize_u32 serialize_u64 serialize_u128 serialize_f32
    serialize_f64 serialize_char serialize_str serialize_none serialize_some serialize_unit
    serialize_unit_struct serialize_unit_variant serialize_newtype_struct
    serialize_newtype_variant serialize_tuple serialize_tuple_struct serialize_tuple_variant
    serialize_map serialize_struct serialize_struct_variant }

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
