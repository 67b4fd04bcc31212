//! `info`, `validate`, `slice` and `spy` of inputs in every format the library reads other
//! than `.dbdf`: through the format's source of the pipe, as `convert` reads them, so each
//! object is described as a conversion makes it.

use std::path::Path;
use std::process::ExitCode;

use dbdf::convert::{ConvertOptions, Format};
use dbdf::pipe::{copy, Pieces, Sink};
use dbdf::remote::OpenedInput;
use serde::Serialize;
use serde_daphne::Header;

use crate::header_text::{labels, types_line, value_types};
use crate::{emit, Failure};

/// The format of `file`: `from`, else its extension's (or, for a local file, its content's);
/// `.dbdf` where nothing names one, as the commands always took such files.
pub fn format_of(file: &Path, from: Option<Format>) -> Format {
    from.or_else(|| Format::of_path(file, !crate::remote::is_url(file)))
        .unwrap_or(Format::Dbdf)
}

/// The options that read an input in `from`'s format (by default the extension's).
pub fn options(from: Option<Format>) -> ConvertOptions {
    ConvertOptions {
        from,
        ..ConvertOptions::default()
    }
}

/// Opens `file` (a path or a URL) with `options`, in their format or the extension's.
pub fn open(file: &Path, options: &ConvertOptions) -> Result<OpenedInput, Failure> {
    let opened = dbdf::remote::open_input(file, options, crate::remote::storage())?;
    for note in &opened.notes {
        crate::say(format_args!("{note}"));
    }
    Ok(opened)
}

/// A sink that reads every cell of every object once and counts the non-zeros.
struct Count<'c>(&'c mut Vec<u64>);

impl Sink for Count<'_> {
    fn write(&mut self, _: &Header, pieces: &mut Pieces<'_>) -> serde_daphne::Result<()> {
        let mut nnz = 0;
        pieces.for_each(&mut |band| {
            band.for_each_nonzero(|_, _, _| nnz += 1);
            Ok(true)
        })?;
        self.0.push(nnz);
        Ok(())
    }

    fn finish(self: Box<Self>) -> serde_daphne::Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Reads every cell of `opened` once: its non-zeros, object by object.
fn read_all(opened: &mut OpenedInput) -> serde_daphne::Result<Vec<u64>> {
    let mut counts = Vec::new();
    copy(&mut *opened.source, Box::new(Count(&mut counts)))?;
    Ok(counts)
}

/// `dbdf info --json` of a file in another format.
#[derive(Serialize)]
struct Document {
    file: String,
    format: String,
    nnz: Option<u64>,
    objects: Vec<ObjectDoc>,
    size: u64,
}

#[derive(Serialize)]
struct ObjectDoc {
    cols: u64,
    data_type: String,
    labels: Option<Vec<String>>,
    layout: Option<&'static str>,
    nnz: Option<u64>,
    rows: u64,
    tile: Option<(u32, u32)>,
    value_types: Vec<String>,
}

/// Prints every object of `file` (in `options.from`'s format) as a conversion reads it: data
/// type, shape, value types, labels; with `count` also the non-zeros (reading every cell).
pub fn info(
    file: &Path,
    options: &ConvertOptions,
    json: bool,
    count: bool,
) -> Result<ExitCode, Failure> {
    let mut opened = open(file, options)?;
    let nonzeros = match count {
        true => Some(read_all(&mut opened).map_err(|e| Failure::at(file, e))?),
        false => None,
    };
    let nnz = |index: usize| nonzeros.as_ref().map(|n| n[index]);
    let metadata = opened.source.metadata();
    let size = opened.source.input_len();
    let headers = opened.source.headers();
    // The input's own layout and tiles describe its first object.
    let own = |index: usize| match index {
        0 => (metadata.layout, metadata.tile),
        _ => (None, None),
    };
    if json {
        let document = Document {
            file: file.display().to_string(),
            format: opened.format.to_string(),
            nnz: nonzeros.as_ref().map(|n| n.iter().sum()),
            objects: headers
                .iter()
                .enumerate()
                .map(|(index, header)| {
                    let labels = labels(header);
                    let (rows, cols) = header.shape();
                    ObjectDoc {
                        cols,
                        data_type: header.data_type().to_string(),
                        labels: (!labels.is_empty())
                            .then(|| labels.iter().map(|l| l.to_string()).collect()),
                        layout: own(index).0,
                        nnz: nnz(index),
                        rows,
                        tile: own(index).1,
                        value_types: value_types(header),
                    }
                })
                .collect(),
            size,
        };
        let text = serde_json::to_string_pretty(&document)
            .map_err(|e| Failure::plain(format!("standard output: {e}")))?;
        emit(&(text + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "{}: {}, {size} bytes, {} object(s){}\n",
        file.display(),
        opened.format.description(),
        headers.len(),
        nonzeros.as_ref().map_or(String::new(), |n| format!(
            ", {} non-zeros",
            n.iter().sum::<u64>()
        )),
    );
    for (index, header) in headers.iter().enumerate() {
        let (rows, cols) = header.shape();
        text += &format!(
            "object {index}: {} {rows} x {cols} as converted{}\n",
            header.data_type(),
            nnz(index).map_or(String::new(), |n| format!(", {n} non-zeros")),
        );
        text += &types_line(header);
        match own(index) {
            (Some(layout), _) => text += &format!("  stored as {layout}\n"),
            (_, Some((r, c))) => text += &format!("  stored in tiles of {r} x {c}\n"),
            _ => {}
        }
    }
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads every cell of `file` once, as a conversion would: `ok`, or the first problem
/// (exit 1).
pub fn validate(file: &Path, options: &ConvertOptions) -> Result<ExitCode, Failure> {
    let checked = open(file, options)
        .and_then(|mut opened| read_all(&mut opened).map_err(|e| Failure::at(file, e)));
    match checked {
        Ok(_) => {
            emit("ok\n")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            emit(&format!("{}: {}\n", file.display(), failure.message()))?;
            Ok(ExitCode::FAILURE)
        }
    }
}
