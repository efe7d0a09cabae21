// Float32 fallbacks: CPU kernels for float16 and bfloat16 nodes of ops whose
// CPU kernels compute in float32 only (convolutions, pooling, reductions).
// The fallback converts the reduced inputs to float32, runs the float32
// kernel and rounds its outputs to the node's dtype, so a graph converted
// by RuntimeConfig.precision (optimizer/reduced_precision.cc) runs on the
// CPU too, at float32 cost plus the conversions, with the result a float16
// kernel accumulating in float32 would give.
//
//   RegisterCpuKernels(r);            // the float32 kernels first
//   cpu::RegisterFloat32Fallbacks(r); // then these, copied from them
//
// Registration is not thread-safe (it happens once, at start-up); the
// kernels are as thread-safe as the float32 ones they wrap.
#ifndef SLUICE_KERNELS_CPU_FLOAT32_FALLBACK_H_
#define SLUICE_KERNELS_CPU_FLOAT32_FALLBACK_H_

#include "kernels/kernel_registry.h"

namespace sluice::cpu {

// For each op of the list in float32_fallback.cc whose CPU kernel takes
// float32 for "T" but not float16 / bfloat16, registers a CPU kernel for
// those two that wraps it.
void RegisterFloat32Fallbacks(KernelRegistry* registry);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_FLOAT32_FALLBACK_H_
