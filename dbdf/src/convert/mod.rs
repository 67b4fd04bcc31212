//! Conversions between `.dbdf` files and the neighbouring formats: MatrixMarket, CSV, NumPy
//! `.npy` and `.npz`, scipy's sparse `.npz`, Futhark binary data, Binsparse, SystemDS binary
//! blocks, Parquet and Arrow IPC. What `dbdf convert` and the Python package's
//! `dbdf.convert` do, with one set of rules.
//!
//! ```
//! use dbdf::convert::{convert, ConvertOptions};
//!
//! let dir = std::env::temp_dir();
//! let (mtx, dbdf) = (dir.join("doc_convert.mtx"), dir.join("doc_convert.dbdf"));
//! std::fs::write(&mtx, "%%MatrixMarket matrix coordinate real general\n2 3 1\n2 3 -1.5\n")?;
//! convert(&mtx, &dbdf, &ConvertOptions::default())?;
//! let m: sprs::CsMat<f64> = serde_daphne::from_file::<_, serde_daphne::Csr<f64>>(&dbdf)?.0;
//! assert_eq!(m.get(1, 2), Some(&-1.5));
//! # std::fs::remove_file(&mtx).ok(); std::fs::remove_file(&dbdf).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every conversion is a source, the pipe and a sink ([`crate::pipe`]); most stream in memory
//! bounded by a tile or a band of rows (see [`source`] and [`convert_from`]), the others hold
//! the object.

mod options;
mod sinks;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::binsparse;
use crate::pipe::{DbdfSource, Projected, Source};
use crate::{csv, futhark, mtx, npy, systemds};
use serde_daphne::__private_0_1_0::first_name;
use serde_daphne::__private_0_1_0::parse_name;
use serde_daphne::Error;

pub use options::ConvertOptions;
pub use sinks::{convert_from, write_output};

/// The formats conversions read and write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// DAPHNE binary data format (`.dbdf`).
    Dbdf,
    /// MatrixMarket (`.mtx`): coordinate and array on input; general on output, a dense
    /// matrix as an array file, a CSR one as a coordinate file (or as asked).
    Mtx,
    /// Comma-separated values (`.csv`), with DAPHNE's `.meta` sidecar.
    Csv,
    /// NumPy `.npy`.
    Npy,
    /// Futhark binary data (`.fut`).
    Futhark,
    /// Binsparse: `.bsp.npz` (or `.npz`) archives; `.bsp.h5` (or `.h5`, `.hdf5`) HDF5 files;
    /// `.bsp.zarr` (or `.zarr`) Zarr groups (on input, any directory holding a Zarr group).
    Binsparse,
    /// SystemDS binary blocks: a file or directory of part files, with a `.mtd` beside it.
    Systemds,
    /// scipy's sparse `.npz` (`scipy.sparse.save_npz`): any of its formats in, CSR out.
    Scipy,
    /// numpy's `.npz` archive of several arrays (`numpy.savez`): an object per array.
    Npz,
    /// Apache Parquet (`.parquet`): a table, as a frame or a matrix (feature `parquet`).
    Parquet,
    /// Arrow IPC files, also called Feather v2 (`.arrow`, `.feather`): a table, as Parquet
    /// (feature `parquet`).
    Arrow,
    /// DAPHNE's segmented layout (its distributed runtime's): a folder `NAME.hdfs` of row
    /// segments, each a runtime-dialect `.dbdf` with its `.meta`, and `NAME.hdfs.meta`.
    Segments,
}

/// The names of the formats, as the CLI's `--from`/`--to` and Python's `dbdf.convert` take
/// them; the first of each is its `Display`.
const FORMAT_NAMES: &[(&str, Format)] = &[
    ("dbdf", Format::Dbdf),
    ("mtx", Format::Mtx),
    ("csv", Format::Csv),
    ("npy", Format::Npy),
    ("futhark", Format::Futhark),
    ("binsparse", Format::Binsparse),
    ("systemds", Format::Systemds),
    ("scipy", Format::Scipy),
    ("npz", Format::Npz),
    ("parquet", Format::Parquet),
    ("arrow", Format::Arrow),
    ("matrixmarket", Format::Mtx),
    ("feather", Format::Arrow),
    ("ipc", Format::Arrow),
    ("fut", Format::Futhark),
    ("segments", Format::Segments),
    ("hdfs", Format::Segments),
];

