#include "kernels/cuda/shape_copy.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/copy.h"

namespace sluice::cuda {

absl::Status SliceInto(OpKernelContext* ctx, const GpuContext& gpu,
                       const Tensor& x, const std::vector<int64_t>& begin,
                       const std::vector<int64_t>& end,
                       std::vector<int64_t> axes, std::vector<int64_t> steps) {
  ASSIGN_OR_RETURN(Shape out, SliceShape(x.shape(), begin, end, axes, steps));
  if (axes.empty()) {
    for (size_t i = 0; i < begin.size(); ++i) {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (steps.empty()) steps.assign(begin.size(), 1);
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  std::vector<int64_t> src = in_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axes[i], x.rank()));
    ASSIGN_OR_RETURN(SliceDim d,
                     NormalizeSlice(x.dim(axis), begin[i], end[i], steps[i]));
    offset += d.start * in_strides[axis];
    src[axis] = d.step * in_strides[axis];
  }
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out, x.dtype()));
  if (y->NumElements() == 0) return absl::OkStatus();
  std::vector<int64_t> dims(out.dims().begin(), out.dims().end());
  ASSIGN_OR_RETURN(IndexMap map, CopyMap(dims, src, RowMajorStrides(out)));
  return LaunchStridedCopy(static_cast<int>(DataTypeSize(x.dtype())),
                           x.raw_data(), offset, y->raw_data(), 0, map,
                           gpu.stream);
}

absl::Status TileInto(OpKernelContext* ctx, const GpuContext& gpu,
                      const Tensor& x, const std::vector<int64_t>& repeats) {
  const int r = x.rank();
  if (static_cast<int>(repeats.size()) != r) {
    return absl::InvalidArgumentError(absl::StrCat(
        repeats.size(), " repeats for an input of rank ", r));
  }
  // The output as [repeats[0], dim[0], repeats[1], dim[1], ...]: the input
  // strides on the dim axes, 0 on the repeat axes.
  const std::vector<int64_t> own = RowMajorStrides(x.shape());
  std::vector<int64_t> dims, src, out_dims;
  for (int d = 0; d < r; ++d) {
    if (repeats[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("repeat ", repeats[d], " is negative"));
    }
    dims.push_back(repeats[d]);
    dims.push_back(x.dim(d));
    src.push_back(0);
    src.push_back(own[d]);
    out_dims.push_back(repeats[d] * x.dim(d));
  }
  Shape out(out_dims);
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out, x.dtype()));
  if (y->NumElements() == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(IndexMap map,
                   CopyMap(dims, src, RowMajorStrides(Shape(dims))));
  return LaunchStridedCopy(static_cast<int>(DataTypeSize(x.dtype())),
                           x.raw_data(), 0, y->raw_data(), 0, map, gpu.stream);
}

}  // namespace sluice::cuda
