//! numpy's `.npz` archives of several arrays (`numpy.savez`, `numpy.savez_compressed`):
//! each `.npy` member an object, in the archive's order (matrices; record arrays as frames).
//!
//! Names: a `.dbdf` file has no names for its objects, so they are lost there; between
//! archives (`.npz` to `.npz`) they are kept, and an archive written from objects without
//! names calls them `arr_0`, `arr_1`, ... as `numpy.savez` calls positional arrays.
//!
//! On the pipe, stored members (`numpy.savez`) are read in place, any window at positions in
//! the archive (each member's CRC-32 checked when the archive is opened); deflated ones
//! (`numpy.savez_compressed`) are inflated a band of rows at a time as each pass reaches
//! them (CRC-32 checked at the end of the pass), but for Fortran-order matrices, inflated
//! whole.
//!
//! Which kind of `.npz` a file is, is told from its members: a Binsparse
//! archive holds `binsparse.npy`, a scipy sparse one `format.npy` and `shape.npy`.

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::driver::{ConvertOptions, Driver, Format, Input, OptionSpec, Stored, Takes};
use crate::input::Foreign;
use crate::npy::{self, NpySource};
use crate::pipe::{
    band_rows, row_bytes, Band, Collect, Held, InputMetadata, Sink, Source, Windows, BAND_BYTES,
};
use crate::zip::{check_stored_crc, entries, Archive, Entry, FileArchive, Inflating, ZipWriter};
use serde_daphne::lowlevel::zeroed_vec;
use serde_daphne::Header;
use serde_daphne::Options;
use serde_daphne::ReadAt;
use serde_daphne::{Object, Result};

const NPZ: Foreign = Foreign("NumPy .npz");

/// What a `.npz` archive holds, told from its members' names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A Binsparse matrix (`binsparse.npy`).
    Binsparse,
    /// A scipy sparse matrix (`format.npy`, `shape.npy`).
    Scipy,
    /// Arrays, each an object.
    Arrays,
}

impl Kind {
    /// The kind of the archive at `path` (its central directory read, not its members), or
    /// `None` for a file that is not a zip archive.
    pub(crate) fn of(path: &Path) -> Option<Kind> {
        Kind::of_archive(&FileArchive::open(path).ok()?)
    }

    /// [`Kind::of`] an archive read at positions (its end, then its central directory).
    pub(crate) fn of_archive(archive: &FileArchive) -> Option<Kind> {
        let entries = entries(archive).ok()?;
        let has = |name: &str| entries.iter().any(|e| e.name == name);
        Some(match () {
            _ if has("binsparse.npy") => Kind::Binsparse,
            _ if has("format.npy") && has("shape.npy") => Kind::Scipy,
            _ => Kind::Arrays,
        })
    }
}

/// How an archive is laid out. Plain data, as every format's options: set the
/// fields that differ from the default, `WriteOptions { compressed: true,
/// ..Default::default() }`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Deflated members, as `numpy.savez_compressed` writes them (default: stored, as
    /// `numpy.savez`).
    pub compressed: bool,
    /// The arrays' names, in order, for the sink: objects beyond them are called `arr_k`
    /// (`k` their position), as `numpy.savez` calls positional arrays. Without names, an
    /// input archive's are kept ([`InputMetadata::names`]).
    pub names: Vec<String>,
}

fn array_name(member: &str) -> Result<String> {
    member
        .strip_suffix(".npy")
        .map(str::to_owned)
        .ok_or_else(|| NPZ.error(format!("the member {member:?} is not a .npy array")))
}

/// The archive at `path` as a source of the pipe: an object per member, in order.
///
/// # Errors
/// I/O errors; a malformed archive or member (its headers and CRC-32s checked).
pub(crate) fn source(path: impl AsRef<Path>) -> Result<Box<dyn crate::pipe::Source>> {
    Ok(Box::new(NpzSource::open(path.as_ref())?))
}

/// The arrays of a numpy archive: stored members read in place, deflated ones held.
pub(crate) struct NpzSource {
    arrays: Vec<Member>,
    headers: Vec<Header>,
    names: Vec<String>,
    input_len: u64,
}

enum Member {
    InPlace(NpySource),
    /// A deflated array of rows in order, inflated a band at a time on each pass.
    Deflated(Deflated),
    Held(Held),
}

/// A deflated member holding a C-order array (or a record array): its rows come in order.
struct Deflated {
    file: Arc<dyn ReadAt>,
    entry: Entry,
    header: npy::NpyHeader,
    headers: [Header; 1],
}

