// The setup of Softmax, LayerNorm, RMSNorm and LRN, written once for their
// CPU kernels (kernels/cpu/softmax.cc, layer_norm.cc, rms_norm.cc, lrn.cc)
// and CUDA kernels (kernels/cuda/nn_kernels.cc; LRN has none yet): the attributes parsed when the
// kernel is made, the input shapes and dtypes checked each call, and what
// a launch needs. Both devices accept and refuse the same inputs with the
// same messages. Device-neutral (only shapes and dtypes are read).
//
//   ASSIGN_OR_RETURN(SoftmaxAttrs a, ParseSoftmaxAttrs(node));  // creation
//   ASSIGN_OR_RETURN(SoftmaxPlan p, PlanSoftmax(a, x.shape()));  // Compute
//   // softmax over p.n values, p.inner apart, at p.outer * p.inner points.
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_NORMALIZATION_PARAMS_H_
#define SLUICE_KERNELS_NORMALIZATION_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

struct SoftmaxAttrs {
  int64_t axis = -1;
};
// NOT_FOUND without `axis`.
absl::StatusOr<SoftmaxAttrs> ParseSoftmaxAttrs(const Node& node);

// x viewed as [outer, n, inner] around the normalised axis.
struct SoftmaxPlan {
  int axis = 0;
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;  // x's
};
// INVALID_ARGUMENT for a scalar x or an axis outside [-rank, rank).
absl::StatusOr<SoftmaxPlan> PlanSoftmax(const SoftmaxAttrs& a,
                                             const Shape& x);

// LayerNorm's and RMSNorm's attributes.
struct NormAttrs {
  int64_t axis = -1;
  float epsilon = 0;
};
// NOT_FOUND without `axis` or `epsilon`; INVALID_ARGUMENT for a negative
// or NaN epsilon.
absl::StatusOr<NormAttrs> ParseNormAttrs(const Node& node);

// x viewed as [rows, n]: each row of n = prod(x.shape[axis:]) values is
// normalised with the n-element scale (and bias).
struct NormPlan {
  int axis = 0;
  int64_t rows = 1, n = 1;
  Shape out_shape;  // x's
};
// LayerNorm: scale and bias must have shape x.shape[axis:] and x's dtype;
// INVALID_ARGUMENT naming them otherwise (and for a scalar x or a bad axis).
absl::StatusOr<NormPlan> PlanLayerNorm(const NormAttrs& a, const Tensor& x,
                                            const Tensor& scale,
                                            const Tensor& bias);
// RMSNorm: as LayerNorm without the bias.
absl::StatusOr<NormPlan> PlanRmsNorm(const NormAttrs& a, const Tensor& x,
                                          const Tensor& scale);

// LRN (ONNX's local response normalisation across channels):
// y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
struct LrnAttrs {
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
  int64_t size = 0;
};
// NOT_FOUND without an attribute; INVALID_ARGUMENT for a size below 1.
absl::StatusOr<LrnAttrs> ParseLrnAttrs(const Node& node);

// x viewed as [batch, channels, inner].
struct LrnPlan {
  int64_t batch = 1, channels = 1, inner = 1;
  int64_t before = 0, after = 0;  // the window: channels c-before .. c+after
  Shape out_shape;                // x's
};
// INVALID_ARGUMENT for an input of rank below 2 (LRN needs [N, C, ...]).
absl::StatusOr<LrnPlan> PlanLrn(const LrnAttrs& a, const Shape& x);

}  // namespace sluice

#endif  // SLUICE_KERNELS_NORMALIZATION_PARAMS_H_
