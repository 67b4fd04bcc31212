//! `dbdf convert`: between .dbdf, .mtx, .csv, .npy, Futhark binary data, Binsparse and
//! SystemDS binary blocks.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use serde_daphne::io::meta::{
    daphne_types_as_csr, write_sidecar, write_sidecar_for, DAPHNE_SPARSITY_THRESHOLD,
};
use serde_daphne::io::{read_sidecar, sidecar_path};
use serde_daphne::{BlockPolicy, DataType, Dialect, Object, Options, ValueType, Values};

use crate::files::{read_objects, write_output};
use serde_daphne::interop::binsparse;
use serde_daphne::interop::{futhark, npy, systemds};

use crate::formats::{csv, mtx};
use crate::{Failure, Format};

/// Arguments of `convert`.
#[derive(clap::Args)]
pub struct Args {
    /// The input file.
    input: PathBuf,
    /// The output file, or `-` for standard output (then --to is needed).
    output: PathBuf,
    /// The input format (default: from the extension).
    #[arg(long, value_enum)]
    from: Option<Format>,
    /// The output format (default: from the extension).
    #[arg(long, value_enum)]
    to: Option<Format>,
    /// The DAPHNE data type of output matrices (default: CSR for coordinate .mtx input,
    /// the input's otherwise).
    #[arg(long = "data-type", value_enum)]
    data_type: Option<DataTypeArg>,
    /// How .dbdf blocks are chosen.
    #[arg(long, value_enum)]
    block: Option<BlockArg>,
    /// Tile .dbdf output into blocks of at most R x C, e.g. 1000,1000.
    #[arg(long, value_parser = parse_tile)]
    tile: Option<(u32, u32)>,
    /// Convert every value to this type (exactly, or fail): u8, u16, u32, u64, i8, i16,
    /// i32, i64, f32 or f64.
    #[arg(long = "value-type", value_parser = parse_value_type)]
    value_type: Option<ValueType>,
    /// Store each .dbdf block in the smallest value type that holds its values exactly.
    #[arg(long)]
    narrow: bool,
    /// Write .dbdf (and CSV) in the spec's dialect or for DAPHNE's runtime. For DAPHNE, a
    /// CSR matrix DaphneDSL would type as dense is written dense unless --data-type csr.
    #[arg(long, value_enum)]
    dialect: Option<DialectArg>,
    /// With --dialect daphne: write frame labels even where they would overflow DAPHNE's
    /// frame reader (longer than 32 bytes x the columns from theirs to the last).
    #[arg(long = "unguarded-labels")]
    unguarded_labels: bool,
    /// Futhark output: write u8 matrices as Futhark bools (values must be 0 or 1).
    #[arg(long = "futhark-bool")]
    futhark_bool: bool,
    /// Futhark output: write f32 matrices as f16 (values must be exact in f16).
    #[arg(long = "futhark-f16")]
    futhark_f16: bool,
    /// Futhark output: write every matrix as a 2-D array (not 1 x 1 as a scalar and n x 1
    /// as a 1-D array).
    #[arg(long = "futhark-matrices")]
    futhark_matrices: bool,
    /// Binsparse output format: CSR, CSC, COO, COOR, COOC, DCSR, DCSC, DMAT, DMATR, DMATC,
    /// DVEC or CVEC (default: the input's when it is Binsparse, else CSR for CSR matrices
    /// and DMAT for dense ones).
    #[arg(long = "binsparse-format", value_parser = parse_binsparse_format)]
    binsparse_format: Option<binsparse::Format>,
    /// Binsparse output: the type of pointer and index arrays (default u64).
    #[arg(long = "index-type", value_parser = parse_value_type)]
    index_type: Option<ValueType>,
    /// Binsparse output: store one iso[...] value when all stored values are equal.
    #[arg(long)]
    iso: bool,
    /// Binsparse output: store u8 values that are all 0 or 1 as bint8.
    #[arg(long)]
    bint8: bool,
    /// Binsparse output: the descriptor's version, 0.1 (the spec's; default) or 0.1.0 (which
    /// the Python reference needs).
    #[arg(long = "binsparse-version", value_parser = ["0.1", "0.1.0"])]
    binsparse_version: Option<String>,
    /// SystemDS input: keep its blocks as the DAPHNE object's blocks (default: one block).
    #[arg(long = "keep-blocks")]
    keep_blocks: bool,
    /// SystemDS output: the block size (default 1000, SystemDS's).
    #[arg(long = "systemds-block-size")]
    systemds_block_size: Option<u32>,
}

