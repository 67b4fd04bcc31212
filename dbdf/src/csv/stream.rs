//! CSV to `.dbdf` through the pipe.

use std::path::Path;

#[cfg(test)]
use super::read::read;
use super::CsvSource;
use serde_daphne::__private::options::Options;
use serde_daphne::Result;

/// Converts the CSV file at `input` (with its `.meta` sidecar, if there is one) to a `.dbdf`
/// file at `output` (atomically) through the pipe ([`CsvSource`] to
/// [`crate::pipe::DbdfSink`]): the CSV is read twice, once to check it and learn its shape and
/// column types, once to write it a band of rows at a time, so memory holds a few bands. A
/// matrix's bytes equal [`read`] of the same file written with [`serde_daphne::to_file_with`];
/// a tiled frame holds the same blocks, a band of rows of every column after another. A
/// frame without a tile size (in the spec dialect, where each column is one block) is held
/// whole.
///
/// ```
/// use dbdf::csv;
/// use serde_daphne::{Dense, Options};
///
/// let dir = std::env::temp_dir();
/// let (from, to) = (dir.join("doc_csv_stream.csv"), dir.join("doc_csv_stream.dbdf"));
/// std::fs::write(&from, "1,2,3\n4,5,6\n")?;
/// csv::to_dbdf(&from, &to, &Options::new().tile(1, 2))?;
/// let m: Dense<i64> = serde_daphne::from_file(&to)?;
/// assert_eq!(m.0, ndarray::array![[1, 2, 3], [4, 5, 6]]);
/// # std::fs::remove_file(&from).ok(); std::fs::remove_file(&to).ok();
/// # Ok::<(), serde_daphne::Error>(())
/// ```
///
/// # Errors
/// As [`read`] (the first pass finds every malformed record before anything is
/// written); [`serde_daphne::DbdfWriter`]'s errors; I/O errors. Nothing is left at `output`.
pub fn to_dbdf(input: impl AsRef<Path>, output: impl AsRef<Path>, options: &Options) -> Result<()> {
    let mut source = CsvSource::open(input.as_ref())?;
    crate::pipe::to_dbdf(&mut source, output.as_ref(), options)
}

