// Placement: which device runs each node of a model and why, what each
// device holds, and the estimated step time. A session places its graph
// when it is created (Session::placement()); `sluice place` prints the same
// thing, also for devices that are not present ("4xgpu:80GiB").
//
//   const sluice::Placement& p = session->placement();
//   for (size_t d = 0; d < p.device_names.size(); ++d) {
//     std::cout << p.device_names[d] << ": " << p.devices[d].num_nodes
//               << " nodes, " << p.devices[d].weight_bytes << " B weights\n";
//   }
//
// A value type; thread-compatible.
#ifndef SLUICE_PLACEMENT_H_
#define SLUICE_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/proto/config.pb.h"  // PlacementStrategy

namespace sluice {

// What the placer put on one device.
struct DeviceUsage {
  int64_t weight_bytes = 0;           // Const values placed there
  int64_t peak_activation_bytes = 0;  // live set at its peak, in run order
  int64_t budget = 0;  // memory limit less the workspace reserve; INT64_MAX
                       // when the device has no limit
  int num_nodes = 0;
  double busy_seconds = 0;  // sum of its nodes' estimated times
};

struct Placement {
  PlacementStrategy strategy = PLACEMENT_AUTO;  // the one that produced it
  // The devices placed onto ("/cpu:0", "/gpu:1"); the indices below refer
  // to this list.
  std::vector<std::string> device_names;
  std::vector<int> device_of_node;  // per node id: index into device_names
  std::vector<std::string> reason;  // per node; empty if reasons were off
  // The order the memory estimate assumes (a topological order). A device
  // runs its own nodes in this order.
  std::vector<int> run_order;
  std::vector<DeviceUsage> devices;   // per device
  double estimated_step_seconds = 0;  // makespan of the list schedule
  std::vector<std::string> notes;     // fallbacks and relaxations, if any
};

}  // namespace sluice

#endif  // SLUICE_PLACEMENT_H_
