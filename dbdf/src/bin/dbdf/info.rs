//! `dbdf info` and `dbdf validate`, from the file's index: headers only, then (validate,
//! `--nnz`) block by block, so any file fits in memory.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use serde_daphne::lowlevel::Progress;

use serde::Serialize;
use serde_daphne::{BlockIndex, DbdfFile, Dialect, Options};
use serde_daphne::{BlockInfo, ObjectInfo};

use dbdf::convert::Format;

use crate::header_text::{labels, types_line, value_types};
use crate::{emit, Failure};

/// Opens a file lazily (plain reads, or range requests for a URL), naming it in errors.
pub fn open(file: &Path) -> Result<DbdfFile, Failure> {
    crate::remote::open(file)
}

/// Non-zeros of object `index`, counted block by block, reporting the bytes read through.
fn count_nonzeros<R: std::io::Read + std::io::Seek>(
    file: &mut DbdfFile<R>,
    index: usize,
    report: Option<&Progress>,
) -> serde_daphne::Result<u64> {
    let (ends, total): (Vec<u64>, u64) = (
        file.objects()[index]
            .blocks
            .iter()
            .map(|b| b.range.end)
            .collect(),
        file.file_len(),
    );
    let mut nnz = 0;
    for (block, end) in file.blocks(index)?.zip(ends) {
        nnz += block?.data.nnz();
        if let Some(report) = report {
            report(end, total);
        }
    }
    Ok(nnz)
}

/// Prints every object of `file`: from headers alone, or with `count` also the non-zeros
/// (reading every block once). Written as it goes: a file of a million blocks lists them
/// without holding its listing. A file of another format, as a conversion reads it.
pub fn run(
    file: &Path,
    from: Option<Format>,
    as_json: bool,
    count: bool,
) -> Result<ExitCode, Failure> {
    if crate::inputs::format_of(file, from) != Format::Dbdf {
        let options = crate::inputs::options(from);
        return crate::inputs::info(file, &options, as_json, count);
    }
    let mut dbdf = open(file)?;
    let size = dbdf.file_len();
    let bar = match count {
        true => crate::files::progress_bar("counting non-zeros in", file),
        false => None,
    };
    let bar = bar.map(|b| Arc::new(b) as Progress);
    let nonzeros: Option<Vec<u64>> = match count {
        true => Some(
            (0..dbdf.objects().len())
                .map(|i| count_nonzeros(&mut dbdf, i, bar.as_ref()))
                .collect::<serde_daphne::Result<_>>()
                .map_err(|e| Failure::at(file, e))?,
        ),
        false => None,
    };
    let objects = dbdf.objects();
    let stored: u64 = objects.iter().map(ObjectInfo::stored).sum();
    let per_value = (stored > 0).then(|| size as f64 / stored as f64);
    let nnz = |index: usize| nonzeros.as_ref().map(|n| n[index]);
    let mut out = Output::new();
    if as_json {
        let document = Document {
            bytes_per_stored_value: per_value,
            file: file.display().to_string(),
            nnz: nonzeros.as_ref().map(|n| n.iter().sum::<u64>()),
            objects: Objects(objects, nonzeros.as_deref()),
            size,
            stored,
        };
        // Written as it is serialized, a few hundred KiB at a time.
        use std::io::Write;
        let mut stdout = std::io::BufWriter::with_capacity(1 << 18, std::io::stdout().lock());
        let written = serde_json::to_writer_pretty(&mut stdout, &document)
            .map_err(std::io::Error::from)
            .and_then(|()| stdout.write_all(b"\n"))
            .and_then(|()| stdout.flush());
        return match written {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(Failure::plain(format!("standard output: {e}")))
            }
            _ => Ok(ExitCode::SUCCESS),
        };
    }
    out.text += &format!(
        "{}: {size} bytes, {} object(s), {stored} stored values{}{}\n",
        file.display(),
        objects.len(),
        per_value.map_or(String::new(), |b| format!(" ({b:.2} bytes each)")),
        nonzeros.as_ref().map_or(String::new(), |n| format!(
            ", {} non-zeros",
            n.iter().sum::<u64>()
        )),
    );
    for (index, object) in objects.iter().enumerate() {
        let header = &object.header;
        let (rows, cols) = header.shape();
        let range = &object.range;
        out.text += &format!(
            "object {index} at byte {} ({} bytes): {} {rows} x {cols}, {} dialect, {} stored values{}\n",
            range.start,
            range.end - range.start,
            header.data_type(),
            object.dialect,
            object.stored(),
            nnz(index).map_or(String::new(), |n| format!(", {n} non-zeros")),
        );
        out.text += &types_line(header);
        let runtime = object.dialect == Dialect::Runtime;
        for (b, block) in object.blocks.iter().enumerate() {
            let p = block.place;
            let vt = block
                .value_type
                .map_or("-".to_string(), |vt| vt.to_string());
            let length = block.range.end - block.range.start;
            let at = match runtime {
                true => format!("the runtime's single body, byte {}", block.range.start),
                false => format!("byte {}, {length} bytes", block.range.start),
            };
            let stored = match block.nnz() {
                Some(nnz) => format!(", {nnz} stored"),
                None => String::new(),
            };
            out.text += &format!(
                "  block {b}: at ({}, {}), {} x {}, {}, {vt}{stored}, {at}\n",
                p.row, p.col, p.rows, p.cols, block.block_type,
            );
            out.flush_some()?;
        }
    }
    out.flush().map(|()| ExitCode::SUCCESS)
}

