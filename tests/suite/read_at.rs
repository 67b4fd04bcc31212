//! Lazy reads over the positional-read seam (`ReadAt`) and block indexes: the same objects
//! and windows as from a local file, in the requests the seam promises a remote source.

use std::io::IoSliceMut;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ndarray::Array2;
use serde_daphne::{BlockIndex, DbdfFile, Dense, DenseView, Object, Options, ReadAt};

/// Bytes in memory that count their reads and ask for large ones, as a remote object would.
#[derive(Debug, Default)]
struct Counted {
    bytes: Vec<u8>,
    requests: AtomicU64,
    fetched: AtomicU64,
    /// Whether it says it reads ahead runs of 8 MiB ([`ReadAt::reads_ahead`]).
    ahead: bool,
}

impl Counted {
    fn new(bytes: Vec<u8>) -> Arc<Counted> {
        Arc::new(Counted {
            bytes,
            ..Counted::default()
        })
    }
    fn take(&self) -> (u64, u64) {
        (
            self.requests.swap(0, Ordering::Relaxed),
            self.fetched.swap(0, Ordering::Relaxed),
        )
    }
}

impl ReadAt for Counted {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.fetched.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.bytes.read_exact_at(buf, offset)
    }
    fn read_exact_vectored_at(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        offset: u64,
    ) -> std::io::Result<()> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut at = offset as usize;
        for buf in bufs.iter_mut() {
            let n = buf.len();
            self.fetched.fetch_add(n as u64, Ordering::Relaxed);
            buf.copy_from_slice(&self.bytes[at..at + n]);
            at += n;
        }
        Ok(())
    }
    fn min_request(&self) -> usize {
        64 << 10
    }
    fn reads_ahead(&self) -> Option<u64> {
        self.ahead.then_some(8 << 20)
    }
}

fn tiled(rows: usize, cols: usize, tile: (u32, u32)) -> (Array2<f64>, Vec<u8>) {
    let m = Array2::from_shape_fn((rows, cols), |(i, j)| (i * cols + j) as f64);
    let options = Options {
        tile: Some(tile),
        ..Options::new()
    };
    let bytes = options.to_vec(&DenseView(m.view())).unwrap();
    (m, bytes)
}

fn indexed(source: &Arc<Counted>) -> DbdfFile {
    let index = BlockIndex::of_read_at(source.clone(), &Options::new(), None).unwrap();
    let index = BlockIndex::from_slice(&index.to_vec()).unwrap();
    source.take();
    Options::new()
        .open_indexed(source.clone(), Arc::new(index))
        .unwrap()
}

#[test]
fn an_indexed_file_opens_in_one_request_and_reads_a_window_in_one_per_block() {
    // 64 tiles of 128 x 128 (128 KiB each).
    let (m, bytes) = tiled(1024, 1024, (128, 128));
    let source = Counted::new(bytes.clone());
    let mut file = indexed(&source);
    assert_eq!(
        source.take().0,
        1,
        "opening reads the first header bytes only"
    );
    let walked = Options::new()
        .open_reader(std::io::Cursor::new(bytes))
        .unwrap();
    assert_eq!(file.objects(), walked.objects());

    // Rows 100..300, columns 200..400: 3 x 3 tiles (rows 0-383, columns 128-511).
    let window = file.read_window::<f64>(0, 100..300, 200..400).unwrap();
    assert_eq!(window, m.slice(ndarray::s![100..300, 200..400]));
    let (requests, fetched) = source.take();
    assert_eq!(requests, 9);
    let tile_bytes = 128 * 128 * 8 + 50;
    assert!(fetched <= 9 * tile_bytes, "{fetched} bytes for 9 tiles");
    // A handle for another thread shares the source and index: no request to open.
    let mut other = file.try_clone().unwrap();
    assert_eq!(source.take().0, 0);
    assert_eq!(
        other.read_window::<f64>(0, 0..1, 0..2).unwrap()[[0, 1]],
        1.0
    );
}

