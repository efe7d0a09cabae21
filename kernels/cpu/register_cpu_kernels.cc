// RegisterCpuKernels: every CPU kernel family, registered once.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/deform_conv.h"
#include "kernels/cpu/float32_fallback.h"
#include "kernels/cpu/fused_attention.h"
#include "kernels/cpu/fused_elementwise.h"
#include "kernels/cpu/lrn.h"
#include "kernels/cpu/tree_ensemble.h"
#include "kernels/kernel_registry.h"

namespace sluice {

void RegisterCpuKernels(KernelRegistry* registry) {
  cpu::RegisterSourceKernels(registry);
  cpu::RegisterCudaKernelFallback(registry);
  cpu::RegisterIdentityKernels(registry);
  cpu::RegisterCastKernels(registry);
  cpu::RegisterUnaryKernels(registry);
  cpu::RegisterMathKernels(registry);
  cpu::RegisterBinaryKernels(registry);
  cpu::RegisterFusedElementwiseKernels(registry);
  cpu::RegisterWhereKernels(registry);
  cpu::RegisterMatMulKernels(registry);
  cpu::RegisterFusedMatMulKernels(registry);
  cpu::RegisterSoftmaxKernels(registry);
  cpu::RegisterLayerNormKernels(registry);
  cpu::RegisterRMSNormKernels(registry);
  cpu::RegisterFusedAttentionKernels(registry);
  cpu::RegisterReduceKernels(registry);
  cpu::RegisterArgReduceKernels(registry);
  cpu::RegisterTriluCumSumKernels(registry);
  cpu::RegisterScatterGatherKernels(registry);
  cpu::RegisterShapeKernels(registry);
  cpu::RegisterConcatSplitKernels(registry);
  cpu::RegisterSliceKernels(registry);
  cpu::RegisterGatherKernels(registry);
  cpu::RegisterConvKernels(registry);
  cpu::RegisterPoolKernels(registry);
  cpu::RegisterControlFlowKernels(registry);
  cpu::RegisterResizeKernels(registry);
  cpu::RegisterPadKernels(registry);
  cpu::RegisterGridSampleKernels(registry);
  cpu::RegisterConvNdKernels(registry);
  cpu::RegisterPoolNdKernels(registry);
  cpu::RegisterVisionMiscKernels(registry);
  cpu::RegisterLinearAttentionKernels(registry);
  cpu::RegisterTensorScatterKernels(registry);
  cpu::RegisterSignalKernels(registry);
  cpu::RegisterNmsKernels(registry);
  cpu::RegisterRecurrentKernels(registry);
  cpu::RegisterRangeFillTileKernels(registry);
  cpu::RegisterBitwiseKernels(registry);
  cpu::RegisterTopKUniqueKernels(registry);
  cpu::RegisterSelectKernels(registry);
  cpu::RegisterEinsumKernels(registry);
  cpu::RegisterDetKernels(registry);
  cpu::RegisterLrnKernels(registry);
  cpu::RegisterTreeEnsembleKernels(registry);
  cpu::RegisterDeformConvKernels(registry);
  // Last: copies of the float32 kernels above for float16 / bfloat16.
  cpu::RegisterFloat32Fallbacks(registry);
}

}  // namespace sluice
