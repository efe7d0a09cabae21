// Host launcher for ReduceSum / ReduceMean / ReduceMax on CUDA: one thread
// block per output element, threads striding over the reduced elements and
// combining in shared memory. float32, float16, bfloat16, float64 (summed in
// float or double), int32 and int64 (in int64).
//
//   ReduceMap m = ...;   // kept dims -> input strides, reduced dims -> strides
//   RETURN_IF_ERROR(LaunchReduce(ReduceOp::kSum, GpuDtype::kFloat, in, out, m, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_REDUCE_H_
#define SLUICE_KERNELS_CUDA_REDUCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

enum class ReduceOp { kSum, kMean, kMax };

struct ReduceMap {
  // Output index space (kept dimensions, in order) and where each step moves
  // in the input: kept.dims / kept.strides[0].
  IndexMap kept;
  // The reduced dimensions and their input strides: reduced.dims /
  // reduced.strides[0]; reduced.num_elements elements per output.
  IndexMap reduced;
};

// REQUIRES: reduced.num_elements > 0 for kMax (the caller reports the error).
// Empty reductions give 0 (sum) and NaN (mean, floats).
absl::Status LaunchReduce(ReduceOp op, GpuDtype dtype, const void* in,
                          void* out, const ReduceMap& map, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_REDUCE_H_
