// Layout changes for the CPU kernels of NHWC nodes (graph/data_format.h):
// a rank-4 float32 tensor permuted into a new one. The CPU runs an NHWC
// Conv2D, FusedConv2D, MaxPool or AvgPool as its NCHW kernel between such
// permutations (the reference the GPU's NHWC paths are tested against;
// speed is not the point: the nhwc_layout pass does not run for a
// CPU-only session unless asked).
//
//   ASSIGN_OR_RETURN(Tensor nchw, PermutedTemp(ctx, x, kNhwcToNchw));
//
// Thread-safe; the copy runs on the device's intra-op pool.
#ifndef SLUICE_KERNELS_CPU_LAYOUT_H_
#define SLUICE_KERNELS_CPU_LAYOUT_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/kernel.h"

namespace sluice::cpu {

// The shape of `t` (rank 4) permuted: dim i of the result is dim perm[i].
Shape PermutedShape(const Shape& s, const std::array<int64_t, 4>& perm);

// out = transpose(in, perm). REQUIRES: in is rank-4 float32 on the host, out
// float32 of PermutedShape(in.shape(), perm).
void PermuteInto(const OpKernelContext& ctx, const Tensor& in,
                 const std::array<int64_t, 4>& perm, const Tensor& out);

// transpose(t, perm) as a new float32 temporary of ctx. INVALID_ARGUMENT
// for a tensor that is not rank-4 float32.
absl::StatusOr<Tensor> PermutedTemp(OpKernelContext* ctx, const Tensor& t,
                                    const std::array<int64_t, 4>& perm);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_LAYOUT_H_
