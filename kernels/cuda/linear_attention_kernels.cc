// The CUDA OpKernel for LinearAttention, with the CPU kernel's checks and
// messages (kernels/linear_attention_params.h) and its float state
// (kernels/cuda/linear_attention.h).
#include <vector>

#include "core/status_macros.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/linear_attention.h"
#include "kernels/launch_kernel.h"
#include "kernels/linear_attention_params.h"

namespace sluice::cuda {
namespace {

class LinearAttentionKernel final
    : public LaunchKernel<LinearAttentionAttrs, ParseLinearAttentionAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(&ctx->input(i));
    ASSIGN_OR_RETURN(LinearAttentionDims d,
                     CheckLinearAttentionInputs(attrs(), inputs));
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->allocate_output(0, Shape({d.b, d.t, d.hq * d.dv}),
                                          attrs().t));
    ASSIGN_OR_RETURN(Tensor * state,
                     ctx->allocate_output(1, Shape({d.b, d.hkv, d.dk, d.dv}),
                                          attrs().t));
    LinearAttentionLaunch l;
    l.dtype = ToGpuDtype(attrs().t);
    l.b = d.b;
    l.t = d.t;
    l.hq = d.hq;
    l.hkv = d.hkv;
    l.dk = d.dk;
    l.dv = d.dv;
    l.decay_width = d.decay_width;
    l.beta_width = d.beta_width;
    l.gated = attrs().gated;
    l.delta = attrs().delta;
    l.scale = LinearAttentionScale(attrs(), d);
    if (d.b * d.hkv * d.dk * d.dv == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(Tensor scratch,
                     ctx->allocate_temp(DT_FLOAT,
                                        Shape({LinearAttentionScratchFloats(l)})));
    l.q = ctx->input(0).raw_data();
    l.k = ctx->input(1).raw_data();
    l.v = ctx->input(2).raw_data();
    l.past = ctx->input(3).raw_data();
    l.decay = ctx->input(4).raw_data();
    l.beta = ctx->input(5).raw_data();
    l.out = out->raw_data();
    l.state = state->raw_data();
    l.scratch = scratch.data<float>();
    return LaunchLinearAttention(l, gpu.stream);
  }
};

}  // namespace

void RegisterLinearAttentionKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "LinearAttention", {{"T", GpuFloatTypes()}},
              MakeKernel<LinearAttentionKernel>);
}

}  // namespace sluice::cuda
