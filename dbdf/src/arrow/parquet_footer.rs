//! Parquet footers: row groups spliced into a footer written without them (for
//! [`super::parquet_writer`]), and footers that pyarrow reads and the Parquet crate (60)
//! misreads, mended as pyarrow reads them. Both mends are for the files of pre-release
//! parquet-mr 1.12 builds (Dremio's, `parquet-testing`'s `dict-page-offset-zero.parquet`):
//! - **Mistyped fields.** The crate reads a field by its number without checking the type
//!   written, so one mistyped field derails the rest of the footer, where pyarrow's reader
//!   skips the field. Those builds wrote a list as `ColumnMetaData` field 15, which the format
//!   defines as an `i32` (`bloom_filter_length`). The structs on the way to the column
//!   chunks' metadata are checked, with the types the format's `parquet.thrift` gives their
//!   fields; a field of another type is removed and the later fields' headers written again.
//! - **Dictionary page offsets of 0.** The crate reads a column chunk from its dictionary
//!   page offset whenever there is one; pyarrow only from an offset after 0 and before the
//!   first data page. Those builds wrote 0 for chunks without a dictionary page.

use parquet::errors::Result as ParquetResult;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

/// The metadata with the dictionary page offsets that pyarrow does not read from removed
/// (`None` when there are none): an offset counts when it lies after 0 and before the
/// chunk's first data page (Arrow C++'s `ComputeColumnChunkRange`).
///
/// # Errors
/// The Parquet crate's, building the metadata again.
pub(super) fn without_stray_dictionary_offsets(
    metadata: &ParquetMetaData,
) -> ParquetResult<Option<ParquetMetaData>> {
    let stray = |c: &ColumnChunkMetaData| {
        c.dictionary_page_offset()
            .is_some_and(|at| at <= 0 || at >= c.data_page_offset())
    };
    let chunks = || metadata.row_groups().iter().flat_map(|g| g.columns());
    if !chunks().any(stray) {
        return Ok(None);
    }
    let mut builder = metadata.clone().into_builder();
    let groups = builder
        .take_row_groups()
        .into_iter()
        .map(|group| {
            let columns = group
                .columns()
                .iter()
                .map(|c| match stray(c) {
                    true => c
                        .clone()
                        .into_builder()
                        .set_dictionary_page_offset(None)
                        .build(),
                    false => Ok(c.clone()),
                })
                .collect::<ParquetResult<Vec<_>>>()?;
            group.into_builder().set_column_metadata(columns).build()
        })
        .collect::<ParquetResult<Vec<_>>>()?;
    Ok(Some(builder.set_row_groups(groups).build()))
}

/// Thrift compact protocol's wire types.
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// Structs are nested deeper than this in no footer the format describes.
const MAX_DEPTH: usize = 32;

/// The structs whose fields are checked.
#[derive(Clone, Copy)]
enum Kind {
    FileMetaData,
    RowGroup,
    ColumnChunk,
    ColumnMetaData,
}

impl Kind {
    /// A field's wire type in the format, and the kind of the struct it is or lists.
    fn field(self, id: i16) -> Option<(u8, Option<Kind>)> {
        use Kind::*;
        let wire = match (self, id) {
            (FileMetaData, 4) => return Some((LIST, Some(RowGroup))),
            (RowGroup, 1) => return Some((LIST, Some(ColumnChunk))),
            (ColumnChunk, 3) => return Some((STRUCT, Some(ColumnMetaData))),
            (FileMetaData, 1) => I32,
            (FileMetaData, 2 | 5 | 7) => LIST,
            (FileMetaData, 3) => I64,
            (FileMetaData, 6 | 9) => BINARY,
            (FileMetaData, 8) => STRUCT,
            (RowGroup, 2 | 3 | 5 | 6) => I64,
            (RowGroup, 4) => LIST,
            (RowGroup, 7) => I16,
            (ColumnChunk, 1 | 9) => BINARY,
            (ColumnChunk, 2 | 4 | 6) => I64,
            (ColumnChunk, 5 | 7) => I32,
            (ColumnChunk, 8) => STRUCT,
            (ColumnMetaData, 1 | 4 | 15) => I32,
            (ColumnMetaData, 2 | 3 | 8 | 13) => LIST,
            (ColumnMetaData, 5..=7 | 9..=11 | 14) => I64,
            (ColumnMetaData, 12 | 16 | 17) => STRUCT,
            _ => return None,
        };
        Some((wire, None))
    }
}

/// The footer (its Thrift `FileMetaData`) with its mistyped fields removed, or `None` when
/// it has none.
///
/// # Errors
/// The footer ends early or nests too deep: a message naming the byte.
pub(super) fn without_mistyped_fields(footer: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut mend = Mend::over(footer);
    mend.out.reserve(footer.len());
    mend.copy_struct(Some(Kind::FileMetaData), 0)?;
    Ok((mend.removed > 0).then_some(mend.out))
}

