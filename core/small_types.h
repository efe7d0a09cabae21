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
// rules instead. Integers wrap to their low bits. The bit conversions live in
// core/small_float_codec.h and, like Wrap and FromBits, run in CUDA device
// code too.
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_CORE_SMALL_TYPES_H_
#define SLUICE_CORE_SMALL_TYPES_H_

#include <cstdint>
#include <type_traits>

#include "core/host_device.h"
#include "core/small_float_codec.h"  // IWYU pragma: export

namespace sluice {

template <SmallFloat F>
struct SmallFloatType {
  static constexpr SmallFloat kFormat = F;
  uint8_t bits = 0;

  SmallFloatType() = default;
  template <typename U>
  explicit SmallFloatType(U v)
      : bits(EncodeSmallFloat(ToDouble(v), F, /*saturate=*/true)) {}
  SLUICE_HOST_DEVICE static SmallFloatType FromBits(uint8_t b) {
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
  SLUICE_HOST_DEVICE static Storage Wrap(int64_t v) {
    const uint64_t mask = (uint64_t{1} << BITS) - 1;
    uint64_t low = static_cast<uint64_t>(v) & mask;
    if (SIGNED && (low >> (BITS - 1)) != 0) low |= ~mask;
    return static_cast<Storage>(static_cast<int64_t>(low));
  }
  // d truncated toward zero; 0 out of int64's range (NaN too), where C++
  // defines no conversion.
  SLUICE_HOST_DEVICE static int64_t TruncateToInt64(double d) {
    if (!(d > -9.2e18 && d < 9.2e18)) return 0;
    return static_cast<int64_t>(d);
  }

 private:
  template <typename U>
  static int64_t ToInt64(U v) {
    if constexpr (std::is_integral_v<U>) {
      return static_cast<int64_t>(v);
    } else {
      return TruncateToInt64(static_cast<double>(static_cast<float>(v)));
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