#[test]
fn bands_of_rows_read_in_turn_fetch_each_tile_once_not_its_earlier_rows_again() {
    // 4 x 4 tiles of 256 x 256 (512 KiB each), read in bands of 32 rows, as a conversion
    // to row bands reads a tiled file: every band fetches its rows of each tile only.
    let (m, bytes) = tiled(1024, 1024, (256, 256));
    let source = Counted::new(bytes.clone());
    let mut file = indexed(&source);
    source.take();
    for r in (0..1024).step_by(32) {
        let band = file.read_window::<f64>(0, r..r + 32, 0..1024).unwrap();
        let rows = r as usize..r as usize + 32;
        assert_eq!(band, m.slice(ndarray::s![rows, ..]), "band at row {r}");
    }
    let (requests, fetched) = source.take();
    // A request per band and tile; before, each band fetched its tiles from their headers,
    // 4.5x the file's bytes here.
    assert_eq!(requests, 32 * 4);
    assert!(
        fetched <= bytes.len() as u64,
        "{fetched} bytes fetched for a file of {}",
        bytes.len()
    );
}

#[test]
fn without_an_index_a_walk_takes_at_most_one_request_per_block() {
    for (tile, blocks) in [((128, 128), 64), ((16, 16), 4096)] {
        let (m, bytes) = tiled(1024, 1024, tile);
        let source = Counted::new(bytes);
        let mut file = Options::new().open_at(source.clone(), None).unwrap();
        let (requests, _) = source.take();
        assert!(
            requests <= blocks + 1,
            "{requests} requests for {blocks} blocks"
        );
        if blocks > 1000 {
            // Small blocks: the read-ahead covers many at once.
            assert!(
                requests < 20,
                "{requests} requests for {blocks} small blocks"
            );
        }
        let window = file.read_window::<f64>(0, 1000..1024, 0..3).unwrap();
        assert_eq!(window, m.slice(ndarray::s![1000..1024, 0..3]));
    }
}

#[test]
fn every_golden_runtime_file_opens_from_its_index_as_by_walking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime");
    let mut indexed_files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "dbdf") {
            continue;
        }
        let Ok(mut walked) = DbdfFile::open(&path) else {
            assert!(BlockIndex::of_file(&path, &Options::new()).is_err());
            continue;
        };
        let index = BlockIndex::of_file(&path, &Options::new()).unwrap();
        let index = BlockIndex::from_slice(&index.to_vec()).unwrap();
        let source = Counted::new(std::fs::read(&path).unwrap());
        let mut file = Options::new()
            .open_indexed(source.clone(), Arc::new(index))
            .unwrap();
        assert_eq!(file.objects(), walked.objects(), "{}", path.display());
        let (a, b) = (file.object_at(0), walked.object_at(0));
        assert_eq!(a.ok(), b.ok(), "{}", path.display());
        file.validate().unwrap();
        indexed_files += 1;
    }
    assert!(indexed_files >= 30, "{indexed_files} files");
}

#[test]
fn several_objects_csr_and_frames_open_from_their_index() {
    let csr = sprs::CsMat::new(
        (3, 4),
        vec![0, 1, 1, 3],
        vec![2, 0, 3],
        vec![1.5, -2.0, 4.0],
    );
    let mut bytes = serde_daphne::to_vec(&serde_daphne::Csr(csr.clone())).unwrap();
    let (_, more) = tiled(40, 30, (16, 8));
    bytes.extend_from_slice(&more);
    let frame = Object::frame(vec![
        ("a".into(), serde_daphne::Values::F64(vec![1.0, 2.0])),
        ("b".into(), serde_daphne::Values::I64(vec![3, 4])),
    ])
    .unwrap();
    serde_daphne::Options::new()
        .append_to_vec(&mut bytes, &frame)
        .unwrap();
    let source = Counted::new(bytes.clone());
    let mut file = indexed(&source);
    let walked = Options::new()
        .open_reader(std::io::Cursor::new(bytes))
        .unwrap();
    assert_eq!(file.objects(), walked.objects());
    assert_eq!(file.objects().len(), 3);
    let back: serde_daphne::Csr<f64> = file.read_object(0).unwrap();
    assert_eq!(back.0, csr);
    assert_eq!(file.object_at(2).unwrap(), frame);
    assert_eq!(
        file.read_window::<f64>(1, 39..40, 29..30).unwrap()[[0, 0]],
        1199.0
    );
}

