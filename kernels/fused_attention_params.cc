// FusedAttention's attributes and sizes (fused_attention_params.h).
#include "kernels/fused_attention_params.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

bool FusedAttentionAttrs::any_bshd() const {
  for (AttentionLayout l : layout) {
    if (l == AttentionLayout::kBshd) return true;
  }
  return false;
}

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
  static constexpr const char* kLayoutAttrs[] = {"q_layout", "k_layout",
                                                 "v_layout", "out_layout"};
  for (int i = 0; i < 4; ++i) {
    const std::string l =
        node.attrs().GetString(kLayoutAttrs[i]).value_or("BHSD");
    if (l == "BSHD") {
      a.layout[i] = AttentionLayout::kBshd;
    } else if (l != "BHSD") {
      return absl::InvalidArgumentError(
          absl::StrCat("FusedAttention's ", kLayoutAttrs[i],
                       " must be \"BHSD\" or \"BSHD\", got \"", l, "\""));
    }
  }
  a.num_heads = node.attrs().GetInt("num_heads").value_or(0);
  a.head_dim = node.attrs().GetInt("head_dim").value_or(0);
  a.v_head_dim = node.attrs().GetInt("v_head_dim").value_or(0);
  a.offset[0] = node.attrs().GetInt("q_offset").value_or(0);
  a.offset[1] = node.attrs().GetInt("k_offset").value_or(0);
  a.offset[2] = node.attrs().GetInt("v_offset").value_or(0);
  if (a.any_bshd() && (a.num_heads <= 0 || a.head_dim < 0 || a.v_head_dim < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention with a BSHD layout needs num_heads > 0 and head_dim, "
        "v_head_dim >= 0, got num_heads=",
        a.num_heads, " head_dim=", a.head_dim, " v_head_dim=", a.v_head_dim));
  }
  for (int i = 0; i < 3; ++i) {
    if (a.offset[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedAttention's column offsets must be >= 0, got ", a.offset[i]));
    }
  }
  return a;
}

namespace {

// The broadcast of a and b (sizes of one axis), or -1.
int64_t Broadcast(int64_t a, int64_t b) {
  if (a == b || b == 1) return a;
  if (a == 1) return b;
  return -1;
}

// One operand as [B, H, S, E] sizes plus how its rows are found (strides
// over batch and head before broadcasting).
struct View {
  int64_t dims[4] = {};
  AttentionOperand rows;
};

}  // namespace

absl::StatusOr<FusedAttentionDims> FusedAttentionDimsFor(
    const Shape& q, const Shape& k, const Shape& v, const Shape* mask,
    const FusedAttentionAttrs& attrs) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention: ", why, " (q ", q.DebugString(), ", k ",
        k.DebugString(), ", v ", v.DebugString(),
        mask != nullptr ? absl::StrCat(", mask ", mask->DebugString()) : "",
        ")"));
  };
  static constexpr const char* kNames[] = {"q", "k", "v"};
  const Shape* shapes[3] = {&q, &k, &v};
  View views[3];
  for (int i = 0; i < 3; ++i) {
    const Shape& s = *shapes[i];
    View& w = views[i];
    if (attrs.layout[i] == AttentionLayout::kBhsd) {
      if (s.rank() != 4) {
        return bad(absl::StrCat(kNames[i], " must have rank 4 ([B, H, S, D])"));
      }
      for (int a = 0; a < 4; ++a) w.dims[a] = s.dim(a);
      w.rows.stride[2] = s.dim(3);
      w.rows.stride[1] = s.dim(2) * s.dim(3);
      w.rows.stride[0] = s.dim(1) * w.rows.stride[1];
      continue;
    }
    if (s.rank() != 3) {
      return bad(absl::StrCat(kNames[i], " is BSHD and must have rank 3 ([B, S, C])"));
    }
    const int64_t e = i == 2 ? attrs.v_head_dim : attrs.head_dim;
    const int64_t end = attrs.offset[i] + attrs.num_heads * e;
    if (end > s.dim(2)) {
      return bad(absl::StrCat(kNames[i], "'s ", attrs.num_heads, " heads of ", e,
                              " columns from column ", attrs.offset[i],
                              " end past its ", s.dim(2), " columns"));
    }
    w.dims[0] = s.dim(0);
    w.dims[1] = attrs.num_heads;
    w.dims[2] = s.dim(1);
    w.dims[3] = e;
    w.rows.offset = attrs.offset[i];
    w.rows.stride[2] = s.dim(2);
    w.rows.stride[1] = e;
    w.rows.stride[0] = s.dim(1) * s.dim(2);
  }
  FusedAttentionDims d;
  d.b = Broadcast(Broadcast(views[0].dims[0], views[1].dims[0]), views[2].dims[0]);
  d.h = Broadcast(Broadcast(views[0].dims[1], views[1].dims[1]), views[2].dims[1]);
  if (d.b < 0 || d.h < 0) return bad("batch and head dims do not broadcast");
  d.sq = views[0].dims[2];
  d.sk = views[1].dims[2];
  d.d = views[0].dims[3];
  d.dv = views[2].dims[3];
  if (views[1].dims[3] != d.d || views[2].dims[2] != d.sk) {
    return bad("k must be [B, H, Sk, D] and v [B, H, Sk, Dv]");
  }
  AttentionOperand* ops[3] = {&d.q, &d.k, &d.v};
  for (int i = 0; i < 3; ++i) {
    *ops[i] = views[i].rows;
    if (views[i].dims[1] == 1 && d.h != 1) ops[i]->stride[1] = 0;
    if (views[i].dims[0] == 1 && d.b != 1) ops[i]->stride[0] = 0;
  }
  if (attrs.layout[3] == AttentionLayout::kBhsd) {
    d.out_shape = Shape({d.b, d.h, d.sq, d.dv});
    d.out.stride[2] = d.dv;
    d.out.stride[1] = d.sq * d.dv;
    d.out.stride[0] = d.h * d.sq * d.dv;
  } else {
    if (d.h != attrs.num_heads) {
      return bad(absl::StrCat("a BSHD output needs ", attrs.num_heads,
                              " heads (num_heads), the inputs have ", d.h));
    }
    if (attrs.v_head_dim != d.dv) {
      return bad(absl::StrCat("a BSHD output needs v's head dim ", d.dv,
                              " as v_head_dim, got ", attrs.v_head_dim));
    }
    d.out_shape = Shape({d.b, d.sq, d.h * d.dv});
    d.out.stride[2] = d.h * d.dv;
    d.out.stride[1] = d.dv;
    d.out.stride[0] = d.sq * d.h * d.dv;
  }
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

absl::StatusOr<FusedAttentionDims> PlanFusedAttention(const FusedAttentionAttrs& attrs,
                                                      const OpKernelContext& ctx) {
  static constexpr const char* kNames[] = {"q", "k", "v", "mask"};
  const int n = attrs.has_mask ? 4 : 3;
  for (int i = 0; i < n; ++i) {
    if (ctx.input(i).dtype() != attrs.t) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedAttention: ", kNames[i], " is ", DataTypeName(ctx.input(i).dtype()),
          ", expected ", DataTypeName(attrs.t)));
    }
  }
  return FusedAttentionDimsFor(ctx.input(0).shape(), ctx.input(1).shape(),
                               ctx.input(2).shape(),
                               attrs.has_mask ? &ctx.input(3).shape() : nullptr, attrs);
}

}  // namespace sluice
