// FusedAttention's attributes and sizes (fused_attention_params.h).
#include "kernels/fused_attention_params.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<FusedAttentionAttrs> ParseFusedAttentionAttrs(const Node& node) {
  FusedAttentionAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  ASSIGN_OR_RETURN(a.scale, node.attrs().GetFloat("scale"));
  ASSIGN_OR_RETURN(a.causal, node.attrs().GetBool("causal"));
  ASSIGN_OR_RETURN(int64_t num_args, node.attrs().GetInt("num_args"));
  if (num_args != 1 && num_args != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention takes v and at most one mask, got num_args=", num_args));
  }
  a.has_mask = num_args == 2;
  return a;
}

namespace {

// The broadcast of a and b (sizes of one axis), or -1.
int64_t Broadcast(int64_t a, int64_t b) {
  if (a == b || b == 1) return a;
  if (a == 1) return b;
  return -1;
}

}  // namespace

absl::StatusOr<FusedAttentionDims> FusedAttentionDimsFor(const Shape& q,
                                                         const Shape& k,
                                                         const Shape& v,
                                                         const Shape* mask) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention: ", why, " (q ", q.DebugString(), ", k ",
        k.DebugString(), ", v ", v.DebugString(),
        mask != nullptr ? absl::StrCat(", mask ", mask->DebugString()) : "",
        ")"));
  };
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    return bad("q, k and v must have rank 4 ([B, H, S, D])");
  }
  FusedAttentionDims d;
  d.b = Broadcast(Broadcast(q.dim(0), k.dim(0)), v.dim(0));
  d.h = Broadcast(Broadcast(q.dim(1), k.dim(1)), v.dim(1));
  if (d.b < 0 || d.h < 0) return bad("batch and head dims do not broadcast");
  d.sq = q.dim(2);
  d.sk = k.dim(2);
  d.d = q.dim(3);
  d.dv = v.dim(3);
  if (k.dim(3) != d.d || v.dim(2) != d.sk) {
    return bad("k must be [B, H, Sk, D] and v [B, H, Sk, Dv]");
  }
  auto strides = [&](const Shape& s, int64_t row_elems, int64_t out[2]) {
    const int64_t head = s.dim(2) * row_elems;
    out[1] = s.dim(1) == 1 && d.h != 1 ? 0 : head;
    out[0] = s.dim(0) == 1 && d.b != 1 ? 0 : head * s.dim(1);
  };
  strides(q, d.d, d.q_stride);
  strides(k, d.d, d.k_stride);
  strides(v, d.dv, d.v_stride);
  if (mask != nullptr) {
    const int64_t want[4] = {d.b, d.h, d.sq, d.sk};
    if (mask->rank() > 4) return bad("the mask must have rank <= 4");
    int64_t stride = 1;
    for (int axis = 3; axis >= 0; --axis) {
      const int m = axis - (4 - mask->rank());
      const int64_t size = m >= 0 ? mask->dim(m) : 1;
      if (size != want[axis] && size != 1) {
        return bad("the mask must broadcast to [B, H, Sq, Sk]");
      }
      d.mask_stride[axis] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }
  return d;
}

}  // namespace sluice
