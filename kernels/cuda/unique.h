// Host launchers for Unique over a flattened tensor on the GPU (the CPU
// kernel, kernels/cpu/topk_unique.cc, says what it computes: groups of
// equal elements, -0.0 equal to 0.0 and every NaN equal to every other and
// after every number). On CUB:
//   1. each element gets a key whose unsigned order is the element order
//      (NaN made one value, -0.0 made 0.0), and the radix sort orders the
//      (key, position) pairs, stable, so each group starts with its first
//      occurrence;
//   2. the group boundaries are marked and scanned into group numbers, and
//      the number of groups left for the OpKernel to read back (its one
//      wait for the GPU: the outputs' size);
//   3. the outputs are written: y, the first occurrences and the counts by
//      group (in ascending order, or by first occurrence when not sorted,
//      through a second sort of the groups by their first positions), and
//      each element's group.
//
//   ASSIGN_OR_RETURN(size_t bytes, UniqueScratchBytes(dtype, n));
//   RETURN_IF_ERROR(LaunchUniqueGroups(dtype, x, n, scratch, bytes, s));
//   ASSIGN_OR_RETURN(const int64_t* groups, UniqueGroupCount(dtype, n, scratch));
//   ASSIGN_OR_RETURN(uint64_t u, ReadDeviceFlag(gpu, groups));
//   ... allocate y [u], indices [u], inverse [n], counts [u] ...
//   RETURN_IF_ERROR(LaunchUniqueOutputs(dtype, x, n, u, sorted, scratch,
//                                       bytes, y, indices, inverse, counts, s));
//
// Scratch: about 9 x 8 bytes an element. Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_UNIQUE_H_
#define SLUICE_KERNELS_CUDA_UNIQUE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// Floats (float, double, float16, bfloat16), every integer dtype and bool.
bool HasUniqueKernel(GpuDtype dtype);

// Scratch bytes for n > 0 elements.
absl::StatusOr<size_t> UniqueScratchBytes(GpuDtype dtype, int64_t n);

// Steps 1 and 2 above, for x[0, n).
absl::Status LaunchUniqueGroups(GpuDtype dtype, const void* x, int64_t n,
                                void* scratch, size_t scratch_bytes,
                                cudaStream_t stream);

// Where LaunchUniqueGroups leaves the number of groups (one int64).
absl::StatusOr<const int64_t*> UniqueGroupCount(GpuDtype dtype, int64_t n,
                                                const void* scratch);

// Step 3: y [u] (x's dtype), indices [u], inverse [n], counts [u]; any of
// the int64 outputs may be null (not wanted).
absl::Status LaunchUniqueOutputs(GpuDtype dtype, const void* x, int64_t n,
                                 int64_t u, bool sorted, void* scratch,
                                 size_t scratch_bytes, void* y,
                                 int64_t* indices, int64_t* inverse,
                                 int64_t* counts, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_UNIQUE_H_
