// The CUDA OpKernel of FusedAttention (kernels/cuda/fused_attention.h has
// its launcher), registered for float32, float16 and bfloat16.
//
//   KernelRegistry registry;
//   cuda::RegisterFusedAttentionKernels(&registry);  // RegisterCudaKernels
//
// Call once per registry, before it is shared between threads. CUDA builds
// only.
#ifndef SLUICE_KERNELS_CUDA_FUSED_ATTENTION_KERNELS_H_
#define SLUICE_KERNELS_CUDA_FUSED_ATTENTION_KERNELS_H_

#include "kernels/kernel_registry.h"

namespace sluice::cuda {

void RegisterFusedAttentionKernels(KernelRegistry* registry);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_FUSED_ATTENTION_KERNELS_H_
