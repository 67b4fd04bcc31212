//! CSV on the pipe: a source that reads the file twice (a first pass checks every record and
//! finds the shape, each column's type without a sidecar, and where bands of rows start; then
//! bands are parsed on every core, in order), and a sink that writes each band's records.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::bands::{Plan, Source as Bands};
use super::write::{write_labels, write_records};
use crate::pipe::{Band, Cells, Pieces, Regroup, Sink, Source};
use crate::storage::Input;
use serde_daphne::lowlevel::{parse_meta, Meta};
use serde_daphne::Column;
use serde_daphne::Header;
use serde_daphne::{DataType, ReadAt, Result};

/// Bytes of values per band of rows as the first pass plans them: several bands per core
/// for all but small files.
const BAND: u64 = 4 << 20;

/// A CSV file (with its `.meta` sidecar, if there is one), checked by a first pass.
pub struct CsvSource {
    data: Arc<dyn ReadAt>,
    sidecar: Option<Meta>,
    plan: Plan,
    headers: [Header; 1],
    input_len: u64,
}

impl CsvSource {
    /// Opens the CSV file at `path` and reads it once: every malformed record is found here,
    /// before anything is written.
    ///
    /// # Errors
    /// As [`super::read`]; I/O errors.
    pub(crate) fn open(path: &Path) -> Result<CsvSource> {
        CsvSource::open_input(&Input::local(path)?)
    }

    /// [`CsvSource::open`] for an input wherever it is kept (a remote one is read twice, as
    /// streams).
    ///
    /// # Errors
    /// As [`super::read`]; I/O and request errors.
    pub(crate) fn open_input(input: &Input) -> Result<CsvSource> {
        let sidecar = match input.meta()? {
            Some(text) => Some(parse_meta(
                &text,
                Path::new(&format!("{}.meta", input.name)),
            )?),
            None => None,
        };
        let bands = Bands {
            data: &input.data,
            sidecar: sidecar.as_ref(),
            progress: None,
        };
        // Bands of about 4 MiB of values (at most 8 bytes each).
        let plan = bands.scan(|start| BAND / (8 * start.width as u64).max(1))?;
        let header = header(&plan);
        Ok(CsvSource {
            data: Arc::clone(&input.data),
            input_len: plan.end,
            sidecar,
            plan,
            headers: [header],
        })
    }
}

impl Source for CsvSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let bands = Bands {
            data: &self.data,
            sidecar: self.sidecar.as_ref(),
            progress: None,
        };
        let (frame, cols) = (self.plan.frame(), self.plan.start.width as u64);
        let mut regroup = Regroup::new(multiple);
        let mut more = true;
        bands.for_each_band(&self.plan, &mut |first_row, lanes| {
            let rows = match frame {
                true => lanes.first().map_or(0, |l| l.len() as u64),
                false => lanes[0].len() as u64 / cols.max(1),
            };
            let cells = match frame {
                true => Cells::Frame(lanes),
                false => Cells::Dense(lanes.into_iter().next().expect("one lane")),
            };
            let band = Band {
                first_row,
                first_col: 0,
                rows,
                cols,
                cells,
            };
            more = regroup.push(band, each)?;
            Ok(more)
        })?;
        if more {
            regroup.finish(each)?;
        }
        Ok(())
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn nonzero(&self, _: usize) -> Option<bool> {
        Some(self.plan.nonzero)
    }
}

/// The header the plan gives: a frame when the file has labels, else a dense matrix.
fn header(plan: &Plan) -> Header {
    match &plan.start.labels {
        Some(labels) => Header::Frame {
            rows: plan.rows,
            columns: labels
                .iter()
                .zip(&plan.types)
                .map(|(label, &value_type)| Column {
                    label: label.clone(),
                    value_type,
                })
                .collect(),
        },
        None => Header::matrix(
            DataType::DenseMatrix,
            plan.rows,
            plan.start.width as u64,
            plan.types[0],
        ),
    }
}

/// Writes one object as CSV, a band of records at a time; frames get a header record unless
/// written for DAPHNE (whose `.meta` sidecar holds the labels).
pub struct CsvSink<'w> {
    out: &'w mut dyn Write,
    for_daphne: bool,
}

