// Host launcher for FusedAttention on CUDA (graph/ops/nn_ops.cc): the
// flash-attention scheme, one thread block of 128 threads per (batch, head,
// tile of 64 queries), K and V tiles of 64 keys through shared memory, the
// softmax computed online with float32 accumulators, so the [Sq, Sk] scores
// never reach global memory. Head dims up to 128 (padded to 32, 64, 96 or
// 128); larger ones run a simple kernel of one warp per query row. float32
// (plain FMA, no TF32), float16 and bfloat16 inputs (float32 accumulation).
// Every operand's rows are found through strides over (batch, head, row),
// so q, k, v and the output may be [B, H, S, D] or token-major [B, S, H*D]
// (or column ranges of a packed QKV projection; design decision 29).
// No allocation and no synchronisation: safe inside a CUDA graph capture.
//
//   FusedAttentionLaunch l;
//   l.dtype = GpuDtype::kHalf; l.q = q; l.k = k; l.v = v; l.out = out;
//   l.b = 8; l.h = 12; l.sq = l.sk = 128; l.d = l.dv = 64;
//   l.q_stride[0] = 12 * 128 * 64; l.q_stride[1] = 128 * 64;  // and k, v,
//   l.q_stride[2] = 64;                                       // out
//   l.scale = 0.125f;
//   RETURN_IF_ERROR(LaunchFusedAttention(l, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_FUSED_ATTENTION_H_
#define SLUICE_KERNELS_CUDA_FUSED_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

struct FusedAttentionLaunch {
  GpuDtype dtype = GpuDtype::kFloat;
  // Row (b, h, i) of q (Sq rows of D), k (Sk of D), v (Sk of Dv) and out
  // (Sq of Dv) starts at b * stride[0] + h * stride[1] + i * stride[2] of
  // its pointer and is contiguous; mask (or null) of dtype, read at
  // b * mask_stride[0] + h * mask_stride[1] + i * mask_stride[2] +
  // j * mask_stride[3].
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;
  void* out = nullptr;
  int64_t b = 0, h = 0, sq = 0, sk = 0, d = 0, dv = 0;
  // Element strides over [batch, head, row] (batch and head 0 where an
  // input broadcasts).
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {};
  int64_t out_stride[3] = {};
  int64_t mask_stride[4] = {};
  float scale = 1;
  bool causal = false;  // key j > query i + Sk - Sq is masked out
};

// Whether the launcher has a kernel for `dtype` (float32, float16, bfloat16).
bool HasFusedAttentionKernel(GpuDtype dtype);

absl::Status LaunchFusedAttention(const FusedAttentionLaunch& l,
                                  cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_FUSED_ATTENTION_H_
