//! The encoder's tests: blocks written from bands against blocks written whole.

use super::*;
/// A matrix handed out in bands of `height` rows, dense or as CSR arrays.
#[derive(Clone)]
struct Bands {
    data: Vec<f64>,
    cols: usize,
    height: usize,
    csr: bool,
    /// The count of non-zeros the source gives, if any.
    nnz: Option<u64>,
    /// Whether the CSR arrays also store the zeros of every third column (which the block
    /// leaves out, some bands having such zeros and others not).
    stored_zeros: bool,
}

impl RowBands<f64> for Bands {
    fn dense(&self) -> bool {
        !self.csr
    }

    fn count_nonzero(&mut self) -> Result<Option<u64>> {
        Ok(self.nnz)
    }

    fn for_each_band(
        &mut self,
        each: &mut dyn FnMut(&MatrixRef<'_, f64>) -> Result<bool>,
    ) -> Result<()> {
        for band in self.data.chunks(self.height * self.cols) {
            let rows = band.len() / self.cols;
            let (mut offsets, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
            for row in band.chunks(self.cols) {
                let kept = |(c, x): &(usize, &f64)| **x != 0.0 || (self.stored_zeros && c % 3 == 0);
                for (c, &x) in row.iter().enumerate().filter(kept) {
                    cols.push(c);
                    values.push(x);
                }
                offsets.push(values.len());
            }
            let layout = match self.csr {
                true => MatrixCells::Csr {
                    row_offsets: &offsets,
                    col_indices: &cols,
                    values: &values,
                },
                false => MatrixCells::Dense(band),
            };
            let matrix = MatrixRef {
                rows,
                cols: self.cols,
                layout,
            };
            if !each(&matrix)? {
                break;
            }
        }
        Ok(())
    }
}

#[test]
fn a_block_written_from_bands_is_the_block_written_whole() {
    let (rows, cols) = (11, 7);
    let sparse: Vec<f64> = (0..rows * cols)
        .map(|i| if i % 9 == 2 { i as f64 * 0.5 } else { 0.0 })
        .collect();
    let dense: Vec<f64> = (0..rows * cols).map(|i| i as f64 - 3.0).collect();
    let fractions: Vec<f64> = (0..rows * cols).map(|i| i as f64 + 0.1).collect();
    let place = BlockPlace {
        row: 0,
        col: 0,
        rows: rows as u32,
        cols: cols as u32,
    };
    let policies = [
        BlockPolicy::Auto,
        BlockPolicy::Smallest,
        BlockPolicy::Dense,
        BlockPolicy::Sparse,
        BlockPolicy::UltraSparse,
    ];
    for data in [&sparse, &dense, &fractions, &vec![0.0; rows * cols]] {
        for policy in policies {
            for narrow in [false, true] {
                let options = Options {
                    block_policy: policy,
                    narrow,
                    ..Options::new()
                };
                for (csr, stored_zeros) in [(false, false), (true, false), (true, true)] {
                    let mut whole = Bands {
                        data: data.clone(),
                        cols,
                        height: rows,
                        csr,
                        nnz: None,
                        stored_zeros,
                    };
                    let mut expected = Sink::new(Vec::new());
                    whole
                        .for_each_band(&mut |m| {
                            write_block(&mut expected, m, place, (0, 0), &options)?;
                            Ok(true)
                        })
                        .unwrap();
                    let expected = expected.finish().unwrap();
                    let counted = data.iter().filter(|x| **x != 0.0).count() as u64;
                    for (height, nnz) in [(1, None), (3, None), (rows, None), (3, Some(counted))] {
                        let mut bands = Bands {
                            height,
                            nnz,
                            ..whole.clone()
                        };
                        let mut got = Sink::new(Vec::new());
                        write_block_in_bands(&mut got, place, &mut bands, &options).unwrap();
                        assert_eq!(
                            got.finish().unwrap(),
                            expected,
                            "{policy:?} narrow {narrow} csr {csr} stored zeros {stored_zeros} bands of {height}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_count_of_non_zeros_that_the_rows_contradict_is_an_error() {
    let place = BlockPlace {
        row: 0,
        col: 0,
        rows: 4,
        cols: 4,
    };
    let data: Vec<f64> = (0..16)
        .map(|i| if i % 5 == 0 { 1.0 } else { 0.0 })
        .collect();
    for nnz in [3, 5] {
        let mut bands = Bands {
            data: data.clone(),
            cols: 4,
            height: 2,
            csr: true,
            nnz: Some(nnz),
            stored_zeros: false,
        };
        let got = write_block_in_bands(
            &mut Sink::new(Vec::new()),
            place,
            &mut bands,
            &Options::new(),
        );
        assert!(got.is_err(), "a count of {nnz} for 4 non-zeros");
    }
}

#[test]
fn tiles_cover_in_row_major_order() {
    let all: Vec<_> = places(3, 5, (2, 2))
        .map(|p| (p.row, p.col, p.rows, p.cols))
        .collect();
    assert_eq!(
        all,
        vec![
            (0, 0, 2, 2),
            (0, 2, 2, 2),
            (0, 4, 2, 1),
            (2, 0, 1, 2),
            (2, 2, 1, 2),
            (2, 4, 1, 1)
        ]
    );
    let big: Vec<_> = places(0, 5_000_000_000, (1, u64::from(u32::MAX)))
        .map(|p| (p.col, p.cols))
        .collect();
    assert_eq!(big, vec![(0, u32::MAX), (4_294_967_295, 705_032_705)]);
}

#[test]
fn dense_wins_once_sparse_forms_are_no_smaller() {
    let place = BlockPlace {
        row: 0,
        col: 0,
        rows: 10,
        cols: 10,
    };
    let at = dense_wins_at(place, ValueType::F64);
    let len = |bt, n| block_len(bt, 10, 10, n, ValueType::F64).unwrap();
    assert!(len(BlockType::Sparse, at) >= len(BlockType::Dense, 0));
    assert!(len(BlockType::UltraSparse, at) >= len(BlockType::Dense, 0));
    assert!(
        len(BlockType::Sparse, at - 1) < len(BlockType::Dense, 0)
            || len(BlockType::UltraSparse, at - 1) < len(BlockType::Dense, 0)
    );
}
