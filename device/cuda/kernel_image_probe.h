// Whether this build of sluice has code the current GPU can run: the CUDA
// architectures it was compiled for (CMAKE_CUDA_ARCHITECTURES) hold machine
// code for the GPU's compute capability, or PTX its driver can compile.
// Discovery asks once per GPU, so that a GPU the build does not cover is
// reported as unusable, with the reason, instead of failing its first launch.
//
//   cudaError_t err = ProbeKernelImage();   // on the current device
//   // cudaErrorNoKernelImageForDevice, cudaErrorUnsupportedPtxVersion, ...
//
// Thread-safe; creates the current device's context if it has none.
#ifndef SLUICE_DEVICE_CUDA_KERNEL_IMAGE_PROBE_H_
#define SLUICE_DEVICE_CUDA_KERNEL_IMAGE_PROBE_H_

#include "cuda_runtime_api.h"

namespace sluice {
namespace internal {

// cudaSuccess when a kernel of this build can load on the current device.
// Built with the same architectures as every kernel in kernels/cuda.
cudaError_t ProbeKernelImage();

}  // namespace internal
}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDA_KERNEL_IMAGE_PROBE_H_
