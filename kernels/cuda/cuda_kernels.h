// The CUDA kernel families. Each Register* function adds one family's GPU
// KernelDefs (constrained to the dtypes its launchers implement);
// RegisterCudaKernels (kernel_registry.h) calls them all. CUDA builds only.
//
//   KernelRegistry r;
//   cuda::RegisterMatMulKernels(&r);
//
// Call once per registry, before it is shared between threads.
#ifndef SLUICE_KERNELS_CUDA_CUDA_KERNELS_H_
#define SLUICE_KERNELS_CUDA_CUDA_KERNELS_H_

#include "kernels/kernel_registry.h"

namespace sluice::cuda {

void RegisterElementwiseKernels(KernelRegistry* registry);  // elementwise_kernels.cc
void RegisterMatMulKernels(KernelRegistry* registry);       // matmul.cc
void RegisterFusedMatMulKernels(KernelRegistry* registry);  // fused_matmul.cc
void RegisterNnKernels(KernelRegistry* registry);           // nn_kernels.cc
void RegisterArrayKernels(KernelRegistry* registry);        // array_kernels.cc
void RegisterIndexKernels(KernelRegistry* registry);        // index_kernels.cc
void RegisterScatterGatherKernels(KernelRegistry* registry);  // scatter_gather_kernels.cc
void RegisterDynamicKernels(KernelRegistry* registry);      // dynamic_kernels.cc
void RegisterRecurrentKernels(KernelRegistry* registry);    // recurrent_kernels.cc
void RegisterLinearAttentionKernels(KernelRegistry* registry);  // linear_attention_kernels.cc
void RegisterControlFlowKernels(KernelRegistry* registry);  // control_flow_kernels.cc
void RegisterSelectKernels(KernelRegistry* registry);       // select_kernels.cc
void RegisterSignalKernels(KernelRegistry* registry);       // signal_kernels.cc
void RegisterEinsumKernels(KernelRegistry* registry);       // einsum_kernels.cc
void RegisterVisionKernels(KernelRegistry* registry);       // vision_kernels.cc
void RegisterConvNdKernels(KernelRegistry* registry);       // conv_nd_kernels.cc
void RegisterBitwiseKernels(KernelRegistry* registry);      // bitwise_kernels.cc
void RegisterCudaKernelOpKernels(KernelRegistry* registry);  // cuda_kernel_op.cc

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CUDA_KERNELS_H_
