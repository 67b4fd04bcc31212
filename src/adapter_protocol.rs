//! How adapters and this crate's serializer/deserializer recognise each other through serde.
//!
//! An adapter serializes a newtype struct with a private name. Any other format treats it as
//! transparent and sees a plain structure. This crate's serializer, seeing the name, sets the
//! *capture* options for the duration of the call; the adapter takes them, encodes the object
//! itself (it holds the typed, borrowed data) and emits the encoded bytes as a sequence of
//! byte chunks, which the serializer writes through. Reading goes the other way: the
//! deserializer decodes the next [`Object`] and parks it here while it calls the adapter's
//! visitor, which takes it and builds the Rust value, moving vectors where types match.
//!
//! Errors of this crate raised inside an adapter are parked too, so that they reach the caller
//! with their variant instead of as a serde message.

use std::cell::{Cell, RefCell};
use std::io::{self, Write};

use crate::error::{Error, Result};
use crate::model::Object;
use crate::options::Options;
use crate::wire::sink::Sink;
use crate::wire::ValueType;

/// Newtype names that mark an adapter's payload.
pub(crate) const DENSE: &str = "$serde_daphne::private::Dense";
pub(crate) const CSR: &str = "$serde_daphne::private::Csr";
pub(crate) const FRAME: &str = "$serde_daphne::private::Frame";
pub(crate) const OBJECT: &str = "$serde_daphne::private::Object";

pub(crate) fn is_marker(name: &str) -> bool {
    matches!(name, DENSE | CSR | FRAME | OBJECT)
}

thread_local! {
    static CAPTURE: RefCell<Option<Options>> = const { RefCell::new(None) };
    /// The output vector, while a serializer that appends to one is capturing.
    static DIRECT: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
    /// Whether the capturing serializer only measures its output.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static OBJECT_SLOT: RefCell<Option<Object>> = const { RefCell::new(None) };
    static ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
    /// The element type a dense adapter is about to read into.
    static WANTED: Cell<Option<ValueType>> = const { Cell::new(None) };
}

/// Runs `f` with capture options set, and `direct`'s output vector lent to [`emit`] (or, when
/// `counting`, the output only measured); all are taken back afterwards whatever happens.
pub(crate) fn with_capture<R>(
    options: &Options,
    direct: &mut Option<Vec<u8>>,
    counting: bool,
    f: impl FnOnce() -> R,
) -> R {
    struct Reset<'a>(&'a mut Option<Vec<u8>>);
    impl Drop for Reset<'_> {
        fn drop(&mut self) {
            CAPTURE.with(|c| c.borrow_mut().take());
            COUNTING.with(|c| c.set(false));
            *self.0 = DIRECT.with(|d| d.borrow_mut().take());
        }
    }
    CAPTURE.with(|c| *c.borrow_mut() = Some(options.clone()));
    COUNTING.with(|c| c.set(counting));
    DIRECT.with(|d| *d.borrow_mut() = direct.take());
    let _reset = Reset(direct);
    f()
}

/// Takes the capture options: `Some` when this crate's serializer is asking for bytes.
pub(crate) fn take_capture() -> Option<Options> {
    CAPTURE.with(|c| c.borrow_mut().take())
}

/// Runs `f` with `object` parked for an adapter's visitor; cleared afterwards.
pub(crate) fn with_object<R>(object: Object, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            OBJECT_SLOT.with(|c| c.borrow_mut().take());
        }
    }
    OBJECT_SLOT.with(|c| *c.borrow_mut() = Some(object));
    let _reset = Reset;
    f()
}

/// Runs `f` (an adapter asking a deserializer for a dense matrix) telling this crate's
/// deserializer that the values go into `wanted`: a tiled object whose values widen exactly
/// to it can be assembled straight into one vector. Cleared afterwards.
pub(crate) fn wanting<R>(wanted: ValueType, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            WANTED.with(|c| c.set(None));
        }
    }
    WANTED.with(|c| c.set(Some(wanted)));
    let _reset = Reset;
    f()
}

/// Takes the element type a dense adapter reads into (see [`wanting`]).
pub(crate) fn take_wanted() -> Option<ValueType> {
    WANTED.with(|c| c.take())
}

/// Takes the parked object: `Some` when this crate's deserializer is handing one over.
pub(crate) fn take_object() -> Option<Object> {
    OBJECT_SLOT.with(|c| c.borrow_mut().take())
}

/// Parks `error` and returns a serde error carrying its message.
pub(crate) fn park<E: serde::ser::Error>(error: Error) -> E {
    let message = error.to_string();
    ERROR.with(|c| *c.borrow_mut() = Some(error));
    E::custom(message)
}

/// Like [`park`], for deserialization.
pub(crate) fn park_de<E: serde::de::Error>(error: Error) -> E {
    let message = error.to_string();
    ERROR.with(|c| *c.borrow_mut() = Some(error));
    E::custom(message)
}

/// The parked error if there is one, else `error`.
pub(crate) fn recover(error: Error) -> Error {
    ERROR.with(|c| c.borrow_mut().take()).unwrap_or(error)
}

/// An `io::Write` that sends each write as one element of a serde sequence of bytes.
pub(crate) struct ChunkWriter<Seq: serde::ser::SerializeSeq> {
    seq: Seq,
    failed: Option<Seq::Error>,
}

impl<Seq: serde::ser::SerializeSeq> ChunkWriter<Seq> {
    pub fn new(seq: Seq) -> Self {
        ChunkWriter { seq, failed: None }
    }

    /// Ends the sequence; `result` is the encoder's outcome.
    pub fn finish(self, result: Result<()>) -> Result<Seq::Ok, Seq::Error> {
        match (self.failed, result) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(park(e)),
            (None, Ok(())) => self.seq.end(),
        }
    }
}

impl<Seq: serde::ser::SerializeSeq> Write for ChunkWriter<Seq> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    /// Each slice is one element: the serializer writes it to its writer as it is.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        for buf in bufs {
            self.write_all(buf)?;
        }
        Ok(bufs.iter().map(|b| b.len()).sum())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.failed.is_some() {
            return Err(io::Error::other("serialization failed"));
        }
        if let Err(e) = self.seq.serialize_element(serde_bytes::Bytes::new(buf)) {
            self.failed = Some(e);
            return Err(io::Error::other("serialization failed"));
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Encodes an object through `serializer` in capture mode: the bytes go out as chunks.
pub(crate) fn emit<S: serde::Serializer>(
    serializer: S,
    encode: impl FnOnce(&mut Sink<&mut dyn Write>) -> Result<()>,
) -> Result<S::Ok, S::Error> {
    let mut writer = ChunkWriter::new(serializer.serialize_seq(None)?);
    if let Some(out) = DIRECT.with(|d| d.borrow_mut().take()) {
        let mut unused = io::sink();
        let mut sink = Sink::direct(&mut unused as &mut dyn Write, out);
        let result = encode(&mut sink);
        DIRECT.with(|d| *d.borrow_mut() = Some(sink.into_output()));
        return writer.finish(result);
    }
    let result = {
        let writer = &mut writer as &mut dyn Write;
        let mut sink = match COUNTING.with(Cell::get) {
            true => Sink::counting(writer),
            false => Sink::new(writer),
        };
        encode(&mut sink).and_then(|()| sink.finish().map(drop))
    };
    writer.finish(result)
}
