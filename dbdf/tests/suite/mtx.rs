//! MatrixMarket coordinate files: the same CSR matrix from any order of the entries, numbers
//! as writers print them, and cells given twice refused or summed in file order.

use std::collections::BTreeMap;

use proptest::prelude::*;

use dbdf::convert::{self, ConvertOptions, Format};
use dbdf::driver::OptionValue;
use serde_daphne::{Object, Values};

/// One entry: row and column from 0, and its value.
type Entry = (usize, usize, f64);

fn options(duplicates: Option<&str>) -> ConvertOptions {
    let mut options = ConvertOptions::default();
    if let Some(how) = duplicates {
        let how = OptionValue::Text(how.to_string());
        options.set_option("duplicates", &how).unwrap();
    }
    options
}

/// The file's objects, read from a file on disk and from bytes in memory (each way the
/// reader is opened), which must agree.
fn read(text: &str, duplicates: Option<&str>) -> Result<Vec<Object>, String> {
    let mtx: Format = "mtx".parse().unwrap();
    let options = options(duplicates);
    let in_memory = convert::from_slice(text.as_bytes(), mtx, &options);
    let dir = std::env::temp_dir().join(format!("dbdf_mtx_order_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{:x}.mtx", text.len() ^ text.as_ptr() as usize));
    std::fs::write(&path, text).unwrap();
    let on_disk = convert::read(&path, mtx, &options);
    std::fs::remove_file(&path).unwrap();
    match (in_memory, on_disk) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "in memory and on disk");
            Ok(a)
        }
        (Err(a), Err(b)) => {
            assert_eq!(
                a.to_string(),
                b.error().to_string(),
                "in memory and on disk"
            );
            Err(a.to_string())
        }
        (a, b) => panic!("in memory {a:?}, on disk {b:?}"),
    }
}

/// A coordinate file of `entries` in the order given, each value printed as `styles` says
/// (by turns): shortest, `%e`, `%E`, `%.17g`-like with a plus sign in the exponent.
fn file(rows: usize, cols: usize, symmetry: &str, entries: &[Entry]) -> String {
    let mut text = format!("%%MatrixMarket matrix coordinate real {symmetry}\n%\n");
    text.push_str(&format!("{rows} {cols} {}\n", entries.len()));
    for (k, &(r, c, v)) in entries.iter().enumerate() {
        let printed = match k % 4 {
            0 => format!("{v}"),
            1 => format!("{v:e}"),
            2 => format!("{v:E}"),
            _ => format!("{v:.16e}").replace('e', "e+").replace("e+-", "e-"),
        };
        text.push_str(&format!("{} {} {printed}\n", r + 1, c + 1));
    }
    text
}

/// The CSR matrix of `cells`, built apart from the reader.
fn csr(rows: usize, cols: usize, cells: &BTreeMap<(usize, usize), f64>) -> Object {
    let mut offsets = vec![0; rows + 1];
    for &(r, _) in cells.keys() {
        offsets[r + 1] += 1;
    }
    for r in 0..rows {
        offsets[r + 1] += offsets[r];
    }
    let columns = cells.keys().map(|&(_, c)| c).collect();
    let values = Values::F64(cells.values().copied().collect());
    Object::csr(rows as u64, cols as u64, offsets, columns, values).unwrap()
}

/// A matrix's distinct cells (lower triangle for a symmetric one) with non-zero values,
/// and the same entries in any order.
fn entries() -> impl Strategy<Value = (usize, usize, bool, Vec<Entry>, Vec<Entry>)> {
    (1usize..40, 1usize..40, any::<bool>()).prop_flat_map(|(rows, cols, symmetric)| {
        let cols = if symmetric { rows } else { cols };
        let cell = (
            0..rows,
            0..cols,
            prop_oneof![-1e6f64..1e6, 1e-300f64..1e300],
        )
            .prop_map(move |(r, c, v)| {
                if symmetric && c > r {
                    (c, r, v)
                } else {
                    (r, c, v)
                }
            })
            .prop_filter("not zero", |e| e.2 != 0.0);
        proptest::collection::vec(cell, 0..80).prop_flat_map(move |mut cells| {
            let mut seen = std::collections::HashSet::new();
            cells.retain(|&(r, c, _)| seen.insert((r, c)));
            let sorted = cells.clone();
            (
                Just(rows),
                Just(cols),
                Just(symmetric),
                Just(sorted),
                Just(cells).prop_shuffle(),
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_order_of_the_entries_builds_the_same_csr(
        (rows, cols, symmetric, entries, shuffled) in entries()
    ) {
        let symmetry = if symmetric { "symmetric" } else { "general" };
        let mut cells = BTreeMap::new();
        for &(r, c, v) in &entries {
            cells.insert((r, c), v);
            if symmetric {
                cells.insert((c, r), v);
            }
        }
        let expected = vec![csr(rows, cols, &cells)];
        let in_order = read(&file(rows, cols, symmetry, &entries), None).unwrap();
        prop_assert_eq!(&in_order, &expected);
        let any_order = read(&file(rows, cols, symmetry, &shuffled), None).unwrap();
        prop_assert_eq!(&any_order, &expected);
    }

    #[test]
    fn cells_given_twice_are_refused_or_summed_in_file_order(
        (rows, cols, _, entries, _) in entries(),
        again in proptest::collection::vec((any::<prop::sample::Index>(), -4i32..4), 1..20),
    ) {
        prop_assume!(!entries.is_empty());
        // Each cell again, at a later place, with a value whose sum depends on the order.
        let mut given = entries.clone();
        for (pick, tenths) in &again {
            let (r, c, _) = entries[pick.index(entries.len())];
            let at = pick.index(given.len() + 1);
            given.insert(at.max(1), (r, c, f64::from(*tenths) / 10.0 + 0.1));
        }
        let text = file(rows, cols, "general", &given);
        let refused = read(&text, None).unwrap_err();
        prop_assert!(refused.contains("duplicate entry ("), "{}", refused);
        let mut sums: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        for &(r, c, v) in &given {
            sums.entry((r, c)).and_modify(|s| *s += v).or_insert(v);
        }
        let summed = read(&text, Some("sum")).unwrap();
        prop_assert_eq!(summed, vec![csr(rows, cols, &sums)]);
    }
}

/// The line named is the second of the cell's, wherever the first is.
#[test]
fn a_cell_given_twice_is_named_at_its_second_line() {
    let text =
        "%%MatrixMarket matrix coordinate integer general\n3 3 4\n3 1 5\n1 2 7\n2 2 1\n3 1 -5\n";
    let refused = read(text, None).unwrap_err();
    assert!(
        refused.contains("line 6: duplicate entry (3, 1)"),
        "{refused}"
    );
    assert!(read(text, Some("refuse")).is_err());
    // Summed to zero, the cell is kept, as scipy's tocsr() keeps it.
    let summed = read(text, Some("sum")).unwrap();
    let expected = Object::csr(
        3,
        3,
        vec![0, 1, 2, 3],
        vec![1, 1, 0],
        Values::I64(vec![7, 1, 0]),
    );
    assert_eq!(summed, vec![expected.unwrap()]);
    let over =
        "%%MatrixMarket matrix coordinate integer general\n1 1 2\n1 1 9223372036854775807\n1 1 1\n";
    let refused = read(over, Some("sum")).unwrap_err();
    assert!(
        refused.contains("line 4: the entries of (1, 1) sum beyond i64"),
        "{refused}"
    );
    let unknown = options(None).set_option("duplicates", &OptionValue::Text("keep".into()));
    assert!(unknown.unwrap_err().to_string().contains("\"keep\""));
}
