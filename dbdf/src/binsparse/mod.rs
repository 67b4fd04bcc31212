//! Binsparse 0.1: sparse (and dense) matrices as named binary arrays plus a JSON descriptor,
//! in a NumPy `.npz` archive (always available), an HDF5 file (feature `hdf5`) or a Zarr
//! group (feature `zarr`, module [`zarr`]).
//!
//! Reading accepts every predefined format (CSR, CSC, COO/COOR, COOC, DCSR, DCSC,
//! DMAT/DMATR, DMATC, DVEC, CVEC, and custom formats equivalent to one of them), the value
//! modifiers `iso[...]` (expanded) and `bint8` (read as `u8`), and the symmetric and
//! skew-symmetric structures (the other triangle filled in). Vectors become `n` x 1 columns;
//! dense formats become DenseMatrix objects, sparse ones CSRMatrix objects. What DAPHNE cannot
//! hold is refused by name: complex values, a `fill_value` other than zero (DAPHNE's implicit
//! value is zero), Hermitian structures and tensors of rank 3 or more. Both `"0.1"` (the spec
//! and the C reference) and `"0.1.0"` (the Python reference) are read; `"0.1"` is written
//! unless [`WriteOptions::version`] asks for `"0.1.0"`, which the Python reference needs.
//! A read's format and the attributes outside the `binsparse` key travel with the matrix as
//! the source's [`InputMetadata`](crate::pipe::InputMetadata) (`layout`, `attributes`).
//!
//! ```
//! use dbdf::binsparse::{Format, WriteOptions};
//! use dbdf::convert::{self, ConvertOptions, FormatOptions};
//! use serde_daphne::{Object, Values};
//!
//! let m = Object::csr(2, 3, vec![0, 1, 2], vec![2, 0], Values::F64(vec![1.5, -2.0]))?;
//! let coor = WriteOptions { format: Some(Format::Coor), ..Default::default() };
//! let options = ConvertOptions { formats: FormatOptions::default().with(coor), ..Default::default() };
//! let npz = convert::to_vec(&[m.clone()], "binsparse".parse()?, &options)?;
//! let path = std::env::temp_dir().join("doc_binsparse.npz");
//! std::fs::write(&path, &npz)?;
//! let source = convert::source(&path, "binsparse".parse()?, &ConvertOptions::default())?;
//! assert_eq!(source.metadata().layout, Some("COOR"));
//! assert_eq!(convert::read(&path, "binsparse".parse()?, &ConvertOptions::default())?, [m]);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod convert;
mod driver;
mod files;
#[cfg(feature = "hdf5")]
mod hdf5;
mod npz;
mod open;
mod sink;
mod source;
#[cfg(feature = "zarr")]
pub mod zarr;

pub(crate) use driver::BinsparseFiles;
use serde_json::{Map, Value as Json};

use crate::input::{not_in_daphne, Foreign};
use serde_daphne::lowlevel::check_alloc;
use serde_daphne::Object;
use serde_daphne::ValueType;
use serde_daphne::Values;
use serde_daphne::{Error, Result};

pub(crate) use self::files::to_writer;
pub use self::files::ReadOptions;
pub(crate) use self::files::{from_slice_with, read_with};
pub(crate) use self::files::{is_hdf5, is_zarr, sink};
pub(crate) use self::sink::BinsparseSink;

const BINSPARSE: Foreign = Foreign("Binsparse");

/// A Binsparse matrix read into DAPHNE's object model.
#[derive(Clone, Debug, PartialEq)]
pub struct Binsparse {
    /// The matrix: a DenseMatrix for dense formats, a CSRMatrix for sparse ones.
    pub object: Object,
    /// The format it was stored in (a custom format as its predefined equivalent).
    pub format: Format,
    /// The descriptor's entries outside the `binsparse` key (user attributes).
    pub attributes: Map<String, Json>,
}

/// The predefined Binsparse formats (aliases kept apart so that they are written back as
/// read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Dense vector.
    Dvec,
    /// Dense matrix, row-major (the alias `DMAT`).
    Dmat,
    /// Dense matrix, row-major.
    Dmatr,
    /// Dense matrix, column-major.
    Dmatc,
    /// Compressed sparse vector.
    Cvec,
    /// Compressed sparse rows.
    Csr,
    /// Compressed sparse columns.
    Csc,
    /// Doubly compressed sparse rows.
    Dcsr,
    /// Doubly compressed sparse columns.
    Dcsc,
    /// Coordinates sorted by row (the alias `COO`).
    Coo,
    /// Coordinates sorted by row.
    Coor,
    /// Coordinates sorted by column.
    Cooc,
}

