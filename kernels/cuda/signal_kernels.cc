// CUDA OpKernels for the signal ops: Window, DFT, STFT and MelWeightMatrix.
// Their scalar parameters (size, dft_length and axis, frame_step and
// frame_length, the mel inputs) are host-memory inputs, checked as on the CPU (kernels/host_params.h,
// kernels/signal_params.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/signal.h"
#include "kernels/launch_kernel.h"
#include "kernels/signal_params.h"

namespace sluice::cuda {
namespace {

WindowKind ToWindowKind(WindowFunction f) {
  static_assert(static_cast<int>(WindowKind::kHann) ==
                    static_cast<int>(WindowFunction::kHann) &&
                static_cast<int>(WindowKind::kHamming) ==
                    static_cast<int>(WindowFunction::kHamming) &&
                static_cast<int>(WindowKind::kBlackman) ==
                    static_cast<int>(WindowFunction::kBlackman));
  return static_cast<WindowKind>(static_cast<int>(f));
}

class WindowKernel final : public LaunchKernel<WindowAttrs, ParseWindowAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{0}));
    ASSIGN_OR_RETURN(int64_t size, WindowSize(ctx->input(0)));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape({size}), attrs().t));
    return LaunchWindow(ToGpuDtype(attrs().t), ToWindowKind(attrs().function),
                        y->raw_data(), size, attrs().periodic, gpu.stream);
  }
};

class DftKernel final : public LaunchKernel<DftAttrs, ParseDftAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(DftPlan plan,
                     PlanDft(x.shape(), ctx->input(1), ctx->input(2),
                             attrs().inverse, attrs().onesided));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, plan.out_shape, x.dtype()));
    DftGeometry g;
    g.outer = plan.outer;
    g.len = plan.len;
    g.inner = plan.inner;
    g.parts = plan.parts;
    g.n = plan.n;
    g.out_len = plan.out_len;
    g.out_parts = plan.out_parts;
    g.take = plan.take;
    g.irfft = plan.irfft;
    g.sign = attrs().inverse ? 1.0 : -1.0;
    g.scale = attrs().inverse ? 1.0 / static_cast<double>(plan.n) : 1.0;
    return LaunchDft(ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(), g,
                     gpu.stream);
  }
};

class StftKernel final : public LaunchKernel<StftAttrs, ParseStftAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 3}));
    const Tensor& x = ctx->input(0);
    const Tensor& window = ctx->input(2);
    ASSIGN_OR_RETURN(StftPlan plan,
                     PlanStft(x.shape(), ctx->input(1), ctx->input(3),
                              window.NumElements(), attrs().onesided));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, plan.out_shape, x.dtype()));
    if (window.dtype() != x.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "window has dtype ", DataTypeName(window.dtype()), ", expected ",
          DataTypeName(x.dtype())));
    }
    StftGeometry g;
    g.batch = plan.batch;
    g.len = plan.len;
    g.parts = plan.parts;
    g.step = plan.step;
    g.frame_length = plan.frame_length;
    g.frames = plan.frames;
    g.bins = plan.bins;
    return LaunchStft(ToGpuDtype(x.dtype()), x.raw_data(),
                      window.NumElements() > 0 ? window.raw_data() : nullptr,
                      y->raw_data(), g, gpu.stream);
  }
};

// Every input a host-memory scalar: the edges are computed on the host as
// on the CPU, then written kMelChunk filters per launch.
class MelWeightMatrixKernel final
    : public LaunchKernel<MelWeightMatrixAttrs, ParseMelWeightMatrixAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{0, 1, 2, 3, 4}));
    ASSIGN_OR_RETURN(MelPlan plan,
                     PlanMelWeightMatrix(ctx->input(0), ctx->input(1),
                                         ctx->input(2), ctx->input(3),
                                         ctx->input(4)));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape({plan.rows, plan.mels}),
                                          attrs().t));
    for (int64_t first = 0; first < plan.mels; first += kMelChunk) {
      MelEdges e;
      e.first = first;
      e.count = static_cast<int>(std::min<int64_t>(kMelChunk, plan.mels - first));
      for (int i = 0; i < e.count + 2; ++i) e.edges[i] = plan.edges[first + i];
      RETURN_IF_ERROR(LaunchMelWeights(ToGpuDtype(attrs().t), y->raw_data(),
                                       plan.rows, plan.mels, e, gpu.stream));
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterSignalKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Window",
              {{"T", GpuTypesWhere(HasWindowKernel, GpuFloatTypes())},
               {"Tsize", {DT_INT32, DT_INT64}}},
              MakeKernel<WindowKernel>, /*host_memory_inputs=*/{0});
  RegisterGpu(registry, "MelWeightMatrix",
              {{"T", GpuTypesWhere(HasMelKernel, GpuIntFloatTypes())}},
              MakeKernel<MelWeightMatrixKernel>,
              /*host_memory_inputs=*/{0, 1, 2, 3, 4});
  RegisterGpu(registry, "DFT", {{"T", GpuFloatTypes()}},
              MakeKernel<DftKernel>, /*host_memory_inputs=*/{1, 2});
  RegisterGpu(registry, "STFT", {{"T", GpuFloatTypes()}},
              MakeKernel<StftKernel>, /*host_memory_inputs=*/{1, 3});
}

}  // namespace sluice::cuda
