//! One definition of every `serde::Serializer` method signature, for the serializers that
//! answer many kinds of value alike (refusing them, or probing and finding nothing).

/// Defines the named `serde::Serializer` methods, each ignoring its arguments and returning
/// `$answer` (evaluated per call; it may name `self`'s associated types through inference).
///
/// ```text
/// answer! { Err(not_chunks()); serialize_bool serialize_str serialize_map }
/// ```
macro_rules! answer {
    ($answer:expr; $($method:ident)*) => { $( $crate::ser::answer_serializer_methods!(@one $answer; $method); )* };
    (@one $a:expr; serialize_bool) => { fn serialize_bool(self, _: bool) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_i8) => { fn serialize_i8(self, _: i8) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_i16) => { fn serialize_i16(self, _: i16) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_i32) => { fn serialize_i32(self, _: i32) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_i64) => { fn serialize_i64(self, _: i64) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_i128) => { fn serialize_i128(self, _: i128) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_u8) => { fn serialize_u8(self, _: u8) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_u16) => { fn serialize_u16(self, _: u16) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_u32) => { fn serialize_u32(self, _: u32) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_u64) => { fn serialize_u64(self, _: u64) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_u128) => { fn serialize_u128(self, _: u128) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_f32) => { fn serialize_f32(self, _: f32) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_f64) => { fn serialize_f64(self, _: f64) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_char) => { fn serialize_char(self, _: char) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_str) => { fn serialize_str(self, _: &str) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_bytes) => { fn serialize_bytes(self, _: &[u8]) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_none) => { fn serialize_none(self) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_unit) => { fn serialize_unit(self) -> Result<Self::Ok> { $a } };
    (@one $a:expr; serialize_some) => {
        fn serialize_some<T: ?Sized + serde::Serialize>(self, _: &T) -> Result<Self::Ok> { $a }
    };
    (@one $a:expr; serialize_unit_struct) => {
        fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok> { $a }
    };
    (@one $a:expr; serialize_unit_variant) => {
        fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<Self::Ok> { $a }
    };
    (@one $a:expr; serialize_newtype_struct) => {
        fn serialize_newtype_struct<T: ?Sized + serde::Serialize>(self, _: &'static str, _: &T) -> Result<Self::Ok> { $a }
    };
    (@one $a:expr; serialize_newtype_variant) => {
        fn serialize_newtype_variant<T: ?Sized + serde::Serialize>(
            self, _: &'static str, _: u32, _: &'static str, _: &T,
        ) -> Result<Self::Ok> { $a }
    };
    (@one $a:expr; serialize_seq) => {
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> { $a }
    };
    (@one $a:expr; serialize_tuple) => {
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> { $a }
    };
    (@one $a:expr; serialize_tuple_struct) => {
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct> { $a }
    };
    (@one $a:expr; serialize_tuple_variant) => {
        fn serialize_tuple_variant(
            self, _: &'static str, _: u32, _: &'static str, _: usize,
        ) -> Result<Self::SerializeTupleVariant> { $a }
    };
    (@one $a:expr; serialize_map) => {
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> { $a }
    };
    (@one $a:expr; serialize_struct) => {
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> { $a }
    };
    (@one $a:expr; serialize_struct_variant) => {
        fn serialize_struct_variant(
            self, _: &'static str, _: u32, _: &'static str, _: usize,
        ) -> Result<Self::SerializeStructVariant> { $a }
    };
}
pub(crate) use answer;
