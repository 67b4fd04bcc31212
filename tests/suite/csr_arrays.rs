//! CSR arrays of any index type, read and written whole. `DbdfFile::read_csr_parts`: a sparse
//! block of several MiB is read on every core in runs of 1 MiB, rows crossing runs (one row
//! longer than a run); its values must be the matrix written and its errors those of the
//! sequential decoder, the first in the file. Writing: a matrix that is one sparse block is
//! encoded from its arrays on two cores, into the bytes the general writer makes.

use serde_daphne::CsrParts;
use serde_daphne::{from_slice, to_vec, BlockPolicy, CsrView, DbdfFile, ErrorKind, Object};
use serde_daphne::{Dialect, Element, Options, Values};
use sprs::CsMat;

/// `rows x cols` with row `r` holding about `density * cols` entries (none in every 7th row),
/// and row `long` holding every column: a row longer than a 1 MiB run when `cols` is large.
fn matrix<T: Element>(rows: usize, cols: usize, density: f64, long: Option<usize>) -> CsMat<T> {
    let mut indptr = vec![0usize];
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    let step = (1.0 / density).max(1.0) as usize;
    for r in 0..rows {
        if r % 7 != 3 {
            let every = if Some(r) == long { 1 } else { step + r % 5 };
            for c in ((r * 13) % every..cols).step_by(every) {
                indices.push(c);
                // Non-zero in every value type, distinct enough to catch a misplaced entry.
                let v = serde_daphne::Value::U8(((r * 31 + c) % 97 + 1) as u8);
                data.push(T::from_value(v).expect("1..=97 fits every value type"));
            }
        }
        indptr.push(indices.len());
    }
    CsMat::new((rows, cols), indptr, indices, data)
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "serde_daphne_csr_parts_{}_{name}",
        std::process::id()
    ))
}

fn check<T: Element + serde::Serialize + std::fmt::Debug>(name: &str, m: &CsMat<T>) {
    let path = temp(name);
    std::fs::write(&path, to_vec(&CsrView(m.view())).unwrap()).unwrap();
    let mut file = DbdfFile::open(&path).unwrap();
    let narrow = file.read_csr_parts::<T, i32>(0).unwrap();
    let wide = file.read_csr_parts::<T, usize>(0).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_is_i32(&narrow, m, name);
    assert_eq!(wide.row_offsets, m.indptr().raw_storage(), "{name}");
    assert_eq!(wide.col_indices, m.indices(), "{name}");
    assert_eq!(wide.values, m.data(), "{name}");
}

/// `parts` are `m` with `i32` indices.
fn assert_is_i32<T: Element + std::fmt::Debug>(parts: &CsrParts<T, i32>, m: &CsMat<T>, name: &str) {
    let as_i32 = |v: &[usize]| v.iter().map(|&i| i as i32).collect::<Vec<_>>();
    assert_eq!(
        parts.row_offsets,
        as_i32(m.indptr().raw_storage()),
        "{name}"
    );
    assert_eq!(parts.col_indices, as_i32(m.indices()), "{name}");
    assert_eq!(parts.values, m.data(), "{name}");
}

#[test]
fn read_csr_parts_returns_the_matrix_written_in_every_value_type_and_size() {
    // 3.6 MB of rows, 12-byte entries: four runs, rows crossing each boundary.
    check("f64", &matrix::<f64>(3000, 5000, 0.02, None));
    // 5- and 6-byte entries: counts and entries straddle run ends at every alignment.
    check("u8", &matrix::<u8>(4000, 9000, 0.05, None));
    check("i16", &matrix::<i16>(2500, 7000, 0.04, None));
    // One row of 300,000 entries (3.6 MB), longer than three runs, between short ones.
    check("long", &matrix::<f32>(40, 300_000, 0.001, Some(17)));
    // Small, empty and single-row matrices: one run, or none.
    check("small", &matrix::<f64>(5, 4, 0.5, None));
    check("empty", &CsMat::<f64>::zero((6, 9)));
    check("one row", &matrix::<i64>(1, 100, 0.1, None));
}

#[test]
fn read_csr_parts_reads_other_layouts_through_the_object() {
    let m = matrix::<f64>(50, 40, 0.1, None);
    for (name, options) in [
        (
            "tiled",
            Options {
                tile: Some((16, 16)),
                ..Options::new()
            },
        ),
        (
            "ultra",
            Options {
                block_policy: BlockPolicy::UltraSparse,
                ..Options::new()
            },
        ),
        (
            "dense",
            Options {
                block_policy: BlockPolicy::Dense,
                ..Options::new()
            },
        ),
        (
            "narrowed",
            Options {
                narrow: true,
                ..Options::new()
            },
        ),
    ] {
        let path = temp(name);
        std::fs::write(&path, options.to_vec(&CsrView(m.view())).unwrap()).unwrap();
        let parts = DbdfFile::open(&path)
            .unwrap()
            .read_csr_parts::<f64, u32>(0)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(parts.values, m.data(), "{name}");
        let indices: Vec<usize> = parts.col_indices.iter().map(|&i| i as usize).collect();
        assert_eq!(indices, m.indices(), "{name}");
    }
}