struct Mend<'a> {
    input: &'a [u8],
    at: usize,
    out: Vec<u8>,
    removed: usize,
}

impl<'a> Mend<'a> {
    fn over(input: &'a [u8]) -> Self {
        Mend {
            input,
            at: 0,
            out: Vec::new(),
            removed: 0,
        }
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .input
            .get(self.at)
            .ok_or_else(|| format!("the footer ends at byte {} inside a Thrift value", self.at))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!(
            "a varint longer than 10 bytes ends at byte {}",
            self.at
        ))
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&end| end <= self.input.len())
            .ok_or_else(|| format!("a value at byte {} runs past the footer", self.at))?;
        self.at = end;
        Ok(())
    }

    /// A field's number and wire type (`last` the number of the field before), or `None` at
    /// the struct's stop byte.
    fn field_header(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>, String> {
        let header = self.byte()?;
        if header == 0 {
            return Ok(None);
        }
        let id = match header >> 4 {
            0 => {
                let zigzag = self.varint()?;
                i16::try_from((zigzag >> 1) as i64 ^ -((zigzag & 1) as i64))
                    .map_err(|_| format!("a field number out of range at byte {}", self.at))?
            }
            delta => last.wrapping_add(i16::from(delta)),
        };
        *last = id;
        Ok(Some((id, header & 0x0f)))
    }

    /// Copies a struct (its fields and stop byte), checking its fields when its kind is known.
    fn copy_struct(&mut self, kind: Option<Kind>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("structs nest too deep at byte {}", self.at));
        }
        let (mut last_read, mut last_written) = (0i16, 0i16);
        loop {
            let Some((id, wire)) = self.field_header(&mut last_read)? else {
                self.out.push(0);
                return Ok(());
            };
            let expected = kind.and_then(|k| k.field(id));
            // Booleans carry their value in the wire type: either is a boolean.
            let boolean = |w| w == TRUE || w == FALSE;
            let start = self.at;
            match expected {
                Some((want, _)) if want != wire && !(boolean(want) && boolean(wire)) => {
                    self.skip_value(wire, depth)?;
                    self.removed += 1;
                    continue;
                }
                _ => {}
            }
            push_field_header(&mut self.out, id, wire, &mut last_written);
            match expected {
                Some((STRUCT, Some(inner))) => self.copy_struct(Some(inner), depth + 1)?,
                Some((LIST, Some(inner))) => self.copy_list_of(inner, depth + 1)?,
                _ => {
                    self.skip_value(wire, depth)?;
                    self.out.extend_from_slice(&self.input[start..self.at]);
                }
            }
        }
    }

    /// Copies a list of structs of a kind (any other list as it is).
    fn copy_list_of(&mut self, kind: Kind, depth: usize) -> Result<(), String> {
        let start = self.at;
        let (len, element) = self.list_header()?;
        self.out.extend_from_slice(&self.input[start..self.at]);
        for _ in 0..len {
            if element == STRUCT {
                self.copy_struct(Some(kind), depth)?;
            } else {
                let from = self.at;
                self.skip_element(element, depth)?;
                self.out.extend_from_slice(&self.input[from..self.at]);
            }
        }
        Ok(())
    }

    fn list_header(&mut self) -> Result<(u64, u8), String> {
        let header = self.byte()?;
        let len = match header >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        // Every element takes a byte at least (an empty struct its stop byte).
        if len > (self.input.len() - self.at) as u64 {
            return Err(format!(
                "a list of {len} elements at byte {} runs past the footer",
                self.at
            ));
        }
        Ok((len, header & 0x0f))
    }

    /// Moves past an element of a list, set or map (a boolean there takes a byte).
    fn skip_element(&mut self, wire: u8, depth: usize) -> Result<(), String> {
        match wire {
            TRUE | FALSE => self.skip(1),
            _ => self.skip_value(wire, depth),
        }
    }

    /// Moves past a value of a wire type (a field's: a boolean's value is in its type).
    fn skip_value(&mut self, wire: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nest too deep at byte {}", self.at));
        }
        match wire {
            TRUE | FALSE => Ok(()),
            BYTE => self.skip(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.skip(8),
            BINARY => {
                let n = self.varint()?;
                self.skip(n)
            }
            LIST | SET => {
                let (len, element) = self.list_header()?;
                for _ in 0..len {
                    self.skip_element(element, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let len = self.varint()?;
                if len == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                for _ in 0..len {
                    self.skip_element(types >> 4, depth + 1)?;
                    self.skip_element(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            STRUCT => {
                let out = self.out.len();
                self.copy_struct(None, depth + 1)?;
                self.out.truncate(out);
                Ok(())
            }
            _ => Err(format!(
                "an unknown Thrift type {wire} before byte {}",
                self.at
            )),
        }
    }
}

/// The bytes of the one `RowGroup` of a footer (Thrift `FileMetaData`) of one row group,
/// its ordinal (field 7) set to `ordinal`, or left out.
///
/// # Errors
/// The footer holds no single row group, ends early or nests too deep.
pub(super) fn row_group_of(footer: &[u8], ordinal: Option<i16>) -> Result<Vec<u8>, String> {
    let mut walk = Mend::over(footer);
    let mut last = 0;
    while let Some((id, wire)) = walk.field_header(&mut last)? {
        if (id, wire) != (4, LIST) {
            walk.skip_value(wire, 0)?;
            continue;
        }
        if walk.list_header()? != (1, STRUCT) {
            break;
        }
        let (mut out, mut last_read, mut last_written) = (Vec::new(), 0, 0);
        while let Some((id, wire)) = walk.field_header(&mut last_read)? {
            let value = walk.at;
            walk.skip_value(wire, 1)?;
            match (id, ordinal) {
                (7, None) => {}
                (7, Some(n)) => {
                    push_field_header(&mut out, id, wire, &mut last_written);
                    push_varint(&mut out, u64::from(((n << 1) ^ (n >> 15)) as u16));
                }
                _ => {
                    push_field_header(&mut out, id, wire, &mut last_written);
                    out.extend_from_slice(&footer[value..walk.at]);
                }
            }
        }
        out.push(0);
        return Ok(out);
    }
    Err("a footer of one row group was expected".into())
}

/// A footer (Thrift `FileMetaData`) of no row groups with `count` row groups of `rows` rows
/// in all in their place: `groups`, their Thrift `RowGroup`s one after another.
///
/// # Errors
/// The footer has no `num_rows` or `row_groups`, ends early or nests too deep.
pub(super) fn with_row_groups(
    footer: &[u8],
    rows: i64,
    groups: &[u8],
    count: u64,
) -> Result<Vec<u8>, String> {
    let mut walk = Mend::over(footer);
    let mut out = Vec::with_capacity(footer.len() + groups.len() + 16);
    let (mut last, mut spliced) = (0, 0);
    loop {
        let header = walk.at;
        let Some((id, wire)) = walk.field_header(&mut last)? else {
            out.push(0);
            break;
        };
        let value = walk.at;
        walk.skip_value(wire, 0)?;
        out.extend_from_slice(&footer[header..value]);
        match (id, wire) {
            (3, I64) => push_varint(&mut out, ((rows << 1) ^ (rows >> 63)) as u64),
            (4, LIST) => {
                match count {
                    0..=14 => out.push((count as u8) << 4 | STRUCT),
                    _ => {
                        out.push(0xf0 | STRUCT);
                        push_varint(&mut out, count);
                    }
                }
                out.extend_from_slice(groups);
            }
            _ => {
                out.extend_from_slice(&footer[value..walk.at]);
                continue;
            }
        }
        spliced += 1;
    }
    match spliced {
        2 => Ok(out),
        _ => Err("the footer has no num_rows or row_groups field".into()),
    }
}

/// Writes a field's header after the field numbered `last`.
fn push_field_header(out: &mut Vec<u8>, id: i16, wire: u8, last: &mut i16) {
    let delta = id.wrapping_sub(*last);
    if (1..=15).contains(&delta) {
        out.push((delta as u8) << 4 | wire);
    } else {
        out.push(wire);
        let zigzag = ((id << 1) ^ (id >> 15)) as u16;
        push_varint(out, u64::from(zigzag));
    }
    *last = id;
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A footer (Thrift compact protocol, written out by hand from `parquet.thrift`) of one
    /// row group of one column chunk, whose `ColumnMetaData` holds `fields`.
    fn footer(fields: &[u8]) -> Vec<u8> {
        let mut out = vec![0x49, 0x1C]; // FileMetaData 4: a list of 1 RowGroup
        out.extend([0x19, 0x1C]); // RowGroup 1: a list of 1 ColumnChunk
        out.push(0x3C); // ColumnChunk 3: its ColumnMetaData
        out.extend(fields);
        out.extend([0x00, 0x00, 0x00]); // the ends of the three structs
        out.extend([0x28, 0x01, b'x', 0x00]); // FileMetaData 6: created_by "x"; its end
        out
    }

    #[test]
    fn a_mistyped_field_is_removed_and_the_next_header_written_from_the_field_before() {
        // 14: i64 7; 15: a list of i16 [1, 2] (an i32 in the format); 16: an empty struct.
        let written = footer(&[0xE6, 0x0E, 0x19, 0x24, 0x02, 0x04, 0x1C, 0x00]);
        let mended = footer(&[0xE6, 0x0E, 0x2C, 0x00]);
        assert_eq!(without_mistyped_fields(&written), Ok(Some(mended)));
        // 14, then 15 mistyped, then 30 (unknown, kept): 30 - 14 takes the long header.
        let written = footer(&[0xE6, 0x0E, 0x19, 0x14, 0x02, 0xF6, 0x02]);
        let mended = footer(&[0xE6, 0x0E, 0x06, 0x3C, 0x02]);
        assert_eq!(without_mistyped_fields(&written), Ok(Some(mended)));
    }

    #[test]
    fn row_groups_are_spliced_into_a_footer_written_without_them() {
        // 1: version 2; 2: an empty schema; 3: num_rows 0; 4: no row groups; 6: "x".
        let empty = [
            0x15, 0x04, 0x19, 0x0C, 0x16, 0x00, 0x19, 0x0C, 0x28, 0x01, b'x', 0x00,
        ];
        // Two empty RowGroups, 5 rows in all (zigzag 10).
        let two = [0x15, 0x04, 0x19, 0x0C, 0x16, 0x0A, 0x19, 0x2C, 0x00, 0x00];
        let spliced = with_row_groups(&empty, 5, &[0x00, 0x00], 2).unwrap();
        assert_eq!(spliced, [&two[..], &[0x28, 0x01, b'x', 0x00]].concat());
        // 20 row groups take the long list header.
        let spliced = with_row_groups(&empty, 5, &[0x00; 20], 20).unwrap();
        assert_eq!(&spliced[6..10], [0x19, 0xFC, 0x14, 0x00]);
        // Without num_rows, or cut short: an error.
        assert!(with_row_groups(&[0x19, 0x0C, 0x00], 5, &[], 0).is_err());
        assert!(with_row_groups(&empty[..7], 5, &[], 0).is_err());
    }

    #[test]
    fn a_row_group_is_taken_from_a_footer_of_one_with_or_without_its_ordinal() {
        // RowGroup 2: total_byte_size 1; 7: ordinal 3; then a field 9 (i32 1).
        let group = [0x26, 0x02, 0x54, 0x06, 0x25, 0x02, 0x00];
        let footer = [
            &[0x15, 0x04, 0x39, 0x1C][..],
            &group,
            &[0x28, 0x01, b'x', 0x00],
        ]
        .concat();
        assert_eq!(row_group_of(&footer, Some(3)).unwrap(), group);
        // Renumbered: 64 is zigzag 128, a two-byte varint.
        let renumbered = [0x26, 0x02, 0x54, 0x80, 0x01, 0x25, 0x02, 0x00];
        assert_eq!(row_group_of(&footer, Some(64)).unwrap(), renumbered);
        // Field 9's header is written again from field 2's.
        let without = [0x26, 0x02, 0x75, 0x02, 0x00];
        assert_eq!(row_group_of(&footer, None).unwrap(), without);
        let none = [0x15, 0x04, 0x39, 0x0C, 0x00];
        assert!(row_group_of(&none, Some(0)).is_err());
    }

    #[test]
    fn a_footer_of_the_formats_types_is_left_as_it_is() {
        // 15: i32 3; 16: a struct holding a list of 2 booleans and a map of 1 i32 to bool.
        let fields = [
            0xF5, 0x06, 0x1C, 0x19, 0x21, 0x01, 0x02, 0x1B, 0x01, 0x51, 0x02, 0x01,
        ];
        let written = footer(&[&fields[..], &[0x00]].concat());
        assert_eq!(without_mistyped_fields(&written), Ok(None));
    }

    #[test]
    fn a_footer_cut_short_or_nested_too_deep_is_an_error_not_a_panic() {
        let written = footer(&[0xE6, 0x0E, 0x19, 0x24, 0x02, 0x04]);
        for end in 0..written.len() - 1 {
            let error = without_mistyped_fields(&written[..end]).expect_err("cut short");
            assert!(error.contains("byte"), "{error}");
        }
        // ColumnMetaData 12 (statistics), its field 1 a struct, nested a million times.
        let deep = [&[0xCC][..], &[0x1C; 1_000_000]].concat();
        let error = without_mistyped_fields(&footer(&deep)).expect_err("too deep");
        assert!(error.contains("too deep"), "{error}");
        // A list that claims more elements than the footer has bytes.
        let error = without_mistyped_fields(&footer(&[0x29, 0xF5, 0xFF, 0xFF, 0x7F]))
            .expect_err("a list longer than the footer");
        assert!(error.contains("runs past the footer"), "{error}");
    }
}
