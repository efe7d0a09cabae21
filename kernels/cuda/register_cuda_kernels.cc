// CUDA kernel registration. Empty until kernels/cuda/ gains kernels; the CUDA
// engineer fills this in. Compiled only in CUDA builds.
#include "kernels/kernel_registry.h"

namespace sluice {

void RegisterCudaKernels(KernelRegistry* registry) {}

}  // namespace sluice
