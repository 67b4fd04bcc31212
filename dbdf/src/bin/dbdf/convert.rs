//! `dbdf convert`: the command line of [`dbdf::convert`], between .dbdf, .mtx, .csv, .npy,
//! .npz, Futhark binary data, Binsparse, SystemDS binary blocks, Parquet and Arrow IPC.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use dbdf::convert::{self, ConvertError, ConvertOptions, Format, Report};
use dbdf::pipe::{Held, InputMetadata, Projection};
use dbdf::{arrow, binsparse, futhark, mtx, npz, scipy, systemds};
use serde_daphne::{BlockPolicy, DataType, Dialect, Object, ValueType};

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
    /// How .dbdf blocks are chosen: auto, smallest, dense, sparse or ultra-sparse.
    #[arg(long, value_parser = parse_name::<BlockPolicy>)]
    block: Option<BlockPolicy>,
    /// Tile .dbdf output into blocks of at most R x C, e.g. 1000,1000.
    #[arg(long, value_parser = parse_tile)]
    tile: Option<(u32, u32)>,
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
    /// Store each .dbdf block in the smallest value type that holds its values exactly.
    #[arg(long)]
    narrow: bool,
    /// Write .dbdf (and CSV) in the spec's dialect (spec) or for DAPHNE's runtime (daphne).
    /// For DAPHNE, a CSR matrix DaphneDSL would type as dense is written dense unless
    /// --data-type csr.
    #[arg(long, value_parser = parse_name::<Dialect>)]
    dialect: Option<Dialect>,
    /// With --dialect daphne: write frame labels even where they would overflow DAPHNE's
    /// frame reader (longer than 32 bytes x the columns from theirs to the last).
    #[arg(long = "unguarded-labels")]
    unguarded_labels: bool,
    /// MatrixMarket output: array (every value, column by column: a dense matrix) or
    /// coordinate (the non-zeros: a CSR matrix); default, a dense matrix as array, a CSR one
    /// as coordinate.
    #[arg(long = "mtx-layout", value_parser = parse_name::<mtx::Layout>)]
    mtx_layout: Option<mtx::Layout>,
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
    #[arg(long = "binsparse-format", value_parser = parse_name::<binsparse::Format>)]
    binsparse_format: Option<binsparse::Format>,
    /// Binsparse output: the type of pointer and index arrays (default u64).
    #[arg(long = "index-type", value_parser = parse_name::<ValueType>)]
    index_type: Option<ValueType>,
    /// Binsparse output: store one iso[...] value when all stored values are equal.
    #[arg(long)]
    iso: bool,
    /// Binsparse output: store u8 values that are all 0 or 1 as bint8.
    #[arg(long)]
    bint8: bool,
    /// Binsparse output: the descriptor's version, 0.1 (the spec's; default) or 0.1.0 (which
    /// the Python reference needs).
    #[arg(long = "binsparse-version", value_parser = parse_name::<binsparse::Version>)]
    binsparse_version: Option<binsparse::Version>,
    /// Binsparse output in a Zarr group (.zarr): the Zarr format, 3 (zarr-python 3's
    /// default; default) or 2 (what zarr-python 2 writes).
    #[arg(long = "zarr-format", value_parser = parse_name::<binsparse::zarr::ZarrVersion>)]
    zarr_format: Option<binsparse::zarr::ZarrVersion>,
    /// Keep the input's own blocks as the .dbdf output's tiles: SystemDS's blocks, a tiled
    /// .dbdf file's (default: one block; --tile sets other tiles).
    #[arg(long = "keep-blocks")]
    keep_blocks: bool,
    /// SystemDS output: the block size (default 1000, SystemDS's).
    #[arg(long = "systemds-block-size")]
    systemds_block_size: Option<u32>,
    /// SystemDS output: a directory of N part files written in parallel, as Spark writes
    /// them (default: one file up to 128 MiB, else one part per 128 MiB).
    #[arg(long)]
    parts: Option<usize>,
    /// DAPHNE's segmented layout output (NAME.hdfs): N row segments, the rows split as
    /// DAPHNE splits them between N workers (default: one per core).
    #[arg(long)]
    segments: Option<usize>,
    /// scipy and npz output: deflated members (save_npz's default, savez_compressed).
    #[arg(long)]
    compressed: bool,
    /// Do not sync the output to disk before renaming it into place: it is still atomic (a
    /// kill at any moment leaves the old file or the new one), but a power loss may lose it.
    /// Directories (SystemDS, Zarr) are always synced.
    #[arg(long = "no-sync")]
    no_sync: bool,
    /// Parquet and Arrow input: what becomes of null cells: error (default; names the column
    /// and row), nan (floating columns) or zero.
    #[arg(long, value_parser = parse_name::<arrow::Nulls>)]
    nulls: Option<arrow::Nulls>,
    /// Parquet and Arrow output: zstd (Parquet's default), snappy, lz4 or none (Arrow's
    /// default, which readers memory-map).
    #[arg(long, value_parser = parse_name::<arrow::Compression>)]
    compression: Option<arrow::Compression>,
    /// Parquet output: rows per row group (default 1048576).
    #[arg(long = "row-group-rows", value_parser = clap::value_parser!(u64).range(1..))]
    row_group_rows: Option<u64>,
    /// Parquet and Arrow output of a matrix: its column names, comma-separated (default c0,
    /// c1, ...).
    #[arg(long, value_delimiter = ',')]
    labels: Option<Vec<String>>,
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