#[cfg(test)]
mod tests {
    use super::super::bands::Source;
    use super::*;
    use serde_daphne::__private::io::meta::write_sidecar;
    use serde_daphne::__private::io::read_sidecar;
    use serde_daphne::__private::options::Dialect;
    use serde_daphne::__private::wire::header::Column;
    use serde_daphne::__private::wire::Header;
    use serde_daphne::DataType;
    use serde_daphne::Object;
    use serde_daphne::ValueType;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("serde_daphne_csv_{name}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// CSV texts, each with the header of a sidecar to write beside it, if any.
    fn fixtures() -> Vec<(&'static str, Option<Header>)> {
        let frame = |types: [ValueType; 2]| Header::Frame {
            rows: 3,
            columns: ["a", "b,c"]
                .iter()
                .zip(types)
                .map(|(label, value_type)| Column {
                    label: label.to_string(),
                    value_type,
                })
                .collect(),
        };
        vec![
            ("1,2,3\n4,5,6\n7,8,9\n0,0,1\n-3,0,0\n", None),
            ("1.5,2\n-0,4\n\n  \n5,6e3\n0,0\n", None),
            ("0,0\n0,0\n0,0\n", None),
            ("a,\"b,c\"\n1,2.5\n3,-4\n0,0\n", None),
            (
                "a,\"b,c\"\n1,2.5\n3,-4\n0,0\n",
                Some(frame([ValueType::U8, ValueType::F32])),
            ),
            (
                "1,2.5\n3,-4\n0,0\n",
                Some(frame([ValueType::I32, ValueType::F64])),
            ),
            (
                "7,8\n9,10\n",
                Some(Header::DenseMatrix {
                    rows: 2,
                    cols: 2,
                    value_type: ValueType::U32,
                }),
            ),
            ("", None),
            ("a,b\n", None),
            // Quotes: checked in one pass; a lone \r ends records too.
            ("\"1\",2\n3,\"4\"\n5,6\n", None),
            ("1,2\r3,4\r5,6\r", None),
            // Line ends split between threads: CRLF, blank lines, no last line end.
            ("1,2\r\n\r\n3,4\r\n  \n5,6\n7,8", None),
            // A blank line of non-ASCII spaces, which the line ends count as a row.
            ("1,2\n\u{a0}\n3,4\n5,6\n", None),
        ]
    }

    #[test]
    fn csv_in_two_passes_gives_the_bytes_of_the_whole_read() {
        let dir = dir("stream");
        let option_sets = [
            Options::new(),
            Options::new().tile(2, 2),
            Options::new().tile(1, 5),
            Options::new().narrow(true),
            Options::new().block_policy(serde_daphne::BlockPolicy::Smallest),
            Options::new().dialect(Dialect::Runtime),
        ];
        for (k, (text, sidecar)) in fixtures().into_iter().enumerate() {
            let input = dir.join(format!("in{k}.csv"));
            std::fs::write(&input, text).unwrap();
            if let Some(header) = &sidecar {
                write_sidecar(&input, header).unwrap();
            }
            let hint = read_sidecar(&input).unwrap();
            let whole = read(text.as_bytes(), hint.as_ref()).unwrap();
            for options in &option_sets {
                let output = dir.join("out.dbdf");
                to_dbdf(&input, &output, options).unwrap();
                let mut expected = Vec::new();
                whole.write_with(&mut expected, options).unwrap();
                let got = std::fs::read(&output).unwrap();
                if whole.data_type() == DataType::Frame && options.tile.is_some() {
                    // The same blocks, a band of every column after another.
                    let got = serde_daphne::from_slice::<Object>(&got).unwrap();
                    let expected = serde_daphne::from_slice::<Object>(&expected).unwrap();
                    assert_eq!(got.columns().unwrap(), expected.columns().unwrap());
                    assert_eq!(got.header(), expected.header());
                    assert_eq!(got.blocks().len(), expected.blocks().len());
                } else {
                    assert_eq!(got, expected, "{text:?} {options:?}");
                }
                // Bands of one and two rows.
                let source = Source {
                    path: &input,
                    sidecar: hint.as_ref(),
                    progress: None,
                };
                for band in [1, 2] {
                    let plan = source.scan(|_| band).unwrap();
                    let mut rows = Vec::new();
                    source
                        .for_each_band(&plan, &mut |row, lanes| {
                            rows.push((row, lanes[0].len()));
                            Ok(true)
                        })
                        .unwrap();
                    let width = if plan.frame() { 1 } else { plan.start.width };
                    let expected: Vec<(u64, usize)> = (0..plan.rows)
                        .step_by(band as usize)
                        .map(|r| (r, (band.min(plan.rows - r)) as usize * width))
                        .collect();
                    assert_eq!(rows, expected, "{text:?} bands of {band}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_csv_fails_as_the_whole_read_does_and_leaves_nothing() {
        let dir = dir("malformed");
        for text in [
            "1,2\n3\n",
            "1,2\n3,x\n",
            "a,b\n1,2\n3,y\n",
            "0.5\n9007199254740993\n",
            "9007199254740993\n0.5\n",
        ] {
            let input = dir.join("in.csv");
            std::fs::write(&input, text).unwrap();
            let output = dir.join("out.dbdf");
            let expected = read(text.as_bytes(), None).unwrap_err();
            let got = to_dbdf(&input, &output, &Options::new().tile(1, 1)).unwrap_err();
            assert_eq!(got.to_string(), expected.to_string(), "{text:?}");
            assert_eq!(got.kind(), serde_daphne::ErrorKind::ForeignInput, "{got:?}");
            assert!(!output.exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
