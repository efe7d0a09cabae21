// Host launcher for Einsum on the GPU: one thread per output element walks
// the summed labels as an odometer over the loop the CPU kernel uses
// (kernels/einsum_loop.h), passed by value. Floats accumulate in double,
// integers wrap (in uint64), as on the CPU.
//
//   EinsumParams p;  // n_in, n_out, n_sum, sizes, strides, data
//   RETURN_IF_ERROR(LaunchEinsum(GpuDtype::kFloat, p, y, y_elements, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_EINSUM_H_
#define SLUICE_KERNELS_CUDA_EINSUM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

inline constexpr int kMaxEinsumInputs = 4;
inline constexpr int kMaxEinsumLabels = 12;  // output and summed, each

struct EinsumParams {
  int n_in = 0, n_out = 0, n_sum = 0;
  int64_t out_sizes[kMaxEinsumLabels] = {};
  int64_t sum_sizes[kMaxEinsumLabels] = {};
  int64_t out_strides[kMaxEinsumInputs][kMaxEinsumLabels] = {};
  int64_t sum_strides[kMaxEinsumInputs][kMaxEinsumLabels] = {};
  const void* data[kMaxEinsumInputs] = {};  // device memory
};

// The ordered dtypes: floats, int8, uint8, int32, int64.
bool HasEinsumKernel(GpuDtype dtype);
absl::Status LaunchEinsum(GpuDtype dtype, const EinsumParams& p, void* y,
                          int64_t y_elements, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_EINSUM_H_