#[test]
fn an_index_of_another_file_or_damaged_is_a_typed_error() {
    let (_, bytes) = tiled(64, 64, (16, 16));
    let index = BlockIndex::of_read_at(Counted::new(bytes.clone()), &Options::new(), None).unwrap();
    let index = Arc::new(index);
    let open = |bytes: Vec<u8>| Options::new().open_indexed(Counted::new(bytes), index.clone());

    // Another length.
    let (_, longer) = tiled(64, 80, (16, 16));
    assert_error!(open(longer), StaleIndex { .. });
    // The same length, the first header changed (64 x 64 read as 65 x 64 would not fit).
    let mut first = bytes.clone();
    first[2] ^= 1;
    assert_error!(open(first), StaleIndex { offset: 2, .. });
    // A block header further on changed: found when that block is read, never read as values.
    let at = index_block_header(&bytes, 5);
    let mut later = bytes.clone();
    later[at] ^= 0x40;
    let mut file = open(later).unwrap();
    assert!(file.read_window::<f64>(0, 0..16, 0..16).is_ok());
    assert_error!(file.read_window::<f64>(0, 0..64, 0..64), StaleIndex { .. });

    // Damaged index bytes: any flipped byte fails its checksum.
    let stored = index.to_vec();
    for k in [0, 9, 20, stored.len() / 2, stored.len() - 1] {
        let mut bad = stored.clone();
        bad[k] ^= 0x10;
        assert_error!(BlockIndex::from_slice(&bad), StaleIndex { .. });
    }
    assert_error!(
        BlockIndex::from_slice(&stored[..10]),
        StaleIndex { offset: 0, .. }
    );
}

/// From a source that reads ahead, a dense block of 8 MiB or more is not fetched whole before
/// its rows are read, but its header is still read and compared with the index's.
#[test]
fn a_changed_header_is_found_in_a_block_read_from_a_source_that_reads_ahead() {
    // Two blocks of 1100 x 1000 f64 (8.8 MB).
    let (m, bytes) = tiled(2200, 1000, (1100, 1000));
    let index = Arc::new(
        BlockIndex::of_read_at(Counted::new(bytes.clone()), &Options::new(), None).unwrap(),
    );
    let open = |bytes: Vec<u8>| {
        let ahead = Arc::new(Counted {
            bytes,
            ahead: true,
            ..Counted::default()
        });
        Options::new().open_indexed(ahead, index.clone()).unwrap()
    };
    let whole = open(bytes.clone())
        .read_window::<f64>(0, 0..2200, 0..1000)
        .unwrap();
    assert_eq!(whole, m);
    let at = index_block_header(&bytes, 1);
    let mut changed = bytes;
    changed[at] ^= 0x40;
    assert_error!(
        open(changed).read_window::<f64>(0, 0..2200, 0..1000),
        StaleIndex { .. }
    );
}

/// Where block `k`'s header starts.
fn index_block_header(bytes: &[u8], k: usize) -> usize {
    let file = Options::new()
        .open_reader(std::io::Cursor::new(bytes.to_vec()))
        .unwrap();
    file.objects()[0].blocks[k].range.start as usize + 16
}

#[test]
fn a_local_file_reads_through_the_seam_as_through_a_path() {
    let m = Array2::from_shape_fn((300, 200), |(i, j)| (i as f64) - (j as f64) / 7.0);
    let path = std::env::temp_dir().join(format!("serde_daphne_at_{}.dbdf", std::process::id()));
    serde_daphne::to_file(&path, &Dense(m.clone())).unwrap();
    let source: Arc<dyn ReadAt> = Arc::new(std::fs::File::open(&path).unwrap());
    let mut file = Options::new().open_at(source, None).unwrap();
    let window = file.read_window::<f64>(0, 10..290, 3..199).unwrap();
    assert_eq!(window, m.slice(ndarray::s![10..290, 3..199]));
    std::fs::remove_file(&path).unwrap();
}

