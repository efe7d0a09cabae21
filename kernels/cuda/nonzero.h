// Host launchers for NonZero on the GPU, whose output size depends on the
// data: CUB's DeviceSelect writes the flat positions of the nonzero
// elements (ascending) and their count on the GPU; the OpKernel reads the
// count back (the step's one host wait for this node), allocates the
// [rank, count] output and unravels the positions into it.
//
//   ASSIGN_OR_RETURN(size_t bytes, NonZeroScratchBytes(GpuDtype::kFloat, n));
//   RETURN_IF_ERROR(LaunchNonZeroPositions(GpuDtype::kFloat, x, n, positions,
//                                          count, scratch, bytes, stream));
//   ... read *count on the host, allocate y [rank, count] ...
//   RETURN_IF_ERROR(LaunchUnravelPositions(positions, count, dims, y, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_NONZERO_H_
#define SLUICE_KERNELS_CUDA_NONZERO_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// Floats (float, double, float16, bfloat16: -0.0 is zero, NaN is not),
// every integer dtype, and bool.
bool HasNonZeroKernel(GpuDtype dtype);

// Scratch bytes LaunchNonZeroPositions needs for n elements of `dtype`.
absl::StatusOr<size_t> NonZeroScratchBytes(GpuDtype dtype, int64_t n);

// positions[0, *count) = the flat positions i of x[0, n) with x[i] != 0,
// ascending; `positions` holds n values, `count` one (device memory).
absl::Status LaunchNonZeroPositions(GpuDtype dtype, const void* x, int64_t n,
                                    int64_t* positions, int64_t* count,
                                    void* scratch, size_t scratch_bytes,
                                    cudaStream_t stream);

// out [dims.count, count] (row-major): out[d * count + h] is coordinate d of
// flat position positions[h] in a tensor of dims.values.
absl::Status LaunchUnravelPositions(const int64_t* positions, int64_t count,
                                    const SmallInt64s& dims, int64_t* out,
                                    cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_NONZERO_H_