impl Source for Deflated {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        _: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let header = &self.headers[0];
        let (rows, cols) = header.shape();
        let row_bytes = row_bytes(header, None);
        let step = band_rows(header, row_bytes, multiple, BAND_BYTES);
        let mut inflating = Inflating::new(&self.file, self.entry.clone())?;
        let mut skip = vec![0u8; self.header.data_offset];
        inflating.read_exact(&mut skip)?;
        let record = self.header.descr.item_size() as u64
            * match header {
                Header::Frame { .. } => 1,
                _ => cols,
            };
        for r0 in (0..rows).step_by(step as usize) {
            let r1 = (r0 + step).min(rows);
            let mut bytes = zeroed_vec::<u8>(((r1 - r0) * record) as usize)?;
            inflating.read_exact(&mut bytes)?;
            let band = npy::band_of_bytes(&self.header, header, r0..r1, &bytes)
                .map_err(|e| NPZ.error(format!("{}: {}", inflating.name(), e.relocated(None))))?;
            if !each(band)? {
                return Ok(());
            }
        }
        inflating.finish()
    }

    fn input_len(&self) -> u64 {
        0
    }
}

impl NpzSource {
    /// Opens the archive at `path` (see [`source`]).
    ///
    /// # Errors
    /// As [`read`].
    pub(crate) fn open(path: &Path) -> Result<NpzSource> {
        NpzSource::open_at(Arc::new(std::fs::File::open(path)?))
    }

    /// [`NpzSource::open`] for an archive read at positions (an object's ranges): its end
    /// and central directory, each member's header, then the rows the bands need (a
    /// deflated member streamed).
    ///
    /// # Errors
    /// As [`read`]; request errors.
    pub(crate) fn open_at(file: Arc<dyn ReadAt>) -> Result<NpzSource> {
        let archive = FileArchive::open_at(file)?;
        let input_len = archive.len() as u64;
        let mut arrays = Vec::new();
        let mut names = Vec::new();
        for entry in entries(&archive)? {
            let name = array_name(&entry.name)?;
            let member = match entry.method {
                0 => {
                    check_stored_crc(&archive.file, &entry)?;
                    let head = archive
                        .read(entry.start, (entry.size as usize).min(64 << 10))
                        .ok_or_else(|| NPZ.at(entry.start, "a member runs past the archive"))?;
                    let header = npy::parse_header(&head)
                        .map_err(|e| e.relocated(Some(entry.start as u64)))?;
                    header.check_data_len(entry.size - header.data_offset as u64)?;
                    let file = Arc::clone(&archive.file);
                    Member::InPlace(NpySource::in_member(file, header, entry.start as u64)?)
                }
                _ => deflated(&archive, entry, input_len, &name)?,
            };
            arrays.push(member);
            names.push(name);
        }
        if arrays.is_empty() {
            return Err(NPZ.error("the archive holds no arrays"));
        }
        let headers = arrays
            .iter()
            .map(|m| m.source().headers()[0].clone())
            .collect();
        Ok(NpzSource {
            arrays,
            headers,
            names,
            input_len,
        })
    }
}

/// The `.npy` header of a deflated member, from its first bytes inflated, its data's length
/// checked against the member's.
///
/// # Errors
/// A malformed header or member.
pub(crate) fn deflated_header(file: &Arc<dyn ReadAt>, entry: &Entry) -> Result<npy::NpyHeader> {
    let mut inflating = Inflating::new(file, entry.clone())?;
    let mut head = vec![0u8; npy::PREAMBLE_LEN.min(entry.size as usize)];
    inflating.read_exact(&mut head)?;
    let len = npy::header_len(&head)?;
    if len as u64 > entry.size {
        return Err(NPZ.error("the header runs past the array"));
    }
    let mut rest = vec![0u8; len - head.len()];
    inflating.read_exact(&mut rest)?;
    head.extend_from_slice(&rest);
    let header = npy::parse_header(&head)?;
    header.check_data_len(entry.size - len as u64)?;
    Ok(header)
}

/// A deflated member: streamed where its rows come in order, else inflated whole.
fn deflated(archive: &FileArchive, entry: Entry, input_len: u64, name: &str) -> Result<Member> {
    let named = |e: serde_daphne::Error| NPZ.error(format!("{name}: {}", e.relocated(None)));
    let header = deflated_header(&archive.file, &entry).map_err(named)?;
    let object = npy::object_header(&header).map_err(named)?;
    let column_major =
        header.fortran && header.shape.len() == 2 && header.shape.iter().all(|&d| d > 1);
    if !column_major {
        let file = Arc::clone(&archive.file);
        return Ok(Member::Deflated(Deflated {
            file,
            entry,
            header,
            headers: [object],
        }));
    }
    // Columns first: inflated whole.
    let bytes = archive
        .read(entry.start, entry.compressed as usize)
        .ok_or_else(|| NPZ.at(entry.start, "a member runs past the archive"))?;
    let limit = (input_len, Options::new().max_alloc);
    let inflated = crate::zip::inflate(&entry, &bytes, limit)?;
    let object = npy::from_slice(&inflated).map_err(named)?;
    Ok(Member::Held(Held::new(
        vec![object],
        0,
        InputMetadata::default(),
    )?))
}

impl Member {
    fn source(&self) -> &dyn Source {
        match self {
            Member::InPlace(s) => s,
            Member::Deflated(s) => s,
            Member::Held(s) => s,
        }
    }