/// A format's name as the spec writes it (`CSR`, `DMAT`, ...), in any case.
impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let table = Format::ALL.map(|f| (f.name(), f));
        serde_daphne::lowlevel::parse_name(text, "a Binsparse format", &table)
    }
}

impl Format {
    /// Every format, in the spec's order.
    pub const ALL: [Format; 12] = [
        Format::Dvec,
        Format::Dmatr,
        Format::Dmatc,
        Format::Dmat,
        Format::Cvec,
        Format::Csr,
        Format::Csc,
        Format::Dcsr,
        Format::Dcsc,
        Format::Coor,
        Format::Cooc,
        Format::Coo,
    ];

    /// The name in the descriptor, such as `"CSR"`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Dvec => "DVEC",
            Format::Dmat => "DMAT",
            Format::Dmatr => "DMATR",
            Format::Dmatc => "DMATC",
            Format::Cvec => "CVEC",
            Format::Csr => "CSR",
            Format::Csc => "CSC",
            Format::Dcsr => "DCSR",
            Format::Dcsc => "DCSC",
            Format::Coo => "COO",
            Format::Coor => "COOR",
            Format::Cooc => "COOC",
        }
    }

    /// The format a descriptor names (exactly, as the spec spells it).
    pub(crate) fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether the format stores every value (DVEC and the DMAT family).
    pub(crate) const fn is_dense(self) -> bool {
        matches!(
            self,
            Format::Dvec | Format::Dmat | Format::Dmatr | Format::Dmatc
        )
    }

    /// Whether the format holds a vector (shape `[n]`).
    pub(crate) const fn is_vector(self) -> bool {
        matches!(self, Format::Dvec | Format::Cvec)
    }

    /// The binary arrays the format has, in the order they are written.
    fn arrays(self) -> &'static [&'static str] {
        match self {
            Format::Dvec | Format::Dmat | Format::Dmatr | Format::Dmatc => &["values"],
            Format::Cvec => &["indices_0", "values"],
            Format::Csr | Format::Csc => &["pointers_to_1", "indices_1", "values"],
            Format::Dcsr | Format::Dcsc => &["indices_0", "pointers_to_1", "indices_1", "values"],
            Format::Coo | Format::Coor | Format::Cooc => &["indices_0", "indices_1", "values"],
        }
    }

    /// The custom-format description the spec gives as equivalent.
    fn custom(self) -> Json {
        let element = serde_json::json!({ "level_desc": "element" });
        let level = |desc: &str, rank: u64, inner: Json| serde_json::json!({ "level_desc": desc, "rank": rank, "level": inner });
        let (tree, transposed) = match self {
            Format::Dvec => (level("dense", 1, element), false),
            Format::Cvec => (level("sparse", 1, element), false),
            Format::Dmat | Format::Dmatr | Format::Dmatc => (
                level("dense", 1, level("dense", 1, element)),
                self == Format::Dmatc,
            ),
            Format::Csr | Format::Csc => (
                level("dense", 1, level("sparse", 1, element)),
                self == Format::Csc,
            ),
            Format::Dcsr | Format::Dcsc => (
                level("sparse", 1, level("sparse", 1, element)),
                self == Format::Dcsc,
            ),
            Format::Coo | Format::Coor | Format::Cooc => {
                (level("sparse", 2, element), self == Format::Cooc)
            }
        };
        let mut custom = serde_json::json!({ "level": tree });
        if transposed {
            custom["transpose"] = serde_json::json!([1, 0]);
        }
        custom
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The version string a descriptor carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Version {
    /// `"0.1"`: the spec's two-part form, which the C reference writes (the default).
    #[default]
    V0_1,
    /// `"0.1.0"`: the SemVer form the Python reference writes. binsparse 0.1.4 for Python
    /// refuses `"0.1"` ("invalid Binsparse SemVer version"), so files meant for it need this.
    V0_1_0,
}

/// `0.1` or `0.1.0`, as the descriptor writes them.
impl std::str::FromStr for Version {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let table = [Version::V0_1, Version::V0_1_0].map(|v| (v.text(), v));
        serde_daphne::lowlevel::parse_name(text, "a Binsparse version", &table)
    }
}

impl Version {
    /// The text in the descriptor.
    pub(crate) const fn text(self) -> &'static str {
        match self {
            Version::V0_1 => "0.1",
            Version::V0_1_0 => "0.1.0",
        }
    }
}

