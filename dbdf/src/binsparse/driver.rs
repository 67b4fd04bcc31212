//! Binsparse's entry in the registry: `.npz` archives streamed, HDF5 files and Zarr groups
//! written at their paths.

use std::io::Write;
use std::path::Path;

use serde_daphne::{Error, ValueType};

use super::files::{is_hdf5, is_zarr};
use super::source::BinsparseSource;
use super::{Format as Layout, ReadOptions, Version, WriteOptions};
use crate::driver::{ConvertOptions, Driver, Format, Input, OptionSpec, OutputFiles, Stored};
use crate::driver::{Takes, Written};
use crate::pipe::{InputMetadata, Sink, Source};

/// Binsparse, in `.npz`, HDF5 or Zarr.
pub(crate) struct BinsparseFiles;

impl Driver for BinsparseFiles {
    fn names(&self) -> &'static [&'static str] {
        &["binsparse"]
    }

    fn description(&self) -> &'static str {
        "Binsparse in .npz, HDF5 (.h5, .hdf5) or Zarr (.zarr)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["npz", "h5", "hdf5", "zarr"]
    }

    /// Any folder holding a Zarr group, whatever its name.
    fn identify(&self, path: &Path, named: Option<Format>) -> bool {
        named.is_none() && is_zarr(path)
    }

    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }

    fn open(&self, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let read = options.formats.get::<ReadOptions>();
        Ok(Box::new(BinsparseSource::open(path, &read)?))
    }

    /// A folder holding a Zarr group, whatever its name: a request for its metadata.
    fn identify_at(&self, input: &Input, _: &Path) -> bool {
        let has = |key| {
            input
                .as_folder()
                .is_some_and(|f| matches!(f.read(key), Ok(Some(_))))
        };
        has("zarr.json") || has(".zgroup")
    }

    /// A `.npz` archive (its members by ranges, or whole where they cannot be), a Zarr
    /// group (its chunks object by object) and an HDF5 file (the library's reads by ranges)
    /// are read in place.
    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    fn open_at(&self, input: Input, options: &ConvertOptions) -> Result<Box<dyn Source>, Error> {
        let read = options.formats.get::<ReadOptions>();
        if input.is_folder() {
            #[cfg(feature = "zarr")]
            return Ok(Box::new(BinsparseSource::open_group(&input, &read)?));
            #[cfg(not(feature = "zarr"))]
            return Err(Error::invalid(format!(
                "{} is a Zarr group, and this build has no Zarr (cargo feature zarr)",
                input.name
            )));
        }
        if is_hdf5(&input.name) {
            #[cfg(feature = "hdf5")]
            return Ok(Box::new(BinsparseSource::open_hdf5_at(
                input.data,
                Path::new(&input.name),
                &read,
            )?));
            #[cfg(not(feature = "hdf5"))]
            return Err(Error::invalid(format!(
                "{} is an HDF5 file, and this build has no HDF5 (cargo feature hdf5)",
                input.name
            )));
        }
        Ok(Box::new(BinsparseSource::open_at(input.data, &read)?))
    }

    fn written(&self, path: &Path) -> Written {
        match is_hdf5(path) || is_zarr(path) {
            true => Written::File,
            false => Written::Stream,
        }
    }

    /// Without a format of its own, the input's when that is Binsparse (whose user
    /// attributes are kept too), else CSR for CSR matrices and DMAT for dense ones.
    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>, Error> {
        let binsparse = options.formats.get::<WriteOptions>().keeping(metadata);
        Ok(super::sink(out, &binsparse))
    }

    fn sink_at<'p>(
        &self,
        path: &'p Path,
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'p>, Error> {
        let binsparse = options.formats.get::<WriteOptions>().keeping(metadata);
        Ok(super::files::path_sink(path, &binsparse))
    }

    /// A Zarr group's keys; an HDF5 file as one file, its head last.
    fn sink_into<'f>(
        &self,
        files: &'f dyn OutputFiles,
        output: &Path,
        options: &ConvertOptions,
        metadata: &InputMetadata,
    ) -> Result<Option<Box<dyn Sink + 'f>>, Error> {
        let binsparse = options.formats.get::<WriteOptions>().keeping(metadata);
        super::files::files_sink(files, output, &binsparse)
    }
}

fn binsparse(options: &mut ConvertOptions) -> &mut WriteOptions {
    options.formats.get_mut::<WriteOptions>()
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "binsparse-format",
        keyword: "binsparse_format",
        help: "Binsparse output format: CSR, CSC, COO, COOR, COOC, DCSR, DCSC, DMAT, DMATR, \
               DMATC, DVEC or CVEC (default: the input's when it is Binsparse, else CSR for CSR \
               matrices and DMAT for dense ones).",
        takes: Takes::Value,
        set: |o, v| {
            binsparse(o).format = Some(v.parse::<Layout>()?);
            Ok(())
        },
    },
    OptionSpec {
        flag: "index-type",
        keyword: "index_type",
        help: "Binsparse output: the type of pointer and index arrays (default u64).",
        takes: Takes::Value,
        set: |o, v| {
            binsparse(o).index_type = v.parse::<ValueType>()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "iso",
        keyword: "iso",
        help: "Binsparse output: store one iso[...] value when all stored values are equal.",
        takes: Takes::Flag,
        set: |o, v| {
            binsparse(o).iso = v.flag()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "bint8",
        keyword: "bint8",
        help: "Binsparse output: store u8 values that are all 0 or 1 as bint8.",
        takes: Takes::Flag,
        set: |o, v| {
            binsparse(o).bint8 = v.flag()?;
            Ok(())
        },
    },
    OptionSpec {
        flag: "binsparse-version",
        keyword: "binsparse_version",
        help: "Binsparse output: the descriptor's version, 0.1 (the spec's; default) or 0.1.0 \
               (which the Python reference needs).",
        takes: Takes::Value,
        set: |o, v| {
            binsparse(o).version = v.parse::<Version>()?;
            Ok(())
        },
    },
    #[cfg(feature = "zarr")]
    OptionSpec {
        flag: "zarr-format",
        keyword: "zarr_format",
        help: "Binsparse output in a Zarr group (.zarr): the Zarr format, 3 (zarr-python 3's \
               default; default) or 2 (what zarr-python 2 writes).",
        takes: Takes::Value,
        set: |o, v| {
            binsparse(o).zarr_version = v.parse::<super::zarr::ZarrVersion>()?;
            Ok(())
        },
    },
];
