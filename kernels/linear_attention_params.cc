#include "kernels/linear_attention_params.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice {

absl::StatusOr<LinearAttentionAttrs> ParseLinearAttentionAttrs(
    const Node& node) {
  LinearAttentionAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  ASSIGN_OR_RETURN(a.hq, node.attrs().GetInt("q_num_heads"));
  ASSIGN_OR_RETURN(a.hkv, node.attrs().GetInt("kv_num_heads"));
  ASSIGN_OR_RETURN(a.scale, node.attrs().GetFloat("scale"));
  ASSIGN_OR_RETURN(std::string rule, node.attrs().GetString("update_rule"));
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta") {
    return absl::InvalidArgumentError(absl::StrCat(
        "update_rule must be linear, gated, delta or gated_delta, got ",
        rule));
  }
  a.gated = rule == "gated" || rule == "gated_delta";
  a.delta = rule == "delta" || rule == "gated_delta";
  if (a.hq <= 0 || a.hkv <= 0 || a.hq % a.hkv != 0) {
    return absl::InvalidArgumentError(
        "q_num_heads must be a positive multiple of kv_num_heads");
  }
  return a;
}

absl::StatusOr<LinearAttentionDims> CheckLinearAttentionShapes(
    const LinearAttentionAttrs& attrs, const std::vector<Shape>& shapes) {
  if (shapes.size() < 6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LinearAttention takes 6 inputs, got ", shapes.size()));
  }
  const Shape& q = shapes[0];
  const Shape& k = shapes[1];
  const Shape& v = shapes[2];
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3) {
    return absl::InvalidArgumentError("query, key and value must be 3-D");
  }
  LinearAttentionDims d{q.dim(0), q.dim(1), attrs.hq, attrs.hkv, 0, 0};
  if (q.dim(2) % d.hq != 0 || v.dim(2) % d.hkv != 0) {
    return absl::InvalidArgumentError(
        "query's and value's last dims must divide by their heads");
  }
  d.dk = q.dim(2) / d.hq;
  d.dv = v.dim(2) / d.hkv;
  if (k.dim(0) != d.b || k.dim(1) != d.t || k.dim(2) != d.hkv * d.dk ||
      v.dim(0) != d.b || v.dim(1) != d.t) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key ", k.DebugString(), " and value ", v.DebugString(),
        " do not match query ", q.DebugString()));
  }
  const Shape want({d.b, d.hkv, d.dk, d.dv});
  if (shapes[3] != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "past_state ", shapes[3].DebugString(), " must be ",
        want.DebugString()));
  }
  if (attrs.gated) {
    const Shape& g = shapes[4];
    if (g.rank() != 3 || g.dim(0) != d.b || g.dim(1) != d.t ||
        (g.dim(2) != d.hkv && g.dim(2) != d.hkv * d.dk)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "decay ", g.DebugString(), " must be [B, T, kv_heads] or "
          "[B, T, kv_heads*Dk]"));
    }
    d.decay_width = g.dim(2) / d.hkv;
  }
  if (attrs.delta) {
    const Shape& bt = shapes[5];
    if (bt.rank() != 3 || bt.dim(0) != d.b || bt.dim(1) != d.t ||
        (bt.dim(2) != d.hkv && bt.dim(2) != 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "beta ", bt.DebugString(), " must be [B, T, kv_heads] or "
          "[B, T, 1]"));
    }
    d.beta_width = bt.dim(2);
  }
  return d;
}

absl::StatusOr<LinearAttentionDims> CheckLinearAttentionInputs(
    const LinearAttentionAttrs& attrs,
    absl::Span<const Tensor* const> inputs) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(cpu::CheckDtype(*inputs[i], attrs.t,
                                    absl::StrCat("LinearAttention input ", i)));
    shapes.push_back(inputs[i]->shape());
  }
  return CheckLinearAttentionShapes(attrs, shapes);
}

float LinearAttentionScale(const LinearAttentionAttrs& attrs,
                           const LinearAttentionDims& d) {
  return attrs.scale != 0.0f ? attrs.scale
                             : static_cast<float>(1.0 / std::sqrt(d.dk));
}

}  // namespace sluice
