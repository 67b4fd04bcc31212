//! What a format declares about itself, once ([`Driver`]): its names and extensions, a
//! sniff, its source and its sink, its options. The lower half of the format registry: the
//! format modules implement [`Driver`] here, and the table of formats ([`Format::all`]),
//! with everything derived from it, is [`crate::convert`]'s.
//!
//! A format's options are one typed value of its own module's (`csv::WriteOptions`, ...),
//! kept in [`ConvertOptions`] by type, and each is settable by name from the command line
//! or Python through the format's [`OptionSpec`]s.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::Path;

use serde_daphne::lowlevel::Progress;
use serde_daphne::{DataType, Error, Header, ValueType};

use crate::pipe::{InputMetadata, MadeSidecars, Projection, Sink, Source};
pub use crate::storage::{FileOut, Input, OutputFiles};

/// One format: its names, how its files are told, and how it is read and written. A unit
/// struct per format, registered once in the table ([`Format::register`] for a format
/// outside this crate).
///
/// Every method but [`Driver::names`] and [`Driver::description`] has a default: a format
/// that is read only, or written only, leaves the other side's methods out.
pub trait Driver: Send + Sync + 'static {
    /// The names `--from`/`--to` and Python's `from_format`/`to_format` take, in any case;
    /// the first is the format's `Display`.
    fn names(&self) -> &'static [&'static str];

    /// What the format is and how its files are told, in a few words (the CLI's help).
    fn description(&self) -> &'static str;

    /// The extensions (lowercase, without the dot) that name this format.
    fn extensions(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the local input at `path` is in this format by its content or its
    /// neighbours, asked of every format before the extension decides; `named` is the
    /// format the extension names, if any.
    fn identify(&self, path: &Path, named: Option<Format>) -> bool {
        let _ = (path, named);
        false
    }

    /// [`Driver::identify`] for an input read in place (an object behind a URL), `name` its
    /// name (the URL's last part): by its content only where the extension cannot tell
    /// (a `.npz` archive's members), which costs a read or two.
    fn identify_at(&self, input: &Input, name: &Path) -> bool {
        let _ = (input, name);
        false
    }

    /// The options this format's own flags and keywords set.
    fn options(&self) -> &'static [OptionSpec] {
        &[]
    }

    /// The file (or folder) at `path` as a source of the pipe.
    ///
    /// # Errors
    /// Malformed input, I/O errors; by default, that the format is not read.
    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let _ = (path, options);
        Err(Error::invalid(format!(
            "{} files are not read",
            first_name(self.names())
        )))
    }

    /// An input read in place, by position (a remote object's ranges), as a source, for
    /// formats [`Stored::Ranges`].
    ///
    /// # Errors
    /// As [`Driver::open`]; by default, that the format is not read by ranges.
    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let _ = (input, options);
        Err(Error::invalid(format!(
            "{} files are not read by ranges",
            first_name(self.names())
        )))
    }

    /// Whether the source reads only the columns of [`ConvertOptions::columns`] itself (else
    /// the pipe picks them from whole rows).
    fn picks_columns(&self) -> bool {
        false
    }

    /// How an output at `path` is written (`-` for standard output).
    fn written(&self, path: &Path) -> Written {
        let _ = path;
        Written::Stream
    }

    /// The sink writing this format as one stream into `out` ([`Written::Stream`]).
    ///
    /// # Errors
    /// Options the format cannot honour; by default, that the format is not written.
    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        let _ = (out, options, metadata);
        Err(not_written(self.names()))
    }

    /// The sink writing this format at `path` itself ([`Written::File`], [`Written::Set`]),
    /// atomically.
    ///
    /// # Errors
    /// I/O errors creating it; by default, that the format is not written.
    fn sink_at<'p>(
        &self,
        path: &'p Path,
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'p>, Error> {
        let _ = (path, options, metadata);
        Err(not_written(self.names()))
    }

    /// The sink writing an output named `output` (at a path: [`Written::File`],
    /// [`Written::Set`]) file by file into `files` (an object, the objects under its prefix,
    /// its sidecars), which its caller puts in place; `None` where the format writes its
    /// files only at a path (the output is made locally, then sent).
    ///
    /// # Errors
    /// Options the format cannot honour.
    fn sink_into<'f>(
        &self,
        files: &'f dyn OutputFiles,
        output: &Path,
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Option<Box<dyn Sink + 'f>>, Error> {
        let _ = (files, output, options, metadata);
        Ok(None)
    }

    /// The sidecars of a stream written to `output` (holding `headers`, when known), put in
    /// place with it or not at all: each as `(suffix, bytes)`, `None` for one an earlier
    /// output may have left that goes; and a warning about them, if any.
    ///
    /// # Errors
    /// What the sidecar cannot record.
    fn sidecars(
        &self,
        output: &Path,
        headers: Option<&[Header]>,
    ) -> Result<(MadeSidecars, Option<String>), Error> {
        let _ = (output, headers);
        Ok((Vec::new(), None))
    }

    /// The data type the output's matrices take: `asked` (the conversion's), or one the
    /// format's own options decide.
    ///
    /// # Errors
    /// Options that ask for two different data types.
    fn data_type(
        &self,
        asked: Option<DataType>,
        options: &ConvertOptions,
    ) -> Result<Option<DataType>, Error> {
        let _ = options;
        Ok(asked)
    }

    /// How the format is kept in object storage.
    fn stored(&self) -> Stored {
        Stored::Object
    }
}