/// `dbdf`, `mtx` (also `matrixmarket`), `csv`, `npy`, `futhark` (also `fut`), `binsparse`
/// (`.npz`, `.h5` and `.zarr` alike), `systemds`, `scipy`, `npz`, `parquet` or `arrow` (also
/// `feather`, `ipc`) or `segments` (also `hdfs`), in any case.
impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        parse_name(text, "a format", FORMAT_NAMES)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(first_name(FORMAT_NAMES, self))
    }
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: &'static [Format] = &[
        Format::Dbdf,
        Format::Mtx,
        Format::Csv,
        Format::Npy,
        Format::Npz,
        Format::Scipy,
        Format::Futhark,
        Format::Binsparse,
        Format::Systemds,
        Format::Parquet,
        Format::Arrow,
        Format::Segments,
    ];

    /// The extensions (lowercase, without the dot) that name this format; `.npz` names
    /// Binsparse unless an input's members say scipy or numpy.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::Dbdf => &["dbdf"],
            Format::Mtx => &["mtx"],
            Format::Csv => &["csv"],
            Format::Npy => &["npy"],
            Format::Futhark => &["fut"],
            Format::Binsparse => &["npz", "h5", "hdf5", "zarr"],
            Format::Parquet => &["parquet", "pq"],
            Format::Arrow => &["arrow", "feather", "ipc"],
            Format::Segments => &["hdfs"],
            Format::Systemds | Format::Scipy | Format::Npz => &[],
        }
    }

    /// What the format is and how its files are told, in a few words (the CLI's help).
    pub fn description(self) -> &'static str {
        match self {
            Format::Dbdf => "DAPHNE binary data (.dbdf)",
            Format::Mtx => "MatrixMarket (.mtx)",
            Format::Csv => "CSV, with DAPHNE's .meta sidecar (.csv)",
            Format::Npy => "NumPy arrays and record arrays (.npy)",
            Format::Npz => "numpy.savez archives, an object per array (.npz, told by its members)",
            Format::Scipy => "scipy.sparse.save_npz archives (.npz, told by its members)",
            Format::Futhark => "Futhark binary data (.fut)",
            Format::Binsparse => "Binsparse in .npz, HDF5 (.h5, .hdf5) or Zarr (.zarr)",
            Format::Systemds => {
                "SystemDS binary blocks, a file or Spark's directory of parts (a .mtd beside it)"
            }
            Format::Parquet => "Apache Parquet (.parquet, .pq)",
            Format::Arrow => "Arrow IPC files, also called Feather v2 (.arrow, .feather, .ipc)",
            Format::Segments => {
                "DAPHNE's segmented layout: a folder NAME.hdfs of row segments (.hdfs)"
            }
        }
    }

    /// Every name this format is known by (`--from`/`--to`), its `Display` first.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        FORMAT_NAMES
            .iter()
            .filter(move |(_, f)| *f == self)
            .map(|(name, _)| *name)
    }

    /// The format a path's extension names; for an input, a SystemDS file is one without a
    /// known extension but with a `.mtd` beside it, and a `.npz` archive is Binsparse, scipy
    /// or numpy's by its members. A `.npz` output is Binsparse.
    pub fn of_path(path: &Path, input: bool) -> Option<Format> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_lowercase);
        let named = extension.as_deref().and_then(|e| {
            Format::ALL
                .iter()
                .copied()
                .find(|f| f.extensions().contains(&e))
        });
        Some(match named {
            Some(Format::Binsparse) if input && extension.as_deref() == Some("npz") => {
                match crate::npz::Kind::of(path) {
                    Some(crate::npz::Kind::Scipy) => Format::Scipy,
                    Some(crate::npz::Kind::Arrays) => Format::Npz,
                    _ => Format::Binsparse,
                }
            }
            Some(format) => format,
            None if input && binsparse::is_zarr(path) => Format::Binsparse,
            None if input && systemds::metadata_path(path).is_file() => Format::Systemds,
            None => return None,
        })
    }
}

/// A failed conversion: which file it concerns and the error.
#[derive(Debug)]
pub struct ConvertError {
    path: Option<PathBuf>,
    error: Error,
}

impl ConvertError {
    pub(crate) fn at(path: &Path, error: impl Into<Error>) -> Self {
        ConvertError {
            path: Some(path.to_owned()),
            error: error.into(),
        }
    }

    pub(crate) fn message(path: &Path, message: impl Into<String>) -> Self {
        ConvertError::at(path, Error::invalid(message))
    }

    /// The file the error concerns, if one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The error.
    pub fn error(&self) -> &Error {
        &self.error
    }
}

