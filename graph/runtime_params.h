// Structural parameters given as tensors: the shapes, axes, bounds and
// sizes that the Dynamic* ops and Shape, Range, Fill and Tile read from
// int64 inputs at run time instead of from attributes (docs/ops.md,
// "Runtime parameters"). The schemas' shape functions call these when the
// input's value is known at load time; the kernels call them every step.
//
//   ASSIGN_OR_RETURN(std::vector<int64_t> dims,
//                    IntParamValues(ctx->input(1), "shape"));
//   ASSIGN_OR_RETURN(dims, OnnxReshapeDims(x.shape(), dims, /*allowzero=*/false));
//
// Pure functions; thread-safe.
#ifndef SLUICE_GRAPH_RUNTIME_PARAMS_H_
#define SLUICE_GRAPH_RUNTIME_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace sluice {

// The elements of a rank-0 or rank-1 int32 / int64 tensor in host memory.
// INVALID_ARGUMENT naming `what` for another dtype or rank, or for more
// than kMaxParamValues elements.
absl::StatusOr<std::vector<int64_t>> IntParamValues(const Tensor& t,
                                                    absl::string_view what);
inline constexpr int64_t kMaxParamValues = int64_t{1} << 16;

// ONNX Reshape's `shape`: an entry of 0 copies the input's dimension there
// unless `allowzero` (then it is a literal 0, and -1 may not appear with
// it). The result is what ReshapeShape (graph/shape_fns.h) takes.
absl::StatusOr<std::vector<int64_t>> OnnxReshapeDims(
    const Shape& input, std::vector<int64_t> dims, bool allowzero);

// Number of elements of Range(start, limit, delta): max(0, ceil((limit -
// start) / delta)). INVALID_ARGUMENT for delta 0, a non-finite bound or more
// than Tensor's element limit.
absl::StatusOr<int64_t> RangeLength(double start, double limit, double delta);

// The dims of the ONNX Shape op's output for an input of rank `rank`:
// start and end clamped to [0, rank] (negative ones count from the end).
void ShapeSliceBounds(int rank, int64_t start, int64_t end, int64_t* begin_out,
                      int64_t* end_out);

}  // namespace sluice

#endif  // SLUICE_GRAPH_RUNTIME_PARAMS_H_