/// The error for a format that is not written.
fn not_written(names: &[&str]) -> Error {
    Error::invalid(format!("{} files are not written", first_name(names)))
}

/// A driver's first name (every registered format has one).
fn first_name<'n>(names: &[&'n str]) -> &'n str {
    names.first().copied().unwrap_or("this format's")
}

/// How a format's output is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Written {
    /// As one stream of bytes ([`Driver::sink`]), to a file or to standard output.
    Stream,
    /// At a path by the sink itself ([`Driver::sink_at`]): one file, which standard output
    /// gets through a temporary file.
    File,
    /// As [`Written::File`] at a path (atomically, synced as it grows), and as one stream
    /// ([`Driver::sink`], its sidecars from [`crate::pipe::Sink::finish_with_sidecars`])
    /// where there is no path: a streaming upload.
    FileOrStream,
    /// At a path by the sink itself: a folder, or a file with a sidecar of its own, which
    /// cannot go to standard output; the words say what it is (the error names them).
    Set(&'static str),
}

/// How a format is kept in object storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stored {
    /// An object, with the sidecars that exist beside it, read from a local file only (the
    /// format has no [`Driver::open_at`]: a remote one is refused, never downloaded).
    Object,
    /// An object read in place by ranges ([`Driver::open_at`]).
    Ranges,
    /// DAPHNE's segments: the objects under the prefix `NAME/`, and `NAME.meta`.
    Segments,
}

/// One of a format's options, as the CLI (`--flag`) and Python (`keyword=`) set it.
pub struct OptionSpec {
    /// The long flag, without the dashes.
    pub flag: &'static str,
    /// Python's keyword for it.
    pub keyword: &'static str,
    /// The help text.
    pub help: &'static str,
    /// What it takes.
    pub takes: Takes,
    /// Sets it in the options, from what was given.
    pub set: fn(&mut ConvertOptions, &OptionValue) -> Result<(), Error>,
}

impl fmt::Debug for OptionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OptionSpec")
            .field("flag", &self.flag)
            .field("keyword", &self.keyword)
            .finish_non_exhaustive()
    }
}

/// What an option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Takes {
    /// Nothing: present or not.
    Flag,
    /// One value.
    Value,
    /// Values separated by commas (a Python list).
    List,
}

/// What a sparse input's reader does with a cell the file gives more than once
/// (MatrixMarket coordinate files, scipy's COO archives).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Duplicates {
    /// Refused, naming the cell and where it is (the default: a file that gives a cell
    /// twice is more often wrong than meant).
    #[default]
    Refuse,
    /// Summed in file order, in the value type, as scipy's `tocsr()` sums them (an integer
    /// sum beyond the type is refused).
    Sum,
}

/// `--duplicates refuse|sum`, the option of every format that reads entries in any order.
pub(crate) const DUPLICATES: OptionSpec = OptionSpec {
    flag: "duplicates",
    keyword: "duplicates",
    help: "MatrixMarket coordinate and scipy COO input: a cell given more than once is \
           refused (refuse, the default) or summed in file order as scipy's tocsr() sums \
           (sum).",
    takes: Takes::Value,
    set: |o, v| {
        *o.formats.get_mut::<Duplicates>() = v.parse()?;
        Ok(())
    },
};

/// What a refusal of a cell given twice suggests.
pub(crate) const SUM_HINT: &str =
    "--duplicates sum (Python: duplicates=\"sum\") adds them up, as scipy's tocsr() does";

const DUPLICATES_NAMES: &[(&str, Duplicates)] =
    &[("refuse", Duplicates::Refuse), ("sum", Duplicates::Sum)];