fn parse_binsparse_format(text: &str) -> Result<binsparse::Format, String> {
    binsparse::Format::from_name(&text.to_uppercase()).ok_or_else(|| {
        format!("{text:?} is not one of CSR, CSC, COO, COOR, COOC, DCSR, DCSC, DMAT, DMATR, DMATC, DVEC, CVEC")
    })
}

#[derive(Clone, Copy, ValueEnum)]
enum DataTypeArg {
    Dense,
    Csr,
}

#[derive(Clone, Copy, ValueEnum)]
enum BlockArg {
    Auto,
    Smallest,
    Dense,
    Sparse,
    UltraSparse,
}

#[derive(Clone, Copy, ValueEnum)]
enum DialectArg {
    Spec,
    Daphne,
}

fn parse_value_type(text: &str) -> Result<ValueType, String> {
    ValueType::from_name(text).ok_or_else(|| {
        format!("{text:?} is not one of u8, u16, u32, u64, i8, i16, i32, i64, f32, f64")
    })
}

fn parse_tile(text: &str) -> Result<(u32, u32), String> {
    let (r, c) = text
        .split_once(',')
        .ok_or("expected R,C such as 1000,1000")?;
    let parse = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or(format!("{s:?} is not a positive 32-bit number"))
    };
    Ok((parse(r)?, parse(c)?))
}

/// The format a path's extension names.
fn format_of(path: &Path, given: Option<Format>, role: &str) -> Result<Format, Failure> {
    if let Some(format) = given {
        return Ok(format);
    }
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_lowercase)
        .as_deref()
    {
        Some("dbdf") => Ok(Format::Dbdf),
        Some("mtx") => Ok(Format::Mtx),
        Some("csv") => Ok(Format::Csv),
        Some("npy") => Ok(Format::Npy),
        Some("fut") => Ok(Format::Futhark),
        Some("npz" | "h5" | "hdf5") => Ok(Format::Binsparse),
        // SystemDS files have no extension, but a .mtd beside them.
        _ if role == "input" && systemds::metadata_path(path).is_file() => Ok(Format::Systemds),
        _ => Err(Failure::at(
            path,
            format!(
                "cannot tell the {role} format from the extension: use --{}",
                if role == "input" { "from" } else { "to" }
            ),
        )),
    }
}

/// The objects of the input, and the Binsparse format and attributes when it is Binsparse.
type Input = (
    Vec<Object>,
    Option<(
        binsparse::Format,
        serde_json::Map<String, serde_json::Value>,
    )>,
);

fn read_input(path: &Path, format: Format, keep_blocks: bool) -> Result<Input, Failure> {
    if format == Format::Systemds {
        let options = systemds::ReadOptions::new().keep_blocks(keep_blocks);
        let object = systemds::read_with(path, &options).map_err(|e| Failure::at(path, e))?;
        return Ok((vec![object], None));
    }
    if format == Format::Binsparse {
        let read = binsparse::read(path).map_err(|e| Failure::at(path, e))?;
        return Ok((vec![read.object], Some((read.format, read.attributes))));
    }
    read_others(path, format).map(|objects| (objects, None))
}

