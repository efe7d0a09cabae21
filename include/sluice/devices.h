// The devices this machine offers sluice: the CPU (model, cores, memory)
// and every CUDA GPU the CUDA runtime shows (after CUDA_VISIBLE_DEVICES)
// with its properties and the peer-access matrix; what `sluice devices
// --json` reports. Discovery never fails: when no GPU can be listed,
// no_gpu_reason says why in one line, and a GPU sluice cannot use (too old,
// or not covered by the CUDA architectures this build was compiled for) is
// listed with usable false and the reason.
//
//   sluice::DeviceInventory inv = sluice::DiscoverDevices();
//   std::cout << inv.cpu.model_name << ", " << inv.cpu.cores << " cores\n";
//   for (const sluice::GpuInfo& g : inv.gpus) { ... g.name, g.total_memory ... }
//   if (inv.gpus.empty()) std::cout << "no GPU listed: " << inv.no_gpu_reason;
//
// Thread-safe. Reading a GPU's free memory creates the CUDA primary context
// on that GPU (as any later use of it would); the current device is restored.
#ifndef SLUICE_DEVICES_H_
#define SLUICE_DEVICES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

struct CpuInfo {
  std::string model_name;          // "unknown CPU" when /proc says nothing
  int cores = 0;                   // hardware threads this process may use
  int64_t memory_bytes = 0;        // MemTotal; 0 when unknown
  int64_t available_bytes = 0;     // MemAvailable; 0 when unknown
};

struct GpuInfo {
  int index = -1;                  // CUDA device ordinal (after visibility)
  std::string name;                // "NVIDIA H200"
  int cc_major = 0;                // compute capability
  int cc_minor = 0;
  int64_t total_memory = 0;        // bytes
  int64_t free_memory = 0;         // bytes, when discovery ran
  int sm_count = 0;
  std::string pci_bus_id;          // "0000:19:00.0"
  bool usable = true;
  std::string unusable_reason;     // set when !usable
};

struct DeviceInventory {
  CpuInfo cpu;
  std::vector<GpuInfo> gpus;
  // Set when `gpus` is empty: one line saying why ("this build of sluice has
  // no CUDA support", "CUDA driver not found (cudaErrorInsufficientDriver)").
  std::string no_gpu_reason;
  // peer_access[i][j]: GPU i can access GPU j's memory directly. The
  // diagonal is true. Square, of size gpus.size().
  std::vector<std::vector<bool>> peer_access;
  // Informational notes (for example the CUDA_VISIBLE_DEVICES in effect, or
  // the driver and runtime versions).
  std::vector<std::string> notes;
};

// Discovers the CPU and, in CUDA builds, the GPUs.
DeviceInventory DiscoverDevices();

}  // namespace sluice

#endif  // SLUICE_DEVICES_H_
