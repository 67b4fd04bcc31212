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
        let mut writer = csv::WriterBuilder::new().from_writer(&mut *self.out);
        if let Header::Frame { columns, .. } = header {
            if !self.for_daphne {
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
    use super::super::read::from_reader as read;
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
        for (k, (text, sidecar)) in fixtures().into_iter().enumerate() {
            let input = dir.join(format!("in{k}.csv"));
            std::fs::write(&input, text).unwrap();
            if let Some(header) = &sidecar {
                let json = meta_json(header, None).unwrap().unwrap();
                std::fs::write(sidecar_path(&input), json).unwrap();
            }
            let hint = read_sidecar(&input).unwrap();
            let whole = read(text.as_bytes(), hint.as_ref()).unwrap();
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
            assert_eq!(got.to_string(), expected.to_string(), "{text:?}");
            assert_eq!(got.kind(), serde_daphne::ErrorKind::ForeignInput, "{got:?}");
            assert!(!output.exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
