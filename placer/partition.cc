// PartitionGraph: per-device subgraphs with send/recv pairs.
#include "placer/partition.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "graph/attr_map.h"
#include "placer/cost_model.h"

namespace sluice {
namespace {

// "gpu1" from "/gpu:1", for node names.
std::string ShortName(const DeviceSpec& d) {
  return absl::StrCat(DeviceTypeName(d.type), d.index);
}

// Unique node names for sends and receives.
class Namer {
 public:
  explicit Namer(const Graph& graph) : graph_(graph) {}
  std::string Make(std::string base) {
    std::string name = base;
    for (int i = 1; graph_.FindNode(name) != nullptr || !used_.insert(name).second;
         ++i) {
      name = absl::StrCat(base, "_", i);
    }
    return name;
  }

 private:
  const Graph& graph_;
  absl::flat_hash_set<std::string> used_;
};

std::string RefString(const Graph& g, const TensorRef& r) {
  return absl::StrCat(g.node(r.node).name(), ":", r.port);
}

// Finds or adds the transfer of `ref` to `dst`.
class TransferIndex {
 public:
  TransferIndex(const Graph& graph, const DeviceTopology& topo,
                const Placement& placement, int64_t batch, Partitioning* out)
      : graph_(graph), topo_(topo), placement_(placement), batch_(batch),
        out_(out), namer_(graph) {}

  int Data(const TensorRef& ref, int dst, const Consumer& consumer) {
    auto [it, inserted] = data_.try_emplace(
        std::make_pair(ref, dst), static_cast<int>(out_->transfers.size()));
    if (inserted) {
      const Node& p = graph_.node(ref.node);
      Transfer t;
      t.producer = ref;
      t.src_device = placement_.device_of_node[ref.node];
      t.dst_device = dst;
      t.dtype = p.output_dtype(ref.port);
      t.bytes = EstimatedElements(p.output_shape(ref.port), batch_) *
                static_cast<int64_t>(DataTypeSize(t.dtype));
      std::string base = absl::StrCat(p.name(), "_", ref.port);
      t.send_node = namer_.Make(absl::StrCat(
          "_send_", base, "_to_", ShortName(topo_.devices[dst])));
      t.recv_node = namer_.Make(absl::StrCat(
          "_recv_", base, "_from_",
          ShortName(topo_.devices[t.src_device])));
      out_->transfers.push_back(std::move(t));
    }
    out_->transfers[it->second].consumers.push_back(consumer);
    return it->second;
  }

  int Control(int producer, int dst, int consumer) {
    auto [it, inserted] = control_.try_emplace(
        std::make_pair(producer, dst),
        static_cast<int>(out_->control_transfers.size()));
    if (inserted) {
      ControlTransfer t;
      t.producer = producer;
      t.src_device = placement_.device_of_node[producer];
      t.dst_device = dst;
      const std::string& name = graph_.node(producer).name();
      t.send_node = namer_.Make(absl::StrCat(
          "_send_ctl_", name, "_to_", ShortName(topo_.devices[dst])));
      t.recv_node = namer_.Make(absl::StrCat(
          "_recv_ctl_", name, "_from_",
          ShortName(topo_.devices[t.src_device])));
      out_->control_transfers.push_back(std::move(t));
    }
    out_->control_transfers[it->second].consumers.push_back(consumer);
    return it->second;
  }

