//! Hadoop SequenceFiles as SystemDS writes them: uncompressed, big-endian, records of
//! (key, value) with sync markers between records.
//!
//! Layout: `SEQ`, version 6, key and value class names (Hadoop `Text`: a variable-length
//! int, then UTF-8), a compression flag and a block-compression flag (both 0 here), the
//! metadata (an int count of `Text` pairs), a 16-byte sync marker; then records of `int`
//! record length (key plus value), `int` key length, key, value. A record length of -1 is a
//! sync escape: the 16-byte marker follows.

use std::io::{Read, Write};

use crate::input::Foreign;
use serde_daphne::{Error, Result};

pub(crate) const SYSTEMDS: Foreign = Foreign("SystemDS");

const MAGIC: &[u8; 3] = b"SEQ";
const VERSION: u8 = 6;
const SYNC_ESCAPE: i32 = -1;
/// Hadoop 3 writes a sync marker once this many bytes have passed since the last one.
const SYNC_INTERVAL: u64 = 5 * 1024 * 20;

/// The header of a SequenceFile.
pub(crate) struct Header {
    pub(crate) key_class: String,
    pub(crate) value_class: String,
}

/// Where [`SeqReader::next_record_into`] put a record in its buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordSpan {
    /// Where the record's bytes begin in the buffer.
    pub(crate) start: usize,
    pub(crate) key_len: usize,
    /// Key and value together.
    pub(crate) len: usize,
    /// The key's file offset.
    pub(crate) key_offset: u64,
}

/// Reads a SequenceFile from a stream, one record in memory at a time.
pub(crate) struct SeqReader<R: Read> {
    input: R,
    pos: u64,
    len: u64,
    file: String,
    sync: [u8; 16],
}

impl<R: Read> SeqReader<R> {
    /// Reads the header of a file of `len` bytes.
    pub(crate) fn new(input: R, len: u64, file: String) -> Result<(Self, Header)> {
        let mut reader = SeqReader {
            input,
            pos: 0,
            len,
            file,
            sync: [0; 16],
        };
        if reader.take(3, "the SEQ magic").ok().as_deref() != Some(&MAGIC[..]) {
            return Err(SYSTEMDS.at_in(
                &reader.file,
                0,
                "not a Hadoop SequenceFile (no SEQ magic)",
            ));
        }
        let version = reader.byte("the version")?;
        if version != VERSION {
            return Err(SYSTEMDS.at_in(
                &reader.file,
                3,
                format!("SequenceFile version {version} (SystemDS writes 6)"),
            ));
        }
        let key_class = reader.text("the key class")?;
        let value_class = reader.text("the value class")?;
        let at = reader.pos;
        let compressed = reader.byte("the compression flag")?;
        let block_compressed = reader.byte("the block compression flag")?;
        if compressed != 0 || block_compressed != 0 {
            return Err(SYSTEMDS.at_in(
                &reader.file,
                at as usize,
                "a compressed SequenceFile; write it from SystemDS without compression",
            ));
        }
        let pairs = reader.int("the metadata count")?;
        if pairs < 0 {
            return Err(SYSTEMDS.at_in(
                &reader.file,
                reader.pos as usize - 4,
                format!("{pairs} metadata entries"),
            ));
        }
        for _ in 0..pairs {
            reader.text("a metadata key")?;
            reader.text("a metadata value")?;
        }
        reader.sync = reader.take(16, "the sync marker")?.try_into().unwrap();
        Ok((
            reader,
            Header {
                key_class,
                value_class,
            },
        ))
    }

    fn error(&self, at: u64, message: impl std::fmt::Display) -> Error {
        SYSTEMDS.at_in(&self.file, at as usize, message)
    }

    /// `n` bytes, checked against what the file has left before reading.
    fn take(&mut self, n: usize, what: &str) -> Result<Vec<u8>> {
        self.check_left(n, what)?;
        let mut out = vec![0; n];
        self.fill(&mut out, what)?;
        Ok(out)
    }

    /// An error unless the file has `n` bytes left: checked before anything is allocated.
    fn check_left(&self, n: usize, what: &str) -> Result<()> {
        let left = self.len - self.pos;
        match n as u64 > left {
            true => Err(self.error(
                self.pos,
                format!("{what} needs {n} bytes, the file has {left} left (truncated?)"),
            )),
            false => Ok(()),
        }
    }

