// The CUDA half of device discovery (device/discovery.h): lists the GPUs the
// CUDA runtime shows, which already honours CUDA_VISIBLE_DEVICES, with their
// properties and peer access. Every CUDA error becomes a line of text in the
// inventory; nothing here aborts.
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cublas_api.h"
#include "device/cuda/kernel_image_probe.h"
#include "device/discovery.h"

namespace sluice {
namespace internal {
namespace {

std::string ErrorText(cudaError_t err) {
  return absl::StrCat(cudaGetErrorString(err), " (", cudaGetErrorName(err),
                      ")");
}

// "13.0" from 13000.
std::string VersionText(int version) {
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

// One line saying why cudaGetDeviceCount failed.
std::string NoGpuReason(cudaError_t err) {
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);  // 0 when no driver is installed
  cudaRuntimeGetVersion(&runtime);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  switch (err) {
    case cudaErrorInsufficientDriver:
      if (driver == 0) {
        return "CUDA driver not found (cudaErrorInsufficientDriver)";
      }
      return absl::StrCat("CUDA driver ", VersionText(driver),
                          " is older than this build's CUDA runtime ",
                          VersionText(runtime),
                          " (cudaErrorInsufficientDriver)");
    case cudaErrorNoDevice:
      if (visible != nullptr) {
        return absl::StrCat("no CUDA GPU visible with CUDA_VISIBLE_DEVICES='",
                            visible, "' (cudaErrorNoDevice)");
      }
      return "no CUDA GPU detected (cudaErrorNoDevice)";
    case cudaErrorStubLibrary:
      return "only the CUDA stub driver library is installed "
             "(cudaErrorStubLibrary)";
    default:
      return absl::StrCat("CUDA could not list GPUs: ", ErrorText(err));
  }
}

GpuInfo Describe(int index) {
  GpuInfo gpu;
  gpu.index = index;
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    gpu.name = "unknown GPU";
    gpu.usable = false;
    gpu.unusable_reason =
        absl::StrCat("cannot read its properties: ", ErrorText(err));
    cudaGetLastError();  // clear a sticky non-fatal error
    return gpu;
  }
  gpu.name = prop.name;
  gpu.cc_major = prop.major;
  gpu.cc_minor = prop.minor;
  gpu.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
  gpu.sm_count = prop.multiProcessorCount;
  char bus_id[32] = {0};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), index) == cudaSuccess) {
    gpu.pci_bus_id = bus_id;
  } else {
    cudaGetLastError();
  }
  gpu.usable = IsSupportedComputeCapability(prop.major, prop.minor,
                                            &gpu.unusable_reason);
  // Free memory needs a context on the device.
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  err = cudaSetDevice(index);
  if (err == cudaSuccess) err = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (err == cudaSuccess) {
    gpu.free_memory = static_cast<int64_t>(free_bytes);
    // A GPU this build has no code for is named here, not at its first launch.
    const cudaError_t probe = gpu.usable ? ProbeKernelImage() : cudaSuccess;
    if (probe != cudaSuccess) {
      cudaGetLastError();
      gpu.usable = false;
      gpu.unusable_reason = NotCoveredByBuildReason(
          gpu, probe == cudaErrorUnsupportedPtxVersion, cudaGetErrorName(probe));
    }
  } else {
    cudaGetLastError();
    if (gpu.usable) {
      gpu.usable = false;
      gpu.unusable_reason =
          absl::StrCat("cannot create a context on it: ", ErrorText(err));
    }
  }
  return gpu;
}

}  // namespace

void DiscoverCudaGpus(DeviceInventory* inv) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    inv->no_gpu_reason = NoGpuReason(err);
    cudaGetLastError();
    return;
  }
  if (count == 0) {
    inv->no_gpu_reason = "no CUDA GPU detected";
    return;
  }
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  inv->notes.push_back(absl::StrCat("CUDA driver ", VersionText(driver),
                                    ", runtime ", VersionText(runtime)));
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    inv->notes.push_back(absl::StrCat("CUDA_VISIBLE_DEVICES='", visible,
                                      "': indices below are after it"));
  }
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  for (int i = 0; i < count; ++i) inv->gpus.push_back(Describe(i));
  if (restore) cudaSetDevice(previous);
  // Every GPU kernel setup needs cuBLAS (GpuDevice loads it first thing): a
  // GPU without it is listed, not used, and the session runs on the CPU.
  // Loaded once per process, here only when some GPU is usable.
  bool any_usable = false;
  for (const GpuInfo& gpu : inv->gpus) any_usable = any_usable || gpu.usable;
  if (any_usable) {
    if (absl::StatusOr<const CublasApi*> cublas = LoadCublas(); !cublas.ok()) {
      for (GpuInfo& gpu : inv->gpus) {
        if (!gpu.usable) continue;
        gpu.usable = false;
        gpu.unusable_reason = std::string(cublas.status().message());
      }
    }
  }

  inv->peer_access.assign(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) {
        inv->peer_access[i][j] = true;
        continue;
      }
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess) {
        inv->peer_access[i][j] = can != 0;
      } else {
        cudaGetLastError();
      }
    }
  }
}

}  // namespace internal
}  // namespace sluice
