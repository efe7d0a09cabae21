// Host launcher for ReduceSum / ReduceMean / ReduceMax / ReduceMin /
// ReduceProd on CUDA: one thread block per output element, threads striding
// over the reduced elements and combining in shared memory. float32,
// float16, bfloat16, float64 (in float or double), int32 and int64 (in
// int64, products wrapping); Max and Min also int8, uint8 and bool, Prod
// also int8 and uint8 (HasReduceKernel).
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

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd };

struct ReduceMap {
  // Output index space (kept dimensions, in order) and where each step moves
  // in the input: kept.dims / kept.strides[0].
  IndexMap kept;
  // The reduced dimensions and their input strides: reduced.dims /
  // reduced.strides[0]; reduced.num_elements elements per output.
  IndexMap reduced;
};

// Whether LaunchReduce implements `op` for `dtype`.
bool HasReduceKernel(ReduceOp op, GpuDtype dtype);

// Empty reductions give the CPU kernel's identities: 0 (sum), 1 (prod), the
// lowest / highest value of the dtype (max / min: -inf / +inf for floats)
// and NaN (mean, floats); integer means of empty sets are the caller's
// error to report.
absl::Status LaunchReduce(ReduceOp op, GpuDtype dtype, const void* in,
                          void* out, const ReduceMap& map, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_REDUCE_H_
