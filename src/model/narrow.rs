//! Narrowing: the smallest value type that holds every value of a block exactly.

use crate::wire::element::narrow_probe;
use crate::wire::{Element, ValueType};

/// Finds the smallest value type that holds every observed value exactly (the rule of
/// [`Value::narrows_to`], computed from typed summaries instead of per-value conversions).
pub(crate) struct Narrower {
    source: ValueType,
    /// Types smaller than the source, in order of preference.
    candidates: Vec<ValueType>,
    /// Whether every value seen is an integer, and their range.
    integers: bool,
    min: i64,
    max: i64,
    /// Whether `f32` holds every value seen bit-exactly.
    f32_exact: bool,
}

impl Narrower {
    pub fn new(source: ValueType) -> Self {
        let mut candidates: Vec<ValueType> = ValueType::ALL
            .into_iter()
            .filter(|vt| vt.size() < source.size())
            .collect();
        // Smallest first; at equal size the source's own kind, then unsigned, signed, float.
        let kind = |vt: ValueType| {
            if vt.is_float() {
                2
            } else if vt.is_signed_int() {
                1
            } else {
                0
            }
        };
        candidates.sort_by_key(|&vt| (vt.size(), kind(vt) != kind(source), kind(vt)));
        Narrower {
            source,
            candidates,
            integers: true,
            min: i64::MAX,
            max: i64::MIN,
            f32_exact: true,
        }
    }

    #[inline]
    pub(crate) fn observe<T: Element>(&mut self, x: T) {
        let probe = narrow_probe(x);
        match probe.integer {
            Some(i) => {
                self.min = self.min.min(i);
                self.max = self.max.max(i);
            }
            None => self.integers = false,
        }
        self.f32_exact &= probe.f32_exact;
    }

    fn holds(&self, vt: ValueType) -> bool {
        let range = |lo: i64, hi: i64| {
            self.integers && (self.min > self.max || (lo <= self.min && self.max <= hi))
        };
        match vt {
            ValueType::U8 => range(0, u8::MAX.into()),
            ValueType::U16 => range(0, u16::MAX.into()),
            ValueType::U32 => range(0, u32::MAX.into()),
            ValueType::I8 => range(i8::MIN.into(), i8::MAX.into()),
            ValueType::I16 => range(i16::MIN.into(), i16::MAX.into()),
            ValueType::I32 => range(i32::MIN.into(), i32::MAX.into()),
            ValueType::F32 => self.f32_exact,
            // Never smaller than a source type: not a candidate.
            ValueType::U64 | ValueType::I64 | ValueType::F64 => false,
        }
    }

    pub(crate) fn choice(&self) -> ValueType {
        self.candidates
            .iter()
            .copied()
            .find(|&vt| self.holds(vt))
            .unwrap_or(self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Value;

    #[test]
    fn narrowing_picks_the_smallest_exact_type() {
        let pick = |source, values: &[Value]| {
            let mut n = Narrower::new(source);
            for &v in values {
                crate::codes::with_value!(v, x => n.observe(x));
            }
            let choice = n.choice();
            // The typed summaries agree with the one conversion rule.
            assert!(
                values.iter().all(|v| v.narrows_to(choice)),
                "{values:?} as {choice}"
            );
            choice
        };
        assert_eq!(pick(ValueType::U64, &[Value::U64(200)]), ValueType::U8);
        assert_eq!(pick(ValueType::U64, &[Value::U64(300)]), ValueType::U16);
        assert_eq!(
            pick(ValueType::I64, &[Value::I64(-3), Value::I64(100)]),
            ValueType::I8
        );
        assert_eq!(pick(ValueType::I64, &[Value::I64(5)]), ValueType::I8);
        assert_eq!(pick(ValueType::F64, &[Value::F64(0.5)]), ValueType::F32);
        assert_eq!(pick(ValueType::F64, &[Value::F64(0.1)]), ValueType::F64);
        assert_eq!(pick(ValueType::F64, &[Value::F64(3.0)]), ValueType::U8);
        assert_eq!(pick(ValueType::F64, &[Value::F64(-0.0)]), ValueType::F32);
        assert_eq!(pick(ValueType::U8, &[Value::U8(1)]), ValueType::U8);
    }

    /// The typed summaries choose exactly what the one conversion rule (`narrows_to`) would.
    fn agrees_with_the_conversion_rule<T: Element>(values: &[T]) {
        let mut n = Narrower::new(T::VALUE_TYPE);
        values.iter().for_each(|&x| n.observe(x));
        let reference = n
            .candidates
            .iter()
            .copied()
            .find(|&vt| values.iter().all(|x| x.into_value().narrows_to(vt)))
            .unwrap_or(T::VALUE_TYPE);
        assert_eq!(n.choice(), reference, "{values:?}");
    }

    proptest::proptest! {
        #[test]
        fn typed_narrowing_matches_the_rule(
            bits in proptest::collection::vec(proptest::prelude::any::<u64>(), 1..4),
            small in proptest::collection::vec(-70_000i64..70_000, 1..4),
            scale in 0u32..70,
        ) {
            // Raw bits reach NaN payloads and huge values; small integers and their scaled
            // versions reach every candidate's edges.
            let scaled: Vec<i64> = small.iter().map(|&x| x.saturating_mul(1i64 << scale.min(40))).collect();
            agrees_with_the_conversion_rule(&bits.iter().map(|&b| f64::from_bits(b)).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&bits.iter().map(|&b| f32::from_bits(b as u32)).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&bits);
            agrees_with_the_conversion_rule(&bits.iter().map(|&b| b as i64).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&scaled);
            agrees_with_the_conversion_rule(&scaled.iter().map(|&x| x as f64).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&scaled.iter().map(|&x| x as f32 * 0.5).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&scaled.iter().map(|&x| x.unsigned_abs()).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&small.iter().map(|&x| x as i32).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&small.iter().map(|&x| x as u32).collect::<Vec<_>>());
            agrees_with_the_conversion_rule(&small.iter().map(|&x| x as i16).collect::<Vec<_>>());
        }
    }

    #[test]
    fn typed_narrowing_edges() {
        agrees_with_the_conversion_rule(&[i64::MAX]);
        agrees_with_the_conversion_rule(&[i64::MIN]);
        agrees_with_the_conversion_rule(&[u64::MAX]);
        agrees_with_the_conversion_rule(&[1u64 << 63]);
        agrees_with_the_conversion_rule(&[(1i64 << 24) + 1]);
        agrees_with_the_conversion_rule(&[1i64 << 40, -(1i64 << 50)]);
        agrees_with_the_conversion_rule(&[9.223_372_036_854_776e18f64]);
        agrees_with_the_conversion_rule(&[-9.223_372_036_854_776e18f64]);
        agrees_with_the_conversion_rule(&[-0.0f64, 1.0]);
        agrees_with_the_conversion_rule(&[-0.0f32]);
        agrees_with_the_conversion_rule(&[f64::NAN, f64::INFINITY]);
        agrees_with_the_conversion_rule(&[65535.0f32, -1.0]);
    }
}
