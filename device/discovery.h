// Device discovery: what this machine has. The CPU (model, cores, memory)
// from /proc and the C++ runtime, and every CUDA GPU the CUDA runtime shows
// (after CUDA_VISIBLE_DEVICES) with its properties and the peer-access
// matrix. Discovery never fails: when no GPU can be listed, no_gpu_reason
// says why in one line. The inventory and DiscoverDevices are public
// (sluice/devices.h); this header adds the parts tests and tools use.
//
//   DeviceInventory inv = DiscoverDevices();
//   std::cout << inv.cpu.model_name << ", " << inv.cpu.cores << " cores\n";
//   for (const GpuInfo& g : inv.gpus) { ... g.name, g.total_memory ... }
//   if (inv.gpus.empty()) std::cout << "no GPU listed: " << inv.no_gpu_reason;
//
// Thread-safe. Reading a GPU's free memory creates the CUDA primary context
// on that GPU (as any later use of it would); the current device is restored.
#ifndef SLUICE_DEVICE_DISCOVERY_H_
#define SLUICE_DEVICE_DISCOVERY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/devices.h"  // IWYU pragma: export

namespace sluice {

// GPUs below this compute capability are listed but not usable.
inline constexpr int kMinComputeCapabilityMajor = 7;
inline constexpr int kMinComputeCapabilityMinor = 0;

// CpuInfo, GpuInfo, DeviceInventory and DiscoverDevices: sluice/devices.h.

// The CPU half, from the text of /proc/cpuinfo and /proc/meminfo (exposed for
// tests). `hardware_threads` <= 0 means unknown: the cpuinfo processor count
// is used instead (at least 1).
CpuInfo ParseCpuInfo(std::string_view cpuinfo, std::string_view meminfo,
                     int hardware_threads);
CpuInfo DiscoverCpu();

// Whether a GPU of this compute capability can run sluice's kernels; when
// not, `reason` says why.
bool IsSupportedComputeCapability(int major, int minor, std::string* reason);

// The CUDA architectures this build has code for ("7.5, 8.0, 8.6, 8.9, 9.0
// and PTX 9.0" for the default build); "none" in a build without CUDA.
std::string CudaBuildArchitectures();
// The same from a CMAKE_CUDA_ARCHITECTURES list with commas for semicolons
// ("75-real,80-real,90"); special values ("all", "native") as they are.
std::string DescribeCudaArchitectures(std::string_view cmake_list);
// Why `gpu` is not usable when this build has no code it can run:
// "GPU 0 (NVIDIA X, compute capability 6.1) is not covered by this build of
// sluice (built for 7.5, ...); rebuild with -DCMAKE_CUDA_ARCHITECTURES=61".
// `driver_too_old` is set when only PTX exists for the GPU and its driver is
// older than the CUDA toolkit that compiled it; `error` names the CUDA error.
std::string NotCoveredByBuildReason(const GpuInfo& gpu, bool driver_too_old,
                                    std::string_view error);

namespace internal {
// Fills inv->gpus, inv->peer_access and inv->no_gpu_reason through the CUDA
// runtime. Defined in device/cuda/cuda_discovery.cc; only CUDA builds
// (SLUICE_WITH_CUDA) compile and call it.
void DiscoverCudaGpus(DeviceInventory* inv);
}  // namespace internal

}  // namespace sluice

#endif  // SLUICE_DEVICE_DISCOVERY_H_