/// `refuse` or `sum`.
impl std::str::FromStr for Duplicates {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        serde_daphne::lowlevel::parse_name(text, "a way with duplicates", DUPLICATES_NAMES)
    }
}

impl fmt::Display for Duplicates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(serde_daphne::lowlevel::first_name(DUPLICATES_NAMES, self))
    }
}

/// The value given for an option.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionValue {
    /// A flag, given or not.
    Flag(bool),
    /// One value as text (a number as its digits).
    Text(String),
    /// A list of values.
    List(Vec<String>),
}

impl OptionValue {
    /// The value as text: a list's items joined by commas.
    pub fn text(&self) -> String {
        match self {
            OptionValue::Flag(flag) => flag.to_string(),
            OptionValue::Text(text) => text.clone(),
            OptionValue::List(items) => items.join(","),
        }
    }

    /// The value as a flag: a flag's, or `true`/`false` as text.
    ///
    /// # Errors
    /// Any other value.
    pub fn flag(&self) -> Result<bool, Error> {
        match self {
            OptionValue::Flag(flag) => Ok(*flag),
            other => match other.text().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                text => Err(Error::invalid(format!(
                    "expected true or false, not {text:?}"
                ))),
            },
        }
    }

    /// The value's text parsed as `T` (a name, a number), with `T`'s own message when it
    /// does not parse.
    ///
    /// # Errors
    /// `T`'s error for the text.
    pub fn parse<T: std::str::FromStr>(&self) -> Result<T, Error>
    where
        T::Err: fmt::Display,
    {
        self.text()
            .trim()
            .parse()
            .map_err(|e: T::Err| Error::invalid(e.to_string()))
    }
}

/// A handle naming one format of the registry: copied freely, compared by name.
#[derive(Clone, Copy)]
pub struct Format(pub(crate) &'static dyn Driver);

impl Format {
    /// Its driver: how it is told, read and written.
    pub(crate) fn driver(self) -> &'static dyn Driver {
        self.0
    }

    /// The extensions (lowercase, without the dot) that name this format.
    pub fn extensions(self) -> &'static [&'static str] {
        self.0.extensions()
    }

    /// What the format is and how its files are told, in a few words (the CLI's help).
    pub fn description(self) -> &'static str {
        self.0.description()
    }

    /// How the format is kept in object storage.
    pub fn stored(self) -> Stored {
        self.0.stored()
    }

    /// Every name this format is known by (`--from`/`--to`), its `Display` first.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.0.names().iter().copied()
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.0.names()[0] == other.0.names()[0]
    }
}

impl Eq for Format {}

impl Hash for Format {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.names()[0].hash(state);
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.names()[0])
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Format({})", self.0.names()[0])
    }
}

/// What a conversion does besides moving values: the input and output formats (by default
/// from the extensions), value and data type changes, progress, and each format's own
/// options, kept by their type ([`FormatOptions`]). Plain data: set the fields that differ
/// from the defaults ([`ConvertOptions::default`]: formats from the extensions, values and
/// data types as they are, every format's default options, outputs synced to disk).
///
/// ```
/// use dbdf::convert::{ConvertOptions, FormatOptions};
/// use serde_daphne::{Dialect, Options};
///
/// // For DAPHNE: `.dbdf` in its runtime dialect (and CSV as DAPHNE reads it).
/// let daphne = Options { dialect: Some(Dialect::Runtime), ..Options::new() };
/// let options = ConvertOptions {
///     formats: FormatOptions::default().with(daphne),
///     ..Default::default()
/// };
/// assert_eq!(options.formats.get::<Options>().dialect, Some(Dialect::Runtime));
/// ```
#[derive(Clone)]
pub struct ConvertOptions {
    /// The input format, instead of the input's extension.
    pub from: Option<Format>,
    /// The output format, instead of the output's extension.
    pub to: Option<Format>,
    /// The DAPHNE data type of output matrices (default: CSR for coordinate `.mtx` input,
    /// the input's otherwise). For `.dbdf` in DAPHNE's runtime dialect, a CSR matrix
    /// DaphneDSL would type as dense is written dense unless this asks for CSR.
    pub data_type: Option<DataType>,
    /// Converts every value to `value_type`, exactly or not at all.
    pub value_type: Option<ValueType>,
    /// Reads only these columns of a table input (a frame), in this order: Parquet and Arrow
    /// IPC inputs read only their bytes; a column DAPHNE cannot hold is no obstacle when it is
    /// not picked. An input holding a matrix is an error.
    pub columns: Option<Projection>,
    /// Whether single-file outputs are synced to disk before they are renamed into place
    /// (default: yes; it overrides [`serde_daphne::Options::sync`]). Without the sync an
    /// output is still atomic for readers and survives the process being killed at any
    /// moment, but not always a power loss; directories (SystemDS, Zarr) are always synced.
    pub sync: bool,
    /// Hears how much of a large input has been read.
    pub progress: Option<Progress>,
    /// Whether an output without a tile size of its own takes the input's tiles
    /// ([`InputMetadata::tile`]: SystemDS's blocks, a tiled `.dbdf` file's blocks).
    /// Default: no, the output is one block per object.
    pub keep_tiles: bool,
    /// Each format's own options, by type (default: every format's defaults).
    pub formats: FormatOptions,
}

