// ProbeKernelImage: loading an empty kernel's attributes makes the CUDA
// runtime pick this build's image for the current GPU (or JIT its PTX), so
// the answer is the one every kernel in kernels/cuda would get.
#include "device/cuda/kernel_image_probe.h"

namespace sluice {
namespace internal {

static __global__ void EmptyKernel() {}

cudaError_t ProbeKernelImage() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, EmptyKernel);
}

}  // namespace internal
}  // namespace sluice
