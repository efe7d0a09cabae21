// Output-size arithmetic of the N-d vision ops (Resize, Pad, ConvND,
// ConvTranspose, PoolND, Col2Im), shared by their schemas' shape functions
// (graph/ops/vision_ops.cc) and their CPU kernels, which call the same
// functions at run time with the actual parameter values.
//
//   std::vector<int64_t> out;
//   std::vector<double> scale;
//   RETURN_IF_ERROR(ResizeDims({1, 1, 4, 4}, /*scales=*/{1, 1, 2, 2}, {}, {},
//                              "stretch", &out, &scale));  // out [1,1,8,8]
//
// Pure functions; thread-safe.
#ifndef SLUICE_GRAPH_VISION_SHAPES_H_
#define SLUICE_GRAPH_VISION_SHAPES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace sluice {

// ONNX Resize's output dims and the scale used for each dim's coordinate
// transform. `in` is fully known; exactly one of `scales` and `sizes` is
// non-empty, with one entry per axis of `axes` (empty `axes`: every dim).
// `policy` is keep_aspect_ratio_policy ("stretch", "not_larger",
// "not_smaller"), used only with `sizes`. Dims not in `axes` keep their
// size and scale 1.
absl::Status ResizeDims(absl::Span<const int64_t> in,
                        absl::Span<const float> scales,
                        absl::Span<const int64_t> sizes,
                        absl::Span<const int64_t> axes,
                        absl::string_view policy, std::vector<int64_t>* out,
                        std::vector<double>* scale_out);

// ONNX Pad's pads ([begin of each axis..., end of each axis...] for the
// listed `axes`, every dim when empty) as begin/end pads of each of the
// `rank` dims: [b0, .., b(r-1), e0, .., e(r-1)].
absl::StatusOr<std::vector<int64_t>> FullPads(int rank,
                                              absl::Span<const int64_t> pads,
                                              absl::Span<const int64_t> axes);

// One spatial output size of a pooling window: the ConvOutputSize formula
// (graph/shape_fns.h) rounded up with ceil_mode, where the last window must
// start inside the input or the begin padding.
absl::StatusOr<int64_t> PoolOutputSize(int64_t in, int64_t kernel,
                                       int64_t stride, int64_t pad_begin,
                                       int64_t pad_end, int64_t dilation,
                                       bool ceil_mode);

// One spatial output size of a transposed convolution:
// stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1
//   - pad_begin - pad_end. Pads may be negative (they widen the output).
absl::StatusOr<int64_t> ConvTransposeOutputSize(int64_t in, int64_t kernel,
                                                int64_t stride,
                                                int64_t pad_begin,
                                                int64_t pad_end,
                                                int64_t dilation,
                                                int64_t output_padding);

// Checks the window attributes of an N-d window op with `n` spatial dims:
// n strides and dilations >= 1, 2n pads (>= 0 unless `negative_pads_ok`),
// and, when non-empty, n kernel sizes >= 1.
absl::Status CheckWindowAttrs(size_t n, absl::Span<const int64_t> kernel,
                              absl::Span<const int64_t> strides,
                              absl::Span<const int64_t> pads,
                              absl::Span<const int64_t> dilations,
                              bool negative_pads_ok = false);

}  // namespace sluice

#endif  // SLUICE_GRAPH_VISION_SHAPES_H_
