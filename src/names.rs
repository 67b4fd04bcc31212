//! The names by which people (the `dbdf` tool's flags, the Python package's arguments) choose
//! dialects, block policies, value types and data types: each parsed here and nowhere else,
//! through `FromStr`, and printed through `Display`.

use std::fmt;
use std::str::FromStr;

use crate::codes::{DataType, ValueType};
use crate::error::{Error, ErrorDetails};
use crate::options::{BlockPolicy, Dialect};

/// The value in `table` whose name is `text` (ignoring ASCII case); otherwise an error
/// that lists the first name of each value: `"x" is not a dialect: expected spec or daphne`.
///
/// # Errors
/// [`crate::ErrorKind::InvalidValue`] for a name that is not in the table.
pub fn parse_name<T: Copy + PartialEq>(
    text: &str,
    what: &str,
    table: &[(&str, T)],
) -> Result<T, Error> {
    if let Some(&(_, value)) = table
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(text))
    {
        return Ok(value);
    }
    let mut names: Vec<&str> = Vec::new();
    for (name, value) in table {
        if !table
            .iter()
            .any(|(other, v)| v == value && names.contains(other))
        {
            names.push(name);
        }
    }
    let expected = match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(ErrorDetails::InvalidValue {
        path: String::new(),
        message: format!("{text:?} is not {what}: expected {expected}"),
    }
    .into())
}

const DIALECTS: &[(&str, Dialect)] = &[
    ("spec", Dialect::Spec),
    ("daphne", Dialect::Runtime),
    ("runtime", Dialect::Runtime),
];

/// `spec`, or `daphne` (also `runtime`), for [`Dialect::Spec`] and [`Dialect::Runtime`].
impl FromStr for Dialect {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        parse_name(text, "a dialect", DIALECTS)
    }
}

/// `spec` or `daphne`.
impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(first_name(DIALECTS, self))
    }
}

/// The first name `table` gives `value`: its canonical one, which `Display` prints.
pub fn first_name<'a, T: PartialEq>(table: &[(&'a str, T)], value: &T) -> &'a str {
    table
        .iter()
        .find(|(_, v)| v == value)
        .map(|(name, _)| *name)
        .expect("every value is named")
}

const BLOCK_POLICIES: &[(&str, BlockPolicy)] = &[
    ("auto", BlockPolicy::Auto),
    ("smallest", BlockPolicy::Smallest),
    ("dense", BlockPolicy::Dense),
    ("sparse", BlockPolicy::Sparse),
    ("ultra-sparse", BlockPolicy::UltraSparse),
    ("ultra_sparse", BlockPolicy::UltraSparse),
];

/// `auto`, `smallest`, `dense`, `sparse` or `ultra-sparse` (also `ultra_sparse`).
impl FromStr for BlockPolicy {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        parse_name(text, "a block policy", BLOCK_POLICIES)
    }
}

impl fmt::Display for BlockPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(first_name(BLOCK_POLICIES, self))
    }
}

/// The Rust names `u8` to `f64`, as [`ValueType`]'s `Display` prints them.
impl FromStr for ValueType {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let table = ValueType::ALL.map(|vt| (vt.name(), vt));
        parse_name(text, "a value type", &table)
    }
}

/// `dense` or `DenseMatrix`, `csr` or `CSRMatrix`, `frame` or `Frame`.
impl FromStr for DataType {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let table = [
            ("dense", DataType::DenseMatrix),
            ("csr", DataType::CsrMatrix),
            ("frame", DataType::Frame),
            ("DenseMatrix", DataType::DenseMatrix),
            ("CSRMatrix", DataType::CsrMatrix),
        ];
        parse_name(text, "a data type", &table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn names_parse_and_print_back() {
        for policy in [
            BlockPolicy::Auto,
            BlockPolicy::Smallest,
            BlockPolicy::Dense,
            BlockPolicy::Sparse,
            BlockPolicy::UltraSparse,
        ] {
            assert_eq!(policy.to_string().parse::<BlockPolicy>().unwrap(), policy);
        }
        for vt in ValueType::ALL {
            assert_eq!(vt.to_string().parse::<ValueType>().unwrap(), vt);
        }
        for dialect in [Dialect::Spec, Dialect::Runtime] {
            assert_eq!(dialect.to_string().parse::<Dialect>().unwrap(), dialect);
        }
        for dt in [DataType::DenseMatrix, DataType::CsrMatrix, DataType::Frame] {
            assert_eq!(dt.to_string().parse::<DataType>().unwrap(), dt);
        }
        assert_eq!("Daphne".parse::<Dialect>().unwrap(), Dialect::Runtime);
        assert_eq!(
            "ultra_sparse".parse::<BlockPolicy>().unwrap(),
            BlockPolicy::UltraSparse
        );
        assert_eq!("csr".parse::<DataType>().unwrap(), DataType::CsrMatrix);
    }

    #[test]
    fn unknown_names_list_what_is_known() {
        let err = "si16".parse::<ValueType>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidValue);
        assert_eq!(
            err.to_string(),
            "\"si16\" is not a value type: expected u8, u16, u32, u64, i8, i16, i32, i64, f32 or f64"
        );
        assert_eq!(
            "both".parse::<Dialect>().unwrap_err().to_string(),
            "\"both\" is not a dialect: expected spec or daphne"
        );
        assert_eq!(
            "coo".parse::<BlockPolicy>().unwrap_err().to_string(),
            "\"coo\" is not a block policy: expected auto, smallest, dense, sparse or ultra-sparse"
        );
    }
}
