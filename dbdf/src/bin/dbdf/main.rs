//! `dbdf`: inspect, validate, convert and picture DAPHNE binary data files.
//!
//! Every error is one line naming the file, what is wrong and where; the exit code is 1 (2 for
//! usage errors); no output file is left behind by a failed command. Messages go through
//! [`say`], never `eprintln!` (which panics when standard error fails; clippy refuses it here).

#![deny(clippy::print_stderr, clippy::print_stdout)]

mod convert;
mod files;
mod header_text;
mod info;
mod inputs;
mod memory;
mod remote;
mod slice;
mod spy;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Inspect, validate, convert and picture DAPHNE binary data files (.dbdf).
#[derive(Parser)]
#[command(name = "dbdf", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// No progress bars (they show only on a terminal, for inputs of 32 MiB or more).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Print the requests made to object storage and the bytes fetched and sent (on
    /// standard error, when the command ends).
    #[arg(long, global = true)]
    stats: bool,
    /// A setting of object storage, KEY=VALUE, by object_store's names (aws_endpoint_url,
    /// aws_allow_http, aws_access_key_id, azure_storage_account_name, timeout, ...; also
    /// retry_timeout in seconds and max_retries), over the environment's (AWS_ENDPOINT_URL,
    /// ...). Repeatable.
    #[arg(long = "storage-option", global = true, value_name = "KEY=VALUE")]
    storage_options: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Every object in a file: data type, shape, value types, labels, dialect and blocks,
    /// from their headers alone (any file size, milliseconds; a remote file with its block
    /// index in two requests). A file of another format: each object as a conversion reads
    /// it (data type, shape, value types, labels).
    Info {
        /// The file, in any format `convert` reads: a path or a URL (s3://, az://, gs://,
        /// http(s)://, file://).
        file: PathBuf,
        /// The file's format (default: from the extension; .dbdf where none names one).
        #[arg(long, value_parser = parse_name::<dbdf::convert::Format>)]
        from: Option<dbdf::convert::Format>,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// Also count non-zeros (reads every block once).
        #[arg(long)]
        nnz: bool,
    },
    /// Strictly check a file block by block; print `ok`, or the first problem and its byte
    /// offset (exit 1). A file of another format is read cell by cell, as `convert` reads it.
    Validate {
        /// The file, in any format `convert` reads: a path or a URL.
        file: PathBuf,
        /// The file's format (default: from the extension; .dbdf where none names one).
        #[arg(long, value_parser = parse_name::<dbdf::convert::Format>)]
        from: Option<dbdf::convert::Format>,
    },
    /// Write the block index of a .dbdf file beside it (FILE.index): the bytes of every
    /// header, so that the file opens with one read of the index instead of a walk over its
    /// headers (a request each, for a remote file). The .dbdf file is not changed.
    Index {
        /// The .dbdf file: a path or a URL.
        file: PathBuf,
    },
    /// Convert between any two formats (the list is `convert::with_formats`'s).
    Convert(convert::Args),
    /// A window (rows A:B, columns C:D) of one object, to any format `convert` writes; only
    /// the blocks and rows the window needs are read.
    Slice(slice::SliceArgs),
    /// Picture a matrix's sparsity pattern in the terminal, or as a PNG with -o.
    Spy {
        /// The file (its first object), in any format `convert` reads.
        file: PathBuf,
        /// The file's format (default: from the extension; .dbdf where none names one).
        #[arg(long, value_parser = parse_name::<dbdf::convert::Format>)]
        from: Option<dbdf::convert::Format>,
        /// Width in characters (terminal) or pixels (PNG).
        #[arg(long)]
        width: Option<usize>,
        /// Write a PNG image here instead.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
}

/// What failed: a file (or none) and a one-line message.
pub struct Failure {
    file: Option<String>,
    message: String,
}

impl Failure {
    /// A failure about `file`.
    pub fn at(file: impl AsRef<std::path::Path>, message: impl ToString) -> Self {
        Failure {
            file: Some(file.as_ref().display().to_string()),
            message: message.to_string(),
        }
    }

    /// The message, without the file.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A failure about no file in particular.
    pub fn plain(message: impl ToString) -> Self {
        Failure {
            file: None,
            message: message.to_string(),
        }
    }
}

impl From<dbdf::convert::ConvertError> for Failure {
    fn from(error: dbdf::convert::ConvertError) -> Self {
        match error.path() {
            Some(path) => Failure::at(path, error.error()),
            None => Failure::plain(error.error()),
        }
    }
}

/// Prints a line to standard error, prefixed `dbdf: `. A standard error that cannot be written
/// (closed, full, failing) loses the line, not the command: the exit code still says how it
/// went.
pub fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    // No secret of a URL or a storage option reaches a message.
    let line = line.to_string();
    let _ = writeln!(
        std::io::stderr().lock(),
        "dbdf: {}",
        dbdf::remote::redact(&line)
    );
}

/// Prints `text` to standard output; a closed pipe (as with `| head`) ends quietly.
pub fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::plain(format!("standard output: {e}")))
        }
        _ => Ok(()),
    }
}

/// A name the library parses (a format, block policy, dialect, value type), for clap; the
/// library's message says what is known.
pub fn parse_name<T: std::str::FromStr<Err = serde_daphne::Error>>(
    text: &str,
) -> Result<T, String> {
    text.parse().map_err(|e: serde_daphne::Error| e.to_string())
}

#[global_allocator]
static ALLOCATOR: memory::Allocator = memory::Allocator;

fn main() -> ExitCode {
    memory::release_large_buffers();
    let command = Cli::command().mut_subcommand("convert", convert::with_formats);
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    files::set_quiet(cli.quiet);
    if let Err(failure) = remote::set_storage_options(&cli.storage_options) {
        say(format_args!("{}", failure.message));
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Info {
            file,
            from,
            json,
            nnz,
        } => info::run(&file, from, json, nnz),
        Command::Validate { file, from } => info::validate(&file, from),
        Command::Index { file } => info::index(&file),
        Command::Convert(args) => convert::run(&args),
        Command::Slice(args) => slice::run(&args),
        Command::Spy {
            file,
            from,
            width,
            output,
        } => spy::run(&file, from, width, output.as_deref()),
    };
    if cli.stats {
        say(format_args!("{}", remote::summary()));
    }
    match result {
        Ok(code) => code,
        Err(failure) => {
            match failure.file {
                Some(file) => say(format_args!("{file}: {}", failure.message)),
                None => say(format_args!("{}", failure.message)),
            }
            ExitCode::FAILURE
        }
    }
}
