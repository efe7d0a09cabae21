// The parameters of FusedAttention (graph/ops/nn_ops.cc, docs/ops.md),
// shared by its CPU and CUDA kernels: the attributes parsed once per node,
// and the sizes and broadcast strides worked out once per call from the
// input shapes, with one set of messages.
//
//   ASSIGN_OR_RETURN(FusedAttentionAttrs a, ParseFusedAttentionAttrs(node));
//   ASSIGN_OR_RETURN(FusedAttentionDims d,
//                    FusedAttentionDimsFor(q.shape(), k.shape(), v.shape(),
//                                          has_mask ? &mask.shape() : nullptr));
//   // q row (b, h, i) starts at b * d.q_stride[0] + h * d.q_stride[1] + i * d.d
//
// Value types; thread-compatible.
#ifndef SLUICE_KERNELS_FUSED_ATTENTION_PARAMS_H_
#define SLUICE_KERNELS_FUSED_ATTENTION_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

struct FusedAttentionAttrs {
  DataType t = DT_INVALID;
  float scale = 1;
  bool causal = false;
  bool has_mask = false;  // num_args == 2
};

absl::StatusOr<FusedAttentionAttrs> ParseFusedAttentionAttrs(const Node& node);

struct FusedAttentionDims {
  int64_t b = 0, h = 0, sq = 0, sk = 0, d = 0, dv = 0;
  // Element strides over [batch, head] of the row-major q [B,H,Sq,D],
  // k [B,H,Sk,D] and v [B,H,Sk,Dv]; 0 where the input broadcasts (size 1).
  int64_t q_stride[2] = {}, k_stride[2] = {}, v_stride[2] = {};
  // The mask's element strides over [B, H, Sq, Sk] (0 where it broadcasts).
  int64_t mask_stride[4] = {};
  Shape output_shape() const { return Shape({b, h, sq, dv}); }
};

// INVALID_ARGUMENT unless q, k, v have rank 4 with matching D and Sk and
// batch/head dims that broadcast, and the mask (when given) broadcasts to
// [B, H, Sq, Sk].
absl::StatusOr<FusedAttentionDims> FusedAttentionDimsFor(const Shape& q,
                                                         const Shape& k,
                                                         const Shape& v,
                                                         const Shape* mask);

}  // namespace sluice

#endif  // SLUICE_KERNELS_FUSED_ATTENTION_PARAMS_H_
