// The CPU kernel of LRN (local response normalisation across channels,
// ONNX's LRN; setup in kernels/normalization_params.h): each output plane
// (n, c) sums the squares of the planes in c's window, then scales x by
// (bias + alpha / size * sum)^-beta; 16-bit floats compute in float. LRN
// has no GPU kernel, so the placer keeps it on the CPU.
//
//   cpu::RegisterLrnKernels(&registry);  // RegisterCpuKernels
//
// Stateless registration; the kernel is thread-safe (Compute keeps its
// scratch per call).
#ifndef SLUICE_KERNELS_CPU_LRN_H_
#define SLUICE_KERNELS_CPU_LRN_H_

#include "kernels/kernel_registry.h"

namespace sluice::cpu {

void RegisterLrnKernels(KernelRegistry* registry);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_LRN_H_