    /// Fills `out` from the file, checked against what the file has left before reading.
    fn fill(&mut self, out: &mut [u8], what: &str) -> Result<()> {
        let n = out.len();
        self.check_left(n, what)?;
        self.input
            .read_exact(out)
            .map_err(|e| self.error(self.pos, format!("{what}: {e}")))?;
        self.pos += n as u64;
        Ok(())
    }

    fn byte(&mut self, what: &str) -> Result<u8> {
        let mut byte = [0];
        self.fill(&mut byte, what)?;
        Ok(byte[0])
    }

    /// A big-endian `int`, read without allocating (two per record).
    fn int(&mut self, what: &str) -> Result<i32> {
        let mut bytes = [0; 4];
        self.fill(&mut bytes, what)?;
        Ok(i32::from_be_bytes(bytes))
    }

    /// Hadoop's variable-length int (`WritableUtils.readVInt`).
    fn vint(&mut self, what: &str) -> Result<i64> {
        let first = self.byte(what)? as i8;
        if first >= -112 {
            return Ok(i64::from(first));
        }
        let negative = first < -120;
        let len = if negative {
            -119 - i32::from(first)
        } else {
            -111 - i32::from(first)
        };
        let mut value = 0i64;
        for _ in 1..len {
            value = (value << 8) | i64::from(self.byte(what)?);
        }
        Ok(if negative { !value } else { value })
    }

    /// Hadoop `Text`: a vint length, then UTF-8.
    fn text(&mut self, what: &str) -> Result<String> {
        let at = self.pos;
        let len = self.vint(what)?;
        let len =
            usize::try_from(len).map_err(|_| self.error(at, format!("{what}: length {len}")))?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes).map_err(|_| self.error(at, format!("{what} is not UTF-8")))
    }

    /// The next record's bytes (key, then value) put into `out` from `at` on, skipping sync
    /// markers; `None` at the end of the file. `out` grows as needed and never shrinks, so a
    /// reused buffer is not zeroed again. For handing batches of records to another thread.
    pub(crate) fn next_record_into(
        &mut self,
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<Option<RecordSpan>> {
        loop {
            if self.pos == self.len {
                return Ok(None);
            }
            let record_at = self.pos;
            let length = self.int("a record length")?;
            if length == SYNC_ESCAPE {
                let mut marker = [0; 16];
                self.fill(&mut marker, "a sync marker")?;
                if marker != self.sync {
                    return Err(self.error(
                        record_at + 4,
                        "a sync marker that differs from the header's",
                    ));
                }
                continue;
            }
            let key_at = self.pos;
            let key_length = self.int("a key length")?;
            let (Ok(length), Ok(key_length)) =
                (usize::try_from(length), usize::try_from(key_length))
            else {
                return Err(self.error(
                    record_at,
                    format!("record length {length}, key length {key_length}"),
                ));
            };
            if key_length > length {
                return Err(self.error(
                    key_at,
                    format!("a key of {key_length} bytes in a record of {length}"),
                ));
            }
            if length as u64 > self.len - self.pos {
                return Err(self.error(
                    record_at,
                    format!(
                        "a record of {length} bytes, the file has {} left (truncated?)",
                        self.len - self.pos
                    ),
                ));
            }
            let (start, end) = (at, at + length);
            if out.len() < end {
                out.resize(end, 0);
            }
            self.input.read_exact(&mut out[start..end]).map_err(|e| {
                SYSTEMDS.at_in(&self.file, self.pos as usize, format!("a record: {e}"))
            })?;
            let key_offset = self.pos;
            self.pos += length as u64;
            return Ok(Some(RecordSpan {
                start,
                key_len: key_length,
                len: length,
                key_offset,
            }));
        }
    }
}

/// Writes a SequenceFile: header first, then records, with sync markers as Hadoop places
/// them.
pub(crate) struct Writer<W: Write> {
    out: W,
    pos: u64,
    last_sync: u64,
    sync: [u8; 16],
}

fn write_text(out: &mut Vec<u8>, text: &str) {
    // Class names are far shorter than 128 bytes: a one-byte vint.
    debug_assert!(text.len() < 128);
    out.push(text.len() as u8);
    out.extend_from_slice(text.as_bytes());
}

