// DataFormat: the layout of a 2-D convolution's or pooling's 4-D tensors,
// the `data_format` attribute of Conv2D, FusedConv2D, MaxPool and AvgPool
// (TensorFlow's name). NCHW, the default, is ONNX's; NHWC keeps the
// channels innermost (input [N,H,W,C], filter [O,KH,KW,C/group], output
// [N,OH,OW,O]), the layout cuDNN's tensor-core engines read without a
// conversion (docs/design.md decision 31; the optimizer's nhwc_layout pass
// makes such nodes).
//
//   ASSIGN_OR_RETURN(DataFormat f, GetDataFormat(node.attrs()));
//   Shape nchw = f == DataFormat::kNhwc ? NhwcToNchw(x.shape()) : x.shape();
//
// Pure functions; thread-safe.
#ifndef SLUICE_GRAPH_DATA_FORMAT_H_
#define SLUICE_GRAPH_DATA_FORMAT_H_

#include <array>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "graph/attr_map.h"

namespace sluice {

enum class DataFormat { kNchw, kNhwc };

// The node's "data_format": "NCHW" (also when the attribute is absent) or
// "NHWC"; any other value is INVALID_ARGUMENT naming both.
absl::StatusOr<DataFormat> GetDataFormat(const AttrMap& attrs);
const char* DataFormatName(DataFormat f);  // "NCHW" | "NHWC"

// Transpose permutations (output dim i is input dim perm[i]).
inline constexpr std::array<int64_t, 4> kNchwToNhwc = {0, 2, 3, 1};
inline constexpr std::array<int64_t, 4> kNhwcToNchw = {0, 3, 1, 2};

// A rank-4 shape permuted: [N,H,W,C] -> [N,C,H,W] (a filter's
// [O,KH,KW,I] -> [O,I,KH,KW] is the same permutation), and back. An
// unknown rank or a rank other than 4 is returned as it is.
Shape NhwcToNchw(const Shape& s);
Shape NchwToNhwc(const Shape& s);

}  // namespace sluice

#endif  // SLUICE_GRAPH_DATA_FORMAT_H_
