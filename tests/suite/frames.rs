//! Frames of records through serde: the typed fast paths (a field pushed straight into its
//! column, a cell read straight from its column) and every way out of them.

use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_daphne::{from_slice, to_vec, Error, ErrorKind, Object, Value, Values};

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Trade {
    id: u32,
    price: f64,
    volume: i64,
    buy: bool,
}

fn frame_bytes<R: Serialize>(rows: &[R]) -> Result<Vec<u8>, Error> {
    // `frame::serialize` takes a slice: a newtype around it is the frame.
    struct Frame<'a, R>(&'a [R]);
    impl<R: Serialize> Serialize for Frame<'_, R> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serde_daphne::frame::serialize(self.0, s)
        }
    }
    to_vec(&Frame(rows))
}

#[derive(Deserialize, Debug)]
#[serde(bound = "R: Deserialize<'de>")]
struct TradesOf<R>(#[serde(with = "serde_daphne::frame")] Vec<R>);

/// Records read back equal, columns typed by their fields (bools as u8).
#[test]
fn records_round_trip_through_typed_columns() {
    let trades: Vec<Trade> = (0..1000u32)
        .map(|i| Trade {
            id: i,
            price: f64::from(i) * 0.25 - 3.0,
            volume: i64::from(i) * -7,
            buy: i % 3 == 0,
        })
        .collect();
    let bytes = frame_bytes(&trades).unwrap();
    let object: Object = from_slice(&bytes).unwrap();
    assert_eq!(object.labels(), ["id", "price", "volume", "buy"]);
    let columns = object.into_columns().unwrap();
    assert_eq!(columns[0], Values::U32((0..1000).collect()));
    assert_eq!(columns[3].get(3), Some(Value::U8(1)));
    assert_eq!(columns[3].get(4), Some(Value::U8(0)));
    assert_eq!(from_slice::<TradesOf<Trade>>(&bytes).unwrap().0, trades);
}

/// A record type whose fields vary from record to record (a hand-written `Serialize`).
#[derive(Clone, Copy)]
enum Field {
    U8(&'static str, u8),
    U32(&'static str, u32),
    F64(&'static str, f64),
    Text(&'static str),
}

struct Varying(Vec<Field>);

impl Serialize for Varying {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Varying", self.0.len())?;
        for field in &self.0 {
            match *field {
                Field::U8(k, v) => st.serialize_field(k, &v)?,
                Field::U32(k, v) => st.serialize_field(k, &v)?,
                Field::F64(k, v) => st.serialize_field(k, &v)?,
                Field::Text(k) => st.serialize_field(k, "text")?,
            }
        }
        st.end()
    }
}

fn mismatch(result: Result<Vec<u8>, Error>) -> String {
    let error = result.expect_err("a frame mismatch");
    assert_eq!(error.kind(), ErrorKind::FrameMismatch, "{error:?}");
    // The message is the field path, then what is wrong.
    let path = error.path().expect("a field path").to_owned();
    let message = error.to_string();
    let message = message
        .strip_prefix(&format!("field \"{path}\": "))
        .unwrap_or(&message);
    format!("{path}: {message}")
}

/// Later records that differ from the first: a value that converts exactly goes in
/// converted; anything else is an error naming the record and the field.
#[test]
fn records_unlike_the_first_convert_exactly_or_fail() {
    let first = vec![Field::U32("a", 1), Field::F64("b", 0.5)];
    let ok = frame_bytes(&[
        Varying(first.clone()),
        Varying(vec![Field::U8("a", 7), Field::U32("b", 9)]),
    ])
    .unwrap();
    let columns = from_slice::<Object>(&ok).unwrap().into_columns().unwrap();
    assert_eq!(columns[0], Values::U32(vec![1, 7]));
    assert_eq!(columns[1], Values::F64(vec![0.5, 9.0]));

    let cases: [(Vec<Field>, &str); 5] = [
        (
            vec![Field::F64("a", 1.5), Field::F64("b", 1.0)],
            "[1].a: the record does not match the first record's column \"a\" (u32)",
        ),
        (
            vec![Field::U32("z", 1), Field::F64("b", 1.0)],
            "[1].z: the record does not match the first record's column \"a\" (u32)",
        ),
        (
            vec![Field::U32("a", 1), Field::Text("b")],
            "[1].b: a frame column holds numbers or bools only",
        ),
        (
            vec![Field::U32("a", 1), Field::F64("b", 1.0), Field::U8("c", 1)],
            "[1].c: the record has more fields than the first record",
        ),
        (
            vec![Field::U32("a", 1)],
            "[1]: the record has fewer fields than the first record",
        ),
    ];
    for (second, expected) in cases {
        let got = mismatch(frame_bytes(&[Varying(first.clone()), Varying(second)]));
        assert_eq!(got, expected);
    }
    assert_eq!(
        mismatch(frame_bytes(&[Varying(vec![Field::Text("t")])])),
        "[0].t: a frame column holds numbers or bools only"
    );
}

/// Cells of another type than the field's convert exactly or fail with the row and column.
#[test]
fn cells_unlike_their_field_convert_exactly_or_fail() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Wide {
        a: u64,
        b: f64,
    }
    #[derive(Deserialize, Debug)]
    struct Flag {
        #[allow(dead_code)]
        a: bool,
    }
    #[derive(Deserialize, Debug)]
    struct Narrow {
        #[allow(dead_code)]
        b: u32,
    }
    let rows = [
        Varying(vec![Field::U8("a", 1), Field::U32("b", 4)]),
        Varying(vec![Field::U8("a", 2), Field::U32("b", 5)]),
    ];
    let bytes = frame_bytes(&rows).unwrap();
    let wide = from_slice::<TradesOf<Wide>>(&bytes).unwrap().0;
    assert_eq!(wide, [Wide { a: 1, b: 4.0 }, Wide { a: 2, b: 5.0 }]);
    let err = from_slice::<TradesOf<Flag>>(&bytes).unwrap_err();
    assert_error!(
        err,
        NotABool {
            value: Value::U8(2),
            ..
        }
    );
    let floats = frame_bytes(&[Varying(vec![Field::F64("b", 2.5)])]).unwrap();
    let err = from_slice::<TradesOf<Narrow>>(&floats).unwrap_err();
    assert_error!(err, LossyConversion);
}

/// Columns and records are two views of one frame: the same bytes either way, read back as
/// either; through JSON a map of typed columns.
#[test]
fn columns_and_records_write_the_same_frame() {
    use serde_daphne::Columns;
    let trades: Vec<Trade> = (0..500u32)
        .map(|i| Trade {
            id: i,
            price: f64::from(i) / 8.0,
            volume: -i64::from(i),
            buy: i % 2 == 1,
        })
        .collect();
    let columns = Columns::from_records(&trades).unwrap();
    assert_eq!((columns.rows(), columns.width()), (500, 4));
    let bytes = to_vec(&columns).unwrap();
    assert!(
        bytes == frame_bytes(&trades).unwrap(),
        "columns and records differ"
    );
    let back: Columns = from_slice(&bytes).unwrap();
    assert_eq!(back, columns);
    assert_eq!(back.column::<i64>("volume").unwrap()[499], -499);
    assert_eq!(back.column::<f64>("volume"), None);
    assert_eq!(back.to_records::<Trade>().unwrap(), trades);
    assert_eq!(from_slice::<TradesOf<Trade>>(&bytes).unwrap().0, trades);
    let mut a = Columns::new();
    a.push("a", vec![1u8, 2]).unwrap();
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(json, r#"{"a":{"U8":[1,2]}}"#);
    let mut view = serde_daphne::ColumnsView::new();
    view.push("a", &[1u8, 2][..]).unwrap();
    assert_eq!(serde_json::to_string(&view).unwrap(), json);
    assert_eq!(
        serde_json::from_str::<Columns>(&json).unwrap().values("a"),
        Some(&Values::U8(vec![1, 2]))
    );
}

/// Columns of unequal length or with one label twice are refused; a matrix is not a frame.
#[test]
fn columns_must_make_a_frame() {
    use serde_daphne::Columns;
    let mut one = Columns::new();
    one.push("a", vec![1u8, 2]).unwrap();
    let err = one.clone().push("b", vec![1.0f32]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "column \"b\" has 1 values but the frame has 2 rows"
    );
    assert!(one.push("a", vec![3u8, 4]).is_err());
    let (a, b) = ([1u8, 2], [1.0f32]);
    let mut view = serde_daphne::ColumnsView::new();
    view.push("a", &a[..]).unwrap();
    let err = view.clone().push("b", &b[..]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "column \"b\" has 1 values but the frame has 2 rows"
    );
    assert_error!(view.push("a", &a[..]), InvalidValue);
    let matrix = to_vec(&vec![1.0f64, 2.0]).unwrap();
    assert_error!(
        from_slice::<Columns>(&matrix),
        DataTypeMismatch {
            expected: "a Frame",
            ..
        }
    );
}