impl<'w> CsvSink<'w> {
    /// A sink writing to `out`.
    pub(crate) fn new(out: &'w mut dyn Write, for_daphne: bool) -> CsvSink<'w> {
        CsvSink { out, for_daphne }
    }
}

impl Sink for CsvSink<'_> {
    fn holds_one(&self) -> Option<&'static str> {
        Some("CSV")
    }

    fn write(&mut self, header: &Header, pieces: &mut Pieces<'_>) -> Result<()> {
        let (rows, cols) = header.shape();
        let frame = header.data_type() == DataType::Frame;
        // Rows of no fields would be empty lines, which are no records; a matrix of no rows,
        // an empty text, whose width no line tells (a frame's labels do).
        let reason = match (rows, cols) {
            (1.., 0) => Some("a line of no fields is not a record"),
            (0, 1..) if !frame => Some("a text of no lines has no columns"),
            _ => None,
        };
        if let Some(reason) = reason {
            return Err(serde_daphne::Error::not_convertible(
                format!("a {rows} x {cols} {}", header.data_type()),
                "CSV",
                reason,
            ));
        }
        let mut writer = csv::WriterBuilder::new().from_writer(&mut *self.out);
        if let Header::Frame { columns, .. } = header {
            // No labels, no header record: the csv crate writes an empty one as `""`.
            if !self.for_daphne && !columns.is_empty() {
                write_labels(&mut writer, columns.iter().map(|c| c.label.as_str()))?;
            }
        }
        pieces.for_each(&mut |band| {
            let first = band.first_row;
            write_records(&mut writer, &band.into_object(header)?, first)?;
            Ok(true)
        })?;
        writer.flush()?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::super::bands::Source;
    use super::*;
    use serde_daphne::lowlevel::read_sidecar;
    use serde_daphne::lowlevel::{meta_json, sidecar_path};
    use serde_daphne::Column;
    use serde_daphne::DataType;
    use serde_daphne::Dialect;
    use serde_daphne::Header;
    use serde_daphne::Object;
    use serde_daphne::Options;
    use serde_daphne::ValueType;
    use serde_daphne::Values;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("serde_daphne_csv_{name}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn ints(rows: u64, cols: u64, v: &[i64]) -> Object {
        Object::dense(rows, cols, Values::I64(v.to_vec())).unwrap()
    }

    /// CSV texts, each with the header of a sidecar to write beside it, if any, and the
    /// object it holds: integers as i64 and other numbers as f64 without a sidecar, blank
    /// lines no records, a first record that is not all numbers the labels of a frame.
    fn fixtures() -> Vec<(&'static str, Option<Header>, Object)> {
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
        let table = |a: Values, bc: Values| {
            Object::frame(vec![("a".to_owned(), a), ("b,c".to_owned(), bc)]).unwrap()
        };
        // `-0` is an integer field, the integer 0.
        let floats = Object::dense(
            4,
            2,
            Values::F64(vec![1.5, 2.0, 0.0, 4.0, 5.0, 6e3, 0.0, 0.0]),
        )
        .unwrap();
        let pairs = ints(3, 2, &[1, 2, 3, 4, 5, 6]);
        vec![
            (
                "1,2,3\n4,5,6\n7,8,9\n0,0,1\n-3,0,0\n",
                None,
                ints(5, 3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 1, -3, 0, 0]),
            ),
            ("1.5,2\n-0,4\n\n  \n5,6e3\n0,0\n", None, floats),
            ("0,0\n0,0\n0,0\n", None, ints(3, 2, &[0; 6])),
            (
                "a,\"b,c\"\n1,2.5\n3,-4\n0,0\n",
                None,
                table(
                    Values::I64(vec![1, 3, 0]),
                    Values::F64(vec![2.5, -4.0, 0.0]),
                ),
            ),
            (
                "a,\"b,c\"\n1,2.5\n3,-4\n0,0\n",
                Some(frame([ValueType::U8, ValueType::F32])),
                table(Values::U8(vec![1, 3, 0]), Values::F32(vec![2.5, -4.0, 0.0])),
            ),
            (
                "1,2.5\n3,-4\n0,0\n",
                Some(frame([ValueType::I32, ValueType::F64])),
                table(
                    Values::I32(vec![1, 3, 0]),
                    Values::F64(vec![2.5, -4.0, 0.0]),
                ),
            ),
            (
                "7,8\n9,10\n",
                Some(Header::DenseMatrix {
                    rows: 2,
                    cols: 2,
                    value_type: ValueType::U32,
                }),
                Object::dense(2, 2, Values::U32(vec![7, 8, 9, 10])).unwrap(),
            ),
            ("", None, ints(0, 0, &[])),
            (
                "a,b\n",
                None,
                Object::frame(vec![
                    ("a".to_owned(), Values::I64(Vec::new())),
                    ("b".to_owned(), Values::I64(Vec::new())),
                ])
                .unwrap(),
            ),
            // Quotes: checked in one pass; a lone \r ends records too.
            ("\"1\",2\n3,\"4\"\n5,6\n", None, pairs.clone()),
            ("1,2\r3,4\r5,6\r", None, pairs.clone()),
            // Line ends split between threads: CRLF, blank lines, no last line end.
            (
                "1,2\r\n\r\n3,4\r\n  \n5,6\n7,8",
                None,
                ints(4, 2, &[1, 2, 3, 4, 5, 6, 7, 8]),
            ),
            // Integers above i64's range, none negative: u64, exactly.
            (
                "18446744073709551615,1\n9223372036854775808,0\n",
                None,
                Object::dense(2, 2, Values::U64(vec![u64::MAX, 1, 1 << 63, 0])).unwrap(),
            ),
            // A blank line of non-ASCII spaces, which the line ends count as a row.
            ("1,2\n\u{a0}\n3,4\n5,6\n", None, pairs),
        ]
    }

    #[test]
    fn csv_in_two_passes_gives_the_bytes_of_its_object() {
        let dir = dir("stream");
        let option_sets = [
            Options::new(),
            Options {
                tile: Some((2, 2)),
                ..Options::new()
            },
            Options {
                tile: Some((1, 5)),
                ..Options::new()
            },
            Options {
                narrow: true,
                ..Options::new()
            },
            Options {
                block_policy: serde_daphne::BlockPolicy::Smallest,
                ..Options::new()
            },
            Options {
                dialect: Some(Dialect::Runtime),
                ..Options::new()
            },
        ];
        for (k, (text, sidecar, whole)) in fixtures().into_iter().enumerate() {
            let input = dir.join(format!("in{k}.csv"));
            std::fs::write(&input, text).unwrap();
            if let Some(header) = &sidecar {
                let json = meta_json(header, None).unwrap().unwrap();
                std::fs::write(sidecar_path(&input), json).unwrap();
            }
            let hint = read_sidecar(&input).unwrap();
            for options in &option_sets {
                let output = dir.join("out.dbdf");
                crate::pipe::to_dbdf(&mut CsvSource::open(&input).unwrap(), &output, options)
                    .unwrap();
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
                let data: Arc<dyn ReadAt> = Arc::new(std::fs::File::open(&input).unwrap());
                let source = Source {
                    data: &data,
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
                    // Bands follow each other, of at most `band` rows (a run's last
                    // shorter), and cover every row.
                    let width = if plan.frame() { 1 } else { plan.start.width };
                    let mut next = 0;
                    for &(row, cells) in &rows {
                        assert_eq!(row, next, "{text:?} bands of {band}: {rows:?}");
                        assert_eq!(cells % width, 0, "{text:?}");
                        let n = (cells / width) as u64;
                        assert!(n >= 1 && n <= band, "{text:?} bands of {band}: {rows:?}");
                        next += n;
                    }
                    assert_eq!(next, plan.rows, "{text:?} bands of {band}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_csv_fails_naming_its_line_and_leaves_nothing() {
        let dir = dir("malformed");
        for (text, says) in [
            ("1,2\n3\n", "line 2: 1 fields, expected 2"),
            ("1,2\n3,x\n", "line 2, column 2"),
            ("a,b\n1,2\n3,y\n", "line 3, column 2"),
            ("0.5\n9007199254740993\n", "line 2, column 1"),
            ("9007199254740993\n0.5\n", "line 2, column 1"),
            // Above i64's range beside negative integers: no type holds both.
            (
                "18446744073709551615\n-1\n",
                "line 2, column 1: integers above i64's range",
            ),
            (
                "1\n18446744073709551615\n0.5\n",
                "line 3, column 1: integers too large",
            ),
        ] {
            let input = dir.join("in.csv");
            std::fs::write(&input, text).unwrap();
            let output = dir.join("out.dbdf");
            let got = CsvSource::open(&input)
                .and_then(|mut s| {
                    crate::pipe::to_dbdf(
                        &mut s,
                        &output,
                        &Options {
                            tile: Some((1, 1)),
                            ..Options::new()
                        },
                    )
                })
                .unwrap_err();
            assert!(got.to_string().contains(says), "{text:?}: {got}");
            assert_eq!(got.kind(), serde_daphne::ErrorKind::ForeignInput, "{got:?}");
            assert!(!output.exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A column of `fields`, one per line, read as an untyped CSV.
    fn column(fields: &[&str]) -> serde_daphne::Result<Values> {
        let text = fields.join("\n");
        let options = crate::convert::ConvertOptions::default();
        let csv = "csv".parse().unwrap();
        crate::convert::from_slice(text.as_bytes(), csv, &options)?[0].dense_values()
    }

    #[test]
    fn integer_columns_become_floats_only_exactly() {
        assert_eq!(
            column(&["1", " -2 ", "0.5"]).unwrap(),
            Values::F64(vec![1.0, -2.0, 0.5])
        );
        for big in [i64::MAX, (1 << 53) + 1] {
            let big = big.to_string();
            assert!(column(&[&big, "0.5"]).is_err(), "{big} became a float");
            // Regression: the other way round, the integer was silently rounded.
            assert!(column(&["0.5", &big]).is_err(), "{big} was rounded");
        }
        let exact = (1i64 << 60).to_string();
        assert_eq!(
            column(&[&exact, "1.5"]).unwrap(),
            Values::F64(vec![2f64.powi(60), 1.5])
        );
        assert!(column(&["x"]).is_err());
        // An integer among floats is the float holding it: -0 is +0.0, as before the decimal.
        let Values::F64(floats) = column(&["1.5", "-0"]).unwrap() else {
            panic!("not floats")
        };
        assert_eq!(floats[1].to_bits(), 0.0f64.to_bits());
    }
}
