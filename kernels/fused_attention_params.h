// The parameters of FusedAttention (graph/ops/nn_ops.cc, docs/ops.md),
// shared by its CPU and CUDA kernels: the attributes parsed once per node,
// and the sizes and strides worked out once per call from the input shapes,
// with one set of messages. Each of q, k, v and the output is in one of two
// layouts (design decision 29): "BHSD", a row-major [B, H, S, D] tensor, or
// "BSHD", a row-major [B, S, C] tensor whose head h is the D columns from
// `offset + h * D` (the projection's output read in place: [B, S, H*D], or
// a column range of a packed [B, S, 3*H*D] QKV projection).
//
//   ASSIGN_OR_RETURN(FusedAttentionAttrs a, ParseFusedAttentionAttrs(node));
//   ASSIGN_OR_RETURN(FusedAttentionDims d, PlanFusedAttention(a, *ctx));
//   // q row (b, h, i) starts at
//   // d.q.offset + b * d.q.stride[0] + h * d.q.stride[1] + i * d.q.stride[2]
//
// Value types; thread-compatible.
#ifndef SLUICE_KERNELS_FUSED_ATTENTION_PARAMS_H_
#define SLUICE_KERNELS_FUSED_ATTENTION_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "kernels/kernel.h"

namespace sluice {

// Where q, k, v and the output hold their heads.
enum class AttentionLayout {
  kBhsd,  // [B, H, S, D]
  kBshd,  // [B, S, C], head h at columns [offset + h D, offset + (h+1) D)
};

struct FusedAttentionAttrs {
  DataType t = DT_INVALID;
  float scale = 1;
  bool causal = false;
  bool has_mask = false;  // num_args == 2
  // q, k, v, output.
  AttentionLayout layout[4] = {AttentionLayout::kBhsd, AttentionLayout::kBhsd,
                               AttentionLayout::kBhsd, AttentionLayout::kBhsd};
  // For the BSHD layouts: heads, head dims, and q, k, v's column offsets.
  int64_t num_heads = 0, head_dim = 0, v_head_dim = 0;
  int64_t offset[3] = {};
  bool any_bshd() const;
};

absl::StatusOr<FusedAttentionAttrs> ParseFusedAttentionAttrs(const Node& node);

// How one operand's rows are found: row (b, h, i) starts at element
// offset + b * stride[0] + h * stride[1] + i * stride[2] and is contiguous
// along the head dim. Strides over batch and head are 0 where the operand
// broadcasts (size 1).
struct AttentionOperand {
  int64_t offset = 0;
  int64_t stride[3] = {};
};

struct FusedAttentionDims {
  int64_t b = 0, h = 0, sq = 0, sk = 0, d = 0, dv = 0;
  AttentionOperand q, k, v, out;
  // The mask's element strides over [B, H, Sq, Sk] (0 where it broadcasts).
  int64_t mask_stride[4] = {};
  Shape out_shape;  // [B, H, Sq, Dv] or [B, Sq, H*Dv]
  const Shape& output_shape() const { return out_shape; }
};

// INVALID_ARGUMENT unless q, k, v have the rank of their layout (4 for
// BHSD, 3 for BSHD) with matching D and Sk, batch/head dims that broadcast,
// column ranges inside BSHD operands, and the mask (when given) broadcasts
// to [B, H, Sq, Sk].
absl::StatusOr<FusedAttentionDims> FusedAttentionDimsFor(
    const Shape& q, const Shape& k, const Shape& v, const Shape* mask,
    const FusedAttentionAttrs& attrs);

// The same for the inputs of one call (q, k, v and, with has_mask, the
// mask), after checking each is of attrs.t (INVALID_ARGUMENT naming it).
absl::StatusOr<FusedAttentionDims> PlanFusedAttention(const FusedAttentionAttrs& attrs,
                                                      const OpKernelContext& ctx);

}  // namespace sluice

#endif  // SLUICE_KERNELS_FUSED_ATTENTION_PARAMS_H_
