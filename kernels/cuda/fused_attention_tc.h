// FusedAttention on tensor cores, for float16 and bfloat16 with head dims up
// to 128 on GPUs of compute capability 8.0 or newer: the flash-attention
// scheme of fused_attention.cu, with Q K^T and P V as WMMA 16x16x16 products
// (float32 accumulators). Each of a block's four warps owns 16 of its 64
// query rows, so the online softmax needs no block-wide step; P is rounded
// to the input type before P V, as flash-attention does. fused_attention.cu
// calls it first for 16-bit inputs and runs its own kernels where it
// declines.
//
//   ASSIGN_OR_RETURN(bool launched, LaunchFusedAttentionTensorCores(l, stream));
//   if (!launched) { ... the CUDA-core kernel ... }
//
// No allocation and no synchronisation: safe inside a CUDA graph capture.
// Stateless apart from a per-device cache of compute capabilities;
// thread-safe.
#ifndef SLUICE_KERNELS_CUDA_FUSED_ATTENTION_TC_H_
#define SLUICE_KERNELS_CUDA_FUSED_ATTENTION_TC_H_

#include "absl/status/statusor.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/fused_attention.h"

namespace sluice::cuda {

// Enqueues `l` on the tensor-core kernel and returns true, or returns false
// with nothing enqueued where it does not apply (float32, head dims past 128,
// a GPU older than compute capability 8.0). Errors: a failed launch.
absl::StatusOr<bool> LaunchFusedAttentionTensorCores(const FusedAttentionLaunch& l,
                                                     cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_FUSED_ATTENTION_TC_H_
