// Bit patterns <-> values for the float formats below one byte-float16:
// float8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0 and float4 E2M1, following
// the ONNX Cast spec and numpy's ml_dtypes. Integer arithmetic on the bits of
// the float / double (no libm), so the same functions run on the host and in
// CUDA device code (SLUICE_HOST_DEVICE) and give the same bits on both.
//
//   uint8_t b = EncodeSmallFloat(300.0, SmallFloat::kE4M3FN, true);  // 288
//   float v = DecodeSmallFloat(b, SmallFloat::kE4M3FN);              // 288.f
//   uint8_t e = EncodeE8M0(3.0f, /*saturate=*/true, E8M0Rounding::kUp);  // 4
//
// Pure functions; thread-safe.
#ifndef SLUICE_CORE_SMALL_FLOAT_CODEC_H_
#define SLUICE_CORE_SMALL_FLOAT_CODEC_H_

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace sluice {

// The float formats below one byte-float16.
enum class SmallFloat : uint8_t {
  kE4M3FN,    // bias 7, max 448, NaN = S.1111.111, no infinity
  kE4M3FNUZ,  // bias 8, max 240, NaN = 0x80, no infinity, no -0
  kE5M2,      // bias 15, max 57344, IEEE infinities and NaNs
  kE5M2FNUZ,  // bias 16, max 57344, NaN = 0x80, no infinity, no -0
  kE8M0,      // unsigned 2^(e-127), 0xFF = NaN, no zero
  kE2M1,      // 4 bits, bias 1, max 6, no infinity, no NaN
};

// How float8 E8M0 rounds a value between two powers of two (ONNX Cast's
// round_mode attribute): "up" (default), "down" or "nearest".
enum class E8M0Rounding : uint8_t { kUp, kDown, kNearest };

namespace small_float_internal {

// Where a format keeps its NaNs.
enum class NanKind : uint8_t { kIeee, kFn, kFnuz, kNone };

struct Layout {
  int exp_bits;
  int man_bits;
  int bias;
  NanKind nan;
  int total_bits;
};

SLUICE_HOST_DEVICE inline Layout LayoutOf(SmallFloat f) {
  switch (f) {
    case SmallFloat::kE4M3FN: return {4, 3, 7, NanKind::kFn, 8};
    case SmallFloat::kE4M3FNUZ: return {4, 3, 8, NanKind::kFnuz, 8};
    case SmallFloat::kE5M2: return {5, 2, 15, NanKind::kIeee, 8};
    case SmallFloat::kE5M2FNUZ: return {5, 2, 16, NanKind::kFnuz, 8};
    case SmallFloat::kE8M0: return {8, 0, 127, NanKind::kNone, 8};
    case SmallFloat::kE2M1: return {2, 1, 1, NanKind::kNone, 4};
  }
  return {4, 3, 7, NanKind::kFn, 8};
}

SLUICE_HOST_DEVICE inline uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

SLUICE_HOST_DEVICE inline float FloatFromBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f = 0;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

SLUICE_HOST_DEVICE inline uint64_t DoubleBits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u = 0;
  std::memcpy(&u, &d, sizeof(u));
  return u;
#endif
}

// 2^e as a float, exactly, for e in [-149, 127].
SLUICE_HOST_DEVICE inline float Pow2f(int e) {
  if (e >= -126) return FloatFromBits(static_cast<uint32_t>(e + 127) << 23);
  return FloatFromBits(uint32_t{1} << (e + 149));
}

SLUICE_HOST_DEVICE inline uint8_t SignBit(const Layout& l) {
  return static_cast<uint8_t>(1u << (l.total_bits - 1));
}

// The bit pattern of a NaN of sign `negative`.
SLUICE_HOST_DEVICE inline uint8_t NanBits(const Layout& l, bool negative) {
  const uint8_t sign = negative ? SignBit(l) : 0;
  switch (l.nan) {
    case NanKind::kFn: return static_cast<uint8_t>(sign | 0x7f);
    case NanKind::kIeee: return static_cast<uint8_t>(sign | 0x7e);
    case NanKind::kFnuz: return 0x80;
    case NanKind::kNone: return SignBit(l);  // E2M1: ml_dtypes gives -0
  }
  return 0;
}

// The magnitude bits (exponent and mantissa fields) of the largest finite
// value.
SLUICE_HOST_DEVICE inline int MaxMagnitude(const Layout& l) {
  const int all_exp = (1 << l.exp_bits) - 1;
  const int all_man = (1 << l.man_bits) - 1;
  switch (l.nan) {
    case NanKind::kIeee: return ((all_exp - 1) << l.man_bits) | all_man;
    case NanKind::kFn: return (all_exp << l.man_bits) | (all_man - 1);
    default: return (all_exp << l.man_bits) | all_man;
  }
}

// What a value beyond the largest finite one becomes without saturation:
// infinity for E5M2, NaN for the others.
SLUICE_HOST_DEVICE inline uint8_t OverflowBits(const Layout& l, bool negative) {
  if (l.nan == NanKind::kIeee) {
    return static_cast<uint8_t>((negative ? SignBit(l) : 0) | 0x7c);
  }
  return NanBits(l, negative);
}

}  // namespace small_float_internal

