// The setup of Shape, Fill and Range (docs/ops.md, "Runtime parameters"),
// written once for their CPU kernels (kernels/cpu/shape_ops.cc,
// kernels/cpu/range_fill_tile.cc) and CUDA kernels
// (kernels/cuda/dynamic_kernels.cc): the attributes parsed when the kernel
// is made; each call the host-memory parameters read and checked, and the
// output's shape. Both devices refuse the same inputs with the same
// messages. Device-neutral.
//
//   ASSIGN_OR_RETURN(RangeAttrs a, ParseRangeAttrs(node));
//   ASSIGN_OR_RETURN(RangePlan p, PlanRange(a, ctx->input(0), ctx->input(1),
//                                           ctx->input(2)));
//   // p.n values start + i * delta, i < p.n
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_DYNAMIC_PARAMS_H_
#define SLUICE_KERNELS_DYNAMIC_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

// Shape: the input's dimensions [start, end) (ONNX's clamping).
struct ShapeAttrs {
  int64_t start = 0, end = 0;
};
absl::StatusOr<ShapeAttrs> ParseShapeAttrs(const Node& node);
struct ShapePlan {
  std::vector<int64_t> dims;  // the output's values
  Shape out_shape;            // [dims.size()]
};
ShapePlan PlanShape(const ShapeAttrs& a, const Shape& x);

// Fill (ONNX ConstantOfShape): `value`, one element of `dtype`.
struct FillAttrs {
  DataType dtype = DT_INVALID;
  Tensor value;  // on the host
};
// INVALID_ARGUMENT for a value that is not one element of dtype.
absl::StatusOr<FillAttrs> ParseFillAttrs(const Node& node);
// The output's shape from the host-memory `shape` input; INVALID_ARGUMENT
// for a negative dimension.
absl::StatusOr<Shape> PlanFill(const Tensor& shape);

// Range: start, start + delta, ... up to limit (excluded).
struct RangeAttrs {
  DataType t = DT_INVALID;
};
absl::StatusOr<RangeAttrs> ParseRangeAttrs(const Node& node);
struct RangePlan {
  int64_t n = 0;
  double start = 0, delta = 0;       // as double
  int64_t istart = 0, idelta = 0;    // as int64 (truncated)
  Shape out_shape;                   // [n]
};
// start, limit and delta: host-memory scalars of dtype a.t (float32,
// float64, float16, bfloat16, int32 or int64); INVALID_ARGUMENT naming the
// input otherwise, or for a zero delta or too long a range.
absl::StatusOr<RangePlan> PlanRange(const RangeAttrs& a, const Tensor& start,
                                    const Tensor& limit, const Tensor& delta);

}  // namespace sluice

#endif  // SLUICE_KERNELS_DYNAMIC_PARAMS_H_