/// Each format's own options, one value of each type (its module's `WriteOptions`,
/// `ReadOptions`, or [`serde_daphne::Options`] for `.dbdf`), as a format's [`OptionSpec`]s
/// set them and its driver reads them; a type not set is its default.
#[derive(Clone, Default)]
pub struct FormatOptions(HashMap<TypeId, Box<dyn Kept>>);

impl fmt::Debug for FormatOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.values()).finish()
    }
}

/// A format's options as [`ConvertOptions`] keeps them.
trait Kept: Any + Send + Sync + fmt::Debug {
    fn clone_kept(&self) -> Box<dyn Kept>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync + fmt::Debug> Kept for T {
    fn clone_kept(&self) -> Box<dyn Kept> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Clone for Box<dyn Kept> {
    fn clone(&self) -> Self {
        (**self).clone_kept()
    }
}

impl FormatOptions {
    /// The options of type `T`: the ones set, or `T`'s default.
    pub fn get<T: Any + Clone + Default + Send + Sync + fmt::Debug>(&self) -> T {
        self.0
            .get(&TypeId::of::<T>())
            .and_then(|kept| (**kept).as_any().downcast_ref::<T>())
            .cloned()
            .unwrap_or_default()
    }

    /// The options of type `T`, to change in place (set to `T`'s default first).
    pub fn get_mut<T: Any + Clone + Default + Send + Sync + fmt::Debug>(&mut self) -> &mut T {
        let kept = self
            .0
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()));
        // The box's own contents, not the box (which is `Kept` too).
        (**kept)
            .as_any_mut()
            .downcast_mut::<T>()
            .expect("kept under its own type")
    }

    /// These options with the options of type `T` set to `value`.
    #[must_use]
    pub fn with<T: Any + Clone + Default + Send + Sync + fmt::Debug>(mut self, value: T) -> Self {
        self.0.insert(TypeId::of::<T>(), Box::new(value));
        self
    }
}

impl ConvertOptions {
    /// The options of `.dbdf` output: the asked ones, the input's tile size where none is
    /// asked and the input's are kept (the runtime dialect has none), the conversion's sync.
    pub(crate) fn dbdf_options(&self, input_tile: Option<(u32, u32)>) -> serde_daphne::Options {
        let mut options = serde_daphne::Options {
            sync: self.sync,
            ..self.formats.get()
        };
        let runtime = options.dialect == Some(serde_daphne::Dialect::Runtime);
        if options.tile.is_none() && !runtime && self.keep_tiles {
            options.tile = input_tile;
        }
        options
    }
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            from: None,
            to: None,
            data_type: None,
            value_type: None,
            columns: None,
            sync: true,
            progress: None,
            keep_tiles: false,
            formats: FormatOptions::default(),
        }
    }
}

impl fmt::Debug for ConvertOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConvertOptions")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("data_type", &self.data_type)
            .field("value_type", &self.value_type)
            .field("columns", &self.columns)
            .field("sync", &self.sync)
            .field("keep_tiles", &self.keep_tiles)
            .field("formats", &self.formats)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_options_are_kept_by_type_and_cloned_with_their_values() {
        let mut options = FormatOptions::default().with(crate::csv::WriteOptions { daphne: true });
        assert!(options.get::<crate::csv::WriteOptions>().daphne);
        assert!(!options.get::<crate::npz::WriteOptions>().compressed);
        options.get_mut::<crate::npz::WriteOptions>().compressed = true;
        let copy = options.clone();
        options.get_mut::<crate::npz::WriteOptions>().compressed = false;
        assert!(copy.get::<crate::npz::WriteOptions>().compressed);
        assert!(copy.get::<crate::csv::WriteOptions>().daphne);
        assert!(!options.get::<crate::npz::WriteOptions>().compressed);
    }
}
