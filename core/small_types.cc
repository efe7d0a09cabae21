#include "core/small_types.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace sluice {
namespace {

// How a format spends its bits. `nan` is where NaNs live.
enum class NanKind { kIeee, kFn, kFnuz, kNone };

struct Layout {
  int exp_bits;
  int man_bits;
  int bias;
  NanKind nan;
  int total_bits;
};

Layout LayoutOf(SmallFloat f) {
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

uint8_t SignBit(const Layout& l) {
  return static_cast<uint8_t>(1u << (l.total_bits - 1));
}

// The bit pattern of a NaN of sign `negative`.
uint8_t NanBits(const Layout& l, bool negative) {
  const uint8_t sign = negative ? SignBit(l) : 0;
  switch (l.nan) {
    case NanKind::kFn: return static_cast<uint8_t>(sign | 0x7f);
    case NanKind::kIeee: return static_cast<uint8_t>(sign | 0x7e);
    case NanKind::kFnuz: return 0x80;
    case NanKind::kNone: return SignBit(l);  // E2M1: ml_dtypes gives -0
  }
  return 0;
}

// The largest biased exponent field a finite value can have, and its largest
// mantissa field.
void MaxFields(const Layout& l, int* exp_field, int* man_field) {
  const int all_exp = (1 << l.exp_bits) - 1;
  const int all_man = (1 << l.man_bits) - 1;
  switch (l.nan) {
    case NanKind::kIeee: *exp_field = all_exp - 1; *man_field = all_man; break;
    case NanKind::kFn: *exp_field = all_exp; *man_field = all_man - 1; break;
    default: *exp_field = all_exp; *man_field = all_man; break;
  }
}

double MaxOf(const Layout& l) {
  int e = 0, m = 0;
  MaxFields(l, &e, &m);
  return std::ldexp(1.0 + std::ldexp(m, -l.man_bits), e - l.bias);
}

// Encodes a finite value already rounded onto the format's grid, 0 < a <= max.
uint8_t EncodeMagnitude(const Layout& l, double a) {
  const int min_exp = 1 - l.bias;
  if (a < std::ldexp(1.0, min_exp)) {  // subnormal
    return static_cast<uint8_t>(std::ldexp(a, l.man_bits - min_exp));
  }
  int e = 0;
  const double frac = std::frexp(a, &e);  // a = frac * 2^e, frac in [0.5, 1)
  const int exp = e - 1;
  const int man = static_cast<int>(std::ldexp(frac * 2.0 - 1.0, l.man_bits));
  return static_cast<uint8_t>(((exp + l.bias) << l.man_bits) | man);
}

}  // namespace

double SmallFloatMax(SmallFloat format) { return MaxOf(LayoutOf(format)); }

float DecodeSmallFloat(uint8_t bits, SmallFloat format) {
  const Layout l = LayoutOf(format);
  if (format == SmallFloat::kE8M0) {
    if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(bits) - 127);
  }
  if (l.total_bits < 8) bits &= static_cast<uint8_t>((1u << l.total_bits) - 1);
  const bool negative = (bits & SignBit(l)) != 0;
  const int all_exp = (1 << l.exp_bits) - 1;
  const int all_man = (1 << l.man_bits) - 1;
  const int exp = (bits >> l.man_bits) & all_exp;
  const int man = bits & all_man;
  const float nan = std::numeric_limits<float>::quiet_NaN();
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
        return negative ? -std::numeric_limits<float>::infinity()
                        : std::numeric_limits<float>::infinity();
      }
      break;
    case NanKind::kNone:
      break;
  }
  double v = exp == 0 ? std::ldexp(static_cast<double>(man), 1 - l.bias - l.man_bits)
                      : std::ldexp(1.0 + std::ldexp(man, -l.man_bits),
                                   exp - l.bias);
  return static_cast<float>(negative ? -v : v);
}

uint8_t EncodeSmallFloat(double value, SmallFloat format, bool saturate) {
  if (format == SmallFloat::kE8M0) {
    return EncodeE8M0(static_cast<float>(value), saturate, E8M0Rounding::kUp);
  }
  const Layout l = LayoutOf(format);
  const bool negative = std::signbit(value);
  const bool no_neg_zero = l.nan == NanKind::kFnuz;
  const uint8_t sign = negative ? SignBit(l) : 0;
  if (std::isnan(value)) return NanBits(l, negative);
  const double max = MaxOf(l);
  const bool always_saturate = l.nan == NanKind::kNone;
  double a = std::fabs(value);
  if (saturate || always_saturate) {
    a = std::min(a, max);  // infinities too
  } else if (std::isinf(a)) {
    if (l.nan == NanKind::kIeee) return static_cast<uint8_t>(sign | 0x7c);
    return NanBits(l, negative);
  }
  // Round onto the grid: the quantum of a's binade (or of the subnormals).
  int e = 0;
  std::frexp(a, &e);
  const int exp = std::max(e - 1, 1 - l.bias);
  const double quantum = std::ldexp(1.0, exp - l.man_bits);
  a = std::nearbyint(a / quantum) * quantum;  // ties to even (default mode)
  if (a > max) {
    if (saturate || always_saturate) {
      a = max;
    } else if (l.nan == NanKind::kIeee) {
      return static_cast<uint8_t>(sign | 0x7c);  // infinity
    } else {
      return NanBits(l, negative);
    }
  }
  if (a == 0) return no_neg_zero ? 0 : sign;  // FNUZ: no -0
  return static_cast<uint8_t>(sign | EncodeMagnitude(l, a));
}

uint8_t EncodeE8M0(float value, bool saturate, E8M0Rounding mode) {
  uint32_t f = 0;
  std::memcpy(&f, &value, sizeof(f));
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

}  // namespace sluice
