// The strided copies behind Slice and Tile on CUDA, shared by the
// attribute forms (array_kernels.cc) and the runtime-parameter forms
// (dynamic_kernels.cc): each checks its parameters against the input,
// allocates output 0 and launches the copy on the context's stream.
//
//   RETURN_IF_ERROR(SliceInto(ctx, gpu, x, begin, end, axes, steps));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_SHAPE_COPY_H_
#define SLUICE_KERNELS_CUDA_SHAPE_COPY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cuda/cuda_kernel_util.h"

namespace sluice::cuda {

// NumPy / ONNX slicing; empty axes: 0..n-1, empty steps: all 1.
absl::Status SliceInto(OpKernelContext* ctx, const GpuContext& gpu,
                       const Tensor& x, const std::vector<int64_t>& begin,
                       const std::vector<int64_t>& end,
                       std::vector<int64_t> axes, std::vector<int64_t> steps);
// ONNX Tile: x repeated repeats[d] times along each dimension d.
absl::Status TileInto(OpKernelContext* ctx, const GpuContext& gpu,
                      const Tensor& x, const std::vector<int64_t>& repeats);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_SHAPE_COPY_H_