/// The file offset of entry `j` of row `r` (12-byte f64 entries) of the matrix at the start
/// of a file, its one block's rows starting at `body`.
fn entry_at(body: usize, m: &CsMat<f64>, r: usize, j: usize) -> usize {
    body + 4 * (r + 1) + 12 * (m.indptr().raw_storage()[r] + j)
}

#[test]
fn read_csr_parts_reports_the_first_fault_in_the_file_as_the_sequential_decoder_does() {
    let m = matrix::<f64>(3000, 5000, 0.02, None);
    let good = to_vec(&CsrView(m.view())).unwrap();
    // Header (37 bytes for a CSR matrix of f64), block position (16), block head (18).
    let body = good.len() - (4 * 3000 + 12 * m.nnz());
    let late = entry_at(body, &m, 2900, 1);
    let early = entry_at(body, &m, 400, 2);
    let put = |bytes: &mut Vec<u8>, at: usize, value: u32| {
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    };
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut out_of_range = good.clone();
    put(&mut out_of_range, late, 5000);
    cases.push((
        "a column out of range late in the file",
        out_of_range.clone(),
    ));
    // Two faults in different runs: the earlier is reported, whichever thread finds it.
    let mut two = out_of_range;
    put(&mut two, early, 0);
    cases.push(("an unsorted column before it", two));
    // A row count one too large: rows shift, the total overflows the declared count.
    let mut count = good.clone();
    let row = body + 4 * 1500 + 12 * m.indptr().raw_storage()[1500];
    let n = u32::from_le_bytes(count[row..row + 4].try_into().unwrap());
    put(&mut count, row, n + 1);
    cases.push(("a row count too large", count));
    // A row count one too small: the counts fall short of the declared total.
    let mut short = good.clone();
    let last = body + 4 * 2998 + 12 * m.indptr().raw_storage()[2998];
    let n = u32::from_le_bytes(short[last..last + 4].try_into().unwrap());
    assert!(n > 0);
    put(&mut short, last, n - 1);
    cases.push(("a row count too small", short));
    for (name, bytes) in cases {
        let expected = from_slice::<Object>(&bytes).unwrap_err();
        let path = temp("bad");
        std::fs::write(&path, &bytes).unwrap();
        let got = DbdfFile::open(&path)
            .unwrap()
            .read_csr_parts::<f64, i32>(0)
            .unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got.to_string(), expected.to_string(), "{name}");
        assert_eq!(got.offset(), expected.offset(), "{name}");
        assert!(
            matches!(
                got.kind(),
                ErrorKind::ColumnOutOfRange
                    | ErrorKind::UnsortedColumns
                    | ErrorKind::SparseCountMismatch
            ),
            "{got:?}"
        );
    }
}

/// The bytes of `m` written through the general writer, from an [`Object`] of its entries.
fn through_object(m: &CsMat<f64>, options: &Options) -> Vec<u8> {
    let coordinates: Vec<(u64, u64)> = m.iter().map(|(_, (r, c))| (r as u64, c as u64)).collect();
    let values = Values::F64(m.iter().map(|(&v, _)| v).collect());
    let (rows, cols) = (m.rows() as u64, m.cols() as u64);
    let object = Object::csr_from_coordinates(rows, cols, &coordinates, values).unwrap();
    options.to_vec(&object).unwrap()
}

