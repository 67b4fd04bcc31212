//! The format registry: the table of formats, each a module's [`Driver`], and what is
//! derived from it (names, extensions, sniffing, the options by name). Adding a format is a
//! module with its driver and one line in [`BUILT_IN`].

use std::path::Path;
use std::sync::RwLock;

use crate::driver::{ConvertOptions, Driver, Format, OptionSpec, OptionValue};
use serde_daphne::Error;

/// The formats this crate reads and writes, in the order help texts list them.
const BUILT_IN: &[Format] = &[
    Format(&crate::native::Dbdf),
    Format(&crate::mtx::Mtx),
    Format(&crate::csv::Csv),
    Format(&crate::npy::Npy),
    Format(&crate::npz::Npz),
    Format(&crate::scipy::Scipy),
    Format(&crate::futhark::Futhark),
    Format(&crate::binsparse::BinsparseFiles),
    Format(&crate::systemds::Systemds),
    Format(&crate::tables::Parquet),
    Format(&crate::tables::Arrow),
    Format(&crate::segments::Segments),
];

/// Formats registered by other crates ([`Format::register`]), after the built-in ones.
static REGISTERED: RwLock<Vec<Format>> = RwLock::new(Vec::new());

impl Format {
    /// DAPHNE binary data format (`.dbdf`): the home format, which inputs of no format
    /// named are read as. The others are named by `"npy".parse()`, ....
    #[allow(non_upper_case_globals)]
    pub const Dbdf: Format = BUILT_IN[0];

    /// The built-in formats, in the order help texts list them.
    pub const ALL: &'static [Format] = BUILT_IN;

    /// Every format: the built-in ones, then those registered.
    pub fn all() -> Vec<Format> {
        let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
        BUILT_IN.iter().chain(registered.iter()).copied().collect()
    }

    /// Adds a format of another crate to the registry: conversions, `--from`/`--to` and the
    /// sniffing of inputs take it from then on. A format registered again is kept once.
    ///
    /// # Errors
    /// A driver without a name, or with a name that another format already has.
    pub fn register(driver: &'static dyn Driver) -> Result<Format, Error> {
        if driver.names().is_empty() {
            return Err(Error::invalid(format!(
                "a format needs a name to be registered ({})",
                driver.description()
            )));
        }
        let format = Format(driver);
        let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        if registered.contains(&format) {
            return Ok(format);
        }
        let taken = BUILT_IN.iter().chain(registered.iter()).find(|f| {
            f.names()
                .any(|n| driver.names().iter().any(|m| m.eq_ignore_ascii_case(n)))
        });
        if let Some(taken) = taken {
            return Err(Error::invalid(format!(
                "a format named as {} is already registered",
                taken
            )));
        }
        registered.push(format);
        Ok(format)
    }

    /// The format a path's extension names; for an input, a format that tells its files by
    /// content or neighbours ([`Driver::identify`]) first: a SystemDS file is one without a
    /// known extension but with a `.mtd` beside it, and a `.npz` archive is Binsparse,
    /// scipy's or numpy's by its members. A `.npz` output is Binsparse.
    pub fn of_path(path: &Path, input: bool) -> Option<Format> {
        let all = Format::all();
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_lowercase);
        let named = extension
            .as_deref()
            .and_then(|e| all.iter().copied().find(|f| f.extensions().contains(&e)));
        if input {
            if let Some(told) = all.iter().find(|f| f.0.identify(path, named)) {
                return Some(*told);
            }
        }
        named
    }
}

/// The names of every format, as `--from`/`--to` and Python's `dbdf.convert` take them.
impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let all = Format::all();
        let table: Vec<(&str, usize)> = all
            .iter()
            .enumerate()
            .flat_map(|(i, f)| f.names().map(move |n| (n, i)))
            .collect();
        serde_daphne::lowlevel::parse_name(text, "a format", &table).map(|i| all[i])
    }
}

/// Every format's options, each name once (formats may share one, such as `compressed`), in
/// the table's order: the CLI's flags and Python's keywords.
pub fn options() -> Vec<&'static OptionSpec> {
    let mut specs: Vec<&'static OptionSpec> = Vec::new();
    for format in Format::all() {
        for spec in format.0.options() {
            if !specs.iter().any(|s| s.flag == spec.flag) {
                specs.push(spec);
            }
        }
    }
    specs
}

/// The option a flag (`mtx-layout`) or keyword (`mtx_layout`) names.
fn option(name: &str) -> Option<&'static OptionSpec> {
    let name = name.replace('-', "_");
    options()
        .into_iter()
        .find(|s| s.keyword == name || s.flag.replace('-', "_") == name)
}

impl ConvertOptions {
    /// Sets the format option a flag (`mtx-layout`) or keyword (`mtx_layout`) names, as the
    /// CLI and Python do: for every format that has it.
    ///
    /// # Errors
    /// An option no format has; a value it does not take.
    pub fn set_option(&mut self, name: &str, value: &OptionValue) -> Result<(), Error> {
        let wanted = option(name)
            .ok_or_else(|| Error::invalid(format!("no format has an option {name:?}")))?;
        for format in Format::all() {
            for spec in format.0.options() {
                if spec.flag == wanted.flag {
                    (spec.set)(self, value)?;
                }
            }
        }
        Ok(())
    }
}
