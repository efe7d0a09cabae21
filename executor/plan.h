// ExecutionPlan: what one step does for one feed/fetch signature: which nodes
// run, on which device, with which kernel objects, reading and writing which
// value slots, and when each slot can be released. Compiled once per
// signature and cached by the session; immutable afterwards.
//
//   ASSIGN_OR_RETURN(Partitioning parts, PartitionGraph(graph, topo, placement,
//                                                       partition_options));
//   ASSIGN_OR_RETURN(std::unique_ptr<const ExecutionPlan> plan,
//                    CompilePlan(graph, feeds, fetches, parts, options));
//   ... RunPlan(*plan, feed_values, ...)   (executor/executor.h)
//
// Immutable after compilation; thread-safe to share between concurrent steps.
#ifndef SLUICE_EXECUTOR_PLAN_H_
#define SLUICE_EXECUTOR_PLAN_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "device/device.h"
#include "graph/graph.h"
#include "kernels/kernel.h"
#include "placer/partition.h"

namespace sluice {

struct PlanNode {
  const Node* node = nullptr;   // owned by the graph
  Device* device = nullptr;     // owned by the session
  std::unique_ptr<OpKernel> kernel;
  bool is_copy = false;          // a CopyKernel the plan inserted
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
  // Copies between devices, per step: one per transfer of `partitioning`,
  // which the plan was compiled from (what `sluice place` prints).
  int num_copies = 0;
  std::shared_ptr<const Partitioning> partitioning;
  // Transfers that cross processes (a plan of one rank of a job,
  // PlanOptions::cross_process): sends and receives this plan makes.
  int num_cross_process = 0;
  // Plan indices with no predecessors.
  std::vector<int> roots;
  // True when no two nodes can ever run at once (a chain): the executor then
  // runs the nodes in order on the calling thread.
  bool sequential = false;
};

// The device of each node, by node id.
using DeviceAssignment = std::vector<Device*>;

// A plan for one process of a job of several (executor/cluster.h): the
// topology spans every rank's devices; this plan computes the nodes on its
// own rank's and turns each transfer with one end here and the other on
// another rank into one kernel, a send or a receive. Both ends of a
// transfer sit at the same point of the placement's run order (just after
// its producer; fed values first), and the plan then runs sequentially, so
// every rank sends and receives in one global order (no two ranks wait on
// each other: docs/design.md decision 41).
struct CrossProcessPlan {
  // The rank owning each topology device. Borrowed.
  const std::vector<int>* rank_of_device = nullptr;
  int rank = 0;
  // The kernel that sends transfer `t` of the partitioning (`send`: this
  // rank holds its source, `local` is that device) or receives it (this
  // rank holds its destination, `local`). What it borrows must outlive the
  // plan.
  std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(
      int t, const Transfer& transfer, const Node& producer, Device* local,
      bool send)>
      make_kernel;
};

struct PlanOptions {
  // Where each node runs. Borrowed: the devices and the vector must outlive
  // the plan.
  const DeviceAssignment* devices = nullptr;
  // The device behind each index of the topology the partitioning refers to
  // (null where the session set up none: no node and no transfer uses it).
  // Borrowed, like `devices`.
  const std::vector<Device*>* topology_devices = nullptr;
  // Node ids in the order to run them (a topological order, the placer's
  // run order); null: the graph's topological order.
  const std::vector<int>* order = nullptr;
  // The host device: feeds arrive there and fetched values are returned
  // there.
  Device* host = nullptr;
  // Where feeds arrive and fetched values are returned, when not the host
  // (a control-flow subgraph on a GPU: executor/subgraph.h); it must be the
  // device of the partitioning's io_device. Null: the host.
  Device* io = nullptr;
  bool allow_parallel = true;
  // Where a copy to a CPU of a value the step fetches allocates its output
  // (page-locked memory for StepOptions::pinned_host_fetches,
  // device/pinned_memory.h); null: the CPU's own allocator. Borrowed: it
  // must outlive the plan and the tensors it makes.
  Allocator* host_fetch_allocator = nullptr;
  // A Const node's value on a device (the session caches device copies).
  // Unset: the host value is used, which is right for CPU devices only.
  std::function<absl::StatusOr<Tensor>(const Node&, Device*)> constant_on;
  // Set: a plan of one rank of a job (see CrossProcessPlan); `devices`
  // and `topology_devices` then hold null for other ranks' devices, and
  // feeds and fetches are on the rank of the io device only (the others'
  // plans take no feed and return no fetch). Borrowed.
  const CrossProcessPlan* cross_process = nullptr;
};

// The inputs of `node` that its kernel on `type` reads in host memory
// (KernelDef::host_memory_inputs); none when no kernel is registered. What
// PartitionOptions::host_memory_inputs needs.
std::vector<int> KernelHostMemoryInputs(const Node& node, DeviceType type);

// Checks that every Input node the step needs is fed: INVALID_ARGUMENT
// listing each missing input with its dtype and shape, and the model's
// inputs.
absl::Status CheckFedInputs(const Graph& graph, const Partitioning& parts);

// Compiles the plan of the step `partitioning` was made for (its feeds, in
// order, and fetches; placer/partition.h), computing the nodes it marks
// computed on their devices and turning each of its transfers into one
// CopyKernel node; nothing else crosses devices. The partitioning must have
// been made with KernelHostMemoryInputs.
// REQUIRES: every ref in `feeds` and `fetches` is a valid output of `graph`,
// no two feeds name the same ref, and `partitioning` was made for them on
// the placement behind options.devices. Errors: CheckFedInputs', a node
// with no kernel on its device (NOT_FOUND naming the node), a kernel that
// cannot be created (its error, naming the node), or INTERNAL when the
// partitioning lacks a transfer the plan needs.
absl::StatusOr<std::unique_ptr<const ExecutionPlan>> CompilePlan(
    const Graph& graph, const std::vector<TensorRef>& feeds,
    const std::vector<TensorRef>& fetches,
    std::shared_ptr<const Partitioning> partitioning,
    const PlanOptions& options);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_PLAN_H_
