// Host launchers for the data-movement CUDA kernels, all dtype-agnostic (by
// element size): a strided N-d copy (Transpose, Slice, Expand, Concat and
// Split are each one or more of these) and Gather with on-device index
// checking.
//
//   IndexMap m;  // iteration dims; strides[0] source, strides[1] destination
//   RETURN_IF_ERROR(LaunchStridedCopy(4, src, src_offset, dst, dst_offset, m, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_COPY_H_
#define SLUICE_KERNELS_CUDA_COPY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// dst[dst_offset + sum(i_d * strides[1][d])] =
// src[src_offset + sum(i_d * strides[0][d])] over map.dims. Offsets and
// strides in elements (strides may be negative or 0).
absl::Status LaunchStridedCopy(int element_bytes, const void* src,
                               int64_t src_offset, void* dst,
                               int64_t dst_offset, const IndexMap& map,
                               cudaStream_t stream);

// params viewed as [outer, axis_dim, inner], indices (int32 or int64, n of
// them) -> out [outer, n, inner]. Negative indices count from the end. An
// index outside [-axis_dim, axis_dim) writes zeros and stores its position
// + 1 in *bad_position (device memory, zeroed by the caller; the first bad
// position found wins).
absl::Status LaunchGather(int element_bytes, const void* params,
                          const void* indices, bool indices_int64, void* out,
                          int64_t outer, int64_t axis_dim, int64_t inner,
                          int64_t num_indices,
                          unsigned long long* bad_position,
                          cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_COPY_H_
