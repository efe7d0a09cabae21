#include "kernels/normalization_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// The axis of a rank >= 1 input, normalised; `op` names the op.
absl::StatusOr<int> NormAxis(const char* op, int64_t axis, const Shape& x) {
  if (x.rank() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " needs an input of rank >= 1, got a scalar"));
  }
  return NormalizeAxis(axis, x.rank());
}

// The checks LayerNorm and RMSNorm share; bias is null for RMSNorm.
absl::StatusOr<NormPlan> PlanNorm(const char* op, const NormAttrs& a,
                                       const Tensor& x, const Tensor& scale,
                                       const Tensor* bias) {
  NormPlan p;
  ASSIGN_OR_RETURN(p.axis, NormAxis(op, a.axis, x.shape()));
  const Shape norm(absl::MakeConstSpan(x.shape().dims()).subspan(p.axis));
  if (scale.shape() != norm || (bias != nullptr && bias->shape() != norm)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " scale ", scale.shape().DebugString(),
        bias == nullptr ? ""
                        : absl::StrCat(" and bias ", bias->shape().DebugString()),
        " must have shape x.shape[axis:] = ", norm.DebugString(), " (x ",
        x.shape().DebugString(), ", axis ", a.axis, ")"));
  }
  if (scale.dtype() != x.dtype() ||
      (bias != nullptr && bias->dtype() != x.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " scale ", DataTypeName(scale.dtype()),
        bias == nullptr ? ""
                        : absl::StrCat(" and bias ", DataTypeName(bias->dtype())),
        " must have x's dtype, ", DataTypeName(x.dtype())));
  }
  p.n = norm.num_elements();
  p.rows = 1;
  for (int d = 0; d < p.axis; ++d) p.rows *= x.shape().dim(d);
  p.out_shape = x.shape();
  return p;
}

}  // namespace

absl::StatusOr<SoftmaxAttrs> ParseSoftmaxAttrs(const Node& node) {
  SoftmaxAttrs a;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  return a;
}

absl::StatusOr<SoftmaxPlan> PlanSoftmax(const SoftmaxAttrs& a,
                                             const Shape& x) {
  SoftmaxPlan p;
  ASSIGN_OR_RETURN(p.axis, NormAxis("Softmax", a.axis, x));
  for (int d = 0; d < p.axis; ++d) p.outer *= x.dim(d);
  p.n = x.dim(p.axis);
  for (int d = p.axis + 1; d < x.rank(); ++d) p.inner *= x.dim(d);
  p.out_shape = x;
  return p;
}

absl::StatusOr<NormAttrs> ParseNormAttrs(const Node& node) {
  NormAttrs a;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(a.epsilon, node.attrs().GetFloat("epsilon"));
  if (!(a.epsilon >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon must be >= 0, got ", a.epsilon));
  }
  return a;
}

absl::StatusOr<NormPlan> PlanLayerNorm(const NormAttrs& a, const Tensor& x,
                                            const Tensor& scale,
                                            const Tensor& bias) {
  return PlanNorm("LayerNorm", a, x, scale, &bias);
}

absl::StatusOr<NormPlan> PlanRmsNorm(const NormAttrs& a, const Tensor& x,
                                          const Tensor& scale) {
  return PlanNorm("RMSNorm", a, x, scale, nullptr);
}

absl::StatusOr<LrnAttrs> ParseLrnAttrs(const Node& node) {
  LrnAttrs a;
  ASSIGN_OR_RETURN(a.alpha, node.attrs().GetFloat("alpha"));
  ASSIGN_OR_RETURN(a.beta, node.attrs().GetFloat("beta"));
  ASSIGN_OR_RETURN(a.bias, node.attrs().GetFloat("bias"));
  ASSIGN_OR_RETURN(a.size, node.attrs().GetInt("size"));
  if (a.size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("LRN size must be >= 1, got ", a.size));
  }
  return a;
}

absl::StatusOr<LrnPlan> PlanLrn(const LrnAttrs& a, const Shape& x) {
  if (x.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LRN needs an input [N, C, ...] of rank >= 2, got ", x.DebugString()));
  }
  LrnPlan p;
  p.batch = x.dim(0);
  p.channels = x.dim(1);
  for (int d = 2; d < x.rank(); ++d) p.inner *= x.dim(d);
  p.before = (a.size - 1) / 2;
  p.after = a.size - 1 - p.before;
  p.out_shape = x;
  return p;
}

}  // namespace sluice
