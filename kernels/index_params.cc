#include "kernels/index_params.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/host_params.h"

namespace sluice {

absl::StatusOr<ArgReduceAttrs> ParseArgReduceAttrs(const Node& node) {
  ArgReduceAttrs a;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(a.keepdims, node.attrs().GetBool("keepdims"));
  ASSIGN_OR_RETURN(a.select_last_index,
                   node.attrs().GetBool("select_last_index"));
  return a;
}

absl::StatusOr<AxisPlan> PlanArgReduce(const ArgReduceAttrs& a,
                                            const Shape& x) {
  AxisPlan p;
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(a.axis, x.rank()));
  if (x.dim(p.axis) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ArgMax/ArgMin over an empty dimension (axis ", p.axis, " of ",
        x.DebugString(), ")"));
  }
  ASSIGN_OR_RETURN(p.out_shape, ReduceShape(x, {p.axis}, a.keepdims));
  p.view = ViewAround(x, p.axis);
  return p;
}

absl::StatusOr<CumulativeAttrs> ParseCumulativeAttrs(const Node& node) {
  CumulativeAttrs a;
  a.prod = node.op() == "CumProd";
  ASSIGN_OR_RETURN(a.exclusive, node.attrs().GetBool("exclusive"));
  ASSIGN_OR_RETURN(a.reverse, node.attrs().GetBool("reverse"));
  return a;
}

absl::StatusOr<AxisPlan> PlanCumulative(const CumulativeAttrs& a,
                                             const Shape& x,
                                             const Tensor& axis) {
  ASSIGN_OR_RETURN(int64_t value,
                   HostScalarInt(axis, a.prod ? "CumProd's axis" : "CumSum's axis"));
  AxisPlan p;
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(value, x.rank()));
  p.view = ViewAround(x, p.axis);
  p.out_shape = x;
  return p;
}

absl::StatusOr<TriluAttrs> ParseTriluAttrs(const Node& node) {
  TriluAttrs a;
  ASSIGN_OR_RETURN(a.upper, node.attrs().GetBool("upper"));
  return a;
}

absl::StatusOr<TriluPlan> PlanTrilu(const Shape& x, const Tensor& k) {
  TriluPlan p;
  ASSIGN_OR_RETURN(p.k, HostScalarInt(k, "Trilu's k"));
  if (x.rank() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("Trilu needs rank >= 2, got ", x.DebugString()));
  }
  p.rows = x.dim(x.rank() - 2);
  p.cols = x.dim(x.rank() - 1);
  p.out_shape = x;
  return p;
}

}  // namespace sluice
