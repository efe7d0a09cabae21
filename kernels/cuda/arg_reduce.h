// Host launcher for ArgMax and ArgMin on the GPU: the int64 index of the
// largest (smallest) element along one axis, the first on ties or the last
// with select_last; comparisons as on the CPU (a NaN is never "better", so
// one in the first place wins).
//
//   // x viewed as [outer, n, inner]; out is [outer, inner] int64
//   RETURN_IF_ERROR(LaunchArgReduce(/*max=*/true, /*select_last=*/false,
//                                   GpuDtype::kFloat, x, out, outer, n, inner,
//                                   stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_ARG_REDUCE_H_
#define SLUICE_KERNELS_CUDA_ARG_REDUCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// Floats, int32 and int64.
bool HasArgReduceKernel(GpuDtype dtype);

// REQUIRES: n >= 1.
absl::Status LaunchArgReduce(bool max, bool select_last, GpuDtype dtype,
                             const void* x, int64_t* out, int64_t outer,
                             int64_t n, int64_t inner, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_ARG_REDUCE_H_