/// How DAPHNE objects are written as Binsparse. Plain data, as every format's options: set
/// the fields that differ from [`WriteOptions::default`] (CSR for CSRMatrix objects, DMAT
/// for DenseMatrix objects, `uint64` pointers and indices, values as they are):
/// `WriteOptions { iso: true, ..Default::default() }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// The format to write (DVEC and CVEC need an `n` x 1 matrix).
    pub format: Option<Format>,
    /// The type of pointer and index arrays (an integer type; every index must fit).
    pub index_type: ValueType,
    /// Writes `iso[T]` with one value when every stored value is the same (bit for bit).
    pub iso: bool,
    /// Writes `u8` values that are all 0 or 1 as `bint8`.
    pub bint8: bool,
    /// The version string to write (default `"0.1"`; see [`Version::V0_1_0`]).
    pub version: Version,
    /// Entries to write beside the `binsparse` key of the descriptor (user attributes, as
    /// a read records them in [`InputMetadata::attributes`](crate::pipe::InputMetadata::attributes)).
    pub attributes: Map<String, Json>,
    /// The Zarr format of Zarr groups written (default v3).
    #[cfg(feature = "zarr")]
    pub zarr_version: zarr::ZarrVersion,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            format: None,
            index_type: ValueType::U64,
            iso: false,
            bint8: false,
            version: Version::V0_1,
            attributes: Map::new(),
            #[cfg(feature = "zarr")]
            zarr_version: zarr::ZarrVersion::V3,
        }
    }
}

impl WriteOptions {
    /// These options with what a Binsparse input recorded: its format where none is asked,
    /// and its user attributes under the asked ones.
    pub(crate) fn keeping(mut self, metadata: &crate::pipe::InputMetadata) -> Self {
        if self.format.is_none() {
            self.format = metadata.layout.and_then(Format::from_name);
        }
        self.attributes = metadata.attributes_under(&self.attributes);
        self
    }

    /// The format this writes `object` in.
    pub(crate) fn format_for(&self, object: &Object) -> Format {
        self.format.unwrap_or(match object.data_type() {
            serde_daphne::DataType::CsrMatrix => Format::Csr,
            _ => Format::Dmat,
        })
    }
}

/// Where an array came from, for error messages: a byte offset in the file when the
/// container has them, else the array's name.
#[derive(Clone, Debug)]
pub(crate) struct Array {
    pub(crate) values: Values,
    pub(crate) name: String,
    /// Offset of the first element in the file, for containers with byte offsets.
    pub(crate) offset: Option<usize>,
    /// The index in the whole array of the first element here (a part read on its own).
    pub(crate) first: usize,
}

impl Array {
    /// An error about element `k` of this array.
    fn error_at(&self, k: usize, message: impl std::fmt::Display) -> Error {
        element_error(
            &self.name,
            self.offset,
            self.values.value_type().size(),
            (self.first, k),
            message,
        )
    }
}

/// An error about element `k` of the array `name`, whose elements of `size` bytes start at
/// `offset` in the file (where the container has offsets).
fn element_error(
    name: &str,
    offset: Option<usize>,
    size: usize,
    (first, k): (usize, usize),
    message: impl std::fmt::Display,
) -> Error {
    let message = format!("{name}[{}]: {message}", first + k);
    match offset {
        Some(o) => BINSPARSE.at(o + k * size, message),
        None => BINSPARSE.error(message),
    }
}

/// The type of a value array as the descriptor gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ValueKind {
    value_type: ValueType,
    bint8: bool,
    iso: bool,
}

fn parse_type(name: &str) -> Option<ValueType> {
    Some(match name {
        "uint8" => ValueType::U8,
        "uint16" => ValueType::U16,
        "uint32" => ValueType::U32,
        "uint64" => ValueType::U64,
        "int8" => ValueType::I8,
        "int16" => ValueType::I16,
        "int32" => ValueType::I32,
        "int64" => ValueType::I64,
        "float32" => ValueType::F32,
        "float64" => ValueType::F64,
        _ => return None,
    })
}

fn type_name(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::U8 => "uint8",
        ValueType::U16 => "uint16",
        ValueType::U32 => "uint32",
        ValueType::U64 => "uint64",
        ValueType::I8 => "int8",
        ValueType::I16 => "int16",
        ValueType::I32 => "int32",
        ValueType::I64 => "int64",
        ValueType::F32 => "float32",
        ValueType::F64 => "float64",
    }
}

