// MachineTopology: the one place that turns a RuntimeConfig and what device
// discovery found into the devices a session uses and the placer plans for:
// the logical CPUs (/cpu:0.., config `logical_cpus`), then the logical GPUs
// PlanGpuDevices plans (/gpu:0..), with the real peer-access matrix for the
// links. A session places on it and sets up only the GPUs that received
// nodes; `sluice place` prints a placement on it, so both see one machine.
//
//   ASSIGN_OR_RETURN(MachineDevices m,
//                    PlanMachineDevices(config, DiscoverDevices()));
//   ASSIGN_OR_RETURN(Placement p, PlaceGraph(graph, m.topology, options));
//   for (int d : m.UsedGpus(p)) ... CreateGpuDevicesFromSpecs(config,
//                                     {m.gpu_specs[m.gpu_position(d)]}) ...
//
// Pure functions of their arguments; thread-safe.
#ifndef SLUICE_PLACER_MACHINE_TOPOLOGY_H_
#define SLUICE_PLACER_MACHINE_TOPOLOGY_H_

#include <vector>

#include "absl/status/statusor.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "placer/device_spec.h"
#include "placer/placer.h"
#include "proto/config.pb.h"

namespace sluice {

struct MachineDevices {
  // CPUs first (/cpu:0 is the host: feeds arrive and results leave there),
  // then GPUs in /gpu:N order.
  DeviceTopology topology;
  // The logical GPU behind each GPU of `topology`, in the same order, with
  // GpuDeviceSpec::index set to its N.
  std::vector<GpuDeviceSpec> gpu_specs;
  int num_cpus = 0;

  // Topology index of /gpu:N (N = position in gpu_specs).
  int gpu_device(int n) const { return num_cpus + n; }
  // GPUs (positions in gpu_specs) that `placement` puts at least one node on.
  std::vector<int> UsedGpus(const Placement& placement) const;
};

// `cpu_cores` for the CPUs' cost model: config.intra_op_threads when set,
// else inventory.cpu.cores. GPUs: PlanGpuDevices(config, inventory.gpus)
// (none when config.use_gpu is false). Errors: PlanGpuDevices' errors (an
// invalid GPU index or limit, naming the config field); FAILED_PRECONDITION
// when the config names GPUs and there are none (with the inventory's
// no_gpu_reason); more than 64 devices.
absl::StatusOr<MachineDevices> PlanMachineDevices(
    const RuntimeConfig& config, const DeviceInventory& inventory);

}  // namespace sluice

#endif  // SLUICE_PLACER_MACHINE_TOPOLOGY_H_
