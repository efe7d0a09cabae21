// The C++ types of the 8-, 4- and 2-bit dtypes: the float8 family
// (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 E2M1, and int4 / uint4 /
// int2 / uint2. Each is one byte in memory (the sub-byte types too: the value
// in the low bits, sign-extended for the signed ones). Conversions follow the
// ONNX Cast spec and numpy's ml_dtypes, which the ONNX reference uses:
//
//   float8_e4m3fn a(300.0f);                      // 288, round to nearest even
//   float8_e4m3fn b = float8_e4m3fn::FromBits(0x7f);  // NaN
//   uint8_t nan = EncodeSmallFloat(1e6, SmallFloat::kE4M3FN, /*saturate=*/false);
//   int4 c(-9);                                   // wraps to 7, like ml_dtypes
//
// Construction from a number saturates (ONNX Cast's default, saturate=1):
// NaN stays NaN, anything beyond the largest finite value (infinities too)
// becomes that value. EncodeSmallFloat(..., false) gives the non-saturating
// rules instead. Integers wrap to their low bits.
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_CORE_SMALL_TYPES_H_
#define SLUICE_CORE_SMALL_TYPES_H_

#include <cstdint>
#include <type_traits>

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

// The value of a bit pattern (the low 4 bits for E2M1); NaN for NaN patterns.
float DecodeSmallFloat(uint8_t bits, SmallFloat format);
// Rounds to nearest even. saturate: NaN stays NaN and values beyond the
// largest finite one (infinities too) clamp to it. Not saturating: they become
// infinity for E5M2 and NaN for the others (E2M1 always saturates, and maps
// NaN to 0x8, as ml_dtypes does). E8M0 rounds "up" here; see EncodeE8M0.
uint8_t EncodeSmallFloat(double value, SmallFloat format, bool saturate);
// float -> E8M0 as the ONNX reference (numpy_helper.to_float8e8m0) does it:
// the float32 exponent field, rounded per `mode`, NaN and infinities -> 0xFF;
// saturate keeps a round-up from reaching 0xFF.
uint8_t EncodeE8M0(float value, bool saturate, E8M0Rounding mode);
// Largest finite value.
double SmallFloatMax(SmallFloat format);

template <SmallFloat F>
struct SmallFloatType {
  static constexpr SmallFloat kFormat = F;
  uint8_t bits = 0;

  SmallFloatType() = default;
  template <typename U>
  explicit SmallFloatType(U v)
      : bits(EncodeSmallFloat(ToDouble(v), F, /*saturate=*/true)) {}
  static SmallFloatType FromBits(uint8_t b) {
    SmallFloatType r;
    r.bits = b;
    return r;
  }

  explicit operator float() const { return DecodeSmallFloat(bits, F); }
  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U> &&
                                                    !std::is_same_v<U, float>>>
  explicit operator U() const {
    return static_cast<U>(DecodeSmallFloat(bits, F));
  }

 private:
  template <typename U>
  static double ToDouble(U v) {
    if constexpr (std::is_arithmetic_v<U>) {
      return static_cast<double>(v);
    } else {
      return static_cast<double>(static_cast<float>(v));  // half, bfloat16
    }
  }
};

#define SLUICE_SMALL_FLOAT_OP(OP)                                            \
  template <SmallFloat F>                                                    \
  SmallFloatType<F> operator OP(SmallFloatType<F> a, SmallFloatType<F> b) { \
    return SmallFloatType<F>(static_cast<float>(a) OP static_cast<float>(b)); \
  }
SLUICE_SMALL_FLOAT_OP(+)
SLUICE_SMALL_FLOAT_OP(-)
SLUICE_SMALL_FLOAT_OP(*)
SLUICE_SMALL_FLOAT_OP(/)
#undef SLUICE_SMALL_FLOAT_OP
#define SLUICE_SMALL_FLOAT_CMP(OP)                                \
  template <SmallFloat F>                                         \
  bool operator OP(SmallFloatType<F> a, SmallFloatType<F> b) {    \
    return static_cast<float>(a) OP static_cast<float>(b);        \
  }
SLUICE_SMALL_FLOAT_CMP(==)
SLUICE_SMALL_FLOAT_CMP(!=)
SLUICE_SMALL_FLOAT_CMP(<)
SLUICE_SMALL_FLOAT_CMP(<=)
SLUICE_SMALL_FLOAT_CMP(>)
SLUICE_SMALL_FLOAT_CMP(>=)
#undef SLUICE_SMALL_FLOAT_CMP
template <SmallFloat F>
SmallFloatType<F> operator-(SmallFloatType<F> a) {
  return SmallFloatType<F>(-static_cast<float>(a));
}