fn read_others(path: &Path, format: Format) -> Result<Vec<Object>, Failure> {
    let fail = |e: String| Failure::at(path, e);
    Ok(match format {
        Format::Dbdf => read_objects(path, &Options::new())?
            .0
            .into_iter()
            .map(|(o, _)| o)
            .collect(),
        Format::Mtx => vec![mtx::read_path(path).map_err(fail)?],
        Format::Csv => {
            let sidecar = read_sidecar(path).map_err(|e| Failure::at(path, e))?;
            let file = std::fs::File::open(path).map_err(|e| Failure::at(path, e))?;
            let input = std::io::BufReader::with_capacity(1 << 20, file);
            vec![csv::read(input, sidecar.as_ref()).map_err(fail)?]
        }
        Format::Npy => vec![npy::read(path).map_err(|e| Failure::at(path, e))?],
        Format::Futhark => futhark::read(path).map_err(|e| Failure::at(path, e))?,
        Format::Binsparse | Format::Systemds => unreachable!("read by read_input"),
    })
}

/// A CSR matrix DaphneDSL would type as dense (denser than DAPHNE's sparsity threshold, or
/// without cells) becomes a DenseMatrix, which is what `readMatrix` will ask the file for;
/// when the user asked for CSR explicitly it stays, with a warning saying what follows.
fn for_daphne_dsl(object: &mut Object, explicit: bool, output: &Path) -> Result<(), Failure> {
    let ((rows, cols), nnz) = (object.shape(), object.nnz());
    if object.data_type() != DataType::CsrMatrix || daphne_types_as_csr(rows, cols, nnz) {
        return Ok(());
    }
    if !explicit {
        return retype(object, DataType::DenseMatrix).map_err(|e| Failure::at(output, e));
    }
    let density = match rows * cols {
        0 => "no cells".to_owned(),
        cells => format!("density {:.3}", nnz as f64 / cells as f64),
    };
    eprintln!(
        "dbdf: {}: warning: DaphneDSL's readMatrix types this {rows} x {cols} CSR matrix \
         ({density}, not below {DAPHNE_SPARSITY_THRESHOLD}) as dense and will fail on it; \
         DAPHNE's C++ reader reads it as CSR",
        output.display()
    );
    Ok(())
}

/// Changes a matrix's data type in place (only its header changes; no copy of the blocks).
fn retype(object: &mut Object, data_type: DataType) -> serde_daphne::Result<()> {
    let placeholder = Object::dense(0, 0, Values::U8(Vec::new()))?;
    *object = std::mem::replace(object, placeholder).with_data_type(data_type)?;
    Ok(())
}

impl Args {
    /// The input file.
    pub fn input(&self) -> &Path {
        &self.input
    }
}

/// The output format: `--to`, or the output's extension.
pub fn output_format(args: &Args) -> Result<Format, Failure> {
    format_of(&args.output, args.to, "output")
}

/// Runs `convert`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    let from = format_of(&args.input, args.from, "input")?;
    let to = format_of(&args.output, args.to, "output")?;
    if streamed(args, from, to)? {
        return Ok(ExitCode::SUCCESS);
    }
    let (objects, binsparse_input) = read_input(&args.input, from, args.keep_blocks)?;
    write_objects(args, from, to, objects, binsparse_input)
}

