// The CUDA OpKernel for FusedAttention, with the CPU kernel's checks and
// messages (kernels/fused_attention_params.h) and the flash-attention
// launcher (kernels/cuda/fused_attention.h).
#include <vector>

#include "core/status_macros.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/fused_attention.h"
#include "kernels/cuda/fused_attention_kernels.h"
#include "kernels/fused_attention_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cuda {
namespace {

class FusedAttentionKernel final
    : public LaunchKernel<FusedAttentionAttrs, ParseFusedAttentionAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    ASSIGN_OR_RETURN(FusedAttentionDims d, PlanFusedAttention(attrs(), *ctx));
    const Tensor& q = ctx->input(0);
    const Tensor& k = ctx->input(1);
    const Tensor& v = ctx->input(2);
    const Tensor* mask = attrs().has_mask ? &ctx->input(3) : nullptr;
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, d.output_shape(), attrs().t));
    FusedAttentionLaunch l;
    l.dtype = ToGpuDtype(attrs().t);
    // Column offsets (BSHD) move the pointers; strides do the rest.
    const int64_t elem = DataTypeSize(attrs().t);
    l.q = static_cast<const char*>(q.raw_data()) + d.q.offset * elem;
    l.k = static_cast<const char*>(k.raw_data()) + d.k.offset * elem;
    l.v = static_cast<const char*>(v.raw_data()) + d.v.offset * elem;
    l.mask = mask ? mask->raw_data() : nullptr;
    l.out = y->raw_data();
    l.b = d.b;
    l.h = d.h;
    l.sq = d.sq;
    l.sk = d.sk;
    l.d = d.d;
    l.dv = d.dv;
    for (int i = 0; i < 3; ++i) {
      l.q_stride[i] = d.q.stride[i];
      l.k_stride[i] = d.k.stride[i];
      l.v_stride[i] = d.v.stride[i];
      l.out_stride[i] = d.out.stride[i];
    }
    for (int i = 0; i < 4; ++i) l.mask_stride[i] = d.mask_stride[i];
    l.scale = attrs().scale;
    l.causal = attrs().causal;
    return LaunchFusedAttention(l, gpu.stream);
  }
};

}  // namespace

void RegisterFusedAttentionKernels(KernelRegistry* registry) {
  std::vector<DataType> types;
  for (DataType t : GpuFloatTypes()) {
    if (HasFusedAttentionKernel(ToGpuDtype(t))) types.push_back(t);
  }
  RegisterGpu(registry, "FusedAttention", {{"T", types}},
              MakeKernel<FusedAttentionKernel>);
}

}  // namespace sluice::cuda