// float -> E8M0 as the ONNX reference (numpy_helper.to_float8e8m0) does it:
// the float32 exponent field, rounded per `mode`, NaN and infinities -> 0xFF;
// saturate keeps a round-up from reaching 0xFF.
SLUICE_HOST_DEVICE inline uint8_t EncodeE8M0(float value, bool saturate,
                                             E8M0Rounding mode) {
  const uint32_t f = small_float_internal::FloatBits(value);
  uint32_t exponent = (f >> 23) & 0xff;
  if (exponent == 0xff) return 0xff;  // NaN and infinities
  bool round_up = false;
  switch (mode) {
    case E8M0Rounding::kUp:
      round_up = (f & 0x7fffff) != 0;
      break;
    case E8M0Rounding::kDown:
      break;
    case E8M0Rounding::kNearest: {
      const bool g = (f & 0x400000) != 0;
      const bool r = (f & 0x200000) != 0;
      const bool s = (f & 0x1fffff) != 0;
      const bool lsb = exponent > 0;
      round_up = g && (r || s || lsb);
      break;
    }
  }
  if (round_up && saturate && exponent == 0xfe) round_up = false;
  if (round_up) ++exponent;
  return static_cast<uint8_t>(exponent);
}

// The value of a bit pattern (the low 4 bits for E2M1); NaN for NaN patterns.
SLUICE_HOST_DEVICE inline float DecodeSmallFloat(uint8_t bits,
                                                 SmallFloat format) {
  using namespace small_float_internal;  // NOLINT(build/namespaces)
  const float nan = FloatFromBits(0x7fc00000u);
  if (format == SmallFloat::kE8M0) {
    if (bits == 0xff) return nan;
    return Pow2f(static_cast<int>(bits) - 127);
  }
  const Layout l = LayoutOf(format);
  if (l.total_bits < 8) bits &= static_cast<uint8_t>((1u << l.total_bits) - 1);
  const bool negative = (bits & SignBit(l)) != 0;
  const int all_exp = (1 << l.exp_bits) - 1;
  const int all_man = (1 << l.man_bits) - 1;
  const int exp = (bits >> l.man_bits) & all_exp;
  const int man = bits & all_man;
  switch (l.nan) {
    case NanKind::kFnuz:
      if (bits == 0x80) return nan;
      break;
    case NanKind::kFn:
      if (exp == all_exp && man == all_man) return nan;
      break;
    case NanKind::kIeee:
      if (exp == all_exp) {
        if (man != 0) return nan;
        return FloatFromBits(negative ? 0xff800000u : 0x7f800000u);
      }
      break;
    case NanKind::kNone:
      break;
  }
  // Small integers times powers of two: exact in float.
  const float v =
      exp == 0 ? static_cast<float>(man) * Pow2f(1 - l.bias - l.man_bits)
               : static_cast<float>((1 << l.man_bits) | man) *
                     Pow2f(exp - l.bias - l.man_bits);
  return negative ? -v : v;
}

