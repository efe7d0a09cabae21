// ExecutionPlan: what one step does for one feed/fetch signature: which nodes
// run, on which device, with which kernel objects, reading and writing which
// value slots, and when each slot can be released. Compiled once per
// signature and cached by the session; immutable afterwards.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<const ExecutionPlan> plan,
//                    CompilePlan(graph, feeds, fetches, assignment));
//   ... RunPlan(*plan, feed_values, ...)   (executor/executor.h)
//
// Immutable after compilation; thread-safe to share between concurrent steps.
#ifndef SLUICE_EXECUTOR_PLAN_H_
#define SLUICE_EXECUTOR_PLAN_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "device/device.h"
#include "graph/graph.h"
#include "kernels/kernel.h"

namespace sluice {

struct PlanNode {
  const Node* node = nullptr;   // owned by the graph
  Device* device = nullptr;     // owned by the session
  std::unique_ptr<OpKernel> kernel;
  std::vector<int> input_slots;  // one per data input
  int output_slot = 0;           // outputs use [output_slot, +num_outputs)
  int num_outputs = 0;
  std::vector<int> successors;   // plan indices that wait for this node
  int num_predecessors = 0;      // data and control, deduplicated
};

struct ExecutionPlan {
  std::vector<PlanNode> nodes;   // in a topological order
  int num_slots = 0;
  // Per slot: how many reads the step makes of it (consumers plus fetches).
  // A slot whose count drops to zero is released at once.
  std::vector<int> slot_reads;
  std::vector<int> feed_slots;   // slot of each feed, in feed order
  std::vector<int> fetch_slots;  // slot of each fetch, in fetch order
  // Values that never change (Const outputs): set into their slots at the
  // start of every step instead of running the Const kernel.
  std::vector<std::pair<int, Tensor>> constant_slots;
  // Plan indices with no predecessors.
  std::vector<int> roots;
  // True when no two nodes can ever run at once (a chain): the executor then
  // runs the nodes in order on the calling thread.
  bool sequential = false;
};

// Picks the device of each node (by node id). Borrowed; must outlive the
// compiled plan's use.
using DeviceAssignment = std::vector<Device*>;

// REQUIRES: every ref in `feeds` and `fetches` is a valid output of `graph`,
// and no two feeds name the same ref. Errors: a needed Input node that is not
// fed (INVALID_ARGUMENT listing each missing input with its dtype and shape),
// or a node with no kernel on its device (NOT_FOUND naming the node).
absl::StatusOr<std::unique_ptr<const ExecutionPlan>> CompilePlan(
    const Graph& graph, const std::vector<TensorRef>& feeds,
    const std::vector<TensorRef>& fetches, const DeviceAssignment& devices,
    bool allow_parallel);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_PLAN_H_
