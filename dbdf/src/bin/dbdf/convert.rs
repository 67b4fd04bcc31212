//! `dbdf convert`: the command line of [`dbdf::convert`], between .dbdf, .mtx, .csv, .npy,
//! .npz, Futhark binary data, Binsparse, SystemDS binary blocks, Parquet and Arrow IPC.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use dbdf::convert::{self, ConvertError, ConvertOptions, Format, Report};
use dbdf::driver::{OptionValue, Takes};
use dbdf::pipe::{Held, InputMetadata, Projection};
use serde_daphne::{DataType, Object, ValueType};

use crate::files::progress_bar;
use crate::{parse_name, Failure};

/// Arguments of `convert`.
#[derive(clap::Args)]
pub struct Args {
    /// The input file.
    input: PathBuf,
    /// The output file, or `-` for standard output (then --to is needed).
    output: PathBuf,
    /// The input format (default: from the extension), by a name listed above.
    #[arg(long, value_parser = parse_name::<Format>)]
    from: Option<Format>,
    /// The output format (default: from the extension; a .npz output is Binsparse), by a
    /// name listed above.
    #[arg(long, value_parser = parse_name::<Format>)]
    to: Option<Format>,
    /// The DAPHNE data type of output matrices, dense or csr (default: CSR for coordinate
    /// .mtx input, the input's otherwise). A Parquet or Arrow table (a frame unless its
    /// metadata says otherwise) is read as a matrix when its columns share a value type (or
    /// --value-type gives one).
    #[arg(long = "data-type", value_parser = parse_matrix_type)]
    data_type: Option<DataType>,
    /// Convert every value to this type (exactly, or fail): u8, u16, u32, u64, i8, i16,
    /// i32, i64, f32 or f64.
    #[arg(long = "value-type", value_parser = parse_name::<ValueType>)]
    value_type: Option<ValueType>,
    /// Read only these columns of a table (Parquet, Arrow IPC, CSV, a record .npy, a .dbdf
    /// or SystemDS frame), in this order: labels or positions from 0, e.g. price,qty or 0,3.
    /// Parquet and Arrow inputs read only these columns, which may then sit beside columns
    /// DAPHNE cannot hold (strings, dates).
    #[arg(long, value_parser = parse_name::<Projection>)]
    columns: Option<Projection>,
    /// Do not sync the output to disk before renaming it into place: it is still atomic (a
    /// kill at any moment leaves the old file or the new one), but a power loss may lose it.
    /// Directories (SystemDS, Zarr) are always synced.
    #[arg(long = "no-sync")]
    no_sync: bool,
    /// Each format's own options, as its module declares them.
    #[command(flatten)]
    formats: FormatFlags,
}

/// `convert`'s help, listing the formats from the library's own list (the help cannot fall
/// behind the formats the library knows).
pub fn with_formats(command: clap::Command) -> clap::Command {
    let names: Vec<String> = Format::ALL.iter().map(ToString::to_string).collect();
    let about = format!("Convert between any two formats: {}", names.join(", "));
    let mut long = format!("{about}.\n\nFormats (--from, --to; by default from the extensions):");
    for format in Format::ALL {
        let names: Vec<&str> = format.names().collect();
        long += &format!("\n  {:<22} {}", names.join(", "), format.description());
    }
    command.about(about).long_about(long)
}

/// A matrix data type: `dense` or `csr` (frames cannot be asked for).
fn parse_matrix_type(text: &str) -> Result<DataType, String> {
    match parse_name::<DataType>(text)? {
        DataType::Frame => {
            Err("--data-type is dense or csr: a matrix cannot become a frame".into())
        }
        matrix => Ok(matrix),
    }
}

impl Args {
    /// The input file.
    pub fn input(&self) -> &Path {
        &self.input
    }

    /// The library's options for these arguments, each format's own set by its flags.
    pub fn options(&self) -> Result<ConvertOptions, Failure> {
        let mut options = ConvertOptions {
            from: self.from,
            to: self.to,
            data_type: self.data_type,
            value_type: self.value_type,
            columns: self.columns.clone(),
            sync: !self.no_sync,
            progress: progress_bar("converting", &self.input).map(|bar| Arc::new(bar) as _),
            ..Default::default()
        };
        for (flag, value) in &self.formats.0 {
            options
                .set_option(flag, value)
                .map_err(|e| Failure::plain(format!("--{flag}: {e}")))?;
        }
        Ok(options)
    }
}

/// Each format's own flags, from the registry ([`dbdf::convert::options`]): the flags given,
/// with their values.
#[derive(Clone, Default)]
struct FormatFlags(Vec<(&'static str, OptionValue)>);

impl clap::FromArgMatches for FormatFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for spec in convert::options() {
            let value = match spec.takes {
                Takes::Flag => matches
                    .get_flag(spec.flag)
                    .then_some(OptionValue::Flag(true)),
                Takes::List => matches
                    .get_many::<String>(spec.flag)
                    .map(|items| OptionValue::List(items.cloned().collect())),
                _ => matches
                    .get_one::<String>(spec.flag)
                    .map(|text| OptionValue::Text(text.clone())),
            };
            given.extend(value.map(|value| (spec.flag, value)));
        }
        Ok(FormatFlags(given))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for FormatFlags {
    fn augment_args(mut command: clap::Command) -> clap::Command {
        for spec in convert::options() {
            // As clap's derive shows doc comments: without the closing period.
            let help = spec.help.trim_end_matches('.');
            let arg = clap::Arg::new(spec.flag).long(spec.flag).help(help);
            // A value is checked as it is parsed, so that clap reports it as it reports any.
            let check = move |text: &str| -> Result<String, String> {
                let mut options = ConvertOptions::default();
                let value = match spec.takes {
                    Takes::List => OptionValue::List(vec![text.to_owned()]),
                    _ => OptionValue::Text(text.to_owned()),
                };
                (spec.set)(&mut options, &value).map_err(|e| e.to_string())?;
                Ok(text.to_owned())
            };
            // Built once per run, for clap's `&'static str`.
            let value_name: &'static str =
                Box::leak(spec.flag.to_uppercase().replace('-', "_").into_boxed_str());
            command = command.arg(match spec.takes {
                Takes::Flag => arg.action(clap::ArgAction::SetTrue),
                Takes::List => arg
                    .value_name(value_name)
                    .value_delimiter(',')
                    .value_parser(check),
                _ => arg.value_name(value_name).value_parser(check),
            });
        }
        command
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

fn failure(error: ConvertError) -> Failure {
    Failure::from(error)
}

fn finish(report: Report) -> ExitCode {
    for warning in report.warnings {
        crate::say(format_args!("{warning}"));
    }
    ExitCode::SUCCESS
}

/// Runs `convert`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    if crate::remote::is_url(&args.input) || crate::remote::is_url(&args.output) {
        let storage = crate::remote::storage();
        let report =
            dbdf::remote::convert_urls(&args.input, &args.output, &args.options()?, storage)
                .map_err(failure)?;
        return Ok(finish(report));
    }
    let report = convert::convert(&args.input, &args.output, &args.options()?).map_err(failure)?;
    Ok(finish(report))
}

/// Writes objects already read (a window, for `slice`) from a `.dbdf` file as `convert` would.
pub fn write_objects(args: &Args, objects: Vec<Object>) -> Result<ExitCode, Failure> {
    let options = args.options()?;
    let mut source =
        Held::new(objects, 0, InputMetadata::default()).map_err(|e| Failure::at(&args.input, e))?;
    let report =
        convert::convert_from(&mut source, &args.input, &args.output, &options).map_err(failure)?;
    Ok(finish(report))
}
