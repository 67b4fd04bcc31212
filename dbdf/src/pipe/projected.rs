//! Projection: the columns of a table a user picks (`--columns`, Python's `columns=`), by
//! label or by position, in the order given. Sources that can read only some columns (Parquet,
//! Arrow IPC) take the picks themselves; any other source of frames is wrapped in
//! [`Projected`], which passes on the picked columns of each band.

use std::fmt;

use super::{Band, Cells, InputMetadata, Source};
use serde_daphne::{Column, Error, Header, Result};

/// The columns to read of a table (a projection), each a label or a position from 0, in the order the
/// output takes them. A pick that is one of the table's labels is that column; otherwise a
/// number is a position.
///
/// ```
/// use dbdf::pipe::Projection;
///
/// let columns: Projection = "price, 0,qty".parse()?;
/// assert_eq!(columns.positions(&["id", "qty", "price"])?, vec![2, 0, 1]);
/// assert!(columns.positions(&["id", "price"]).is_err());
/// # Ok::<(), serde_daphne::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection(Vec<String>);

impl Projection {
    /// The picks, each a label or a position.
    ///
    /// # Errors
    /// No picks, or an empty one.
    pub fn new<S: Into<String>>(picks: impl IntoIterator<Item = S>) -> Result<Projection> {
        let picks: Vec<String> = picks.into_iter().map(Into::into).collect();
        if picks.is_empty() || picks.iter().any(String::is_empty) {
            return Err(Error::invalid(
                "columns are picked by label or position, at least one, none empty",
            ));
        }
        Ok(Projection(picks))
    }

    /// The picks as given.
    pub fn picks(&self) -> &[String] {
        &self.0
    }

    /// The position of each pick among `labels`, in the order picked.
    ///
    /// # Errors
    /// [`serde_daphne::ErrorKind::InvalidValue`] for a pick that is neither a label nor a
    /// position within the table (naming the table's columns), or a column picked twice.
    pub fn positions(&self, labels: &[&str]) -> Result<Vec<usize>> {
        let mut positions = Vec::with_capacity(self.0.len());
        for pick in &self.0 {
            let at = labels
                .iter()
                .position(|l| l == pick)
                .or_else(|| pick.parse::<usize>().ok().filter(|&p| p < labels.len()))
                .ok_or_else(|| Error::invalid(format!("no column {pick:?}: {}", listed(labels))))?;
            if positions.contains(&at) {
                return Err(Error::invalid(format!(
                    "column {:?} is picked twice",
                    labels[at]
                )));
            }
            positions.push(at);
        }
        Ok(positions)
    }
}

/// The table's columns, for an error about a pick: the first few labels and how many.
fn listed(labels: &[&str]) -> String {
    const SHOWN: usize = 12;
    let shown: Vec<String> = labels
        .iter()
        .take(SHOWN)
        .map(|l| format!("{l:?}"))
        .collect();
    let more = match labels.len() > SHOWN {
        true => ", ...",
        false => "",
    };
    format!(
        "the table has {} columns ({}{more}; positions 0 to {})",
        labels.len(),
        shown.join(", "),
        labels.len().saturating_sub(1)
    )
}

/// Comma-separated labels or positions: `price,qty` or `0,3`.
impl std::str::FromStr for Projection {
    type Err = Error;

    fn from_str(text: &str) -> Result<Projection> {
        Projection::new(text.split(',').map(str::trim))
    }
}

impl fmt::Display for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

/// The header of the picked columns of a frame with `header`, and where they are in it.
///
/// # Errors
/// As [`Projection::positions`]; [`serde_daphne::ErrorKind::InvalidValue`] for a matrix.
pub fn project(header: &Header, columns: &Projection) -> Result<(Header, Vec<usize>)> {
    let Header::Frame { rows, columns: all } = header else {
        return Err(Error::invalid(format!(
            "columns are picked from a table (a frame); this input holds a {}: read a matrix's \
             columns with `dbdf slice`",
            header.data_type()
        )));
    };
    let labels: Vec<&str> = all.iter().map(|c| c.label.as_str()).collect();
    let positions = columns.positions(&labels)?;
    let picked: Vec<Column> = positions.iter().map(|&p| all[p].clone()).collect();
    let header = Header::Frame {
        rows: *rows,
        columns: picked,
    };
    Ok((header, positions))
}

/// A source of frames whose bands hold only the picked columns, in the order picked.
pub struct Projected {
    inner: Box<dyn Source>,
    headers: Vec<Header>,
    positions: Vec<Vec<usize>>,
}

impl Projected {
    /// `inner`, each of its frames cut to `columns`.
    ///
    /// # Errors
    /// As [`Projection::positions`]; an input holding a matrix.
    pub fn new(inner: Box<dyn Source>, columns: &Projection) -> Result<Projected> {
        let (headers, positions) = inner
            .headers()
            .iter()
            .map(|h| project(h, columns))
            .collect::<Result<(Vec<_>, Vec<_>)>>()?;
        Ok(Projected {
            inner,
            headers,
            positions,
        })
    }
}

impl Source for Projected {
    fn headers(&self) -> &[Header] {
        &self.headers
    }

    fn for_each_band(
        &mut self,
        index: usize,
        multiple: u64,
        each: &mut dyn FnMut(Band) -> Result<bool>,
    ) -> Result<()> {
        let positions = &self.positions[index];
        self.inner.for_each_band(index, multiple, &mut |band| {
            let Cells::Frame(columns) = band.cells else {
                return Err(Error::invalid("a frame's band without its columns"));
            };
            let mut columns: Vec<_> = columns.into_iter().map(Some).collect();
            let picked = positions
                .iter()
                .map(|&p| columns.get_mut(p).and_then(Option::take))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Error::invalid("a frame's band short of its columns"))?;
            each(Band {
                cols: picked.len() as u64,
                cells: Cells::Frame(picked),
                ..band
            })
        })
    }

    fn input_len(&self) -> u64 {
        self.inner.input_len()
    }

    fn metadata(&self) -> InputMetadata {
        self.inner.metadata()
    }

    fn reads_in_place(&self) -> bool {
        self.inner.reads_in_place()
    }
}
