// The CUDA Cast: one kernel per (source, destination) pair, a grid-stride
// loop over CastOne, which follows kernels/cpu/cast.cc's CastOne case by
// case so that both give the same bits.
#include <cstdint>
#include <type_traits>

#include "core/small_types.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

// The type a standard value is converted from: float for the 16-bit floats
// (the CPU's ComputeType), the type itself otherwise.
template <typename T>
using Compute = std::conditional_t<
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float, T>;

template <typename T>
__device__ __forceinline__ Compute<T> ToCompute(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

// A standard value as double (the 16-bit floats through float). A float
// NaN keeps its sign, as on the host, where it picks the float8 NaN pattern.
template <typename T>
__device__ __forceinline__ double AsDouble(T v) {
  const Compute<T> c = ToCompute(v);
  if constexpr (std::is_same_v<Compute<T>, float>) {
    if (c != c) {
      return __longlong_as_double(static_cast<long long>(
          (__float_as_uint(c) >> 31) != 0 ? 0xfff8000000000000ull
                                          : 0x7ff8000000000000ull));
    }
  }
  return static_cast<double>(c);
}

// The integer types' ranges, for saturating float -> integer: [kMin, kMax],
// and as doubles kLow = min and kEnd = max + 1.0 (rounded to double as the
// CPU's numeric_limits<D>::max() + 1.0 is).
template <typename D> struct IntLimits;
template <> struct IntLimits<int8_t> {
  static constexpr int8_t kMin = -128, kMax = 127;
  static constexpr double kLow = -128.0, kEnd = 128.0;
};
template <> struct IntLimits<uint8_t> {
  static constexpr uint8_t kMin = 0, kMax = 255;
  static constexpr double kLow = 0.0, kEnd = 256.0;
};
template <> struct IntLimits<int16_t> {
  static constexpr int16_t kMin = -32768, kMax = 32767;
  static constexpr double kLow = -32768.0, kEnd = 32768.0;
};
template <> struct IntLimits<uint16_t> {
  static constexpr uint16_t kMin = 0, kMax = 65535;
  static constexpr double kLow = 0.0, kEnd = 65536.0;
};
template <> struct IntLimits<int32_t> {
  static constexpr int32_t kMin = -2147483647 - 1, kMax = 2147483647;
  static constexpr double kLow = -2147483648.0, kEnd = 2147483648.0;
};
template <> struct IntLimits<uint32_t> {
  static constexpr uint32_t kMin = 0, kMax = 4294967295u;
  static constexpr double kLow = 0.0, kEnd = 4294967296.0;
};
template <> struct IntLimits<int64_t> {
  static constexpr int64_t kMin = -9223372036854775807LL - 1;
  static constexpr int64_t kMax = 9223372036854775807LL;
  static constexpr double kLow = -9223372036854775808.0;
  static constexpr double kEnd = 9223372036854775808.0;  // 2^63 + 1 rounds
};
template <> struct IntLimits<uint64_t> {
  static constexpr uint64_t kMin = 0, kMax = 18446744073709551615ull;
  static constexpr double kLow = 0.0;
  static constexpr double kEnd = 18446744073709551616.0;  // 2^64
};

// Float (in double) to integer: NaN 0, saturating, else truncated.
template <typename D>
__device__ __forceinline__ D FloatToInt(double d) {
  if (d != d) return D(0);
  if (d >= IntLimits<D>::kEnd) return IntLimits<D>::kMax;
  if (d <= IntLimits<D>::kLow) return IntLimits<D>::kMin;
  return static_cast<D>(d);
}

template <typename D, typename S>
__device__ D CastOne(S v, CastParams p) {
  if constexpr (kIsSmallFloat<S>) {
    // Every small float is exact in float.
    return CastOne<D, float>(DecodeSmallFloat(v.bits, S::kFormat), p);
  } else if constexpr (kIsSmallInt<S>) {
    return CastOne<D, int64_t>(static_cast<int64_t>(v.value), p);
  } else if constexpr (std::is_same_v<D, ::sluice::float8_e8m0>) {
    return D::FromBits(
        EncodeE8M0(static_cast<float>(AsDouble(v)), p.saturate, p.round));
  } else if constexpr (kIsSmallFloat<D>) {
    return D::FromBits(EncodeSmallFloat(AsDouble(v), D::kFormat, p.saturate));
  } else if constexpr (kIsSmallInt<D>) {
    // Truncates (floats through float, as the CPU's SmallIntType does),
    // then wraps to the low bits.
    D r;
    if constexpr (std::is_integral_v<S>) {
      r.value = D::Wrap(static_cast<int64_t>(v));
    } else {
      r.value = D::Wrap(D::TruncateToInt64(
          static_cast<double>(static_cast<float>(ToCompute(v)))));
    }
    return r;
  } else {
    using C = Compute<S>;
    const C c = ToCompute(v);
    if constexpr (std::is_same_v<D, bool>) {
      return c != C(0);
    } else if constexpr (std::is_integral_v<D> &&
                         std::is_floating_point_v<C>) {
      return FloatToInt<D>(static_cast<double>(c));
    } else if constexpr (std::is_same_v<D, __half>) {
      return __float2half_rn(static_cast<float>(c));
    } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
      return __float2bfloat16_rn(static_cast<float>(c));
    } else {
      return static_cast<D>(c);
    }
  }
}

template <typename S, typename D>
static __global__ void CastKernel(const S* x, D* y, int64_t n, CastParams p) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = CastOne<D, S>(x[i], p);
  }
}

// Calls fn(T{}) with the device type of every dtype (the small types are
// the one-byte structs of core/small_types.h); false for none.
template <typename F>
bool DispatchCastDtype(GpuDtype dtype, F&& fn) {
  switch (dtype) {
    case GpuDtype::kFloat8E4M3FN: fn(float8_e4m3fn{}); return true;
    case GpuDtype::kFloat8E4M3FNUZ: fn(float8_e4m3fnuz{}); return true;
    case GpuDtype::kFloat8E5M2: fn(float8_e5m2{}); return true;
    case GpuDtype::kFloat8E5M2FNUZ: fn(float8_e5m2fnuz{}); return true;
    case GpuDtype::kFloat8E8M0: fn(float8_e8m0{}); return true;
    case GpuDtype::kFloat4E2M1: fn(float4_e2m1{}); return true;
    // ::sluice's, not CUDA's vector types of the same names.
    case GpuDtype::kInt4: fn(::sluice::int4{}); return true;
    case GpuDtype::kUInt4: fn(::sluice::uint4{}); return true;
    case GpuDtype::kInt2: fn(::sluice::int2{}); return true;
    case GpuDtype::kUInt2: fn(::sluice::uint2{}); return true;
    default: return DispatchDtype(dtype, fn);
  }
}

}  // namespace

absl::Status LaunchCast(GpuDtype src, GpuDtype dst, const void* x, void* y,
                        int64_t n, CastParams params, cudaStream_t stream) {
  absl::Status status;
  bool found = false;
  DispatchCastDtype(src, [&](auto s_tag) {
    using S = decltype(s_tag);
    DispatchCastDtype(dst, [&](auto d_tag) {
      using D = decltype(d_tag);
      found = true;
      if (n == 0) return;
      CastKernel<S, D><<<GridFor(n), kThreads, 0, stream>>>(
          static_cast<const S*>(x), static_cast<D*>(y), n, params);
      status = LaunchStatus("Cast");
    });
  });
  if (!found) return absl::UnimplementedError("no CUDA Cast for these dtypes");
  return status;
}

}  // namespace sluice::cuda