/// Converts without holding the matrix where source and target allow it: `.npy` to tiled
/// (or DAPHNE) `.dbdf` tile by tile, one `.dbdf` matrix to `.npy` band by band. `false` when
/// the conversion needs the whole object (other formats, value or data type changes, no
/// tiles, standard output).
fn streamed(args: &Args, from: Format, to: Format) -> Result<bool, Failure> {
    let daphne = matches!(args.dialect, Some(DialectArg::Daphne));
    let plain = args.value_type.is_none() && args.data_type.is_none();
    if !plain || args.output == Path::new("-") {
        return Ok(false);
    }
    match (from, to) {
        (Format::Npy, Format::Dbdf) if args.tile.is_some() || daphne => {
            let options = dbdf_options(args, None, daphne);
            npy::to_dbdf(&args.input, &args.output, &options)
                .map_err(|e| Failure::at(&args.input, e))?;
            Ok(true)
        }
        (Format::Dbdf, Format::Dbdf) if args.tile.is_some() && !daphne => {
            let options = dbdf_options(args, None, daphne);
            serde_daphne::io::rewrite(&args.input, &args.output, &options)
                .map_err(|e| Failure::at(&args.input, e))?;
            Ok(true)
        }
        (Format::Dbdf, Format::Npy) => {
            let file = crate::info::open(&args.input, true)?;
            if file.objects().len() != 1 {
                return Ok(false);
            }
            npy::from_dbdf(&args.input, 0, &args.output)
                .map_err(|e| Failure::at(&args.input, e))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// The options of `.dbdf` output: block policy, narrowing, tiles (the kept SystemDS blocks'
/// unless --tile says otherwise), the dialect.
fn dbdf_options(args: &Args, kept: Option<(u32, u32)>, daphne: bool) -> Options {
    let mut options = Options::new().narrow(args.narrow).block_policy(
        match args.block.unwrap_or(BlockArg::Auto) {
            BlockArg::Auto => BlockPolicy::Auto,
            BlockArg::Smallest => BlockPolicy::Smallest,
            BlockArg::Dense => BlockPolicy::Dense,
            BlockArg::Sparse => BlockPolicy::Sparse,
            BlockArg::UltraSparse => BlockPolicy::UltraSparse,
        },
    );
    // (For DAPHNE there are no tiles: the runtime dialect has one block per object.)
    if let Some((r, c)) = args.tile.or(kept.filter(|_| !daphne)) {
        options = options.tile(r, c);
    }
    if daphne {
        options = options
            .dialect(Dialect::Runtime)
            .guard_daphne_labels(!args.unguarded_labels);
    }
    options
}

/// Converts objects already read (from `from`) to the output: value and data type changes,
/// then the target format.
pub fn write_objects(
    args: &Args,
    from: Format,
    to: Format,
    mut objects: Vec<Object>,
    binsparse_input: Option<(
        binsparse::Format,
        serde_json::Map<String, serde_json::Value>,
    )>,
) -> Result<ExitCode, Failure> {
    for object in &mut objects {
        if let Some(vt) = args.value_type {
            *object = object
                .convert(vt)
                .map_err(|e| Failure::at(&args.input, e))?;
        }
        if let Some(dt) = args.data_type {
            let data_type = match dt {
                DataTypeArg::Dense => DataType::DenseMatrix,
                DataTypeArg::Csr => DataType::CsrMatrix,
            };
            retype(object, data_type).map_err(|e| Failure::at(&args.input, e))?;
        }
    }
    let daphne = matches!(args.dialect, Some(DialectArg::Daphne));
    if daphne && to == Format::Dbdf {
        for object in &mut objects {
            for_daphne_dsl(object, args.data_type.is_some(), &args.output)?;
        }
    }
    let output = &args.output;
    let single = |what: &str| -> Result<&Object, Failure> {
        match &objects[..] {
            [one] => Ok(one),
            many => Err(Failure::at(
                &args.input,
                format!("holds {} objects, but {what} holds one", many.len()),
            )),
        }
    };
    let to_file = output != Path::new("-");
    match to {
        Format::Dbdf => {
            // Kept SystemDS blocks stay the tiles, unless --tile says otherwise.
            let kept = (args.keep_blocks && from == Format::Systemds)
                .then(|| objects.first().and_then(|o| o.blocks().first()))
                .flatten()
                .map(|b| (b.place.rows.max(1), b.place.cols.max(1)));
            let options = dbdf_options(args, kept, daphne);
            // Kept SystemDS blocks with no .dbdf option asking otherwise go out as they are,
            // without a second copy of the matrix.
            let as_stored = kept.is_some()
                && args.tile.is_none()
                && args.block.is_none()
                && !args.narrow
                && args.value_type.is_none()
                && args.data_type.is_none()
                && !daphne;
            write_output(output, |w| {
                for object in &objects {
                    if as_stored {
                        object.encode(&mut *w)
                    } else {
                        object.write_with(&mut *w, &options)
                    }
                    .map_err(|e| Failure::at(output, e))?;
                }
                Ok(())
            })?;
            if daphne && to_file {
                write_sidecar_for(output).map_err(|e| remove_and_fail(output, e))?;
            }
        }
        Format::Mtx => {
            let object = single("MatrixMarket")?;
            write_output(output, |w| {
                mtx::write(object, w).map_err(|e| Failure::at(&args.input, e))
            })?;
        }
        Format::Npy => {
            let object = single(".npy")?;
            write_output(output, |w| {
                npy::to_writer(w, object).map_err(|e| Failure::at(&args.input, e))
            })?;
        }
        Format::Futhark => {
            let options = futhark::WriteOptions::new()
                .bools(args.futhark_bool)
                .f16(args.futhark_f16)
                .matrices(args.futhark_matrices);
            write_output(output, |w| {
                futhark::to_writer(w, &objects, &options).map_err(|e| Failure::at(&args.input, e))
            })?;
        }
        Format::Binsparse => {
            let object = single("Binsparse")?;
            // Binsparse to Binsparse keeps the format and the user attributes.
            let (source_format, attributes) = match binsparse_input {
                Some((format, attributes)) => (Some(format), attributes),
                None => (None, serde_json::Map::new()),
            };
            let mut options = binsparse::WriteOptions::new()
                .attributes(attributes)
                .index_type(args.index_type.unwrap_or(ValueType::U64))
                .iso(args.iso)
                .bint8(args.bint8)
                .version(match args.binsparse_version.as_deref() {
                    Some("0.1.0") => binsparse::Version::V0_1_0,
                    _ => binsparse::Version::V0_1,
                });
            if let Some(format) = args.binsparse_format.or(source_format) {
                options = options.format(format);
            }
            if binsparse::is_hdf5(output) {
                // HDF5 is a file format: no streaming to standard output.
                binsparse::write_with(output, object, &options)
                    .map_err(|e| Failure::at(output, e))?;
            } else {
                write_output(output, |w| {
                    binsparse::to_writer(w, object, &options)
                        .map_err(|e| Failure::at(&args.input, e))
                })?;
            }
        }
        Format::Systemds => {
            let object = single("a SystemDS matrix")?;
            if !to_file {
                return Err(Failure::plain(
                    "SystemDS output is a file and its .mtd: give a path, not -",
                ));
            }
            let mut options = systemds::WriteOptions::new();
            if let Some(size) = args.systemds_block_size {
                options = options.block_size(size);
            }
            systemds::write_with(output, object, &options).map_err(|e| Failure::at(output, e))?;
        }
        Format::Csv => {
            let object = single("CSV")?;
            write_output(output, |w| {
                csv::write(object, w, daphne).map_err(|e| Failure::at(&args.input, e))
            })?;
            if to_file {
                match write_sidecar(output, object.header()) {
                    // DAPHNE's sidecars name no 16-bit types: the CSV stands alone.
                    Err(serde_daphne::Error::NotInDialect { what, .. }) => eprintln!(
                        "dbdf: {}: no .meta sidecar: DAPHNE's sidecars cannot name {what}, so \
                         the values read back as i64",
                        output.display()
                    ),
                    other => other.map_err(|e| remove_and_fail(output, e))?,
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A sidecar that could not be written: the data file goes too, so nothing half-done stays.
fn remove_and_fail(output: &Path, error: serde_daphne::Error) -> Failure {
    let _ = std::fs::remove_file(output);
    Failure::at(sidecar_path(output), error)
}
