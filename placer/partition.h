// Partitioning: splits a placed graph into one subgraph per device. Every
// data edge between devices becomes a transfer: one send/recv pair per
// (producer output, destination device), however many consumers read it
// there. Control edges between devices become control transfers, one per
// (producer, destination device).
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
  TensorRef producer;
  int src_device = 0;
  int dst_device = 0;
  int64_t bytes = 0;               // estimated (unknown dims as `batch`)
  DataType dtype = DT_INVALID;
  std::string send_node;           // names in the partitions' GraphDefs
  std::string recv_node;
  std::vector<Consumer> consumers;  // on dst_device
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
  std::vector<int> nodes;       // original node ids, in Placement::run_order
  std::vector<int> sends;       // indices into transfers with src == device
  std::vector<int> recvs;       // indices into transfers with dst == device
  std::vector<int> control_sends;  // indices into control_transfers
  std::vector<int> control_recvs;
  GraphDef def;                 // filled when build_graph_defs
};

struct Partitioning {
  // One per device that has nodes, in device order.
  std::vector<DevicePartition> partitions;
  std::vector<Transfer> transfers;
  std::vector<ControlTransfer> control_transfers;
};

struct PartitionOptions {
  bool build_graph_defs = true;
  int64_t batch = 1;  // unknown dimensions, for Transfer::bytes
};

// Errors: INVALID_ARGUMENT when the placement does not match the graph
// (size, or a device index outside the topology).
absl::StatusOr<Partitioning> PartitionGraph(
    const Graph& graph, const DeviceTopology& topo, const Placement& placement,
    const PartitionOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_PLACER_PARTITION_H_