impl<W: Write> Writer<W> {
    pub(crate) fn new(
        mut out: W,
        key_class: &str,
        value_class: &str,
        sync: [u8; 16],
    ) -> Result<Self> {
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        header.push(VERSION);
        write_text(&mut header, key_class);
        write_text(&mut header, value_class);
        header.extend_from_slice(&[0, 0]); // no compression, no block compression
        header.extend_from_slice(&0i32.to_be_bytes()); // no metadata
        header.extend_from_slice(&sync);
        out.write_all(&header)?;
        Ok(Writer {
            out,
            pos: header.len() as u64,
            last_sync: 0,
            sync,
        })
    }

    pub(crate) fn append(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.pos >= self.last_sync + SYNC_INTERVAL {
            self.out.write_all(&SYNC_ESCAPE.to_be_bytes())?;
            self.out.write_all(&self.sync)?;
            self.pos += 20;
            self.last_sync = self.pos;
        }
        let length = i32::try_from(key.len() + value.len()).map_err(|_| {
            Error::invalid(format!(
                "a SystemDS record of {} bytes (at most 2 GiB)",
                value.len()
            ))
        })?;
        self.out.write_all(&length.to_be_bytes())?;
        self.out.write_all(&(key.len() as i32).to_be_bytes())?;
        self.out.write_all(key)?;
        self.out.write_all(value)?;
        self.pos += 8 + key.len() as u64 + value.len() as u64;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vints_decode_as_hadoop_writes_them() {
        for (bytes, value) in [
            (&[0x05u8][..], 5i64),
            (&[0x90], -112),
            (&[0x8f, 0x80], 128),
            (&[0x8e, 0x01, 0x00], 256),
            (&[0x87, 0x7f], -128),
        ] {
            let mut reader = SeqReader {
                input: bytes,
                pos: 0,
                len: bytes.len() as u64,
                file: "t".into(),
                sync: [0; 16],
            };
            assert_eq!(reader.vint("v").unwrap(), value, "{bytes:?}");
        }
    }

    #[test]
    fn a_class_name_longer_than_the_file_is_refused_before_allocating() {
        // Regression (found by the systemds fuzz target): a `Text` length of 2^32 was
        // allocated before it was checked against the file.
        let mut bytes = b"SEQ\x06".to_vec();
        bytes.extend_from_slice(&[0x8b, 0x01, 0, 0, 0, 0]); // vint 2^32
        let err = match SeqReader::new(&bytes[..], bytes.len() as u64, "t".into()) {
            Err(err) => err,
            Ok(_) => panic!("a header longer than its file was read"),
        };
        assert_eq!(err.offset(), Some(10), "{err}");
        assert!(
            err.to_string()
                .contains("the key class needs 4294967296 bytes, the file has 0 left"),
            "{err}"
        );
    }

    #[test]
    fn records_come_back_across_sync_markers() {
        let sync = [7u8; 16];
        let mut writer = Writer::new(Vec::new(), "K", "V", sync).unwrap();
        let value = vec![0xAB; 40_000];
        // A sync after the third record (past 100 KiB) and after the sixth.
        for k in 0..8u8 {
            writer.append(&[k], &value).unwrap();
        }
        let bytes = writer.finish().unwrap();
        let syncs = bytes
            .windows(20)
            .filter(|w| w[..4] == [0xFF; 4] && w[4..] == sync)
            .count();
        assert_eq!(syncs, 2);
        let (mut reader, header) =
            SeqReader::new(&bytes[..], bytes.len() as u64, "t".into()).unwrap();
        assert_eq!(
            (header.key_class.as_str(), header.value_class.as_str()),
            ("K", "V")
        );
        // Records go one after another into one buffer, whose earlier length is kept.
        let (mut keys, mut buf, mut at) = (Vec::new(), vec![7u8; 3], 3);
        while let Some(span) = reader.next_record_into(&mut buf, at).unwrap() {
            assert_eq!(
                (span.start, span.key_len, span.len),
                (at, 1, 1 + value.len())
            );
            assert_eq!(&buf[at + 1..at + span.len], &value[..]);
            keys.push(buf[at]);
            at += span.len;
        }
        assert_eq!(keys, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(&buf[..3], [7, 7, 7]);
    }
}
