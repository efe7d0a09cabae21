// AssignDevices: the session's device choice for each node until the placer
// (placer/) is wired in: a node's full request ("/gpu:1") when that device
// exists and has a kernel for it, else the preferred device when it has a
// kernel, else the host CPU. Const and Input nodes follow their first
// consumer, so constants live where they are read and feeds are copied
// straight to where they are used.
//
//   DeviceAssignment a = AssignDevices(graph, devices, preferred, host);
//   a[node.id()]->name();   // "/gpu:0"
//
// A pure function; thread-safe.
#ifndef SLUICE_EXECUTOR_DEVICE_ASSIGNMENT_H_
#define SLUICE_EXECUTOR_DEVICE_ASSIGNMENT_H_

#include <memory>
#include <vector>

#include "device/device.h"
#include "executor/plan.h"
#include "graph/graph.h"

namespace sluice {

// All pointers are borrowed. REQUIRES: `host` is a CPU device in `devices`.
DeviceAssignment AssignDevices(const Graph& graph,
                               const std::vector<Device*>& devices,
                               Device* preferred, Device* host);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_DEVICE_ASSIGNMENT_H_