/// Bytes in memory take the reads on every core that a file opened by path takes (one
/// sparse block straight into CSR arrays, tiles' rows into place, frame columns, DAPHNE's
/// CSR layout), with the same values.
#[test]
fn memory_reads_as_a_file_by_path_reads() {
    let m = sprs::CsMat::csr_from_dense(
        Array2::from_shape_fn((500, 300), |(i, j)| {
            if (i * 7 + j) % 5 == 0 {
                (i + j) as f64
            } else {
                0.0
            }
        })
        .view(),
        0.0,
    );
    let (dense, tiled_bytes) = tiled(700, 500, (128, 96));
    let csr_bytes = serde_daphne::to_vec(&serde_daphne::CsrView(m.view())).unwrap();
    let runtime = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/daphne-runtime/csr_f64_5x6.dbdf"),
    )
    .unwrap();
    let open = |bytes: &[u8]| {
        let source: Arc<dyn ReadAt> = Arc::new(bytes.to_vec());
        Options::new().open_at(source, None).unwrap()
    };
    let parts = open(&csr_bytes).read_csr_parts::<f64, i32>(0).unwrap();
    let offsets: Vec<i32> = m
        .indptr()
        .as_slice()
        .unwrap()
        .iter()
        .map(|&o| o as i32)
        .collect();
    assert_eq!(parts.row_offsets, offsets);
    assert_eq!(
        parts.col_indices,
        m.indices().iter().map(|&c| c as i32).collect::<Vec<_>>()
    );
    assert_eq!(parts.values, m.data());
    let back: Dense<f64> = open(&tiled_bytes).read_object(0).unwrap();
    assert_eq!(back.0, dense);
    let path = std::env::temp_dir().join(format!("serde_daphne_mem_{}.dbdf", std::process::id()));
    std::fs::write(&path, &runtime).unwrap();
    let by_path = DbdfFile::open(&path)
        .unwrap()
        .read_csr_parts::<f64, u32>(0)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let in_memory = open(&runtime).read_csr_parts::<f64, u32>(0).unwrap();
    assert_eq!(
        (
            in_memory.row_offsets,
            in_memory.col_indices,
            in_memory.values
        ),
        (by_path.row_offsets, by_path.col_indices, by_path.values)
    );
}

/// Bytes in memory whose reads fail at and past `fail_from`, as a disk that goes away would.
#[derive(Debug)]
struct FailingFrom {
    bytes: Vec<u8>,
    fail_from: u64,
}

impl ReadAt for FailingFrom {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if offset + buf.len() as u64 > self.fail_from {
            return Err(std::io::Error::other("the disk went away"));
        }
        self.bytes.read_exact_at(buf, offset)
    }
}

#[test]
fn a_large_block_in_memory_is_read_whole_or_fails_with_the_sources_error() {
    // 40 MB of values in one block: read on every core, behind the page faults.
    let m = Array2::from_shape_fn((5000, 1000), |(i, j)| (i * 1000 + j) as f64);
    let bytes = serde_daphne::to_vec(&DenseView(m.view())).unwrap();
    let len = bytes.len() as u64;
    let source: Arc<dyn ReadAt> = Arc::new(bytes.clone());
    let back: Dense<f64> = Options::new()
        .open_at(source, None)
        .unwrap()
        .read_object(0)
        .unwrap();
    assert_eq!(back.0, m);
    let failing: Arc<dyn ReadAt> = Arc::new(FailingFrom {
        bytes,
        fail_from: len - 1000,
    });
    let err = Options::new()
        .open_at(failing, None)
        .unwrap()
        .read_object::<Dense<f64>>(0)
        .unwrap_err();
    assert_eq!(err.kind(), serde_daphne::ErrorKind::Io, "{err}");
    assert!(err.to_string().contains("the disk went away"), "{err}");
}
