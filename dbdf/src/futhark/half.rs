//! IEEE half precision, which Futhark's `f16` is: widened to `f32` exactly, and narrowed
//! back only when exact.

/// An IEEE half-precision value as `f32` (always exact, NaN payloads kept).
pub(super) fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = u32::from(h >> 10) & 0x1f;
    let man = u32::from(h & 0x3ff);
    match exp {
        // Zero and subnormals: man * 2^-24, exact in f32.
        0 => sign * (man as f32) * (1.0 / 16_777_216.0),
        0x1f => f32::from_bits((u32::from(h & 0x8000) << 16) | 0x7f80_0000 | (man << 13)),
        _ => f32::from_bits((u32::from(h & 0x8000) << 16) | ((exp + 112) << 23) | (man << 13)),
    }
}

/// `x` as IEEE half precision, or `None` when `f16` cannot hold it exactly.
pub(super) fn f32_to_f16(x: f32) -> Option<u16> {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        // Infinities, and NaNs whose payload fits the ten bits f16 has.
        return (man & 0x1fff == 0).then_some(sign | 0x7c00 | (man >> 13) as u16);
    }
    if exp == 0 {
        // Zero; f32 subnormals are far below f16's smallest value.
        return (man == 0).then_some(sign);
    }
    let e = exp - 127;
    if e > 15 {
        return None;
    }
    if e >= -14 {
        return (man & 0x1fff == 0)
            .then_some(sign | (((e + 15) as u16) << 10) | (man >> 13) as u16);
    }
    // An f16 subnormal m * 2^-24, where x = significand * 2^(e - 23): m = significand >> -(e + 1).
    let shift = (-(e + 1)) as u32;
    let significand = man | 0x80_0000;
    if shift >= 24 || significand & ((1 << shift) - 1) != 0 {
        return None;
    }
    Some(sign | (significand >> shift) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_f16_widens_and_narrows_back_to_its_bits() {
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            assert_eq!(f32_to_f16(x), Some(h), "{h:#06x} -> {x:?}");
        }
    }

    #[test]
    fn f16_edges() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14));
        assert_eq!(f32_to_f16(65520.0), None);
        assert_eq!(f32_to_f16(1.0 + f32::EPSILON), None);
        assert_eq!(f32_to_f16(2f32.powi(-25)), None);
        assert_eq!(f32_to_f16(-0.0), Some(0x8000));
        assert_eq!(f32_to_f16(f32::from_bits(0x7fc0_0001)), None);
    }
}