// Rounds to nearest even. saturate: NaN stays NaN and values beyond the
// largest finite one (infinities too) clamp to it. Not saturating: they become
// infinity for E5M2 and NaN for the others (E2M1 always saturates, and maps
// NaN to 0x8, as ml_dtypes does). E8M0 rounds "up" here; see EncodeE8M0.
SLUICE_HOST_DEVICE inline uint8_t EncodeSmallFloat(double value,
                                                   SmallFloat format,
                                                   bool saturate) {
  using namespace small_float_internal;  // NOLINT(build/namespaces)
  if (format == SmallFloat::kE8M0) {
    return EncodeE8M0(static_cast<float>(value), saturate, E8M0Rounding::kUp);
  }
  const Layout l = LayoutOf(format);
  const uint64_t d = DoubleBits(value);
  const bool negative = (d >> 63) != 0;
  const uint8_t sign = negative ? SignBit(l) : 0;
  const int dexp = static_cast<int>((d >> 52) & 0x7ff);
  const uint64_t dman = d & ((uint64_t{1} << 52) - 1);
  if (dexp == 0x7ff && dman != 0) return NanBits(l, negative);
  const bool clamp = saturate || l.nan == NanKind::kNone;
  const int max_magnitude = MaxMagnitude(l);
  if (dexp == 0x7ff) {  // infinity
    return clamp ? static_cast<uint8_t>(sign | max_magnitude)
                 : OverflowBits(l, negative);
  }
  // |value| = sig * 2^(x - 52). Round it onto the grid of its binade (or of
  // the subnormals): multiples of 2^(t - man_bits), t = max(x, 1 - bias).
  // Double subnormals are far below half the smallest subnormal: 0.
  int magnitude = 0;
  if (dexp != 0) {
    const int x = dexp - 1023;
    const int t = x > 1 - l.bias ? x : 1 - l.bias;
    const int shift = 52 - x + t - l.man_bits;  // at least 49
    const uint64_t sig = (uint64_t{1} << 52) | dman;
    uint64_t r = 0;  // sig < 2^53: shifts of 64 or more leave < 2^-11
    if (shift < 64) {
      r = sig >> shift;
      const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
      const uint64_t half = uint64_t{1} << (shift - 1);
      if (rem > half || (rem == half && (r & 1) != 0)) ++r;  // ties to even
    }
    // r quanta of 2^(t - man_bits): a carry into the next binade (r =
    // 2^(man_bits + 1)) lands on the next exponent field by itself.
    if (r != 0) {
      magnitude = ((t + l.bias - 1) << l.man_bits) + static_cast<int>(r);
    }
  }
  if (magnitude > max_magnitude) {
    if (!clamp) return OverflowBits(l, negative);
    magnitude = max_magnitude;
  }
  if (magnitude == 0) return l.nan == NanKind::kFnuz ? 0 : sign;  // no -0
  return static_cast<uint8_t>(sign | magnitude);
}

// Largest finite value.
SLUICE_HOST_DEVICE inline double SmallFloatMax(SmallFloat format) {
  using namespace small_float_internal;  // NOLINT(build/namespaces)
  const Layout l = LayoutOf(format);
  if (format == SmallFloat::kE8M0) return 2.0 * static_cast<double>(Pow2f(127));
  const int m = MaxMagnitude(l);
  const int exp = m >> l.man_bits;
  const int man = m & ((1 << l.man_bits) - 1);
  return static_cast<double>((1 << l.man_bits) | man) *
         static_cast<double>(Pow2f(exp - l.bias - l.man_bits));
}

}  // namespace sluice

#endif  // SLUICE_CORE_SMALL_FLOAT_CODEC_H_
