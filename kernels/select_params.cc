#include "kernels/select_params.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/host_params.h"

namespace sluice {

AxisView ViewAround(const Shape& s, int axis) {
  AxisView v;
  for (int i = 0; i < axis; ++i) v.outer *= s.dim(i);
  v.n = s.dim(axis);
  for (int i = axis + 1; i < s.rank(); ++i) v.inner *= s.dim(i);
  return v;
}

absl::StatusOr<TopKAttrs> ParseTopKAttrs(const Node& node) {
  TopKAttrs a;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(a.largest, node.attrs().GetBool("largest"));
  return a;
}

absl::StatusOr<TopKPlan> PlanTopK(const Tensor& x, const Tensor& k,
                                  const TopKAttrs& a) {
  ASSIGN_OR_RETURN(std::vector<int64_t> kv, IntParamValues(k, "TopK's k"));
  if (kv.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TopK's k must hold one value, got ", kv.size()));
  }
  TopKPlan p;
  p.k = kv[0];
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(a.axis, x.rank()));
  p.view = ViewAround(x.shape(), p.axis);
  if (p.k < 0 || p.k > p.view.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("TopK's k = ", p.k, " is outside [0, ", p.view.n,
                     "] for axis ", p.axis, " of ", x.shape().DebugString()));
  }
  p.out_shape = x.shape();
  p.out_shape.set_dim(p.axis, p.k);
  return p;
}

absl::StatusOr<OneHotAttrs> ParseOneHotAttrs(const Node& node) {
  OneHotAttrs a;
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  return a;
}

absl::StatusOr<OneHotPlan> PlanOneHot(const Tensor& indices,
                                      const Tensor& depth,
                                      const Tensor& values,
                                      const OneHotAttrs& a) {
  ASSIGN_OR_RETURN(std::vector<int64_t> depth_v, HostInt64s(depth, "depth"));
  if (depth_v.size() != 1 || depth_v[0] < 1) {
    return absl::InvalidArgumentError("depth must be one value of at least 1");
  }
  OneHotPlan p;
  p.depth = depth_v[0];
  if (values.NumElements() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("values must hold [off_value, on_value], got shape ",
                     values.shape().DebugString()));
  }
  const int rank = indices.rank() + 1;
  int64_t axis = a.axis;
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis ", axis, " is out of range for an output of rank ", rank));
  }
  if (axis < 0) axis += rank;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d == axis) p.out_shape.AddDim(p.depth);
    p.out_shape.AddDim(indices.dim(d));
    (d < axis ? p.outer : p.inner) *= indices.dim(d);
  }
  if (axis == indices.rank()) p.out_shape.AddDim(p.depth);
  return p;
}

absl::StatusOr<EyeLikeAttrs> ParseEyeLikeAttrs(const Node& node) {
  EyeLikeAttrs a;
  ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
  ASSIGN_OR_RETURN(a.k, node.attrs().GetInt("k"));
  return a;
}

absl::Status CheckEyeLikeInput(const Tensor& x) {
  return cpu::CheckRank(x, 2, "EyeLike's input");
}

absl::StatusOr<CompressAttrs> ParseCompressAttrs(const Node& node) {
  CompressAttrs a;
  ASSIGN_OR_RETURN(a.flatten, node.attrs().GetBool("flatten"));
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  return a;
}

absl::StatusOr<ReverseSequenceAttrs> ParseReverseSequenceAttrs(
    const Node& node) {
  ReverseSequenceAttrs a;
  ASSIGN_OR_RETURN(a.batch_axis, node.attrs().GetInt("batch_axis"));
  ASSIGN_OR_RETURN(int64_t time_axis, node.attrs().GetInt("time_axis"));
  if (!((a.batch_axis == 0 && time_axis == 1) ||
        (a.batch_axis == 1 && time_axis == 0))) {
    return absl::InvalidArgumentError(
        "batch_axis and time_axis must be 0 and 1 in some order");
  }
  return a;
}

absl::StatusOr<ReverseSequencePlan> PlanReverseSequence(
    const Tensor& x, const Tensor& lens, const ReverseSequenceAttrs& a) {
  if (x.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReverseSequence needs rank >= 2, got ", x.shape().DebugString()));
  }
  ReverseSequencePlan p;
  p.batch_first = a.batch_axis == 0;
  p.batch = x.dim(p.batch_first ? 0 : 1);
  p.steps = x.dim(p.batch_first ? 1 : 0);
  RETURN_IF_ERROR(CheckSequenceLens(lens, p.batch, p.steps));
  return p;
}

absl::StatusOr<TensorScatterAttrs> ParseTensorScatterAttrs(const Node& node) {
  TensorScatterAttrs a;
  ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode"));
  if (mode != "linear" && mode != "circular") {
    return absl::InvalidArgumentError(
        absl::StrCat("mode must be linear or circular, got ", mode));
  }
  a.circular = mode == "circular";
  ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  return a;
}

}  // namespace sluice
