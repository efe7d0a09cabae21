// RegisterCudaKernels: every CUDA kernel family, registered once. Compiled
// only in CUDA builds.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/fused_attention_kernels.h"
#include "kernels/cuda/fused_elementwise.h"
#include "kernels/kernel_registry.h"

namespace sluice {

void RegisterCudaKernels(KernelRegistry* registry) {
  cuda::RegisterElementwiseKernels(registry);
  cuda::RegisterMatMulKernels(registry);
  cuda::RegisterFusedMatMulKernels(registry);
  cuda::RegisterNnKernels(registry);
  cuda::RegisterArrayKernels(registry);
  cuda::RegisterIndexKernels(registry);
  cuda::RegisterScatterGatherKernels(registry);
  cuda::RegisterDynamicKernels(registry);
  cuda::RegisterRecurrentKernels(registry);
  cuda::RegisterLinearAttentionKernels(registry);
  cuda::RegisterFusedAttentionKernels(registry);
  cuda::RegisterControlFlowKernels(registry);
  cuda::RegisterSelectKernels(registry);
  cuda::RegisterSignalKernels(registry);
  cuda::RegisterEinsumKernels(registry);
  cuda::RegisterVisionKernels(registry);
  cuda::RegisterConvNdKernels(registry);
  cuda::RegisterBitwiseKernels(registry);
  cuda::RegisterCudaKernelOpKernels(registry);
  cuda::RegisterFusedElementwiseKernels(registry);
}

}  // namespace sluice
