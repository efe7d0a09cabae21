// Host launchers for GatherElements, GatherND, ScatterElements and
// ScatterND on the GPU. The OpKernels read the indices in host memory,
// check them (an index out of range is the CPU kernels' error) and turn
// them into element offsets, so these kernels only move slices: a gather
// reads `slice` elements at each offset, a scatter combines update slices
// into the output in the CPU's order (grouped by destination, so equal
// destinations are combined one after another, never raced).
//
//   // out[g * slice + e] = data[offsets[g] + e]
//   RETURN_IF_ERROR(LaunchGatherSlices(4, data, n, offsets, out, groups, 1, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_SCATTER_GATHER_H_
#define SLUICE_KERNELS_CUDA_SCATTER_GATHER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// out[g * slice + e] = data[offsets[g] + e] for g < groups, e < slice, by
// element size. `offsets` (device memory) come checked from the host; one
// that would read past data's `data_elements` writes zero bits instead.
absl::Status LaunchGatherSlices(int element_bytes, const void* data,
                                int64_t data_elements, const int64_t* offsets,
                                void* out, int64_t groups, int64_t slice,
                                cudaStream_t stream);

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// Floats, int32, int64 and bool.
bool HasScatterKernel(GpuDtype dtype);

// The destinations, in device memory, as the host built them from the
// indices: for destination d < num_dests, its element offset dest[d] in
// the output and its updates order[start[d]] ... order[start[d + 1] - 1]
// (update slice numbers, in the CPU's order).
struct ScatterPlan {
  const int64_t* dest = nullptr;   // num_dests
  const int64_t* start = nullptr;  // num_dests + 1
  const int64_t* order = nullptr;  // start[num_dests]
  int64_t num_dests = 0;
};

// out[dest[d] + e] = combine(out[dest[d] + e], updates[order[j] * slice + e])
// for each of d's updates j in turn: replace (kNone) or add, multiply, keep
// the larger or smaller, rounding to the dtype after each as the CPU does.
// `out` already holds a copy of the data; out_elements bounds the writes.
absl::Status LaunchScatterSlices(ScatterReduction reduction, GpuDtype dtype,
                                 void* out, int64_t out_elements,
                                 const void* updates, const ScatterPlan& plan,
                                 int64_t slice, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_SCATTER_GATHER_H_
