//! An object written as a stream, with no local copy: bytes gathered into parts, each sent
//! as it fills (a few in flight), in a multipart upload left pending until it is completed
//! with the object's sidecars ([`super::sets`]); an object that fits one part is held and
//! sent by one request then. Memory: the part being filled and those in flight (within the
//! process's bound on bytes in transit, [`InTransit`]). Dropped
//! unfinished (a failed conversion), the upload is aborted: the object stays as it was. A
//! whole local file goes up the same way ([`stage`]). An object whose first bytes are written
//! last (HDF5's superblock) numbers its parts from 2 and sends part 1 at the end.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::sync::Arc;

use serde_daphne::{ReadAt, Result};
use tokio::task::JoinHandle;

use super::pending::{Pending, PART};
use super::transfer::{Staged, IN_FLIGHT};
use super::{runtime, RemoteObject};
use crate::storage::{InTransit, Way};

/// The bytes of `object`, sent as they are written ([`Write`]); [`StreamingUpload::finish`]
/// hands them over, sent but not yet visible.
pub(super) struct StreamingUpload {
    object: RemoteObject,
    /// The part being filled.
    part: Vec<u8>,
    /// The pending upload, begun when a second part starts.
    upload: Option<Pending>,
    /// Parts sent and not yet answered, oldest first, with their sizes.
    in_flight: VecDeque<JoinHandle<(object_store::Result<()>, u64)>>,
    /// Whether the first part is sent last ([`StreamingUpload::head_last`]).
    head_last: bool,
}

impl StreamingUpload {
    /// An upload of `object`; nothing is sent before the first part fills.
    pub(super) fn new(object: &RemoteObject) -> StreamingUpload {
        StreamingUpload {
            object: object.clone(),
            part: Vec::new(),
            upload: None,
            in_flight: VecDeque::new(),
            head_last: false,
        }
    }

    /// An upload of `object` whose first [`PART`] bytes come last
    /// ([`StreamingUpload::finish_with_head`]): the bytes written go after them.
    pub(super) fn head_last(object: &RemoteObject) -> StreamingUpload {
        let mut upload = StreamingUpload::new(object);
        upload.head_last = true;
        upload
    }

    /// Sends the part filled, beginning the upload first if need be; waits for the oldest
    /// part while more than [`IN_FLIGHT`] are on their way.
    fn send_part(&mut self) -> Result<()> {
        let part = std::mem::take(&mut self.part);
        self.send(part, false)
    }

    /// Sends `part`, the first (its number kept) or the next.
    fn send(&mut self, part: Vec<u8>, first: bool) -> Result<()> {
        let upload = match &mut self.upload {
            Some(upload) => upload,
            None => {
                let (store, path) = (Arc::clone(&self.object.store), self.object.path.clone());
                let begin = Pending::begin(store, self.object.multipart()?, path);
                let mut begun = self.object.run(begin, |_| (0, 0))?;
                if self.head_last {
                    begun.keep_first();
                }
                self.upload.insert(begun)
            }
        };
        let n = part.len() as u64;
        let share = InTransit::wait_for(Way::Sent, n);
        // Parts are numbered in the order they are handed over, whenever they land.
        let sent = upload.put_part(part.into(), first);
        self.in_flight.push_back(runtime().spawn(async move {
            let sent = sent.await;
            drop(share);
            (sent, n)
        }));
        while self.in_flight.len() > IN_FLIGHT {
            self.wait_oldest()?;
        }
        Ok(())
    }

    /// Waits for the oldest part on its way.
    fn wait_oldest(&mut self) -> Result<()> {
        let Some(oldest) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let (sent, n) = runtime().block_on(oldest).map_err(io::Error::other)?;
        match sent {
            Ok(()) => {
                self.object.stats().request(0, n);
                Ok(())
            }
            Err(e) => {
                self.object.stats().request(0, 0);
                Err(self.object.error(e))
            }
        }
    }

    /// Every byte written, sent and held back: the last part sent and every part answered,
    /// or the whole object held for its one request.
    ///
    /// # Errors
    /// A failed request: the upload is aborted, the object stays as it was.
    pub(super) fn finish(mut self) -> Result<Staged> {
        if self.upload.is_none() {
            return Ok(Staged::Bytes(std::mem::take(&mut self.part)));
        }
        if !self.part.is_empty() {
            self.send_part()?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        let upload = self.upload.take().expect("the upload begun");
        Ok(Staged::Parts(upload))
    }
}

impl StreamingUpload {
    /// [`StreamingUpload::finish`] for an upload made by [`StreamingUpload::head_last`],
    /// with `head` first: [`PART`] bytes, sent last as the first part; or, when no part was
    /// sent, the head and the bytes after it held for one request.
    ///
    /// # Errors
    /// A failed request: the upload is aborted, the object stays as it was.
    pub(super) fn finish_with_head(mut self, mut head: Vec<u8>) -> Result<Staged> {
        if self.upload.is_none() {
            head.append(&mut self.part);
            return Ok(Staged::Bytes(head));
        }
        if !self.part.is_empty() {
            self.send_part()?;
        }
        self.send(head, true)?;
        self.finish()
    }

    /// Takes `bytes`, sending each part as it fills.
    ///
    /// # Errors
    /// A failed request: the upload is aborted when dropped.
    pub(super) fn push(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            if self.part.len() as u64 == PART {
                self.send_part()?;
            }
            if self.part.capacity() == 0 {
                self.part.reserve_exact(PART as usize);
            }
            let n = bytes.len().min(PART as usize - self.part.len());
            self.part.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        Ok(())
    }
}

impl Write for StreamingUpload {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.push(bytes).map_err(io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for StreamingUpload {
    /// An upload not finished is aborted (best effort: a pending upload is never visible,
    /// and the store's lifecycle rules expire what a failed abort leaves).
    fn drop(&mut self) {
        for part in self.in_flight.drain(..) {
            part.abort();
        }
        if let Some(mut upload) = self.upload.take() {
            let _ = self
                .object
                .run(async move { upload.abort().await }, |_| (0, 0));
        }
    }
}

/// Sends the whole of `file` for the object without making it visible: a small file waits
/// to be sent in one request; a larger one goes up through a [`StreamingUpload`], its parts
/// left pending. Memory: those parts.
///
/// # Errors
/// A failed request (the upload is aborted); I/O errors reading `file`.
pub(super) fn stage(file: &File, object: &RemoteObject) -> Result<Staged> {
    if file.metadata()?.len() <= PART {
        return Ok(Staged::Whole(file.try_clone()?));
    }
    let len = file.metadata()?.len();
    let mut upload = StreamingUpload::new(object);
    let mut buf = vec![0; (1 << 20).min(len) as usize];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        upload.push(&buf[..n])?;
        at += n as u64;
    }
    upload.finish()
}
