// GridSample (ONNX opset 20, N-d): X [N, C, D1..Dr] sampled at grid
// [N, D1'..Dr', r] (the last dim lists x, y, z...: the innermost spatial dim
// first). Per output point and axis, the coordinate is denormalised,
// clamped or reflected by padding_mode, and turned into taps (input index
// or -1 for a zero, weight); the value is the sum over the product of the
// axes' taps, as in the ONNX reference.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/grid_math.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

class GridSampleKernel final
    : public LaunchKernel<GridSampleAttrs, ParseGridSampleAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;

 private:
  template <typename T>
  void Sample(const Tensor& x, const Tensor& grid, Tensor* y) const;
};

template <typename T>
void GridSampleKernel::Sample(const Tensor& x, const Tensor& grid,
                              Tensor* y) const {
  const int r = x.rank() - 2;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  std::vector<int64_t> in_strides(r, 1);
  int64_t in_plane = 1;
  for (int d = r - 1; d >= 0; --d) {
    in_strides[d] = in_plane;
    in_plane *= x.dim(2 + d);
  }
  int64_t out_plane = 1;
  for (int d = 0; d < r; ++d) out_plane *= grid.dim(1 + d);
  const T* in = x.data<T>();
  const T* g = grid.data<T>();
  T* out = y->data<T>();
  std::vector<GridAxisTaps> taps(r);
  std::vector<int> pick(r);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t p = 0; p < out_plane; ++p) {
      const T* coords = g + (n * out_plane + p) * r;
      for (int d = 0; d < r; ++d) {
        MakeGridAxisTaps(attrs().interp, attrs().padding, attrs().align_corners,
                         x.dim(2 + d), ToDouble(coords[r - 1 - d]), &taps[d]);
      }
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = in + (n * channels + c) * in_plane;
        const double acc =
            GridSampleSum(taps.data(), r, in_strides.data(), pick.data(),
                          [plane](int64_t off) { return ToDouble(plane[off]); });
        out[(n * channels + c) * out_plane + p] = FromDouble<T>(acc);
      }
    }
  }
}

absl::Status GridSampleKernel::Compute(OpKernelContext* ctx) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  const Tensor& grid = ctx->input(1);
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, GridSampleDims(x, grid));
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
  if (y->NumElements() == 0) return absl::OkStatus();
  return VisitFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    Sample<T>(x, grid, y);
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterGridSampleKernels(KernelRegistry* r) {
  r->Register(CpuKernel("GridSample", {{"T", CpuFloatTypes()}},
                        MakeKernel<GridSampleKernel>));
}

}  // namespace sluice::cpu