using float8_e4m3fn = SmallFloatType<SmallFloat::kE4M3FN>;
using float8_e4m3fnuz = SmallFloatType<SmallFloat::kE4M3FNUZ>;
using float8_e5m2 = SmallFloatType<SmallFloat::kE5M2>;
using float8_e5m2fnuz = SmallFloatType<SmallFloat::kE5M2FNUZ>;
using float8_e8m0 = SmallFloatType<SmallFloat::kE8M0>;
using float4_e2m1 = SmallFloatType<SmallFloat::kE2M1>;

// A BITS-bit integer held in one byte, sign-extended when SIGNED. Numbers
// convert as C++ does to int64 (floats truncate; NaN and infinities give 0)
// and then wrap to the low BITS bits.
template <int BITS, bool SIGNED>
struct SmallIntType {
  using Storage = std::conditional_t<SIGNED, int8_t, uint8_t>;
  static constexpr int kMin = SIGNED ? -(1 << (BITS - 1)) : 0;
  static constexpr int kMax = SIGNED ? (1 << (BITS - 1)) - 1 : (1 << BITS) - 1;
  Storage value = 0;

  SmallIntType() = default;
  template <typename U>
  explicit SmallIntType(U v) : value(Wrap(ToInt64(v))) {}

  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
  explicit operator U() const {
    return static_cast<U>(value);
  }

  // The low BITS bits of v, sign-extended when SIGNED.
  static Storage Wrap(int64_t v) {
    const uint64_t mask = (uint64_t{1} << BITS) - 1;
    uint64_t low = static_cast<uint64_t>(v) & mask;
    if (SIGNED && (low >> (BITS - 1)) != 0) low |= ~mask;
    return static_cast<Storage>(static_cast<int64_t>(low));
  }

 private:
  template <typename U>
  static int64_t ToInt64(U v) {
    if constexpr (std::is_integral_v<U>) {
      return static_cast<int64_t>(v);
    } else {
      const double d = static_cast<double>(static_cast<float>(v));
      // Out of int64's range (NaN too) has no defined conversion; give 0.
      if (!(d > -9.2e18 && d < 9.2e18)) return 0;
      return static_cast<int64_t>(d);
    }
  }
};

#define SLUICE_SMALL_INT_OP(OP)                                              \
  template <int B, bool S>                                                   \
  SmallIntType<B, S> operator OP(SmallIntType<B, S> a, SmallIntType<B, S> b) { \
    return SmallIntType<B, S>(static_cast<int64_t>(a.value) OP               \
                              static_cast<int64_t>(b.value));                \
  }
SLUICE_SMALL_INT_OP(+)
SLUICE_SMALL_INT_OP(-)
SLUICE_SMALL_INT_OP(*)
#undef SLUICE_SMALL_INT_OP
template <int B, bool S>
SmallIntType<B, S> operator/(SmallIntType<B, S> a, SmallIntType<B, S> b) {
  return SmallIntType<B, S>(b.value == 0 ? 0 : a.value / b.value);
}
#define SLUICE_SMALL_INT_CMP(OP)                                      \
  template <int B, bool S>                                            \
  bool operator OP(SmallIntType<B, S> a, SmallIntType<B, S> b) {      \
    return a.value OP b.value;                                        \
  }
SLUICE_SMALL_INT_CMP(==)
SLUICE_SMALL_INT_CMP(!=)
SLUICE_SMALL_INT_CMP(<)
SLUICE_SMALL_INT_CMP(<=)
SLUICE_SMALL_INT_CMP(>)
SLUICE_SMALL_INT_CMP(>=)
#undef SLUICE_SMALL_INT_CMP
template <int B, bool S>
SmallIntType<B, S> operator-(SmallIntType<B, S> a) {
  return SmallIntType<B, S>(-static_cast<int64_t>(a.value));
}

using int4 = SmallIntType<4, true>;
using uint4 = SmallIntType<4, false>;
using int2 = SmallIntType<2, true>;
using uint2 = SmallIntType<2, false>;

// Whether T is one of the SmallIntType instances.
template <typename T>
inline constexpr bool kIsSmallInt = false;
template <int B, bool S>
inline constexpr bool kIsSmallInt<SmallIntType<B, S>> = true;
// Whether T is one of the SmallFloatType instances.
template <typename T>
inline constexpr bool kIsSmallFloat = false;
template <SmallFloat F>
inline constexpr bool kIsSmallFloat<SmallFloatType<F>> = true;

static_assert(sizeof(float8_e4m3fn) == 1 && sizeof(int4) == 1);

}  // namespace sluice

#endif  // SLUICE_CORE_SMALL_TYPES_H_
