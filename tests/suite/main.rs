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