impl Args {
    /// The input file.
    pub fn input(&self) -> &Path {
        &self.input
    }

    /// The library's options for these arguments: each format's own, nested.
    pub fn options(&self) -> ConvertOptions {
        // `--dialect runtime` is for DAPHNE: `.dbdf` in its dialect, CSV as it reads it.
        let daphne = self.dialect == Some(Dialect::Runtime);
        let mut dbdf = serde_daphne::Options {
            narrow: self.narrow,
            block_policy: self.block.unwrap_or(BlockPolicy::Auto),
            tile: self.tile,
            ..serde_daphne::Options::new()
        };
        if daphne {
            dbdf.dialect = Some(Dialect::Runtime);
            dbdf.guard_daphne_labels = !self.unguarded_labels;
        }
        let mut options = ConvertOptions {
            from: self.from,
            to: self.to,
            data_type: self.data_type,
            value_type: self.value_type,
            columns: self.columns.clone(),
            sync: !self.no_sync,
            progress: progress_bar("converting", &self.input).map(|bar| Arc::new(bar) as _),
            dbdf,
            keep_tiles: self.keep_blocks,
            csv: dbdf::csv::WriteOptions { daphne },
            mtx: mtx::WriteOptions {
                layout: self.mtx_layout,
            },
            futhark: futhark::WriteOptions {
                bools: self.futhark_bool,
                f16: self.futhark_f16,
                matrices: self.futhark_matrices,
            },
            binsparse: binsparse::WriteOptions {
                format: self.binsparse_format,
                iso: self.iso,
                bint8: self.bint8,
                version: self.binsparse_version.unwrap_or_default(),
                zarr_version: self.zarr_format.unwrap_or_default(),
                ..Default::default()
            },
            systemds: systemds::WriteOptions {
                parts: self.parts,
                ..Default::default()
            },
            segments: dbdf::segments::WriteOptions {
                segments: self.segments,
            },
            npz: npz::WriteOptions {
                compressed: self.compressed,
                ..Default::default()
            },
            scipy: scipy::WriteOptions {
                compressed: self.compressed,
            },
            table_input: arrow::ReadOptions {
                nulls: self.nulls.unwrap_or_default(),
                ..Default::default()
            },
            table: arrow::WriteOptions {
                compression: self.compression,
                row_group_rows: self
                    .row_group_rows
                    .map(|rows| usize::try_from(rows).unwrap_or(usize::MAX)),
                labels: self.labels.clone(),
                ..Default::default()
            },
            ..Default::default()
        };
        // Flags left out keep each format's own default.
        if let Some(index_type) = self.index_type {
            options.binsparse.index_type = index_type;
        }
        if let Some(block_size) = self.systemds_block_size {
            options.systemds.block_size = block_size;
        }
        options
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
            dbdf::remote::convert_urls(&args.input, &args.output, &args.options(), storage)
                .map_err(failure)?;
        return Ok(finish(report));
    }
    let report = convert::convert(&args.input, &args.output, &args.options()).map_err(failure)?;
    Ok(finish(report))
}

/// Writes objects already read (a window, for `slice`) from a `.dbdf` file as `convert` would.
pub fn write_objects(args: &Args, objects: Vec<Object>) -> Result<ExitCode, Failure> {
    let options = args.options();
    let mut source =
        Held::new(objects, 0, InputMetadata::default()).map_err(|e| Failure::at(&args.input, e))?;
    let report =
        convert::convert_from(&mut source, &args.input, &args.output, &options).map_err(failure)?;
    Ok(finish(report))
}
