// The CPU kernel families. Each Register* function adds one family's kernels
// (one KernelDef per op, constrained to the dtypes that family implements);
// RegisterCpuKernels (kernel_registry.h) calls them all.
//
//   KernelRegistry r;
//   cpu::RegisterMatMulKernels(&r);
//
// Call once per registry, before it is shared between threads.
#ifndef SLUICE_KERNELS_CPU_CPU_KERNELS_H_
#define SLUICE_KERNELS_CPU_CPU_KERNELS_H_

#include "kernels/kernel_registry.h"

namespace sluice::cpu {

void RegisterSourceKernels(KernelRegistry* registry);        // sources.cc
void RegisterCudaKernelFallback(KernelRegistry* registry);  // cuda_kernel_cpu.cc
void RegisterIdentityKernels(KernelRegistry* registry);      // identity.cc
void RegisterCastKernels(KernelRegistry* registry);          // cast.cc
void RegisterUnaryKernels(KernelRegistry* registry);         // elementwise_unary.cc
void RegisterMathKernels(KernelRegistry* registry);          // elementwise_math.cc
void RegisterBinaryKernels(KernelRegistry* registry);        // elementwise_binary.cc
void RegisterWhereKernels(KernelRegistry* registry);         // where.cc
void RegisterMatMulKernels(KernelRegistry* registry);        // matmul.cc
void RegisterFusedMatMulKernels(KernelRegistry* registry);   // fused_matmul.cc
void RegisterSoftmaxKernels(KernelRegistry* registry);       // softmax.cc
void RegisterLayerNormKernels(KernelRegistry* registry);     // layer_norm.cc
void RegisterRMSNormKernels(KernelRegistry* registry);       // rms_norm.cc
void RegisterReduceKernels(KernelRegistry* registry);        // reduce.cc
void RegisterArgReduceKernels(KernelRegistry* registry);     // arg_reduce.cc
void RegisterTriluCumSumKernels(KernelRegistry* registry);   // trilu_cumsum.cc
void RegisterScatterGatherKernels(KernelRegistry* registry);  // scatter_gather.cc
void RegisterShapeKernels(KernelRegistry* registry);         // shape_ops.cc
void RegisterConcatSplitKernels(KernelRegistry* registry);   // concat_split.cc
void RegisterSliceKernels(KernelRegistry* registry);         // slice.cc
void RegisterGatherKernels(KernelRegistry* registry);        // gather.cc
void RegisterConvKernels(KernelRegistry* registry);          // conv.cc
void RegisterPoolKernels(KernelRegistry* registry);          // pool.cc
void RegisterControlFlowKernels(KernelRegistry* registry);  // control_flow.cc
void RegisterResizeKernels(KernelRegistry* registry);        // resize.cc
void RegisterPadKernels(KernelRegistry* registry);           // pad.cc
void RegisterGridSampleKernels(KernelRegistry* registry);    // grid_sample.cc
void RegisterConvNdKernels(KernelRegistry* registry);        // conv_nd.cc
void RegisterPoolNdKernels(KernelRegistry* registry);        // pool_nd.cc
void RegisterVisionMiscKernels(KernelRegistry* registry);    // vision_misc.cc
void RegisterLinearAttentionKernels(KernelRegistry* registry);  // linear_attention.cc
void RegisterTensorScatterKernels(KernelRegistry* registry);  // tensor_scatter.cc
void RegisterSignalKernels(KernelRegistry* registry);        // signal.cc
void RegisterNmsKernels(KernelRegistry* registry);           // nms.cc
void RegisterRecurrentKernels(KernelRegistry* registry);     // recurrent.cc
void RegisterRangeFillTileKernels(KernelRegistry* registry);  // range_fill_tile.cc
void RegisterBitwiseKernels(KernelRegistry* registry);       // bitwise.cc
void RegisterTopKUniqueKernels(KernelRegistry* registry);    // topk_unique.cc
void RegisterSelectKernels(KernelRegistry* registry);        // select.cc
void RegisterEinsumKernels(KernelRegistry* registry);        // einsum.cc
void RegisterDetKernels(KernelRegistry* registry);           // det.cc

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_CPU_KERNELS_H_
