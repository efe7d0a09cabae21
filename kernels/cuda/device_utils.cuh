// Device-side helpers for the .cu files of kernels/cuda: conversions between
// storage types and the accumulation type, dispatch on GpuDtype, IndexMap
// offsets, a grid-stride
// launch shape, block-wide reductions in shared memory, and turning a launch
// error into a Status. Included only by kernels/cuda/*.cu.
//
//   float v = ToFloat(x[i]);                    // __half, bf16, float ...
//   float m = BlockReduce<float>(v, MaxOp());   // every thread gets the max
//   return LaunchStatus("Softmax");
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_DEVICE_UTILS_CUH_
#define SLUICE_KERNELS_CUDA_DEVICE_UTILS_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/cuda/launch_types.h"

// nvcc (EDG) flags `status = Launch...()` because absl::Status is
// [[nodiscard]] and operator= returns a reference; g++ does not.
#pragma nv_diag_suppress 2810

namespace sluice::cuda {

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements.
inline unsigned int GridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > (int64_t{1} << 20)) blocks = int64_t{1} << 20;
  return static_cast<unsigned int>(blocks < 1 ? 1 : blocks);
}

// The status of the launch just made.
inline absl::Status LaunchStatus(const char* what) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, " kernel launch failed: ",
                                          cudaGetErrorString(err), " (",
                                          cudaGetErrorName(err), ")"));
}

// The status of a CUDA library call (CUB's) made for `op`: OK, or INTERNAL
// "op: what: error (name)", with the sticky last error cleared.
inline absl::Status CallStatus(cudaError_t err, const char* op, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();
  return absl::InternalError(absl::StrCat(op, ": ", what, ": ",
                                          cudaGetErrorString(err), " (",
                                          cudaGetErrorName(err), ")"));
}

// Wide type a value is computed in: float for 16-bit floats and float,
// double for double, uint64 for uint64, int64 for the other integers and
// bool.
template <typename T> struct Wide { using type = int64_t; };
template <> struct Wide<uint64_t> { using type = uint64_t; };
template <> struct Wide<float> { using type = float; };
template <> struct Wide<__half> { using type = float; };
template <> struct Wide<__nv_bfloat16> { using type = float; };
template <> struct Wide<double> { using type = double; };

template <typename T>
__device__ __forceinline__ typename Wide<T>::type ToWide(T x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(x);
  } else {
    return static_cast<typename Wide<T>::type>(x);
  }
}

// For the kernels that compute in double as the CPU does (pool_grid.cu,
// resize_pad.cu); their ways back differ (truncating or rounding) and stay
// with them.
template <typename T>
__device__ __forceinline__ double ToDouble(T v) {
  return static_cast<double>(ToWide(v));
}

template <typename T, typename W>
__device__ __forceinline__ T FromWide(W x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<T, bool>) {
    return x != W(0);
  } else {
    return static_cast<T>(x);
  }
}

// Offset of operand `op` for linear index i of the map's iteration space.
__device__ __forceinline__ int64_t MapOffset(const IndexMap& m, int op,
                                             int64_t i) {
  int64_t off = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t dim = m.dims[d];
    off += (i % dim) * m.strides[op][d];
    i /= dim;
  }
  return off;
}

struct SumOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    // NaN propagates, as on the CPU.
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
};

template <typename A>
__device__ __forceinline__ A ShuffleDown(A v, int offset) {
  return __shfl_down_sync(0xffffffffu, v, offset);
}

// Reduces `v` over the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. Uses 32 slots of shared memory.
template <typename A, typename Op>
__device__ A BlockReduce(A v, Op op) {
  __shared__ A partial[32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    v = op(v, ShuffleDown(v, offset));
  }
  __syncthreads();  // `partial` may still be read from a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = partial[0];
  for (int w = 1; w < warps; ++w) v = op(v, partial[w]);
  return v;
}

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                          std::is_same_v<T, __half> ||
                          std::is_same_v<T, __nv_bfloat16>;
// The CPU kernels' "arithmetic" dtypes: floats, int32 and int64.
template <typename T>
constexpr bool kIsArith = kIsFloat<T> || std::is_same_v<T, int32_t> ||
                          std::is_same_v<T, int64_t>;
// What sorts and compares, as the CPU's kIsOrdered (kernels/cpu/type_visit.h):
// every GpuDtype type but bool.
template <typename T>
constexpr bool kIsOrdered = kIsArith<T> || std::is_same_v<T, int8_t> ||
                            std::is_same_v<T, uint8_t>;

// Calls fn(T{}) for the C++ type of `dtype`; false if there is none (the
// float8, float4 and sub-byte dtypes: kernels/cuda/cast.cu has its own
// dispatch). Callers pick the types they implement with `if constexpr`.
template <typename F>
bool DispatchDtype(GpuDtype dtype, F&& fn) {
  switch (dtype) {
    case GpuDtype::kFloat: fn(float{}); return true;
    case GpuDtype::kHalf: fn(__half{}); return true;
    case GpuDtype::kBFloat16: fn(__nv_bfloat16{}); return true;
    case GpuDtype::kDouble: fn(double{}); return true;
    case GpuDtype::kInt32: fn(int32_t{}); return true;
    case GpuDtype::kInt64: fn(int64_t{}); return true;
    case GpuDtype::kInt8: fn(int8_t{}); return true;
    case GpuDtype::kUInt8: fn(uint8_t{}); return true;
    case GpuDtype::kBool: fn(bool{}); return true;
    case GpuDtype::kInt16: fn(int16_t{}); return true;
    case GpuDtype::kUInt16: fn(uint16_t{}); return true;
    case GpuDtype::kUInt32: fn(uint32_t{}); return true;
    case GpuDtype::kUInt64: fn(uint64_t{}); return true;
    default: return false;
  }
}

// a + b, wrapping for integers (computed in uint64), as the CPU's sums.
template <typename W>
__device__ __forceinline__ W WrapAdd(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    return static_cast<W>(static_cast<unsigned long long>(a) +
                          static_cast<unsigned long long>(b));
  } else {
    return a + b;
  }
}

// Unsigned type of each element size, for dtype-agnostic copies.
template <int kBytes> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };
template <> struct Bits<16> { using type = uint4; };

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_DEVICE_UTILS_CUH_
