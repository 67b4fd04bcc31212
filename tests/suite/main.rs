//! Integration tests: one binary, one module per concern.

#[macro_use]
#[path = "../common/assert_error.rs"]
mod assert_error;

mod csr_arrays;
mod daphne_runtime;
mod data_model;
mod derive_and_files;
mod frames;
mod golden_bytes;
mod hostile;
mod lazy;
mod read_at;
mod roundtrip;
#[cfg(feature = "proptest")]
mod stream;
mod structure;

/// Little-endian byte layout, field by field, as the spec's diagrams draw it.
#[derive(Default)]
pub struct Layout(pub Vec<u8>);

impl Layout {
    pub fn new() -> Self {
        Layout(Vec::new())
    }
    pub fn u8(mut self, x: u8) -> Self {
        self.0.push(x);
        self
    }
    pub fn u16(mut self, x: u16) -> Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    pub fn u32(mut self, x: u32) -> Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    pub fn u64(mut self, x: u64) -> Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    /// Header of a matrix: version 1, dt, #r, #c, vt.
    pub fn matrix(self, dt: u8, rows: u64, cols: u64, vt: u8) -> Self {
        self.u8(1).u8(dt).u64(rows).u64(cols).u8(vt)
    }
    /// Body entry position and general block header: rx, cx, #r, #c, bt.
    pub fn block(self, rx: u64, cx: u64, rows: u32, cols: u32, bt: u8) -> Self {
        self.u64(rx).u64(cx).u32(rows).u32(cols).u8(bt)
    }
}

/// `Options::serialized_len` and `Options::to_uninit_slice` agree with `Options::to_vec` byte for byte:
/// the length measured, the bytes written in place (and none past them), and a buffer one
/// byte short refused as an I/O error of kind `WriteZero`.
pub fn assert_sized<T: serde::Serialize + ?Sized>(
    value: &T,
    options: &serde_daphne::Options,
    label: &str,
) {
    use serde_daphne::ErrorKind;
    use std::mem::MaybeUninit;
    let bytes = options.to_vec(value).unwrap();
    let len = options.serialized_len(value).unwrap();
    assert_eq!(len, bytes.len() as u64, "{label}: measured");
    // Prefilled with a marker: every byte is initialized, and those not written show it.
    let mut out = vec![MaybeUninit::new(0xA5u8); bytes.len() + 3];
    let written = options.to_uninit_slice(&mut out, value).unwrap();
    assert_eq!(written, bytes.len(), "{label}: written in place");
    // SAFETY: every byte of `out` was initialized (the marker, or what was written).
    let got: Vec<u8> = out.iter().map(|b| unsafe { b.assume_init() }).collect();
    let (got, past) = got.split_at(bytes.len());
    assert!(got == bytes, "{label}: {}", first_difference(got, &bytes));
    assert_eq!(past, [0xA5; 3], "{label}: written past the encoding");
    if !bytes.is_empty() {
        let mut short = vec![MaybeUninit::<u8>::uninit(); bytes.len() - 1];
        let e = options.to_uninit_slice(&mut short, value).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{label}: one byte short");
        assert_eq!(
            e.io_error().map(|e| e.kind()),
            Some(std::io::ErrorKind::WriteZero),
            "{label}: one byte short"
        );
    }
}

/// Where two byte strings first differ, for a failure message.
pub fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "lengths {} and {}, first difference at byte {at}",
        a.len(),
        b.len()
    )
}
