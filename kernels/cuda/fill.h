// Host launchers that write values computed on the host into device memory
// with a kernel launch (values passed by value, so the launch is recorded
// into a CUDA graph like any other kernel): small int64 arrays (Shape), one
// repeated element (Fill) and arithmetic sequences (Range).
//
//   SmallInt64s dims;  // dims.count = rank, dims.values[i] = x.dim(i)
//   RETURN_IF_ERROR(LaunchWriteInt64s(y->data<int64_t>(), dims, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_FILL_H_
#define SLUICE_KERNELS_CUDA_FILL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

inline constexpr int kMaxSmallInt64s = 16;
struct SmallInt64s {
  int count = 0;
  int64_t values[kMaxSmallInt64s] = {};
};

// dst[i] = values.values[i] for i < values.count.
absl::Status LaunchWriteInt64s(int64_t* dst, const SmallInt64s& values,
                               cudaStream_t stream);
// n elements of element_bytes (1, 2, 4 or 8) each, all equal to the low
// element_bytes of `bits`.
absl::Status LaunchFillBits(void* dst, int64_t n, int element_bytes,
                            uint64_t bits, cudaStream_t stream);
// dst[i] = start + i * delta for i < n, computed in double for the float
// dtypes and in int64 for the integer ones (start_i / delta_i).
absl::Status LaunchRange(GpuDtype dtype, void* dst, int64_t n, double start,
                         double delta, int64_t start_i, int64_t delta_i,
                         cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_FILL_H_
