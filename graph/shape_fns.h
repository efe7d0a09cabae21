// Shape arithmetic shared by the op schemas' shape functions (graph/ops/)
// and by kernels that compute output shapes at run time. Every function
// takes partial shapes: an unknown dimension (kUnknownDim) or an unknown rank
// in gives an unknown out wherever the result depends on it, and a mismatch
// between known values is INVALID_ARGUMENT. With fully defined shapes in,
// the results are fully defined.
//
//   ASSIGN_OR_RETURN(Shape z, BroadcastShapes(Shape({2, 1, 3}), Shape({4, 1})));
//   // z == [2,4,3]
//   ASSIGN_OR_RETURN(int axis, NormalizeAxis(-1, /*rank=*/3));   // 2
//
// Pure functions; thread-safe.
#ifndef SLUICE_GRAPH_SHAPE_FNS_H_
#define SLUICE_GRAPH_SHAPE_FNS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "graph/shape_inference.h"

namespace sluice {

// `rank` dims, each unknown; an unknown rank when `rank` < 0.
Shape UnknownDims(int64_t rank);

// NumPy broadcasting: shapes aligned on the right; a dimension of 1 stretches;
// 0 behaves like any other size.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Maps `axis` in [-rank, rank) to [0, rank).
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank);
// Each axis normalised; duplicates (after normalisation) are an error.
absl::StatusOr<std::vector<int>> NormalizeAxes(absl::Span<const int64_t> axes,
                                               int rank);

// One spatial output size of a convolution or pooling window:
// floor((in + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1.
// kUnknownDim when `in` or `kernel` is unknown.
absl::StatusOr<int64_t> ConvOutputSize(int64_t in, int64_t kernel,
                                       int64_t stride, int64_t pad_begin,
                                       int64_t pad_end, int64_t dilation = 1);

// One dimension of a NumPy / ONNX slice: negative begin/end count from the
// end and are clamped to the dimension; step may be negative, not 0.
struct SliceDim {
  int64_t start = 0;  // first index read
  int64_t step = 1;
  int64_t size = 0;   // elements in the result
};
// REQUIRES: dim >= 0 (a known dimension).
absl::StatusOr<SliceDim> NormalizeSlice(int64_t dim, int64_t begin,
                                        int64_t end, int64_t step);

// Output shapes of the structural ops (see docs/ops.md for the rules).
absl::StatusOr<Shape> MatMulShape(const Shape& a, const Shape& b,
                                  bool transpose_a, bool transpose_b);
// `axes` empty: all of them.
absl::StatusOr<Shape> ReduceShape(const Shape& input,
                                  absl::Span<const int64_t> axes,
                                  bool keepdims);
absl::StatusOr<Shape> ReshapeShape(const Shape& input,
                                   absl::Span<const int64_t> shape);
// `perm` empty: reverse the dimensions.
absl::StatusOr<Shape> TransposeShape(const Shape& input,
                                     absl::Span<const int64_t> perm);
// `axes` empty: every dimension of size 1.
absl::StatusOr<Shape> SqueezeShape(const Shape& input,
                                   absl::Span<const int64_t> axes);
// `axes` are positions in the output.
absl::StatusOr<Shape> UnsqueezeShape(const Shape& input,
                                     absl::Span<const int64_t> axes);
absl::StatusOr<Shape> ConcatShape(absl::Span<const Shape> inputs,
                                  int64_t axis);
// `sizes` empty: num_split equal parts.
absl::StatusOr<std::vector<Shape>> SplitShapes(const Shape& input,
                                               int64_t axis,
                                               int64_t num_split,
                                               absl::Span<const int64_t> sizes);
// `axes` empty: 0..n-1; `steps` empty: all 1.
absl::StatusOr<Shape> SliceShape(const Shape& input,
                                 absl::Span<const int64_t> begin,
                                 absl::Span<const int64_t> end,
                                 absl::Span<const int64_t> axes,
                                 absl::Span<const int64_t> steps);
absl::StatusOr<Shape> GatherShape(const Shape& params, const Shape& indices,
                                  int64_t axis);
// ONNX Expand: `shape` and the input broadcast against each other.
absl::StatusOr<Shape> ExpandShape(const Shape& input,
                                  absl::Span<const int64_t> shape);

// Window parameters of Conv2D and the pools, NCHW.
struct Conv2DParams {
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
};
// Checks list lengths and ranges (strides, dilations, group >= 1; pads >= 0).
absl::Status CheckConv2DParams(const Conv2DParams& p);
// input [N,C,H,W], filter [O, C/group, KH, KW] -> [N,O,OH,OW].
absl::StatusOr<Shape> Conv2DShape(const Shape& input, const Shape& filter,
                                  const Conv2DParams& params);
// input [N,C,H,W], kernel_shape [KH,KW] -> [N,C,OH,OW].
absl::StatusOr<Shape> PoolShape(const Shape& input,
                                absl::Span<const int64_t> kernel_shape,
                                const Conv2DParams& params);

// Shape functions for the simplest ops.
absl::Status UnchangedShapeFn(InferenceContext& c);  // output 0 = input 0
absl::Status BroadcastShapeFn(InferenceContext& c);  // all inputs broadcast

}  // namespace sluice

#endif  // SLUICE_GRAPH_SHAPE_FNS_H_
