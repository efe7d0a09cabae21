// Partitioning: a placed graph split for one step signature (which outputs
// are fed, which are fetched) into one piece per device, and the transfers
// between them. It is the one structure between placement and execution:
// `sluice place` prints it and --dot draws it, CompilePlan
// (executor/plan.h) turns each transfer into exactly one copy node, and
// `sluice bench` reports those copies per link.
//
// Which values cross devices, for the nodes the step computes (those the
// fetches need, with every fed value cutting the graph):
//   - an input read on another device than the one its value lives on: one
//     transfer per (value, destination device), however many consumers read
//     it there;
//   - a fed value lives where it arrives: the host device (or the io
//     device), unless PartitionOptions::feed_devices puts it on a GPU; it
//     is transferred to every other device that reads it;
//   - an input a kernel reads in host memory (KernelDef::host_memory_inputs,
//     Gather's indices on a GPU) is transferred to the host (in a cluster,
//     the first CPU of the reader's host) unless it is in host memory
//     already (on any CPU of that host);
//   - a fetched value is transferred to where the caller takes it: the
//     host (or the io device), unless PartitionOptions::fetch_devices says
//     another device; a value already there, or on a logical CPU of the
//     caller's host when the caller takes it on the host, is not copied.
// Control edges between devices become control transfers, one per
// (producer, destination device); they order the step and move no bytes.
//
//   ASSIGN_OR_RETURN(Partitioning parts, PartitionGraph(graph, topo, placement));
//   for (const DevicePartition& p : parts.partitions) {
//     ... p.nodes run on topo.devices[p.device]; p.def is its GraphDef ...
//   }
//
// PartitionGraph is a pure function; thread-safe.
//
// In the per-device GraphDefs, a transfer is a pair of nodes:
//   _Send  input "producer:port"; attrs tensor_name (s: "producer:port"),
//          send_device, recv_device (s), T (type); no outputs.
//   _Recv  no inputs; attrs tensor_name, send_device, recv_device (s),
//          dtype (type), shape (shape); one output, which the consumers on
//          the destination read instead of the producer's.
// A control transfer is the same pair with attr control (b: true): the
// _Send has only "^producer", the _Recv no output, and the consumers list
// "^<recv>". These ops are not in the op registry: the executor consumes
// the data structure, and the GraphDefs are for inspection and tooling
// until someone registers _Send/_Recv.
#ifndef SLUICE_PLACER_PARTITION_H_
#define SLUICE_PLACER_PARTITION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "placer/device_spec.h"
#include "placer/placer.h"
#include "proto/graph.pb.h"

namespace sluice {

// One tensor crossing devices.
struct Transfer {
  TensorRef producer;              // the value (a fed one: the ref fed)
  int src_device = 0;
  int dst_device = 0;
  int64_t bytes = 0;               // estimated (unknown dims as `batch`)
  DataType dtype = DT_INVALID;
  bool fed = false;                // the value is fed: it starts where the
                                   // feed arrives (Partitioning::feed_devices)
  bool fetched = false;            // returned to the caller from dst_device
  // A Const's value that dst_device holds itself from plan compilation on
  // (placer/constants_where_read.h): no copy per step, not in `links`.
  // Never for a fed or fetched value, or between processes.
  bool constant = false;
  std::string send_node;           // names in the partitions' GraphDefs
  std::string recv_node;
  std::vector<Consumer> consumers;  // on dst_device (reading it there, or
                                    // in host memory when dst is the host)
};

// Bytes crossing one directed link per step.
struct LinkTraffic {
  int src = 0;
  int dst = 0;
  int64_t bytes = 0;
  int transfers = 0;
};

// One control dependency crossing devices.
struct ControlTransfer {
  int producer = -1;
  int src_device = 0;
  int dst_device = 0;
  std::string send_node;
  std::string recv_node;
  std::vector<int> consumers;  // on dst_device
};

struct DevicePartition {
  int device = 0;               // index into DeviceTopology::devices
  std::vector<int> nodes;       // node ids the step computes there (Const
                                // nodes included), in Placement::run_order
  std::vector<int> sends;       // indices into transfers with src == device
  std::vector<int> recvs;       // indices into transfers with dst == device
  std::vector<int> control_sends;  // indices into control_transfers
  std::vector<int> control_recvs;
  GraphDef def;                 // filled when build_graph_defs
};

struct Partitioning {
  // One per device that has nodes or transfers, in device order.
  std::vector<DevicePartition> partitions;
  // In the order a step first needs them (a consumer's inputs in run order,
  // then the fetches).
  std::vector<Transfer> transfers;
  std::vector<ControlTransfer> control_transfers;
  // Per node id: whether the step computes it (or holds it, for a Const).
  std::vector<bool> computed;
  // The transfers summed per directed link, by (src, dst).
  std::vector<LinkTraffic> links;
  int host_device = -1;  // as resolved from PartitionOptions
  int io_device = -1;    // likewise: where feeds arrive, fetches leave
  // Per feed and per fetch of the step, in order: the device the feed
  // arrives on and the device the fetch is delivered to (resolved: never
  // -1 where the topology has a host or io device).
  std::vector<int> feed_devices;
  std::vector<int> fetch_devices;

  // The transfer of `value` to `dst`, or -1.
  int FindTransfer(const TensorRef& value, int dst) const;
};

struct PartitionOptions {
  bool build_graph_defs = true;
  int64_t batch = 1;  // unknown dimensions, for Transfer::bytes
  // The step's signature. Null: every graph input is fed and every graph
  // output fetched (the step `sluice run` takes). Borrowed.
  const std::vector<TensorRef>* feeds = nullptr;
  const std::vector<TensorRef>* fetches = nullptr;
  // The device feeds arrive on and fetched values leave from: -1, the first
  // CPU of the topology (none: a planning topology of GPUs alone, where
  // feeds and fetches cross no link that is modelled).
  int host_device = -1;
  // The device feeds arrive on and fetched values are delivered to, when
  // not the host: a control-flow subgraph on a GPU (executor/subgraph.h)
  // takes its inputs and gives its outputs in that GPU's memory, while
  // inputs read in host memory still go to the host device. -1: the host.
  int io_device = -1;
  // Per feed (parallel to `feeds`) the device its value arrives on, and per
  // fetch (parallel to `fetches`) the device it is delivered to; -1 (or a
  // null vector) means io_device. For a caller that keeps tensors on a GPU
  // (sluice/session.h). Borrowed; each must have the size of its list.
  const std::vector<int>* feed_devices = nullptr;
  const std::vector<int>* fetch_devices = nullptr;
  // The inputs a node reads in host memory on a device of this type
  // (KernelDef::host_memory_inputs); empty: none.
  std::function<std::vector<int>(const Node&, DeviceType)> host_memory_inputs;
};

// Errors: INVALID_ARGUMENT when the placement does not match the graph
// (size, or a device index outside the topology), a feed or fetch is not
// an output of the graph, or feed_devices / fetch_devices do not match the
// feeds and fetches or name a device outside the topology.
absl::StatusOr<Partitioning> PartitionGraph(
    const Graph& graph, const DeviceTopology& topo, const Placement& placement,
    const PartitionOptions& options = {});

// The transfers between hosts (DeviceSpec::host) summed per directed pair
// of hosts: src and dst are host numbers; pairs on one host are left out.
// Empty on one machine.
std::vector<LinkTraffic> HostTraffic(const DeviceTopology& topo,
                                     const Partitioning& parts);

}  // namespace sluice

#endif  // SLUICE_PLACER_PARTITION_H_