    fn source_mut(&mut self) -> &mut dyn Source {
        match self {
            Member::InPlace(s) => s,
            Member::Deflated(s) => s,
            Member::Held(s) => s,
        }
    }
}

impl Source for NpzSource {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        self.arrays[index]
            .source_mut()
            .for_each_band(0, multiple, each)
    }

    /// Windows where no member is streamed from its deflated bytes (whose rows come only in
    /// order).
    fn windows(&self) -> Option<&dyn Windows> {
        let streamed = self.arrays.iter().any(|m| matches!(m, Member::Deflated(_)));
        (!streamed).then_some(self as &dyn Windows)
    }

    fn input_len(&self) -> u64 {
        self.input_len
    }

    fn metadata(&self) -> InputMetadata {
        InputMetadata {
            names: self.names.clone(),
            ..InputMetadata::default()
        }
    }
}

impl Windows for NpzSource {
    fn window(&self, index: usize, rows: Range<u64>, cols: Range<u64>) -> Result<Band> {
        match self.arrays[index].source().windows() {
            Some(windows) => windows.window(0, rows, cols),
            None => Err(serde_daphne::Error::invalid(
                "a deflated member's rows come only in order (no windows)",
            )),
        }
    }
}

/// Writes named objects as a `.npz` archive: each a `.npy` member (as the `npy` format writes it)
/// named `NAME.npy`, stored or deflated.
///
/// # Errors
/// [`serde_daphne::ErrorKind::InvalidValue`] for a name given twice; I/O errors.
fn to_writer<W: Write>(out: W, objects: &[(String, Object)], options: &WriteOptions) -> Result<()> {
    let mut zip = ZipWriter::new(out);
    for (k, (name, object)) in objects.iter().enumerate() {
        if objects[..k].iter().any(|(other, _)| other == name) {
            return Err(serde_daphne::Error::invalid(format!(
                "the name {name:?} is given to two arrays"
            )));
        }
        let bytes = npy::to_vec(object)?;
        let member = format!("{name}.npy");
        match options.compressed {
            true => zip.deflated(&member, &bytes)?,
            false => zip.member(&member, &[&bytes])?,
        }
    }
    zip.finish()?;
    Ok(())
}

/// A sink of the pipe writing every object to an archive at `out`, named by
/// [`WriteOptions::names`] (held whole: a member's size comes before its bytes).
pub(crate) fn sink<'w>(out: &'w mut dyn Write, options: &WriteOptions) -> Collect<'w> {
    let options = options.clone();
    Collect::new(
        None,
        move |objects: Vec<Object>, metadata: InputMetadata| {
            let asked = match options.names.is_empty() {
                true => &metadata.names,
                false => &options.names,
            };
            let named: Vec<(String, Object)> = asked
                .iter()
                .cloned()
                .chain((asked.len()..).map(|k| format!("arr_{k}")))
                .zip(objects)
                .collect();
            to_writer(out, &named, &options)?;
            Ok(Vec::new())
        },
    )
}

/// numpy's `.npz` archives' entry in the registry.
pub(crate) struct Npz;

impl Driver for Npz {
    fn names(&self) -> &'static [&'static str] {
        &["npz"]
    }

    fn description(&self) -> &'static str {
        "numpy.savez archives, an object per array (.npz, told by its members)"
    }

    /// A `.npz` archive of arrays that are neither Binsparse's nor scipy's.
    fn identify(&self, path: &Path, _: Option<Format>) -> bool {
        has_extension(path) && Kind::of(path) == Some(Kind::Arrays)
    }

    fn options(&self) -> &'static [OptionSpec] {
        COMPRESSED
    }

    fn open(&self, path: &Path, _: &ConvertOptions) -> Result<Box<dyn Source>> {
        source(path)
    }

    fn identify_at(&self, input: &Input, name: &Path) -> bool {
        let archive = || FileArchive::open_at(Arc::clone(&input.data)).ok();
        has_extension(name) && archive().and_then(|a| Kind::of_archive(&a)) == Some(Kind::Arrays)
    }

    fn stored(&self) -> Stored {
        Stored::Ranges
    }

    fn open_at(&self, input: Input, _: &ConvertOptions) -> Result<Box<dyn Source>> {
        Ok(Box::new(NpzSource::open_at(input.data)?))
    }

    fn sink<'w>(
        &self,
        out: &'w mut (dyn Write + Send),
        options: &ConvertOptions,
        _: &InputMetadata,
    ) -> Result<Box<dyn Sink + 'w>> {
        Ok(Box::new(sink(out, &options.formats.get::<WriteOptions>())))
    }
}

/// Whether `path` ends in `.npz`, in any case.
pub(crate) fn has_extension(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npz"))
}

/// `--compressed`, which scipy's archives take too.
const COMPRESSED: &[OptionSpec] = &[OptionSpec {
    flag: "compressed",
    keyword: "compressed",
    help: "scipy and npz output: deflated members (save_npz's default, savez_compressed).",
    takes: Takes::Flag,
    set: |o, v| {
        o.formats.get_mut::<WriteOptions>().compressed = v.flag()?;
        Ok(())
    },
}];
