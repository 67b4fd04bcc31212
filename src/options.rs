//! Writer and reader choices, and the dialects they choose between.

use crate::error::ErrorDetails;
use crate::error::Result;

/// Which byte layout and code table an object uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Dialect {
    /// The published specification (`doc/BinaryFormat.md`): this crate's default for writing.
    Spec,
    /// What DAPHNE's C++ runtime writes and reads (runtime value type codes, CSR as three
    /// arrays, frames without block headers, scalars as data type 4, `.meta` sidecars).
    Runtime,
}

/// Checks that a read taking `needed` bytes of memory stays within [`Options::max_alloc`]
/// beyond the `input` bytes it is read from: the one rule every reader (DAPHNE files and
/// the neighbouring formats) applies before allocating.
///
/// # Errors
/// [`crate::ErrorKind::AllocationLimit`] at `offset`.
pub fn check_alloc(offset: u64, needed: u128, input: u64, max_alloc: u64) -> Result<()> {
    if needed > u128::from(input) + u128::from(max_alloc) {
        return Err(ErrorDetails::AllocationLimit {
            offset,
            bytes: needed,
            limit: max_alloc,
        }
        .into());
    }
    Ok(())
}

/// How the writer picks each block's type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockPolicy {
    /// Per block, the encoding its source suggests, found without scanning dense data: an
    /// all-zero block is empty; a block of a dense source (`Array2`, rows, frame columns) is
    /// dense; a block of a sparse source (`CsMat`) is the smallest of the four encodings, which
    /// its non-zero count alone decides.
    #[default]
    Auto,
    /// Per block, the smallest encoding of empty, dense, sparse (CSR) and ultra-sparse (COO);
    /// on a tie the earlier in that order. For dense sources this counts non-zeros (up to about
    /// two thirds of the block) before writing, so it is slower than `Auto` there.
    Smallest,
    /// Every block dense.
    Dense,
    /// Every block sparse (CSR).
    Sparse,
    /// Every block ultra-sparse (COO); a block with more than `u32::MAX` non-zeros is an error.
    UltraSparse,
}