 private:
  const Graph& graph_;
  const DeviceTopology& topo_;
  const Placement& placement_;
  const int64_t batch_;
  Partitioning* out_;
  Namer namer_;
  absl::flat_hash_map<std::pair<TensorRef, int>, int> data_;
  absl::flat_hash_map<std::pair<int, int>, int> control_;
};

void AddTransferNodes(const Graph& g, const DeviceTopology& topo,
                      const Transfer& t, GraphDef* src, GraphDef* dst) {
  const std::string tensor = RefString(g, t.producer);
  const std::string& from = topo.devices[t.src_device].name;
  const std::string& to = topo.devices[t.dst_device].name;
  NodeDef* send = src->add_node();
  send->set_name(t.send_node);
  send->set_op("_Send");
  send->set_device(from);
  send->add_input(tensor);
  auto& sa = *send->mutable_attr();
  sa["tensor_name"] = MakeStringAttr(tensor);
  sa["send_device"] = MakeStringAttr(from);
  sa["recv_device"] = MakeStringAttr(to);
  sa["T"] = MakeTypeAttr(t.dtype);
  NodeDef* recv = dst->add_node();
  recv->set_name(t.recv_node);
  recv->set_op("_Recv");
  recv->set_device(to);
  auto& ra = *recv->mutable_attr();
  ra["tensor_name"] = MakeStringAttr(tensor);
  ra["send_device"] = MakeStringAttr(from);
  ra["recv_device"] = MakeStringAttr(to);
  ra["dtype"] = MakeTypeAttr(t.dtype);
  ra["shape"] = MakeShapeAttr(g.node(t.producer.node).output_shape(t.producer.port));
}

void AddControlNodes(const Graph& g, const DeviceTopology& topo,
                     const ControlTransfer& t, GraphDef* src, GraphDef* dst) {
  const std::string& name = g.node(t.producer).name();
  for (bool is_send : {true, false}) {
    NodeDef* n = (is_send ? src : dst)->add_node();
    n->set_name(is_send ? t.send_node : t.recv_node);
    n->set_op(is_send ? "_Send" : "_Recv");
    n->set_device(topo.devices[is_send ? t.src_device : t.dst_device].name);
    if (is_send) n->add_input(absl::StrCat("^", name));
    auto& a = *n->mutable_attr();
    a["tensor_name"] = MakeStringAttr(absl::StrCat("^", name));
    a["send_device"] = MakeStringAttr(topo.devices[t.src_device].name);
    a["recv_device"] = MakeStringAttr(topo.devices[t.dst_device].name);
    a["control"] = MakeBoolAttr(true);
  }
}

// The original node with its inputs rewritten to local receives.
void AddLocalNode(const NodeDef& original,
                  const std::vector<std::string>& data_inputs,
                  const std::vector<std::string>& control_inputs,
                  GraphDef* def) {
  NodeDef* n = def->add_node();
  *n = original;
  n->clear_input();
  for (const std::string& s : data_inputs) n->add_input(s);
  for (const std::string& s : control_inputs) n->add_input("^" + s);
}

}  // namespace

absl::StatusOr<Partitioning> PartitionGraph(const Graph& graph,
                                            const DeviceTopology& topo,
                                            const Placement& placement,
                                            const PartitionOptions& options) {
  const int n = graph.num_nodes();
  const int nd = topo.num_devices();
  if (static_cast<int>(placement.device_of_node.size()) != n ||
      static_cast<int>(placement.run_order.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placement is for ", placement.device_of_node.size(),
        " nodes but the graph has ", n));
  }
  for (int v = 0; v < n; ++v) {
    int d = placement.device_of_node[v];
    if (d < 0 || d >= nd) {
      return absl::InvalidArgumentError(absl::StrCat(
          graph.node(v).DebugName(), " is placed on device ", d, " of ", nd));
    }
  }
  Partitioning out;
  std::vector<int> part_of(nd, -1);
  for (int v : placement.run_order) {
    int d = placement.device_of_node[v];
    if (part_of[d] < 0) {
      part_of[d] = 0;  // mark; numbered below in device order
    }
  }
  for (int d = 0; d < nd; ++d) {
    if (part_of[d] < 0) continue;
    part_of[d] = static_cast<int>(out.partitions.size());
    out.partitions.emplace_back().device = d;
  }
  TransferIndex index(graph, topo, placement, options.batch, &out);
  // Rewritten inputs per node, for the GraphDefs.
  std::vector<std::vector<std::string>> data_in, control_in;
  if (options.build_graph_defs) {
    data_in.resize(n);
    control_in.resize(n);
  }
  for (int v : placement.run_order) {
    const int d = placement.device_of_node[v];
    out.partitions[part_of[d]].nodes.push_back(v);
    const Node& node = graph.node(v);
    for (int i = 0; i < node.num_inputs(); ++i) {
      const TensorRef& r = node.input(i);
      std::string name;
      if (placement.device_of_node[r.node] == d) {
        if (options.build_graph_defs) name = RefString(graph, r);
      } else {
        int t = index.Data(r, d, Consumer{v, i});
        if (options.build_graph_defs) name = out.transfers[t].recv_node;
      }
      if (options.build_graph_defs) data_in[v].push_back(std::move(name));
    }
    for (int u : node.control_inputs()) {
      std::string name = graph.node(u).name();
      if (placement.device_of_node[u] != d) {
        int t = index.Control(u, d, v);
        name = out.control_transfers[t].recv_node;
      }
      if (options.build_graph_defs) control_in[v].push_back(std::move(name));
    }
  }
  for (int t = 0; t < static_cast<int>(out.transfers.size()); ++t) {
    out.partitions[part_of[out.transfers[t].src_device]].sends.push_back(t);
    out.partitions[part_of[out.transfers[t].dst_device]].recvs.push_back(t);
  }
  for (int t = 0; t < static_cast<int>(out.control_transfers.size()); ++t) {
    const ControlTransfer& c = out.control_transfers[t];
    out.partitions[part_of[c.src_device]].control_sends.push_back(t);
    out.partitions[part_of[c.dst_device]].control_recvs.push_back(t);
  }
  if (!options.build_graph_defs) return out;

  absl::flat_hash_map<std::string, int> def_index;
  for (int i = 0; i < graph.def().node_size(); ++i) {
    def_index.emplace(graph.def().node(i).name(), i);
  }
  for (DevicePartition& p : out.partitions) {
    for (int v : p.nodes) {
      auto it = def_index.find(graph.node(v).name());
      NodeDef fallback;
      fallback.set_name(graph.node(v).name());
      fallback.set_op(graph.node(v).op());
      const NodeDef& original =
          it != def_index.end() ? graph.def().node(it->second) : fallback;
      AddLocalNode(original, data_in[v], control_in[v], &p.def);
      p.def.mutable_node(p.def.node_size() - 1)
          ->set_device(topo.devices[p.device].name);
    }
  }
  for (const Transfer& t : out.transfers) {
    AddTransferNodes(graph, topo, t, &out.partitions[part_of[t.src_device]].def,
                     &out.partitions[part_of[t.dst_device]].def);
  }
  for (const ControlTransfer& t : out.control_transfers) {
    AddControlNodes(graph, topo, t, &out.partitions[part_of[t.src_device]].def,
                    &out.partitions[part_of[t.dst_device]].def);
  }
  for (const GraphInput& in : graph.inputs()) {
    DevicePartition& p = out.partitions[part_of[placement.device_of_node[in.node]]];
    p.def.mutable_signature()->add_inputs()->set_name(in.name);
  }
  for (const GraphOutput& o : graph.outputs()) {
    DevicePartition& p =
        out.partitions[part_of[placement.device_of_node[o.tensor.node]]];
    TensorInfo* info = p.def.mutable_signature()->add_outputs();
    info->set_name(o.name);
    info->set_tensor(RefString(graph, o.tensor));
  }
  return out;
}

}  // namespace sluice
