// PlanMachineDevices: config + discovery -> the topology sessions and
// `sluice place` use.
#include "placer/machine_topology.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

std::vector<int> MachineDevices::UsedGpus(const Placement& placement) const {
  std::vector<bool> used(gpu_specs.size(), false);
  for (int d : placement.device_of_node) {
    const int n = d - num_cpus;
    if (n >= 0 && n < static_cast<int>(used.size())) used[n] = true;
  }
  std::vector<int> out;
  for (int n = 0; n < static_cast<int>(used.size()); ++n) {
    if (used[n]) out.push_back(n);
  }
  return out;
}

absl::StatusOr<MachineDevices> PlanMachineDevices(
    const RuntimeConfig& config, const DeviceInventory& inventory) {
  MachineDevices m;
  const int cores = config.intra_op_threads() > 0 ? config.intra_op_threads()
                                                  : inventory.cpu.cores;
  m.num_cpus = std::max(1, config.logical_cpus_size());
  for (int i = 0; i < m.num_cpus; ++i) {
    int64_t limit = 0;
    if (i < config.logical_cpus_size() &&
        config.logical_cpus(i).memory_limit().has_bytes()) {
      limit = config.logical_cpus(i).memory_limit().bytes();
    }
    DeviceSpec cpu = MakeDeviceSpec(DeviceType::kCpu, i, limit, cores);
    cpu.physical_id = 0;  // logical CPUs share the host
    m.topology.devices.push_back(std::move(cpu));
  }
  const bool use_gpu = !config.has_use_gpu() || config.use_gpu();
  if (!inventory.gpus.empty()) {
    ASSIGN_OR_RETURN(m.gpu_specs, PlanGpuDevices(config, inventory.gpus));
  } else if (use_gpu &&
             (config.visible_gpus_size() > 0 || config.gpu_size() > 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the config names GPUs but none can be used: ",
        inventory.no_gpu_reason.empty() ? "no GPU found"
                                        : inventory.no_gpu_reason));
  }
  if (m.num_cpus + m.gpu_specs.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        m.num_cpus + m.gpu_specs.size(),
        " devices; the placer supports at most 64"));
  }
  for (int n = 0; n < static_cast<int>(m.gpu_specs.size()); ++n) {
    GpuDeviceSpec& spec = m.gpu_specs[n];
    spec.index = n;
    DeviceSpec gpu = MakeDeviceSpec(DeviceType::kGpu, n, spec.memory_limit);
    gpu.physical_id = spec.physical_index;
    m.topology.devices.push_back(std::move(gpu));
  }
  // Peer access between physical GPUs, as discovery read it.
  const int nd = m.topology.num_devices();
  std::vector<std::vector<bool>> peers(nd, std::vector<bool>(nd, false));
  const auto& access = inventory.peer_access;
  for (int a = m.num_cpus; a < nd; ++a) {
    for (int b = m.num_cpus; b < nd; ++b) {
      const int pa = m.topology.devices[a].physical_id;
      const int pb = m.topology.devices[b].physical_id;
      peers[a][b] = pa >= 0 && pb >= 0 &&
                    pa < static_cast<int>(access.size()) &&
                    pb < static_cast<int>(access[pa].size()) && access[pa][pb];
    }
  }
  BuildLinks(&m.topology, peers);
  return m;
}

}  // namespace sluice