#[test]
fn a_matrix_written_from_its_arrays_has_the_bytes_of_the_general_writer() {
    let m = matrix::<f64>(3000, 5000, 0.02, None);
    let long = matrix::<f64>(40, 300_000, 0.001, Some(17));
    let narrow = |m: &CsMat<f64>| {
        let i32s = |v: &[usize]| v.iter().map(|&i| i as i32).collect::<Vec<_>>();
        let (p, i) = (i32s(m.indptr().raw_storage()), i32s(m.indices()));
        sprs::CsMatI::<f64, i32>::new(m.shape(), p, i, m.data().to_vec())
    };
    // The object's one sparse block is written as it is: what the arrays make where they
    // are one sparse block too. Elsewhere (the general writer) `usize` indices serve.
    for (name, options, one_block) in [
        ("auto", Options::new(), true),
        (
            "sparse",
            Options {
                block_policy: BlockPolicy::Sparse,
                ..Options::new()
            },
            true,
        ),
        (
            "smallest",
            Options {
                block_policy: BlockPolicy::Smallest,
                ..Options::new()
            },
            true,
        ),
        (
            "ultra",
            Options {
                block_policy: BlockPolicy::UltraSparse,
                ..Options::new()
            },
            false,
        ),
        (
            "tiled",
            Options {
                tile: Some((1000, 1000)),
                ..Options::new()
            },
            false,
        ),
        (
            "narrowed",
            Options {
                narrow: true,
                ..Options::new()
            },
            false,
        ),
        (
            "runtime",
            Options {
                dialect: Some(Dialect::Runtime),
                ..Options::new()
            },
            false,
        ),
    ] {
        for (what, m) in [("m", &m), ("long", &long)] {
            let usize_bytes = options.to_vec(&CsrView(m.view())).unwrap();
            let expected = match one_block {
                true => through_object(m, &options),
                false => usize_bytes.clone(),
            };
            let same = |got: Vec<u8>, how: &str| {
                assert!(
                    got == expected,
                    "{name} {what} {how}: {}",
                    crate::first_difference(&got, &expected)
                );
            };
            same(usize_bytes, "usize to_vec");
            let i32_matrix = narrow(m);
            same(
                options.to_vec(&CsrView(i32_matrix.view())).unwrap(),
                "i32 to_vec",
            );
            if one_block {
                // The spec's sizes: the header (19 bytes), the block's place (16), then the
                // sparse block: 18 bytes, 4 per row, 4 + 8 per non-zero.
                let (rows, nnz) = (m.rows(), m.nnz());
                assert_eq!(
                    expected.len(),
                    19 + 16 + 18 + 4 * rows + 12 * nnz,
                    "{name} {what}"
                );
            }
            // Measured without being built (sparse rows and converted values are counted,
            // not encoded) and written in place: the bytes above.
            crate::assert_sized(&CsrView(m.view()), &options, &format!("{name} {what}"));
            crate::assert_sized(
                &CsrView(i32_matrix.view()),
                &options,
                &format!("{name} {what} i32"),
            );
            let path = temp(name);
            options.to_file(&path, &CsrView(i32_matrix.view())).unwrap();
            let written = std::fs::read(&path).unwrap();
            std::fs::remove_file(&path).unwrap();
            let _ = std::fs::remove_file(format!("{}.meta", path.display()));
            same(written, "to_file");
        }
    }
}

#[test]
fn csr_views_of_borrowed_arrays_are_checked_as_sprs_checks_them() {
    let data = [1.0f64, 2.0, 3.0];
    // (indptr, indices, what the error names)
    let cases: [(&[i32], &[i32], &str); 9] = [
        (&[0, 2, 3], &[0, 2, 1], ""),
        (&[0, 2], &[0, 2, 1], "2 row offsets for 2 rows"),
        (&[1, 2, 3], &[0, 2, 1], "row offset 1 at 0"),
        (&[0, 2, 1, 3], &[0, 2, 1], "row offset 1 at 2"),
        (&[0, 2, 2], &[0, 2, 1], "the last row offset is 2, not 3"),
        (&[0, 2, 3], &[0, 3, 1], "column index 3 in row 0"),
        (&[0, 2, 3], &[2, 0, 1], "column index 0 in row 0"),
        (&[0, 2, 3], &[1, 1, 1], "column index 1 in row 0"),
        (&[0, 2, 3], &[0, 2, -1], "column index -1 in row 1"),
    ];
    for (indptr, indices, fault) in cases {
        // Rows as the offsets say, but 2 where they are too few.
        let shape = (indptr.len().max(3) - 1, 3);
        match CsrView::try_from_arrays(shape, indptr, indices, &data) {
            Ok(view) => assert!(fault.is_empty() && view.nnz() == 3),
            Err(e) => {
                assert_error!(e, InvalidValue);
                assert!(
                    !fault.is_empty() && e.to_string().contains(fault),
                    "{e} / {fault}"
                );
            }
        }
    }
    // An empty row where a row starts with a descent: counted once, so that the descent
    // inside the next row is still found.
    let four = [1.0f64; 4];
    let e = CsrView::try_from_arrays((3, 6), &[0i32, 2, 2, 4], &[3, 5, 1, 0], &four).unwrap_err();
    assert!(e.to_string().contains("column index 0 in row 2"), "{e}");
    assert!(CsrView::try_from_arrays((3, 6), &[0i32, 2, 2, 4], &[3, 5, 0, 1], &four).is_ok());
    let short = CsrView::try_from_arrays((2, 3), &[0i32, 2, 3], &[0, 2, 1], &data[..2]);
    assert!(short
        .unwrap_err()
        .to_string()
        .contains("3 indices for 2 values"));
    // Large arrays are checked on every core: a fault late in the second half is found, and
    // the first row at fault is the one named.
    let m = matrix::<f64>(3000, 5000, 0.2, None);
    let indptr: Vec<i64> = m.indptr().raw_storage().iter().map(|&i| i as i64).collect();
    let mut indices: Vec<i64> = m.indices().iter().map(|&i| i as i64).collect();
    assert!(indices.len() > 1 << 20);
    let view = CsrView::try_from_arrays(m.shape(), &indptr, &indices, m.data()).unwrap();
    assert_eq!(to_vec(&view).unwrap(), to_vec(&CsrView(m.view())).unwrap());
    for row in [2990, 2000] {
        let at = indptr[row] as usize + 1;
        indices[at] = indices[at - 1];
    }
    let e = CsrView::try_from_arrays(m.shape(), &indptr, &indices, m.data()).unwrap_err();
    assert!(e.to_string().contains("in row 2000 "), "{e}");
}

