// The CPU kernel of FusedAttention (graph/ops/nn_ops.cc; the fused op
// optimizer/attention_fusion.cc makes): the exact reference, per (batch,
// head, query) row the scores, a max-subtracted softmax and the weighted sum
// of V in float32 (float64 for float64 inputs).
//
//   KernelRegistry registry;
//   cpu::RegisterFusedAttentionKernels(&registry);  // RegisterCpuKernels
//
// Call once per registry, before it is shared between threads.
#ifndef SLUICE_KERNELS_CPU_FUSED_ATTENTION_H_
#define SLUICE_KERNELS_CPU_FUSED_ATTENTION_H_

#include "kernels/kernel_registry.h"

namespace sluice::cpu {

void RegisterFusedAttentionKernels(KernelRegistry* registry);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_FUSED_ATTENTION_H_