fn parse_kind(array: &str, text: &str) -> Result<ValueKind> {
    let (iso, inner) = match text.strip_prefix("iso[").and_then(|t| t.strip_suffix(']')) {
        Some(inner) => (true, inner),
        None => (false, text),
    };
    if inner.starts_with("complex[") {
        return Err(not_in_daphne(
            format!("the {array} array of type {text}"),
            "DAPHNE has no complex value types",
        ));
    }
    if inner == "bint8" {
        return Ok(ValueKind {
            value_type: ValueType::U8,
            bint8: true,
            iso,
        });
    }
    let value_type = parse_type(inner).ok_or_else(|| {
        BINSPARSE.error(format!(
            "the data type {text:?} of {array} is none of Binsparse's (uint8..uint64, \
             int8..int64, float32, float64, bint8, with iso[...] or complex[...])"
        ))
    })?;
    Ok(ValueKind {
        value_type,
        bint8: false,
        iso,
    })
}

/// The parts of a descriptor this crate acts on.
struct Descriptor {
    format: Format,
    shape: Vec<u64>,
    nnz: u64,
    data_types: Map<String, Json>,
    fill: bool,
    structure: Option<String>,
    attributes: Map<String, Json>,
}

/// The descriptor's JSON as the spec lays it out: a `binsparse` object, and any other
/// top-level keys (kept as attributes).
#[derive(serde::Deserialize)]
struct DescriptorJson {
    binsparse: BinsparseJson,
    #[serde(flatten)]
    attributes: Map<String, Json>,
}

#[derive(serde::Deserialize)]
struct BinsparseJson {
    version: String,
    shape: Vec<u64>,
    number_of_stored_values: u64,
    format: String,
    custom: Option<Json>,
    data_types: Map<String, Json>,
    #[serde(default)]
    fill: bool,
    structure: Option<String>,
}

fn parse_descriptor(text: &str) -> Result<Descriptor> {
    let DescriptorJson {
        binsparse: bsp,
        attributes,
    } = serde_json::from_str(text)
        .map_err(|e| BINSPARSE.error(format!("the descriptor does not fit the spec: {e}")))?;
    if !matches!(bsp.version.as_str(), "0.1" | "0.1.0") {
        return Err(BINSPARSE.error(format!(
            "version {} (this crate reads 0.1 and 0.1.0)",
            bsp.version
        )));
    }
    let shape = bsp.shape;
    if shape.len() > 2 {
        return Err(not_in_daphne(
            format!("a tensor of shape {shape:?}"),
            "DAPHNE matrices have two dimensions",
        ));
    }
    let format = match (Format::from_name(&bsp.format), &bsp.custom) {
        (Some(format), _) => format,
        (None, Some(custom)) => {
            let want_vector = shape.len() == 1;
            Format::ALL
                .into_iter()
                .filter(|f| f.is_vector() == want_vector)
                .find(|f| f.custom() == *custom)
                .ok_or_else(|| {
                    BINSPARSE.error(format!(
                        "the custom format {custom} is none of the predefined formats' \
                         equivalents"
                    ))
                })?
        }
        (None, None) => return Err(BINSPARSE.error(format!("unknown format {:?}", bsp.format))),
    };
    if format.is_vector() != (shape.len() == 1) {
        return Err(BINSPARSE.error(format!(
            "{format} needs a shape of {} dimension(s), not {shape:?}",
            if format.is_vector() { 1 } else { 2 }
        )));
    }
    Ok(Descriptor {
        format,
        shape,
        nnz: bsp.number_of_stored_values,
        data_types: bsp.data_types,
        fill: bsp.fill,
        structure: bsp.structure,
        attributes,
    })
}

