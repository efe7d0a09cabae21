// NonZero's selection and unravelling (nonzero.h), on CUB's DeviceSelect.
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/nonzero.h"

namespace sluice::cuda {
namespace {

// An element is nonzero when its bits outside `mask` are not all zero: the
// sign bit is left out for floats, so -0.0 is zero and NaN is not.
template <typename U>
struct NonZeroAt {
  const U* x;
  U mask;
  __device__ bool operator()(int64_t i) const { return (x[i] & mask) != 0; }
};

// The storage width and mask of a dtype; bytes 0 when it has no kernel.
struct BitsOf {
  int bytes = 0;
  uint64_t mask = ~uint64_t{0};
};

BitsOf NonZeroBits(GpuDtype dtype) {
  switch (dtype) {
    case GpuDtype::kFloat: return {4, 0x7fffffffu};
    case GpuDtype::kDouble: return {8, 0x7fffffffffffffffull};
    case GpuDtype::kHalf:
    case GpuDtype::kBFloat16: return {2, 0x7fffu};
    case GpuDtype::kInt8:
    case GpuDtype::kUInt8:
    case GpuDtype::kBool: return {1};
    case GpuDtype::kInt16:
    case GpuDtype::kUInt16: return {2};
    case GpuDtype::kInt32:
    case GpuDtype::kUInt32: return {4};
    case GpuDtype::kInt64:
    case GpuDtype::kUInt64: return {8};
    default: return {};
  }
}

template <int kBytes>
cudaError_t Select(const void* x, uint64_t mask, int64_t n, int64_t* positions,
                   int64_t* count, void* scratch, size_t* scratch_bytes,
                   cudaStream_t stream) {
  using U = typename Bits<kBytes>::type;
  NonZeroAt<U> pred{static_cast<const U*>(x), static_cast<U>(mask)};
  return cub::DeviceSelect::If(scratch, *scratch_bytes,
                               thrust::counting_iterator<int64_t>(0), positions,
                               count, n, pred, stream);
}

cudaError_t SelectBits(const BitsOf& b, const void* x, int64_t n,
                       int64_t* positions, int64_t* count, void* scratch,
                       size_t* scratch_bytes, cudaStream_t stream) {
  switch (b.bytes) {
    case 1: return Select<1>(x, b.mask, n, positions, count, scratch, scratch_bytes, stream);
    case 2: return Select<2>(x, b.mask, n, positions, count, scratch, scratch_bytes, stream);
    case 4: return Select<4>(x, b.mask, n, positions, count, scratch, scratch_bytes, stream);
    default: return Select<8>(x, b.mask, n, positions, count, scratch, scratch_bytes, stream);
  }
}

__global__ void UnravelKernel(const int64_t* positions, int64_t count,
                              SmallInt64s dims, int64_t* out) {
  for (int64_t h = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; h < count;
       h += int64_t{gridDim.x} * blockDim.x) {
    int64_t flat = positions[h];
    for (int d = dims.count - 1; d >= 0; --d) {
      out[d * count + h] = flat % dims.values[d];
      flat /= dims.values[d];
    }
  }
}

absl::Status CubStatus(cudaError_t err, const char* what) {
  return CallStatus(err, "NonZero", what);
}

}  // namespace

bool HasNonZeroKernel(GpuDtype dtype) { return NonZeroBits(dtype).bytes != 0; }

absl::StatusOr<size_t> NonZeroScratchBytes(GpuDtype dtype, int64_t n) {
  const BitsOf b = NonZeroBits(dtype);
  if (b.bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NonZero: dtype ", static_cast<int>(dtype), " has no GPU kernel"));
  }
  size_t bytes = 0;
  absl::Status s = CubStatus(
      SelectBits(b, nullptr, n, nullptr, nullptr, nullptr, &bytes, nullptr),
      "sizing the selection's scratch");
  if (!s.ok()) return s;
  return bytes;
}

absl::Status LaunchNonZeroPositions(GpuDtype dtype, const void* x, int64_t n,
                                    int64_t* positions, int64_t* count,
                                    void* scratch, size_t scratch_bytes,
                                    cudaStream_t stream) {
  const BitsOf b = NonZeroBits(dtype);
  if (b.bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NonZero: dtype ", static_cast<int>(dtype), " has no GPU kernel"));
  }
  return CubStatus(SelectBits(b, x, n, positions, count, scratch,
                              &scratch_bytes, stream),
                   "selecting the nonzero elements");
}

absl::Status LaunchUnravelPositions(const int64_t* positions, int64_t count,
                                    const SmallInt64s& dims, int64_t* out,
                                    cudaStream_t stream) {
  if (count == 0 || dims.count == 0) return absl::OkStatus();
  UnravelKernel<<<GridFor(count), kThreads, 0, stream>>>(positions, count, dims,
                                                         out);
  return LaunchStatus("NonZero unravel");
}

}  // namespace sluice::cuda
