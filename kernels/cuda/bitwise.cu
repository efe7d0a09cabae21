// The bitwise CUDA kernels: grid-stride loops, one thread per element.
#include <type_traits>

#include "kernels/cuda/bitwise.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <BitOp kOp, typename T>
__device__ __forceinline__ T ApplyBit(T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr U kBits = sizeof(T) * 8;
  if constexpr (kOp == BitOp::kAnd) return static_cast<T>(x & y);
  if constexpr (kOp == BitOp::kOr) return static_cast<T>(x | y);
  if constexpr (kOp == BitOp::kXor) return static_cast<T>(x ^ y);
  const U s = static_cast<U>(y);
  if constexpr (kOp == BitOp::kShiftLeft) {
    return s >= kBits ? T(0) : static_cast<T>(static_cast<U>(x) << s);
  }
  if constexpr (kOp == BitOp::kShiftRight) {
    if constexpr (std::is_signed_v<T>) {
      return s >= kBits ? T(x < 0 ? -1 : 0) : static_cast<T>(x >> s);
    } else {
      return s >= kBits ? T(0) : static_cast<T>(x >> s);
    }
  }
}

template <BitOp kOp, typename T, bool kContiguous>
static __global__ void BitBinaryKernel(const T* a, const T* b, T* out,
                                       IndexMap map) {
  const int64_t n = map.num_elements;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if constexpr (kContiguous) {
      out[i] = ApplyBit<kOp>(a[i], b[i]);
    } else {
      out[i] = ApplyBit<kOp>(a[MapOffset(map, 0, i)], b[MapOffset(map, 1, i)]);
    }
  }
}

template <typename T>
static __global__ void NotKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = static_cast<T>(~x[i]);
  }
}

static __global__ void BytesToBoolKernel(const uint8_t* x, bool* y,
                                         int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = x[i] != 0;
  }
}

template <typename T>
constexpr bool kIsBitType = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <BitOp kOp, typename T>
void LaunchBinaryFor(const void* a, const void* b, void* out,
                     const IndexMap& map, bool contiguous,
                     cudaStream_t stream) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* po = static_cast<T*>(out);
  const int64_t n = map.num_elements;
  if (contiguous) {
    BitBinaryKernel<kOp, T, true><<<GridFor(n), kThreads, 0, stream>>>(
        pa, pb, po, map);
  } else {
    BitBinaryKernel<kOp, T, false><<<GridFor(n), kThreads, 0, stream>>>(
        pa, pb, po, map);
  }
}

}  // namespace

bool IsBitwiseDtype(GpuDtype dtype) {
  bool ok = false;
  DispatchDtype(dtype, [&](auto tag) { ok = kIsBitType<decltype(tag)>; });
  return ok;
}

absl::Status LaunchBitBinary(BitOp op, GpuDtype dtype, const void* a,
                             const void* b, void* out, const IndexMap& map,
                             bool contiguous, cudaStream_t stream) {
  if (!IsBitwiseDtype(dtype)) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA bitwise kernel for dtype ", static_cast<int>(dtype)));
  }
  if (map.num_elements == 0) return absl::OkStatus();
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsBitType<T>) {
      switch (op) {
        case BitOp::kAnd:
          LaunchBinaryFor<BitOp::kAnd, T>(a, b, out, map, contiguous, stream);
          break;
        case BitOp::kOr:
          LaunchBinaryFor<BitOp::kOr, T>(a, b, out, map, contiguous, stream);
          break;
        case BitOp::kXor:
          LaunchBinaryFor<BitOp::kXor, T>(a, b, out, map, contiguous, stream);
          break;
        case BitOp::kShiftLeft:
          LaunchBinaryFor<BitOp::kShiftLeft, T>(a, b, out, map, contiguous,
                                                stream);
          break;
        case BitOp::kShiftRight:
          LaunchBinaryFor<BitOp::kShiftRight, T>(a, b, out, map, contiguous,
                                                 stream);
          break;
      }
    }
  });
  return LaunchStatus("bitwise");
}

absl::Status LaunchBitwiseNot(GpuDtype dtype, const void* x, void* y,
                              int64_t n, cudaStream_t stream) {
  if (!IsBitwiseDtype(dtype)) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA BitwiseNot for dtype ", static_cast<int>(dtype)));
  }
  if (n == 0) return absl::OkStatus();
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsBitType<T>) {
      NotKernel<T><<<GridFor(n), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n);
    }
  });
  return LaunchStatus("BitwiseNot");
}

absl::Status LaunchBytesToBool(const uint8_t* x, bool* y, int64_t n,
                               cudaStream_t stream) {
  if (n == 0) return absl::OkStatus();
  BytesToBoolKernel<<<GridFor(n), kThreads, 0, stream>>>(x, y, n);
  return LaunchStatus("BitCast");
}

}  // namespace sluice::cuda