/// The error, without the file.
impl From<ConvertError> for Error {
    fn from(error: ConvertError) -> Error {
        error.error
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {}", path.display(), self.error),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for ConvertError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What a conversion has to say beyond success, such as what DAPHNE will make of the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// One line each, naming the file.
    pub warnings: Vec<String>,
}

/// The format of `path`: `given`, or its extension's.
///
/// # Errors
/// A message asking for the format when the extension names none.
pub(crate) fn format_of(
    path: &Path,
    given: Option<Format>,
    input: bool,
) -> Result<Format, ConvertError> {
    given
        .or_else(|| Format::of_path(path, input))
        .ok_or_else(|| {
            let (role, flag) = if input {
                ("input", "from")
            } else {
                ("output", "to")
            };
            ConvertError::message(
                path,
                format!("cannot tell the {role} format from the extension: name it (--{flag})"),
            )
        })
}

/// Converts the file at `input` to `output` (`-` is standard output, for formats that are
/// one file) through the pipe: [`source`] of the input's format, then the output format's
/// sink (see [`crate::pipe`]). Memory is bounded by a band of rows where source and sink
/// stream (see each format's source and sink); formats read or written whole hold the
/// object.
///
/// # Errors
/// [`ConvertError`] naming the file and carrying the crate's error: malformed input, values
/// the target cannot hold exactly, I/O errors. No output file is left behind by a failure.
pub fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
) -> Result<Report, ConvertError> {
    let from = format_of(input, options.from, true)?;
    // Both formats are known before anything is read.
    let to = format_of(output, options.to, false)?;
    // Between archives the arrays keep their names, unless others are asked.
    if (from, to) == (Format::Npz, Format::Npz) && options.npz.names.is_empty() {
        let mut source = crate::npz::source(input).map_err(|e| ConvertError::at(input, e))?;
        let mut options = options.clone();
        options.npz.names = source.names().to_vec();
        return convert_from(&mut source, input, output, &options);
    }
    let mut source = source(input, from, options)?;
    convert_from(&mut *source, input, output, options)
}

/// The file at `path` in `format` as a source of the pipe: `.dbdf`, `.npy`, CSV, Futhark and
/// SystemDS files stream, MatrixMarket array files through a binary scratch file; a
/// MatrixMarket coordinate file builds the matrix's CSR arrays (its entries come in any
/// order), and Binsparse files are read whole.
///
/// # Errors
/// As [`convert`], for what opening the input finds.
pub fn source(
    path: &Path,
    format: Format,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>, ConvertError> {
    let fail = |e: Error| ConvertError::at(path, e);
    let source = whole_source(path, format, options)?;
    match &options.columns {
        // Tables read only the picked columns themselves.
        Some(columns) if !matches!(format, Format::Parquet | Format::Arrow) => {
            Ok(Box::new(Projected::new(source, columns).map_err(fail)?))
        }
        _ => Ok(source),
    }
}

/// [`source`] without the projection of [`ConvertOptions::columns`], but for Parquet and
/// Arrow inputs, which read only the picked columns.
fn whole_source(
    path: &Path,
    format: Format,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>, ConvertError> {
    let fail = |e: Error| ConvertError::at(path, e);
    Ok(match format {
        Format::Dbdf => Box::new(DbdfSource::open(path).map_err(fail)?),
        Format::Npy => Box::new(npy::source(path).map_err(fail)?),
        Format::Csv => Box::new(csv::source(path).map_err(fail)?),
        Format::Futhark => Box::new(futhark::source(path).map_err(fail)?),
        Format::Systemds => {
            Box::new(systemds::source(path, &options.systemds_input).map_err(fail)?)
        }
        Format::Mtx => {
            let read = mtx::ReadOptions {
                progress: options.progress.clone(),
            };
            Box::new(mtx::source(path, &read).map_err(fail)?)
        }
        Format::Binsparse => Box::new(binsparse::source(path).map_err(fail)?),
        Format::Scipy => Box::new(crate::scipy::source(path).map_err(fail)?),
        Format::Npz => Box::new(crate::npz::source(path).map_err(fail)?),
        Format::Segments => Box::new(crate::segments::source(path).map_err(fail)?),
        #[cfg(feature = "parquet")]
        Format::Parquet | Format::Arrow => {
            let read = table_input(options);
            match format {
                Format::Parquet => {
                    Box::new(crate::arrow::parquet::source(path, &read).map_err(fail)?)
                }
                _ => Box::new(crate::arrow::feather::source(path, &read).map_err(fail)?),
            }
        }
        #[cfg(not(feature = "parquet"))]
        Format::Parquet | Format::Arrow => return Err(without_tables(path)),
    })
}

/// How a Parquet or Arrow input is read, from the options of a conversion.
#[cfg(feature = "parquet")]
pub(crate) fn table_input(options: &ConvertOptions) -> crate::arrow::ReadOptions {
    crate::arrow::ReadOptions {
        data_type: options.data_type,
        value_type: options.value_type,
        columns: options.columns.clone(),
        ..options.table_input.clone()
    }
}

/// The error for Parquet and Arrow files in a build without them.
#[cfg(not(feature = "parquet"))]
pub(crate) fn without_tables(path: &Path) -> ConvertError {
    ConvertError::message(
        path,
        "this build reads and writes Parquet and Arrow files only with the feature `parquet`",
    )
}
