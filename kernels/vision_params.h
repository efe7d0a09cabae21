// The parsed attributes and the shape checks of the vision ops (Resize,
// Pad, PoolND and MaxPoolWithIndices, GridSample, ConvND, ConvTranspose,
// Col2Im, AffineGrid, MaxUnpool, RoiAlign, NonMaxSuppression), shared by their CPU kernels
// (kernels/cpu/) and GPU kernels (kernels/cuda/), so both accept and reject
// the same nodes with the same messages. Device-neutral.
//
//   ASSIGN_OR_RETURN(ResizeAttrs a, ParseResizeAttrs(node));
//   if (a.mode == "cubic") ...
//
// Pure functions; thread-safe.
#ifndef SLUICE_KERNELS_VISION_PARAMS_H_
#define SLUICE_KERNELS_VISION_PARAMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "kernels/grid_math.h"
#include "kernels/cpu/window_nd.h"

namespace sluice {

struct ResizeAttrs {
  std::string mode, transform, nearest_mode, policy;
  float cubic_a = -0.75f;
  bool exclude_outside = false, antialias = false;
  float extrapolation = 0;
  std::vector<int64_t> axes;
};
// INVALID_ARGUMENT for an unknown mode, coordinate_transformation_mode or
// nearest_mode.
absl::StatusOr<ResizeAttrs> ParseResizeAttrs(const Node& node);
// The roi start and end of each of the `rank` dims (0 and 1 unless
// tf_crop_and_resize, which reads them from `roi`: starts of the axes, then
// ends). INVALID_ARGUMENT when roi has the wrong length.
absl::Status ResizeRoi(const ResizeAttrs& a, int rank,
                       absl::Span<const float> roi,
                       std::vector<double>* roi_start,
                       std::vector<double>* roi_end);
// Resize's geometry from its host inputs roi and scales (float32) and sizes:
// the output's dims and each axis' scale (ResizeDims, graph/vision_shapes.h)
// and roi (ResizeRoi).
struct ResizePlan {
  std::vector<int64_t> in_dims, out_dims;
  std::vector<double> scale, roi_start, roi_end;
};
absl::StatusOr<ResizePlan> PlanResize(const ResizeAttrs& a, const Tensor& x,
                                      const Tensor& roi, const Tensor& scales,
                                      const Tensor& sizes);

enum class PadMode { kConstant, kReflect, kEdge, kWrap };
absl::StatusOr<PadMode> ParsePadMode(const Node& node);
// One dim of a Pad: the input kept after negative pads crop ([lo, lo +
// len)), the positive begin pad, and the output length.
struct PadAxis {
  int64_t lo = 0, len = 0, begin = 0, out = 0;
};
// `full`: FullPads (graph/vision_shapes.h) of the input's rank.
// INVALID_ARGUMENT when pads crop more than a dim, or pad an empty dim in a
// mode other than constant.
absl::StatusOr<std::vector<PadAxis>> PadAxes(const Shape& in,
                                             absl::Span<const int64_t> full,
                                             PadMode mode);
// PadAxes of x from Pad's host inputs pads and axes, after checking value
// (x's dtype, empty or one element).
absl::StatusOr<std::vector<PadAxis>> PlanPad(const Tensor& x,
                                             const Tensor& pads,
                                             const Tensor& value,
                                             const Tensor& axes, PadMode mode);

enum class PoolMode { kMax, kAvg, kLp };
struct PoolAttrs {
  PoolMode mode = PoolMode::kMax;
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil_mode = false, include_pad = false;
  int64_t p = 2;
  int64_t storage_order = 0;
  bool indices = false;  // MaxPoolWithIndices
};
// PoolND and MaxPoolWithIndices (mode max, indices true).
absl::StatusOr<PoolAttrs> ParsePoolAttrs(const Node& node);

struct GridSampleAttrs {
  GridInterp interp = GridInterp::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
};
absl::StatusOr<GridSampleAttrs> ParseGridSampleAttrs(const Node& node);
// GridSample's output dims [N, C, D1'..Dr'] for X [N, C, D1..Dr] and grid
// [N, D1'..Dr', r] of X's dtype; INVALID_ARGUMENT when they do not fit or a
// spatial dim of X is empty.
absl::StatusOr<std::vector<int64_t>> GridSampleDims(const Tensor& x,
                                                    const Tensor& grid);

struct ConvAttrs {
  std::vector<int64_t> strides, pads, dilations, output_padding;
  int64_t group = 1;
  bool transpose = false;  // ConvTranspose
};
// ConvND and ConvTranspose (by the node's op).
absl::StatusOr<ConvAttrs> ParseConvAttrs(const Node& node);
// The sliding window of ConvND (the image is x, the window positions the
// output) or ConvTranspose (the image is the output, the positions x;
// channels: output channels per group), and the output's dims.
struct ConvPlan {
  cpu::WindowNd window;
  std::vector<int64_t> out_dims;
};
// Checks x [N, C, s...] and f [O or C, ..., k...] (a floating dtype, f of
// x's) against the attributes (ranks and channel counts) first;
// INVALID_ARGUMENT naming what disagrees.
absl::StatusOr<ConvPlan> PlanConv(const ConvAttrs& a, const Tensor& x, const Tensor& f);

struct Col2ImAttrs {
  std::vector<int64_t> strides, pads, dilations;
};
absl::StatusOr<Col2ImAttrs> ParseCol2ImAttrs(const Node& node);
// Col2Im's window (the image: image_shape; channels: C) for input x
// [N, C * prod(block), L] and host tensors image_shape and block_shape, and
// the output's dims; INVALID_ARGUMENT when they do not fit together.
absl::StatusOr<cpu::WindowNd> Col2ImWindow(const Col2ImAttrs& a,
                                           const Tensor& x,
                                           const Tensor& image_shape,
                                           const Tensor& block_shape,
                                           std::vector<int64_t>* out_dims);

struct AffineGridAttrs {
  bool align_corners = false;
};
absl::StatusOr<AffineGridAttrs> ParseAffineGridAttrs(const Node& node);
// AffineGrid's output dims [N, D1.., r] for theta [N, r, r + 1] and `size`
// [N, C, D1..] (r 2 or 3); INVALID_ARGUMENT when they do not fit.
absl::StatusOr<std::vector<int64_t>> AffineGridDims(
    const Tensor& theta, absl::Span<const int64_t> size);

struct MaxUnpoolAttrs {
  std::vector<int64_t> kernel, strides, pads;
};
absl::StatusOr<MaxUnpoolAttrs> ParseMaxUnpoolAttrs(const Node& node);
// MaxUnpool's output dims for x [N, C, spatial...], its indices (x's shape)
// and output_shape (empty: from the window). Checks all three.
absl::StatusOr<std::vector<int64_t>> MaxUnpoolDims(
    const MaxUnpoolAttrs& a, const Tensor& x, const Tensor& indices,
    const std::vector<int64_t>& output_shape);
// MaxUnpoolDims with output_shape read from its host tensor, after checking
// that indices are int64; then CheckUnpoolIndices (host-memory indices).
absl::StatusOr<std::vector<int64_t>> PlanMaxUnpool(const MaxUnpoolAttrs& a,
                                                   const Tensor& x,
                                                   const Tensor& indices,
                                                   const Tensor& output_shape);
// INVALID_ARGUMENT naming the first of MaxUnpool's int64 indices outside
// [0, total), the output's element count.
absl::Status CheckUnpoolIndices(const Tensor& indices, int64_t total);

struct RoiAlignAttrs {
  bool half_pixel = true, max = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
};
absl::StatusOr<RoiAlignAttrs> ParseRoiAlignAttrs(const Node& node);
// Checks x [N, C, H, W], rois [R, 4] (x's dtype) and R batch indices, each
// in [0, N).
absl::Status CheckRoiAlignInputs(const Tensor& x, const Tensor& rois,
                                 absl::Span<const int64_t> batch);

struct NmsAttrs {
  bool center = false;  // center_point_box: [xc, yc, w, h] boxes
};
// INVALID_ARGUMENT unless center_point_box is 0 or 1.
absl::StatusOr<NmsAttrs> ParseNmsAttrs(const Node& node);
struct NmsPlan {
  int64_t batches = 0, classes = 0, boxes = 0;
  int64_t max_per_class = 0;  // 0 when the input is empty or negative
  float iou_threshold = 0;
  bool thresholded = false;  // a score threshold was given
  float score_threshold = 0;
};
// Checks boxes [B, N, 4] and scores [B, C, N] and reads the parameters
// (inputs 2-4, in host memory; an empty one takes its default).
absl::StatusOr<NmsPlan> PlanNms(const Tensor& boxes, const Tensor& scores,
                                const Tensor& max_per_class,
                                const Tensor& iou_threshold,
                                const Tensor& score_threshold);

}  // namespace sluice

#endif  // SLUICE_KERNELS_VISION_PARAMS_H_
