#include "kernels/reduce_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"

namespace sluice {

absl::StatusOr<ReduceAttrs> ParseReduceAttrs(const Node& node) {
  ReduceAttrs a;
  const std::string& op = node.op();
  a.dynamic = op.rfind("Dynamic", 0) == 0;
  a.mean = op == "ReduceMean" || op == "DynamicReduceMean";
  if (a.dynamic) {
    ASSIGN_OR_RETURN(a.noop_with_empty_axes, node.attrs().GetBool("noop_with_empty_axes"));
  } else {
    ASSIGN_OR_RETURN(a.axes, node.attrs().GetIntList("axes"));
  }
  ASSIGN_OR_RETURN(a.keepdims, node.attrs().GetBool("keepdims"));
  return a;
}

absl::StatusOr<ReducePlanning> PlanReduce(const ReduceAttrs& a, const Tensor& x,
                                          const Tensor* axes_input) {
  ReducePlanning p;
  std::vector<int64_t> axes = a.axes;
  if (a.dynamic) {
    if (axes_input == nullptr) return absl::InvalidArgumentError("the axes input is missing");
    ASSIGN_OR_RETURN(axes, IntParamValues(*axes_input, "axes"));
    if (axes.empty() && a.noop_with_empty_axes) {
      p.pass_through = true;
      p.out_shape = x.shape();
      return p;
    }
  }
  ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, x.rank()));
  p.reduced.assign(x.rank(), axes.empty());
  for (int d : norm) p.reduced[d] = true;
  ASSIGN_OR_RETURN(p.out_shape, ReduceShape(x.shape(), axes, a.keepdims));
  int64_t reduced_count = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (p.reduced[d]) reduced_count *= x.dim(d);
  }
  if (a.mean && reduced_count == 0 && p.out_shape.num_elements() > 0 &&
      !IsFloatingPoint(x.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "integer ReduceMean over an empty axis of ", x.shape().DebugString()));
  }
  return p;
}

}  // namespace sluice