/// Standard output, written a few hundred KiB at a time.
struct Output {
    text: String,
}

impl Output {
    fn new() -> Output {
        Output {
            text: String::new(),
        }
    }

    fn flush_some(&mut self) -> Result<(), Failure> {
        match self.text.len() >= 1 << 18 {
            true => self.flush(),
            false => Ok(()),
        }
    }

    fn flush(&mut self) -> Result<(), Failure> {
        emit(&self.text)?;
        self.text.clear();
        Ok(())
    }
}

/// `dbdf info --json`, its keys in the order the listing always had (sorted).
#[derive(Serialize)]
struct Document<'a> {
    bytes_per_stored_value: Option<f64>,
    file: String,
    nnz: Option<u64>,
    objects: Objects<'a>,
    size: u64,
    stored: u64,
}

/// Every object, serialized as it is written.
struct Objects<'a>(&'a [ObjectInfo], Option<&'a [u64]>);

impl Serialize for Objects<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().enumerate().map(|(index, object)| {
            let header = &object.header;
            let labels = labels(header);
            ObjectDoc {
                blocks: Blocks(&object.blocks),
                cols: header.shape().1,
                data_type: header.data_type().to_string(),
                dialect: object.dialect.to_string(),
                labels: (!labels.is_empty()).then_some(labels),
                length: object.range.end - object.range.start,
                nnz: self.1.map(|n| n[index]),
                offset: object.range.start,
                rows: header.shape().0,
                stored: object.stored(),
                value_types: value_types(header),
            }
        }))
    }
}

#[derive(Serialize)]
struct ObjectDoc<'a> {
    blocks: Blocks<'a>,
    cols: u64,
    data_type: String,
    dialect: String,
    labels: Option<Vec<&'a str>>,
    length: u64,
    nnz: Option<u64>,
    offset: u64,
    rows: u64,
    stored: u64,
    value_types: Vec<String>,
}

struct Blocks<'a>(&'a [BlockInfo]);

impl Serialize for Blocks<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|block| BlockDoc {
            block_type: block.block_type.to_string(),
            col: block.place.col,
            cols: block.place.cols,
            length: block.range.end - block.range.start,
            offset: block.range.start,
            row: block.place.row,
            rows: block.place.rows,
            stored_nnz: block.nnz(),
            value_type: block.value_type.map(|vt| vt.to_string()),
        }))
    }
}

#[derive(Serialize)]
struct BlockDoc {
    block_type: String,
    col: u64,
    cols: u32,
    length: u64,
    offset: u64,
    row: u64,
    rows: u32,
    stored_nnz: Option<u64>,
    value_type: Option<String>,
}

/// Checks `file` strictly, block by block: `ok`, or the first problem with its byte offset
/// and exit code 1. A file of another format is read cell by cell.
pub fn validate(file: &Path, from: Option<Format>) -> Result<ExitCode, Failure> {
    if crate::inputs::format_of(file, from) != Format::Dbdf {
        let options = crate::inputs::options(from);
        return crate::inputs::validate(file, &options);
    }
    let bar = crate::files::progress_bar("validating", file).map(|b| Arc::new(b) as Progress);
    let checked = match open(file) {
        Ok(mut f) => f.validate_with_progress(bar.as_ref()),
        Err(failure) => Err(serde_daphne::Error::invalid(failure.message())),
    };
    match checked {
        Ok(()) => {
            emit("ok\n")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            emit(&format!("{}: {e}\n", file.display()))?;
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Writes the block index of `file` beside it (`FILE.index`), atomically; for a URL, as the
/// object `URL.index`.
pub fn index(file: &Path) -> Result<ExitCode, Failure> {
    let fail = |e: serde_daphne::Error| Failure::at(file, e);
    match dbdf::remote::Location::of_path(file).map_err(fail)? {
        dbdf::remote::Location::Local(path) => {
            let index = BlockIndex::of_file(&path, &Options::new()).map_err(fail)?;
            let beside = serde_daphne::lowlevel::appended(&path, ".index");
            let mut set = serde_daphne::lowlevel::FileSet::new(false);
            set.bytes(&beside, &index.to_vec())
                .and_then(|()| set.commit())
                .map_err(|e| Failure::at(beside, e))?;
        }
        dbdf::remote::Location::Remote(url) => {
            let object =
                dbdf::remote::RemoteObject::new(&url, crate::remote::storage()).map_err(fail)?;
            let meta = object.sibling(".meta").get_if_present().map_err(fail)?;
            let meta = meta.map(|m| String::from_utf8_lossy(&m).into_owned());
            let reader = dbdf::remote::ObjectReader::open(object.clone()).map_err(fail)?;
            let index = BlockIndex::of_read_at(std::sync::Arc::new(reader), &Options::new(), meta)
                .map_err(fail)?;
            object.sibling(".index").put(index.to_vec()).map_err(fail)?;
        }
    }
    emit("ok\n")?;
    Ok(ExitCode::SUCCESS)
}
