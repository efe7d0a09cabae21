#include "kernels/array_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

std::vector<int64_t> RowMajor(const Shape& s) {
  std::vector<int64_t> strides(s.rank(), 1);
  for (int d = s.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * s.dim(d + 1);
  return strides;
}

absl::StatusOr<ViewAttrs> ParseView(const Node& node, ViewAttrs::Kind kind, bool dynamic) {
  using Kind = ViewAttrs::Kind;
  ViewAttrs a;
  a.kind = kind;
  a.dynamic = dynamic;
  if (dynamic) {
    if (kind == Kind::kReshape) {
      ASSIGN_OR_RETURN(a.allowzero, node.attrs().GetBool("allowzero"));
    }
  } else if (kind == Kind::kReshape) {
    ASSIGN_OR_RETURN(a.dims, node.attrs().GetIntList("shape"));
  } else if (kind != Kind::kIdentity) {
    ASSIGN_OR_RETURN(a.dims, node.attrs().GetIntList("axes"));
  }
  return a;
}

}  // namespace

absl::StatusOr<ViewAttrs> ParseIdentityAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kIdentity, false);
}
absl::StatusOr<ViewAttrs> ParseReshapeAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kReshape, false);
}
absl::StatusOr<ViewAttrs> ParseSqueezeAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kSqueeze, false);
}
absl::StatusOr<ViewAttrs> ParseUnsqueezeAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kUnsqueeze, false);
}
absl::StatusOr<ViewAttrs> ParseDynamicReshapeAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kReshape, true);
}
absl::StatusOr<ViewAttrs> ParseDynamicSqueezeAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kSqueeze, true);
}
absl::StatusOr<ViewAttrs> ParseDynamicUnsqueezeAttrs(const Node& node) {
  return ParseView(node, ViewAttrs::Kind::kUnsqueeze, true);
}

absl::StatusOr<Shape> PlanView(const ViewAttrs& a, const Shape& x, const Tensor* param) {
  using Kind = ViewAttrs::Kind;
  if (a.kind == Kind::kIdentity) return x;
  std::vector<int64_t> dims = a.dims;
  if (a.dynamic) {
    if (param == nullptr) return absl::InvalidArgumentError("the view's input 1 is missing");
    ASSIGN_OR_RETURN(dims, IntParamValues(*param, a.kind == Kind::kReshape ? "shape" : "axes"));
    if (a.kind == Kind::kReshape) {
      ASSIGN_OR_RETURN(dims, OnnxReshapeDims(x, dims, a.allowzero));
    }
  }
  Shape out;
  if (a.kind == Kind::kReshape) {
    ASSIGN_OR_RETURN(out, ReshapeShape(x, dims));
  } else if (a.kind == Kind::kSqueeze) {
    ASSIGN_OR_RETURN(out, SqueezeShape(x, dims));
  } else {
    ASSIGN_OR_RETURN(out, UnsqueezeShape(x, dims));
  }
  // The shape functions guarantee this; a view must never outgrow its
  // buffer, so check anyway.
  if (!out.IsFullyDefined() || out.num_elements() != x.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot view ", x.DebugString(), " as ", out.DebugString()));
  }
  return out;
}

absl::StatusOr<TransposeAttrs> ParseTransposeAttrs(const Node& node) {
  TransposeAttrs a;
  ASSIGN_OR_RETURN(a.perm, node.attrs().GetIntList("perm"));
  return a;
}

absl::StatusOr<CopyPlan> PlanTranspose(const TransposeAttrs& a, const Shape& x) {
  std::vector<int64_t> perm = a.perm;
  CopyPlan p;
  ASSIGN_OR_RETURN(p.out_shape, TransposeShape(x, perm));
  const int r = x.rank();
  if (perm.empty()) {
    for (int d = r - 1; d >= 0; --d) perm.push_back(d);
  }
  const std::vector<int64_t> own = RowMajor(x);
  for (int d = 0; d < r; ++d) {
    p.in_strides.push_back(own[perm[d] < 0 ? perm[d] + r : perm[d]]);
  }
  return p;
}

