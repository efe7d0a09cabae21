// CUDA OpKernels for ConvND, ConvTranspose and Col2Im. ConvND and
// ConvTranspose run on cuDNN (cudnn_conv.h) for float32, float16, bfloat16
// and float64 where it can, else on sluice's direct kernels (conv_nd.h);
// Col2Im is float32, as on the CPU. The window geometry, checks and
// messages are the CPU kernels' (kernels/vision_params.h); Col2Im's
// image_shape and block_shape are host-memory inputs.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/conv_nd.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cuda {
namespace {

// The launchers' copy of a WindowNd; UNIMPLEMENTED beyond kMaxSpatialDims.
absl::StatusOr<WindowGeometry> ToGeometry(const cpu::WindowNd& w,
                                          int64_t batch) {
  const size_t n = w.in.size();
  if (n > static_cast<size_t>(kMaxSpatialDims)) {
    return absl::UnimplementedError(
        absl::StrCat(n, " spatial dims > ", kMaxSpatialDims,
                     ": the CUDA window kernels take at most ",
                     kMaxSpatialDims));
  }
  WindowGeometry g;
  g.n = static_cast<int>(n);
  g.batch = batch;
  for (size_t d = 0; d < n; ++d) {
    g.image[d] = w.in[d];
    g.positions[d] = w.out[d];
    g.kernel[d] = w.kernel[d];
    g.strides[d] = w.strides[d];
    g.dilations[d] = w.dilations[d];
    g.pad_begin[d] = w.pad_begin[d];
  }
  return g;
}

// At most kMaxSpatialDims window dims, whether or not shapes are known.
absl::Status ConvSupports(const Node& node) {
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   node.attrs().GetIntList("strides"));
  if (strides.size() > static_cast<size_t>(kMaxSpatialDims)) {
    return absl::UnimplementedError(
        absl::StrCat(strides.size(), " spatial dims > ", kMaxSpatialDims,
                     ": the CUDA window kernels take at most ",
                     kMaxSpatialDims));
  }
  return absl::OkStatus();
}

template <bool kTranspose>
class ConvKernel final : public LaunchKernel<ConvAttrs, ParseConvAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    const ConvAttrs& a = attrs();
    ASSIGN_OR_RETURN(ConvPlan plan, PlanConv(a, x, f));
    const cpu::WindowNd& w = plan.window;
    const std::vector<int64_t>& dims = plan.out_dims;
    ASSIGN_OR_RETURN(WindowGeometry g, ToGeometry(w, x.dim(0)));
    g.group = a.group;
    g.in_channels = x.dim(1);
    g.out_channels = dims[1];
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape(dims), x.dtype()));
    if (y->NumElements() == 0) return absl::OkStatus();
    if (x.NumElements() == 0) {  // no input channels or positions: zeros
      return CudaStatus(cudaMemsetAsync(y->raw_data(), 0, y->bytes(), gpu.stream),
                        "clearing the output");
    }
    CudnnConvProblem p;
    p.dtype = x.dtype();
    p.transpose = kTranspose;
    p.batch = x.dim(0);
    p.in_channels = g.in_channels;
    p.out_channels = g.out_channels;
    p.group = g.group;
    p.image = w.in;
    p.positions = w.out;
    p.kernel = w.kernel;
    p.strides = w.strides;
    p.dilations = w.dilations;
    p.pad_begin = w.pad_begin;
    ASSIGN_OR_RETURN(bool ran, RunCudnnConv(ctx, gpu.device, p, x.raw_data(),
                                            f.raw_data(), y->raw_data(),
                                            /*why_not=*/nullptr));
    if (ran) return absl::OkStatus();
    if constexpr (kTranspose) {
      return LaunchConvTransposeNd(ToGpuDtype(x.dtype()), g, x.raw_data(),
                                   f.raw_data(), y->raw_data(), gpu.stream);
    } else {
      return LaunchConvNd(ToGpuDtype(x.dtype()), g, x.raw_data(), f.raw_data(),
                          y->raw_data(), gpu.stream);
    }
  }
};

class Col2ImKernel final : public LaunchKernel<Col2ImAttrs, ParseCol2ImAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2}));
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> dims;
    ASSIGN_OR_RETURN(cpu::WindowNd w, Col2ImWindow(attrs(), x, ctx->input(1),
                                                   ctx->input(2), &dims));
    ASSIGN_OR_RETURN(WindowGeometry g, ToGeometry(w, x.dim(0)));
    g.out_channels = w.channels;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    if (y->NumElements() == 0) return absl::OkStatus();
    return LaunchCol2ImNd(g, x.data<float>(), y->data<float>(), gpu.stream);
  }
};

}  // namespace

void RegisterConvNdKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "ConvND", {{"T", GpuFloatTypes()}},
              MakeKernel<ConvKernel<false>>, {}, ConvSupports);
  RegisterGpu(registry, "ConvTranspose", {{"T", GpuFloatTypes()}},
              MakeKernel<ConvKernel<true>>, {}, ConvSupports);
  RegisterGpu(registry, "Col2Im", {{"T", {DT_FLOAT}}},
              MakeKernel<Col2ImKernel>, /*host_memory_inputs=*/{1, 2});
}

}  // namespace sluice::cuda
