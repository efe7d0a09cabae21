// ClusterTopology: the devices of every process of a job as one topology
// for the placer: rank R's devices (its own MachineDevices topology, CPUs
// first) follow rank R-1's, named "/job:worker/task:R/cpu:0",
// "/job:worker/task:R/gpu:1" (task R is rank R: DeviceSpec::host), their
// links inside a rank as the rank measured them, and the network between
// ranks (LinkKind::kNetwork, device_spec.h's assumed rates). Rank 0's
// /cpu:0 is device 0: feeds arrive and fetches leave there.
//
//   std::vector<DeviceTopology> per_rank = ...;  // every rank's report
//   ClusterTopology cluster = JoinRankTopologies(per_rank);
//   ASSIGN_OR_RETURN(Placement p, PlaceGraph(graph, cluster.topology, o));
//   if (cluster.rank_of_device[p.device_of_node[v]] == my_rank) ...
//
// Value type; pure functions, thread-safe.
#ifndef SLUICE_PLACER_CLUSTER_TOPOLOGY_H_
#define SLUICE_PLACER_CLUSTER_TOPOLOGY_H_

#include <vector>

#include "placer/device_spec.h"

namespace sluice {

struct ClusterTopology {
  DeviceTopology topology;
  std::vector<int> rank_of_device;  // per device of `topology`
  // Per rank, the index of its first device; rank R's local device i is
  // cluster device first_device[R] + i.
  std::vector<int> first_device;
  int num_ranks() const { return static_cast<int>(first_device.size()); }
};

// Joins the ranks' topologies (each as PlanMachineDevices makes it, with
// its links filled) in rank order. GPUs keep being numbered over the whole
// cluster (DeviceSpec::index), as ParseDeviceSpecs numbers a cluster spec,
// so a request "/gpu:1" means the second GPU of the job.
ClusterTopology JoinRankTopologies(const std::vector<DeviceTopology>& ranks);

}  // namespace sluice

#endif  // SLUICE_PLACER_CLUSTER_TOPOLOGY_H_
