// The parameters of LinearAttention (graph/ops, docs/ops.md), shared by its
// CPU and CUDA kernels: the attributes parsed once per node and the sizes
// checked once per call, with one set of messages.
//
//   ASSIGN_OR_RETURN(LinearAttentionAttrs a, ParseLinearAttentionAttrs(node));
//   ASSIGN_OR_RETURN(LinearAttentionDims d, CheckLinearAttentionShapes(a, shapes));
//
// Value types; thread-compatible.
#ifndef SLUICE_KERNELS_LINEAR_ATTENTION_PARAMS_H_
#define SLUICE_KERNELS_LINEAR_ATTENTION_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

struct LinearAttentionAttrs {
  DataType t = DT_INVALID;
  int64_t hq = 0, hkv = 0;
  float scale = 0;  // 0: 1 / sqrt(Dk)
  bool gated = false, delta = false;
};

absl::StatusOr<LinearAttentionAttrs> ParseLinearAttentionAttrs(
    const Node& node);

struct LinearAttentionDims {
  int64_t b, t, hq, hkv, dk, dv;
  int64_t decay_width = 0;  // 1 (per head) or dk (per key channel)
  int64_t beta_width = 0;   // 1 (shared) or hkv
};

// From the shapes of query, key, value, past_state, decay and beta.
absl::StatusOr<LinearAttentionDims> CheckLinearAttentionShapes(
    const LinearAttentionAttrs& attrs, const std::vector<Shape>& shapes);
// CheckLinearAttentionShapes of `inputs` (not owned, non-null), after
// checking that each has dtype attrs.t.
absl::StatusOr<LinearAttentionDims> CheckLinearAttentionInputs(
    const LinearAttentionAttrs& attrs, absl::Span<const Tensor* const> inputs);

// The scale the outputs are multiplied by.
float LinearAttentionScale(const LinearAttentionAttrs& attrs,
                           const LinearAttentionDims& d);

}  // namespace sluice

#endif  // SLUICE_KERNELS_LINEAR_ATTENTION_PARAMS_H_