/// Options for writing and reading. Plain data: set the fields that differ from the
/// defaults ([`Options::new`], usable in `const` items) with struct update syntax.
///
/// ```
/// use serde_daphne::{BlockPolicy, Options};
///
/// let options = Options {
///     block_policy: BlockPolicy::Sparse,
///     tile: Some((1000, 1000)),
///     narrow: true,
///     ..Options::new()
/// };
/// let bytes = options.to_vec(&vec![vec![0u64, 7], vec![300, 0]])?;
/// let back: Vec<Vec<u64>> = serde_daphne::from_slice(&bytes)?;
/// assert_eq!(back, vec![vec![0, 7], vec![300, 0]]);
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// How each block's type is chosen.
    pub block_policy: BlockPolicy,
    /// Splits matrices into tiles of at most `rows x cols` (as SystemDS does with 1000 x 1000);
    /// frames are split into tiles of `rows` rows per column. Zeros count as 1. Objects
    /// without cells stay one block. `None` (the default): one block per object, as DAPHNE
    /// itself writes.
    pub tile: Option<(u32, u32)>,
    /// Stores each block in the smallest value type that holds all its values exactly;
    /// readers widen back to the requested Rust type.
    pub narrow: bool,
    /// The most bytes a reader may consume from an `io::Read` (default: no limit). Inputs
    /// that claim more fail with [`crate::ErrorKind::LimitExceeded`] before reading it.
    pub max_bytes: u64,
    /// The most memory a typed read (into `Array2`, `CsMat`, a frame's records, a `Vec`) may
    /// take beyond the bytes the object occupies in the input; default 4 GiB. A few bytes
    /// can describe a huge all-zero matrix (one empty block), so this keeps a small hostile
    /// file from demanding gigabytes; raise it to read such matrices on purpose. Exceeding it
    /// is [`crate::ErrorKind::AllocationLimit`].
    pub max_alloc: u64,
    /// Writes, and reads, in `dialect` only. By default writers use [`Dialect::Spec`] and
    /// readers tell each object's dialect from its bytes.
    ///
    /// In [`Dialect::Runtime`] each data type has one layout, so a block policy other than
    /// [`BlockPolicy::Auto`], tiling and narrowing cannot be expressed: writing with them is
    /// [`crate::ErrorKind::NotInDialect`] rather than a silent change. u16/i16 values and
    /// dimensions of 2^32 or more are errors too.
    pub dialect: Option<Dialect>,
    /// Whether [`crate::Options::to_file`] syncs the file to disk before renaming it into place
    /// (default: yes). Without the sync a file is still replaced atomically for readers and
    /// survives a crash of the process, but not a power loss or a crash of the system: right for
    /// scratch and eviction files, which skip the wait for the disk.
    pub sync: bool,
    /// Whether runtime-dialect frames refuse labels that overflow DAPHNE's reader (default:
    /// yes). DAPHNE's frame reader copies each label's bytes into the memory of a
    /// `std::string` object: a label longer than 32 bytes times the number of columns from it
    /// to the last writes past its heap array and crashes DAPHNE (and DAPHNE drops the labels
    /// it reads anyway). `false` writes such labels regardless, for readers other than DAPHNE.
    pub guard_daphne_labels: bool,
    /// Whether [`crate::DbdfFile::open`] maps the file into memory, as safetensors'
    /// `safe_open` does (default: no). Plain reads fill all of a block's rows in a window
    /// with one vectored read (`readv`), which measured faster than copying them out of a
    /// map, keep resident memory at what is read, and cannot
    /// crash: if another process
    /// truncates a mapped file while it is open, touching the lost pages raises `SIGBUS`,
    /// as with every memory-mapped reader. Every size is checked against the file's length
    /// before use either way, so no file's contents can make a read go astray.
    pub memory_map: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options::new()
    }
}

impl Options {
    /// The defaults: automatic block types, one block per object (split only where a
    /// dimension exceeds `u32::MAX`), no narrowing, no read limit, 4 GiB of typed-read
    /// allocation beyond the input.
    pub const fn new() -> Self {
        Options {
            block_policy: BlockPolicy::Auto,
            tile: None,
            narrow: false,
            sync: true,
            max_bytes: u64::MAX,
            max_alloc: 4 << 30,
            dialect: None,
            guard_daphne_labels: true,
            memory_map: false,
        }
    }

    pub(crate) fn writes_runtime(&self) -> bool {
        matches!(self.dialect, Some(Dialect::Runtime))
    }

    /// Whether writers use the runtime dialect; an error when these options also ask for
    /// what that dialect cannot express (one block per object, of the object's value type).
    ///
    /// # Errors
    /// [`crate::ErrorKind::NotInDialect`] for a block policy other than `Auto`, tiles, or narrowing.
    pub(crate) fn runtime_writer(&self) -> Result<bool> {
        if !self.writes_runtime() {
            return Ok(false);
        }
        let refuse = |what: &str, reason| {
            Err(ErrorDetails::NotInDialect {
                what: what.into(),
                reason,
            }
            .into())
        };
        if self.block_policy != BlockPolicy::Auto {
            return refuse(
                "a block policy (Options::block_policy, dbdf --block)",
                "DAPHNE writes and reads one dense or CSR block per object, as its data type says",
            );
        }
        if self.tile.is_some() {
            return refuse(
                "tiles (Options::tile, dbdf --tile)",
                "DAPHNE's reader reads one block per object",
            );
        }
        if self.narrow {
            return refuse(
                "narrowed blocks (Options::narrow, dbdf --narrow)",
                "a runtime object has one value type; convert the values instead (dbdf --value-type)",
            );
        }
        Ok(true)
    }
}
