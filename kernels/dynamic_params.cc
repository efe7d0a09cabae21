#include "kernels/dynamic_params.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/runtime_params.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice {

absl::StatusOr<ShapeAttrs> ParseShapeAttrs(const Node& node) {
  ShapeAttrs a;
  ASSIGN_OR_RETURN(a.start, node.attrs().GetInt("start"));
  ASSIGN_OR_RETURN(a.end, node.attrs().GetInt("end"));
  return a;
}

ShapePlan PlanShape(const ShapeAttrs& a, const Shape& x) {
  int64_t begin = 0, end = 0;
  ShapeSliceBounds(x.rank(), a.start, a.end, &begin, &end);
  ShapePlan p;
  for (int64_t d = begin; d < end; ++d) p.dims.push_back(x.dim(static_cast<int>(d)));
  p.out_shape = Shape({end - begin});
  return p;
}

absl::StatusOr<FillAttrs> ParseFillAttrs(const Node& node) {
  FillAttrs a;
  ASSIGN_OR_RETURN(a.dtype, node.attrs().GetType("dtype"));
  const AttrValue* v = node.attrs().Find("value");
  if (v == nullptr || v->value_case() != AttrValue::kTensor) {
    return absl::InvalidArgumentError("Fill needs a tensor 'value'");
  }
  ASSIGN_OR_RETURN(a.value, TensorFromProto(v->tensor()));
  if (a.value.NumElements() != 1 || a.value.dtype() != a.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Fill's value must be one ", DataTypeName(a.dtype), " element, got ",
        DataTypeName(a.value.dtype()), a.value.shape().DebugString()));
  }
  return a;
}

absl::StatusOr<Shape> PlanFill(const Tensor& shape) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntParamValues(shape, "shape"));
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape has a negative dimension ", d));
    }
  }
  return Shape(dims);
}

absl::StatusOr<RangeAttrs> ParseRangeAttrs(const Node& node) {
  RangeAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  return a;
}

absl::StatusOr<RangePlan> PlanRange(const RangeAttrs& a, const Tensor& start,
                                    const Tensor& limit, const Tensor& delta) {
  const Tensor* in[3] = {&start, &limit, &delta};
  double v[3];
  int64_t iv[3];
  for (int k = 0; k < 3; ++k) {
    const Tensor& t = *in[k];
    const absl::Status read =
        t.NumElements() != 1 || t.dtype() != a.t
            ? absl::InvalidArgumentError("")
            : cpu::VisitArith(t.dtype(), [&](auto tag) -> absl::Status {
                using T = typename decltype(tag)::type;
                using C = typename cpu::ComputeType<T>::type;
                const C value = static_cast<C>(t.data<T>()[0]);
                v[k] = static_cast<double>(value);
                iv[k] = static_cast<int64_t>(value);
                return absl::OkStatus();
              });
    if (!read.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "start, limit and delta must be ", DataTypeName(a.t),
          " scalars; input ", k, " is ", DataTypeName(t.dtype()),
          t.shape().DebugString()));
    }
  }
  RangePlan p;
  ASSIGN_OR_RETURN(p.n, RangeLength(v[0], v[1], v[2]));
  p.start = v[0];
  p.delta = v[2];
  p.istart = iv[0];
  p.idelta = iv[2];
  p.out_shape = Shape({p.n});
  return p;
}

}  // namespace sluice
