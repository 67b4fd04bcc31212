//! `dbdf slice`: a window of one object of a `.dbdf` file, to any format `convert` writes,
//! reading only the blocks (and rows) the window needs.

use std::ops::Range;
use std::process::ExitCode;

use crate::convert;
use crate::files::Counted;
use crate::Failure;

/// Arguments of `slice`: a window, then everything `convert` takes.
#[derive(clap::Args)]
pub struct SliceArgs {
    /// Rows A:B (from A up to, not including, B; either may be left out: `:100`, `5:`).
    #[arg(long, value_parser = parse_range, default_value = ":")]
    rows: (Option<u64>, Option<u64>),
    /// Columns C:D, as --rows.
    #[arg(long, value_parser = parse_range, default_value = ":")]
    cols: (Option<u64>, Option<u64>),
    /// Which object of the file (from 0).
    #[arg(long, default_value_t = 0)]
    object: usize,
    #[command(flatten)]
    convert: convert::Args,
}

fn parse_range(text: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let (a, b) = text.split_once(':').ok_or("expected A:B, such as 0:1000")?;
    let bound = |s: &str| -> Result<Option<u64>, String> {
        match s.trim() {
            "" => Ok(None),
            s => s
                .parse()
                .map(Some)
                .map_err(|_| format!("{s:?} is not a row or column number")),
        }
    };
    Ok((bound(a)?, bound(b)?))
}

fn resolve((start, end): (Option<u64>, Option<u64>), len: u64) -> Range<u64> {
    start.unwrap_or(0)..end.unwrap_or(len)
}

/// Runs `slice`.
pub fn run(args: &SliceArgs) -> Result<ExitCode, Failure> {
    let input = args.convert.input();
    let options = args.convert.options()?;
    if crate::inputs::format_of(input, options.from) != dbdf::convert::Format::Dbdf {
        return other_format(args, &options);
    }
    let mut file = crate::info::open(input)?;
    let Some(object) = file.objects().get(args.object) else {
        return Err(Failure::at(
            input,
            format!(
                "has {} objects: there is no object {}",
                file.objects().len(),
                args.object
            ),
        ));
    };
    let (rows, cols) = object.header.shape();
    let (rows, cols) = (resolve(args.rows, rows), resolve(args.cols, cols));
    // The bar counts the bytes of the blocks the window overlaps (of a runtime-dialect CSR
    // object, only part of its one block is read).
    let needed: u64 = object
        .blocks
        .iter()
        .filter(|b| {
            let p = b.place;
            p.row < rows.end
                && rows.start < p.row + u64::from(p.rows)
                && p.col < cols.end
                && cols.start < p.col + u64::from(p.cols)
        })
        .map(|b| b.range.end - b.range.start)
        .sum();
    let label = format!("slicing {}", crate::files::file_name(input));
    let window = match crate::files::bar(&label, needed) {
        Some(bar) => {
            let mut counted = file.map_reader(|r| Counted::new(r, bar.clone()));
            let window = counted.read_window_object(args.object, rows, cols);
            bar.finish_and_clear();
            window
        }
        None => file.read_window_object(args.object, rows, cols),
    }
    .map_err(|e| Failure::at(input, e))?;
    convert::write_objects(&args.convert, vec![window])
}

/// `slice` of a file in another format: the window read through the format's source (by its
/// windows where it has them, else band by band, keeping only the window's rows).
fn other_format(
    args: &SliceArgs,
    options: &dbdf::convert::ConvertOptions,
) -> Result<ExitCode, Failure> {
    let input = args.convert.input();
    let mut opened = crate::inputs::open(input, options)?;
    let headers = opened.source.headers();
    let Some(header) = headers.get(args.object) else {
        return Err(Failure::at(
            input,
            format!(
                "has {} objects: there is no object {}",
                headers.len(),
                args.object
            ),
        ));
    };
    let (rows, cols) = header.shape();
    let (rows, cols) = (resolve(args.rows, rows), resolve(args.cols, cols));
    let window = dbdf::pipe::read_window(&mut *opened.source, args.object, rows, cols)
        .map_err(|e| Failure::at(input, e))?;
    convert::write_objects(&args.convert, vec![window])
}
