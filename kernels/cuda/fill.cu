// Small writes, fills and arithmetic sequences (fill.h).
#include "absl/strings/str_cat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/fill.h"

namespace sluice::cuda {
namespace {

static __global__ void WriteInt64sKernel(int64_t* dst, SmallInt64s values) {
  const int i = threadIdx.x;
  if (i < values.count) dst[i] = values.values[i];
}

template <int kBytes>
static __global__ void FillKernel(void* dst, int64_t n, uint64_t bits) {
  using U = typename Bits<kBytes>::type;
  U* d = static_cast<U*>(dst);
  const U v = static_cast<U>(bits);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    d[i] = v;
  }
}

template <typename T, typename C>
static __global__ void RangeKernel(T* dst, int64_t n, C start, C delta) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = static_cast<T>(start + static_cast<C>(i) * delta);
  }
}

}  // namespace

absl::Status LaunchWriteInt64s(int64_t* dst, const SmallInt64s& values,
                               cudaStream_t stream) {
  if (values.count <= 0) return absl::OkStatus();
  if (values.count > kMaxSmallInt64s) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", values.count, " values at once"));
  }
  WriteInt64sKernel<<<1, kMaxSmallInt64s, 0, stream>>>(dst, values);
  return LaunchStatus("write int64s");
}

absl::Status LaunchFillBits(void* dst, int64_t n, int element_bytes,
                            uint64_t bits, cudaStream_t stream) {
  if (n == 0) return absl::OkStatus();
  switch (element_bytes) {
    case 1: FillKernel<1><<<GridFor(n), kThreads, 0, stream>>>(dst, n, bits); break;
    case 2: FillKernel<2><<<GridFor(n), kThreads, 0, stream>>>(dst, n, bits); break;
    case 4: FillKernel<4><<<GridFor(n), kThreads, 0, stream>>>(dst, n, bits); break;
    case 8: FillKernel<8><<<GridFor(n), kThreads, 0, stream>>>(dst, n, bits); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("fill: unsupported element size ", element_bytes));
  }
  return LaunchStatus("fill");
}

absl::Status LaunchRange(GpuDtype dtype, void* dst, int64_t n, double start,
                         double delta, int64_t start_i, int64_t delta_i,
                         cudaStream_t stream) {
  if (n == 0) return absl::OkStatus();
  const unsigned int grid = GridFor(n);
  switch (dtype) {
    case GpuDtype::kFloat:
      RangeKernel<float, double><<<grid, kThreads, 0, stream>>>(
          static_cast<float*>(dst), n, start, delta);
      break;
    case GpuDtype::kDouble:
      RangeKernel<double, double><<<grid, kThreads, 0, stream>>>(
          static_cast<double*>(dst), n, start, delta);
      break;
    case GpuDtype::kInt32:
      RangeKernel<int32_t, int64_t><<<grid, kThreads, 0, stream>>>(
          static_cast<int32_t*>(dst), n, start_i, delta_i);
      break;
    case GpuDtype::kInt64:
      RangeKernel<int64_t, int64_t><<<grid, kThreads, 0, stream>>>(
          static_cast<int64_t*>(dst), n, start_i, delta_i);
      break;
    default:
      return absl::UnimplementedError("Range: unsupported dtype on the GPU");
  }
  return LaunchStatus("Range");
}

}  // namespace sluice::cuda