absl::StatusOr<ExpandAttrs> ParseExpandAttrs(const Node& node) {
  ExpandAttrs a;
  ASSIGN_OR_RETURN(a.dims, node.attrs().GetIntList("shape"));
  return a;
}

absl::StatusOr<ExpandAttrs> ParseDynamicExpandAttrs(const Node&) {
  ExpandAttrs a;
  a.dynamic = true;
  return a;
}

absl::StatusOr<CopyPlan> PlanExpand(const Shape& x, absl::Span<const int64_t> dims) {
  CopyPlan p;
  ASSIGN_OR_RETURN(p.out_shape,
                   ExpandShape(x, std::vector<int64_t>(dims.begin(), dims.end())));
  // The input's strides aligned on the right; 0 where it stretches.
  const int r = p.out_shape.rank();
  const std::vector<int64_t> own = RowMajor(x);
  p.in_strides.assign(r, 0);
  for (int d = 0; d < r; ++d) {
    const int id = d - (r - x.rank());
    if (id < 0 || x.dim(id) == 1) continue;
    if (x.dim(id) != p.out_shape.dim(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot expand ", x.DebugString(), " to ", p.out_shape.DebugString()));
    }
    p.in_strides[d] = own[id];
  }
  return p;
}

absl::StatusOr<CopyPlan> PlanExpand(const ExpandAttrs& a, const Shape& x,
                                    const Tensor* param) {
  if (!a.dynamic) return PlanExpand(x, a.dims);
  if (param == nullptr) return absl::InvalidArgumentError("DynamicExpand's shape is missing");
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntParamValues(*param, "shape"));
  return PlanExpand(x, dims);
}

absl::StatusOr<ConcatAttrs> ParseConcatAttrs(const Node& node) {
  ConcatAttrs a;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  return a;
}

absl::StatusOr<ConcatPlan> PlanConcat(const ConcatAttrs& a, const OpKernelContext& ctx) {
  ConcatPlan p;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    if (x.dtype() != ctx.input(0).dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Concat inputs differ in dtype: input ", i, " is ", DataTypeName(x.dtype()),
          ", input 0 ", DataTypeName(ctx.input(0).dtype())));
    }
    p.in_shapes.push_back(x.shape());
  }
  ASSIGN_OR_RETURN(p.out_shape, ConcatShape(p.in_shapes, a.axis));
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(a.axis, p.out_shape.rank()));
  return p;
}

namespace {

absl::StatusOr<SplitAttrs> ParseSplit(const Node& node, bool dynamic) {
  SplitAttrs a;
  a.dynamic = dynamic;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(a.num_split, node.attrs().GetInt("num_split"));
  if (!dynamic) {
    ASSIGN_OR_RETURN(a.sizes, node.attrs().GetIntList("sizes"));
  }
  return a;
}

}  // namespace

absl::StatusOr<SplitAttrs> ParseSplitAttrs(const Node& node) { return ParseSplit(node, false); }
absl::StatusOr<SplitAttrs> ParseDynamicSplitAttrs(const Node& node) {
  return ParseSplit(node, true);
}

absl::StatusOr<SplitPlan> PlanSplit(const SplitAttrs& a, const OpKernelContext& ctx) {
  const Shape& x = ctx.input(0).shape();
  std::vector<int64_t> sizes = a.sizes;
  if (a.dynamic) {
    if (ctx.num_inputs() < 2) return absl::InvalidArgumentError("DynamicSplit's split is missing");
    ASSIGN_OR_RETURN(sizes, IntParamValues(ctx.input(1), "split"));
  }
  SplitPlan p;
  ASSIGN_OR_RETURN(p.out_shapes, SplitShapes(x, a.axis, a.num_split, sizes));
  if (static_cast<int>(p.out_shapes.size()) != ctx.num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Split makes ", p.out_shapes.size(), " outputs but the node has ",
        ctx.num_outputs()));
  }
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(a.axis, x.rank()));
  return p;
}

}  // namespace sluice