#[test]
fn read_csr_parts_reads_daphnes_layout_and_leaves_its_faults_to_the_general_reader() {
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    for (name, m) in [
        ("big", matrix::<f64>(3000, 5000, 0.1, None)),
        ("small", matrix::<f64>(5, 4, 0.5, None)),
        ("empty", CsMat::<f64>::zero((6, 9))),
    ] {
        let path = temp(&format!("runtime_{name}"));
        runtime.to_file(&path, &CsrView(m.view())).unwrap();
        let parts = DbdfFile::open(&path)
            .unwrap()
            .read_csr_parts::<f64, i32>(0)
            .unwrap();
        assert_is_i32(&parts, &m, name);
        // A column index out of range, then one repeated: the general reader's errors.
        let good = std::fs::read(&path).unwrap();
        if m.nnz() > 2 {
            let cols_at = good.len() - 16 * m.nnz();
            for (k, value) in [(m.nnz() - 1, 1u64 << 40), (1, m.indices()[0] as u64)] {
                let mut bad = good.clone();
                let at = cols_at + 8 * k;
                bad[at..at + 8].copy_from_slice(&value.to_le_bytes());
                std::fs::write(&path, &bad).unwrap();
                let expected = serde_daphne::from_file::<_, Object>(&path).unwrap_err();
                let got = DbdfFile::open(&path)
                    .unwrap()
                    .read_csr_parts::<f64, i32>(0)
                    .unwrap_err();
                assert_eq!(got.to_string(), expected.to_string(), "{name} {k}");
            }
        }
        std::fs::remove_file(&path).unwrap();
        let _ = std::fs::remove_file(format!("{}.meta", path.display()));
    }
}

#[test]
fn mutated_csr_files_read_as_arrays_give_the_general_readers_values_or_errors() {
    // Files read on every core (one sparse block, DAPHNE's layout) with every byte flipped
    // and every truncation: `read_csr_parts` and the general reader agree, never a panic.
    let m = matrix::<f64>(9, 40, 0.2, None);
    let runtime = Options {
        dialect: Some(Dialect::Runtime),
        ..Options::new()
    };
    let path = temp("mutated");
    let mut cases = 0;
    for options in [Options::new(), runtime] {
        let good = options.to_vec(&CsrView(m.view())).unwrap();
        let mut variants: Vec<Vec<u8>> = (0..good.len()).map(|cut| good[..cut].to_vec()).collect();
        for at in 0..good.len() {
            for change in [0xff, 0x01, 0x80] {
                let mut bad = good.clone();
                bad[at] ^= change;
                variants.push(bad);
            }
        }
        for bytes in variants {
            std::fs::write(&path, &bytes).unwrap();
            let Ok(mut file) = options.open(&path) else {
                continue;
            };
            let general = file
                .object_checked(0)
                .and_then(|o| o.into_csr_parts_as::<f64, i32>());
            let parallel = file.read_csr_parts::<f64, i32>(0);
            match (parallel, general) {
                (Ok(p), Ok(g)) => assert_eq!(p, g),
                (Err(p), Err(g)) => assert_eq!(p.to_string(), g.to_string()),
                (p, g) => panic!("{p:?} against {g:?}"),
            }
            cases += 1;
        }
    }
    std::fs::remove_file(&path).unwrap();
    assert!(cases > 1000, "{cases}");
}
