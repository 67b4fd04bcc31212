//! [`Object`] through serde: as stored through this crate, as a plain structure elsewhere.

use std::fmt;

use serde::de::{Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::adapter_protocol;
use crate::model::runtime::write_runtime;
use crate::model::{Block, Object};
use crate::wire::Header;

/// The plain structure other formats hold.
#[derive(Serialize, Deserialize)]
struct Plain {
    header: Header,
    blocks: Vec<Block>,
}

struct Payload<'a>(&'a Object);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(options) = adapter_protocol::take_capture() {
            return adapter_protocol::emit(serializer, |sink| {
                if options.runtime_writer()? {
                    write_runtime(sink, self.0, &options)
                } else {
                    self.0.encode_into(sink)
                }
            });
        }
        Plain {
            header: self.0.header().clone(),
            blocks: self.0.blocks().to_vec(),
        }
        .serialize(serializer)
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(adapter_protocol::OBJECT, &Payload(self))
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a DAPHNE object")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Object, D::Error> {
        if let Some(object) = adapter_protocol::take_object() {
            return Ok(object);
        }
        let plain = Plain::deserialize(d)?;
        Object::new(plain.header, plain.blocks).map_err(adapter_protocol::park_de)
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(adapter_protocol::OBJECT, ObjectVisitor)
    }
}
