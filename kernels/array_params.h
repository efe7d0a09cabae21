// The setup of the shape and copy ops, written once for their CPU kernels
// (kernels/cpu/shape_ops.cc, concat_split.cc) and CUDA kernels
// (kernels/cuda/array_kernels.cc, dynamic_kernels.cc, shape_copy.cc):
// Reshape, Squeeze, Unsqueeze and Identity (views of the input's buffer)
// and their Dynamic forms, Transpose, Expand, Concat and Split. Attributes
// are parsed when the kernel is made; each call the host-memory parameters
// (a Dynamic form's input 1) are read and checked and the output's shape
// and the copy's strides computed, so both devices refuse the same inputs
// with the same messages. Device-neutral.
//
//   ASSIGN_OR_RETURN(TransposePlan p, PlanTranspose(attrs(), x.shape()));
//   // output p.out_shape; output element [i...] = x[sum i_d * p.in_strides[d]]
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_ARRAY_PARAMS_H_
#define SLUICE_KERNELS_ARRAY_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "kernels/kernel.h"

namespace sluice {

// Reshape, Squeeze, Unsqueeze, Identity and DynamicReshape,
// DynamicSqueeze, DynamicUnsqueeze: one parser per op, each reading what
// its op has.
struct ViewAttrs {
  enum class Kind { kIdentity, kReshape, kSqueeze, kUnsqueeze } kind = Kind::kIdentity;
  bool dynamic = false;          // the shape or axes are input 1
  std::vector<int64_t> dims;     // Reshape's "shape", or the "axes"
  bool allowzero = false;        // DynamicReshape (ONNX)
};
absl::StatusOr<ViewAttrs> ParseIdentityAttrs(const Node& node);
absl::StatusOr<ViewAttrs> ParseReshapeAttrs(const Node& node);
absl::StatusOr<ViewAttrs> ParseSqueezeAttrs(const Node& node);
absl::StatusOr<ViewAttrs> ParseUnsqueezeAttrs(const Node& node);
absl::StatusOr<ViewAttrs> ParseDynamicReshapeAttrs(const Node& node);
absl::StatusOr<ViewAttrs> ParseDynamicSqueezeAttrs(const Node& node);
absl::StatusOr<ViewAttrs> ParseDynamicUnsqueezeAttrs(const Node& node);
// The output's shape (the input's buffer, viewed): `param` is input 1 of a
// Dynamic form (host memory), else null. INVALID_ARGUMENT where the shape
// functions refuse, or the view would not hold x's elements.
absl::StatusOr<Shape> PlanView(const ViewAttrs& a, const Shape& x,
                               const Tensor* param);

// A strided copy: the output, dense and row-major, reads x at
// sum(index[d] * in_strides[d]) (strides in elements, 0 where it repeats).
struct CopyPlan {
  Shape out_shape;
  std::vector<int64_t> in_strides;  // one per output dim
};

struct TransposeAttrs {
  std::vector<int64_t> perm;  // empty: reverse the dims
};
absl::StatusOr<TransposeAttrs> ParseTransposeAttrs(const Node& node);
absl::StatusOr<CopyPlan> PlanTranspose(const TransposeAttrs& a, const Shape& x);

// Expand ("shape") and DynamicExpand (the shape is input 1).
struct ExpandAttrs {
  bool dynamic = false;
  std::vector<int64_t> dims;
};
absl::StatusOr<ExpandAttrs> ParseExpandAttrs(const Node& node);
absl::StatusOr<ExpandAttrs> ParseDynamicExpandAttrs(const Node& node);
// x broadcast against `dims` (ONNX Expand).
absl::StatusOr<CopyPlan> PlanExpand(const Shape& x, absl::Span<const int64_t> dims);
// The same with the attribute's dims, or input 1's (`param`, host memory).
absl::StatusOr<CopyPlan> PlanExpand(const ExpandAttrs& a, const Shape& x,
                                    const Tensor* param);

struct ConcatAttrs {
  int64_t axis = 0;
};
absl::StatusOr<ConcatAttrs> ParseConcatAttrs(const Node& node);
struct ConcatPlan {
  int axis = 0;  // normalised
  Shape out_shape;
  std::vector<Shape> in_shapes;
};
// INVALID_ARGUMENT when the inputs differ in dtype, or in a dim other than
// the axis.
absl::StatusOr<ConcatPlan> PlanConcat(const ConcatAttrs& a, const OpKernelContext& ctx);

// Split (sizes, or num_split equal parts) and DynamicSplit (the sizes are
// input 1, host memory).
struct SplitAttrs {
  int64_t axis = 0;
  int64_t num_split = 0;
  std::vector<int64_t> sizes;
  bool dynamic = false;
};
absl::StatusOr<SplitAttrs> ParseSplitAttrs(const Node& node);
absl::StatusOr<SplitAttrs> ParseDynamicSplitAttrs(const Node& node);
struct SplitPlan {
  int axis = 0;  // normalised
  std::vector<Shape> out_shapes;
};
// INVALID_ARGUMENT when the sizes do not split x, or make another number
// of outputs than the node has.
absl::StatusOr<SplitPlan> PlanSplit(const SplitAttrs& a, const OpKernelContext& ctx);

}  // namespace sluice

#endif  // SLUICE_KERNELS_ARRAY_PARAMS_H_