/// Reads a matrix from a descriptor's text and a way to fetch its arrays by name.
///
/// `input_len` is the size of the file; the matrix may take at most `max_alloc` bytes of
/// memory beyond it (as [`serde_daphne::Options::max_alloc`] for DAPHNE files).
pub(crate) fn decode(
    descriptor: &str,
    input_len: u64,
    max_alloc: u64,
    mut fetch: impl FnMut(&str) -> Result<Array>,
) -> Result<Binsparse> {
    let d = parse_descriptor(descriptor)?;
    let type_of = |name: &str| -> Result<&str> {
        d.data_types
            .get(name)
            .and_then(Json::as_str)
            .ok_or_else(|| BINSPARSE.error(format!("\"data_types\" has no type for {name}")))
    };
    let values_kind = parse_kind("values", type_of("values")?)?;
    if values_kind.iso && d.format.is_dense() {
        return Err(BINSPARSE.error(format!(
            "iso values in the dense format {} (iso is for sparse formats)",
            d.format
        )));
    }
    if d.shape.iter().any(|&n| n > u64::from(u32::MAX)) {
        return Err(not_in_daphne(
            format!("a matrix of shape {:?}", d.shape),
            format!(
                "a matrix read from Binsparse is one DAPHNE block, at most {} rows and columns",
                u32::MAX
            ),
        ));
    }
    // What the object will take, against what the file justifies: a few stored values may
    // describe a matrix whose row offsets alone fill the machine.
    let (rows, cols) = (
        u128::from(d.shape.first().copied().unwrap_or(1)),
        u128::from(d.shape.get(1).copied().unwrap_or(1)),
    );
    let size = values_kind.value_type.size() as u128;
    let needed = if d.format.is_dense() {
        rows * cols * size
    } else {
        let copies = if d.structure.is_some() { 2 } else { 1 };
        (rows + cols + 2) * 8 + u128::from(d.nnz) * (24 + size) * copies
    };
    check_alloc(0, needed, input_len, max_alloc)?;
    if d.fill {
        let fill = fetch("fill_value")?;
        let kind = parse_kind("fill_value", type_of("fill_value")?)?;
        let fill = convert::values_as(fill, kind, 1)?;
        let zero = fill.get(0).is_some_and(|v| v.is_zero());
        if !zero {
            return Err(not_in_daphne(
                format!(
                    "a matrix whose fill value is {}",
                    fill.get(0).map_or("missing".into(), |v| v.to_string())
                ),
                "DAPHNE's cells that are not stored are zero; only a fill value of 0 converts",
            ));
        }
    }
    let mut arrays = Vec::new();
    for &name in d.format.arrays() {
        if name != "values" {
            let index_type = type_of(name)?;
            parse_type(index_type)
                .filter(|t| !matches!(t, ValueType::F32 | ValueType::F64))
                .ok_or_else(|| {
                    BINSPARSE.error(format!(
                        "{name} has the data type {index_type:?}, not an integer"
                    ))
                })?;
        }
        arrays.push(fetch(name)?);
    }
    let values = arrays.pop().expect("every format has values");
    let expected = if values_kind.iso { 1 } else { d.nnz };
    let values = convert::values_as(values, values_kind, expected)?;
    let values = if values_kind.iso {
        convert::repeat(&values, d.nnz)?
    } else {
        values
    };
    let mut object = convert::build(d.format, &d.shape, d.nnz, arrays, values)?;
    if let Some(structure) = &d.structure {
        object = convert::apply_structure(object, structure)?;
    }
    Ok(Binsparse {
        object,
        format: d.format,
        attributes: d.attributes,
    })
}

/// The descriptor and named arrays that store `object` with `options`.
pub(crate) fn encode(
    object: &Object,
    options: &WriteOptions,
) -> Result<(String, Vec<(&'static str, Values)>)> {
    let format = options.format_for(object);
    let (shape, arrays) = convert::split(object, format, options.index_type)?;
    let mut data_types = Map::new();
    let mut arrays: Vec<(&'static str, Values)> =
        format.arrays().iter().copied().zip(arrays).collect();
    for (name, values) in &mut arrays {
        let mut type_text = type_name(values.value_type()).to_string();
        if *name == "values" {
            let nnz = values.len();
            if options.bint8 && matches!(values, Values::U8(v) if v.iter().all(|&x| x <= 1)) {
                type_text = "bint8".into();
            }
            if options.iso && nnz > 0 && convert::all_equal(values) {
                values.truncate(1);
                type_text = format!("iso[{type_text}]");
            }
        }
        data_types.insert((*name).into(), Json::String(type_text));
    }
    let nnz = if format.is_dense() {
        shape.iter().product::<u64>()
    } else {
        object_nnz(&arrays)
    };
    Ok((descriptor(format, shape, nnz, data_types, options), arrays))
}

/// The descriptor's text: `format`, `shape`, `nnz` stored values of `data_types`, and the
/// options' version and user attributes.
fn descriptor(
    format: Format,
    shape: Vec<u64>,
    nnz: u64,
    data_types: Map<String, Json>,
    options: &WriteOptions,
) -> String {
    let mut bsp = Map::new();
    bsp.insert("version".into(), options.version.text().into());
    bsp.insert("format".into(), format.name().into());
    bsp.insert("shape".into(), shape.into());
    bsp.insert("number_of_stored_values".into(), nnz.into());
    bsp.insert("data_types".into(), Json::Object(data_types));
    let mut top = options.attributes.clone();
    top.insert("binsparse".into(), Json::Object(bsp));
    serde_json::to_string_pretty(&Json::Object(top)).expect("JSON values serialize")
}

/// The number of stored values of a sparse format's arrays: the length of its last index
/// array (the values may be one iso value).
fn object_nnz(arrays: &[(&'static str, Values)]) -> u64 {
    arrays
        .iter()
        .rev()
        .find(|(name, _)| name.starts_with("indices"))
        .map_or(0, |(_, v)| v.len() as u64)
}
