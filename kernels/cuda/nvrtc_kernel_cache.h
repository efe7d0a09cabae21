// CompileCudaKernel: a CUDA C++ kernel compiled from source at run time
// with NVRTC (device/cuda/nvrtc_library.h) to a CUBIN for one GPU
// architecture, loaded with the runtime's context-independent library API
// (cudaLibraryLoadData) and cached for the process per (source, kernel
// name, options, architecture), so every plan and session that runs the
// same CudaKernel node compiles it once. The CudaKernel op's GPU kernel
// (cuda_kernel_op.cc) uses it.
//
//   ASSIGN_OR_RETURN(const CompiledCudaKernel* k,
//                    CompileCudaKernel(source, "saxpy", {"-use_fast_math"}, 90));
//   RETURN_IF_ERROR(cuda::CudaStatus(cudaLaunchKernel(
//       reinterpret_cast<const void*>(k->kernel), grid, block, args, 0, s), "..."));
//
// Thread-safe. Compiled kernels are never unloaded: they live until the
// process exits (the cache grows with every distinct source compiled).
#ifndef SLUICE_KERNELS_CUDA_NVRTC_KERNEL_CACHE_H_
#define SLUICE_KERNELS_CUDA_NVRTC_KERNEL_CACHE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuda_runtime_api.h"

namespace sluice::cuda {

struct CompiledCudaKernel {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;  // launch with cudaLaunchKernel
  std::string lowered_name;       // the (mangled) symbol NVRTC gave
  std::string log;                // NVRTC's warnings, if any
};

// What NVRTC made of a source: needs no GPU.
struct NvrtcOutput {
  std::string cubin;         // the ELF image for one architecture
  std::string lowered_name;  // the kernel's symbol in it
  std::string log;           // warnings, if any
};

// The CUBIN architecture option sluice passes NVRTC for compute
// capability `sm` (90 -> "--gpu-architecture=sm_90").
std::string NvrtcArchOption(int sm);

// Compiles `kernel_name` (a name expression: an extern "C" name, or
// "scale<float>" for a template, which NVRTC instantiates and mangles)
// from `source` for compute capability `sm` (major * 10 + minor), or
// returns the cached kernel. INVALID_ARGUMENT with NVRTC's log when the
// source does not compile or has no such kernel; FAILED_PRECONDITION when
// NVRTC cannot be loaded (naming the files tried); INTERNAL when CUDA
// cannot load the result. The pointer lives for the whole process.
absl::StatusOr<const CompiledCudaKernel*> CompileCudaKernel(
    const std::string& source, const std::string& kernel_name,
    const std::vector<std::string>& options, int sm);

// The compilation step of CompileCudaKernel alone, uncached: the same
// errors but CUDA's. Runs where there is no GPU (NVRTC is a library).
absl::StatusOr<NvrtcOutput> CompileToCubin(
    const std::string& source, const std::string& kernel_name,
    const std::vector<std::string>& options, int sm);

// The distinct compute capabilities (major * 10 + minor) of the GPUs this
// process sees, from 7.5 on: sluice gives older GPUs no work (discovery
// marks them unusable), and NVRTC 13 cannot compile for them. What the
// NVRTC-compiled kernels compile for when they are made.
absl::StatusOr<std::vector<int>> VisibleCudaArchitectures();

// How many compilations the cache has done (not hits): for tests.
int CompiledCudaKernelCount();

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_NVRTC_KERNEL_CACHE_H_
