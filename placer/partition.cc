// PartitionGraph: per-device subgraphs with send/recv pairs.
#include "placer/partition.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "placer/constants_where_read.h"
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

  // The transfer of `ref` from `src` to `dst`, read there by `consumer`.
  int Data(const TensorRef& ref, int src, int dst, const Consumer& consumer,
           bool fed) {
    int t = Find(ref, src, dst, fed);
    out_->transfers[t].consumers.push_back(consumer);
    return t;
  }
  // The transfer of a fetched value to the host.
  int Fetch(const TensorRef& ref, int src, int host, bool fed) {
    return Find(ref, src, host, fed);
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
  int Find(const TensorRef& ref, int src, int dst, bool fed) {
    auto [it, inserted] = data_.try_emplace(
        std::make_pair(ref, dst), static_cast<int>(out_->transfers.size()));
    if (inserted) {
      const Node& p = graph_.node(ref.node);
      Transfer t;
      t.producer = ref;
      t.src_device = src;
      t.dst_device = dst;
      t.fed = fed;
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
    return it->second;
  }

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

// The step's feeds and fetches, defaulted to the graph's signature.
struct StepSignature {
  std::vector<TensorRef> feeds;
  std::vector<TensorRef> fetches;
};

absl::StatusOr<StepSignature> ResolveSignature(const Graph& graph,
                                               const PartitionOptions& o) {
  StepSignature sig;
  if (o.feeds != nullptr) {
    sig.feeds = *o.feeds;
  } else {
    for (const GraphInput& in : graph.inputs()) sig.feeds.push_back({in.node, 0});
  }
  if (o.fetches != nullptr) {
    sig.fetches = *o.fetches;
  } else {
    for (const GraphOutput& out : graph.outputs()) sig.fetches.push_back(out.tensor);
  }
  for (const auto* refs : {&sig.feeds, &sig.fetches}) {
    for (const TensorRef& r : *refs) {
      if (r.node < 0 || r.node >= graph.num_nodes() || r.port < 0 ||
          r.port >= graph.node(r.node).num_outputs()) {
        return absl::InvalidArgumentError(absl::StrCat(
            refs == &sig.feeds ? "feed" : "fetch", " ", r.node, ":", r.port,
            " is not an output of the graph"));
      }
    }
  }
  return sig;
}

// Per feed or fetch, its device: `given` where it names one, else `io`.
absl::StatusOr<std::vector<int>> EndpointDevices(
    const std::vector<int>* given, size_t count, int io, int num_devices,
    const char* what) {
  std::vector<int> out(count, io);
  if (given == nullptr) return out;
  if (given->size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        given->size(), " ", what, " devices for ", count, " ", what,
        std::string(what) == "feed" ? "s" : "es"));
  }
  for (size_t i = 0; i < count; ++i) {
    const int d = (*given)[i];
    if (d >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " ", i, " is on device ", d, " of ", num_devices));
    }
    if (d >= 0) out[i] = d;
  }
  return out;
}

// The nodes a step computes: walking back from the fetches, a fed output
// cuts the walk (its producer is computed only if another output of it is
// needed). Control inputs are followed.
std::vector<bool> ComputedNodes(const Graph& graph,
                                const absl::flat_hash_map<TensorRef, int>& fed,
                                const std::vector<TensorRef>& fetches) {
  std::vector<bool> needed(graph.num_nodes(), false);
  std::vector<int> stack;
  auto need = [&](int id) {
    if (!needed[id]) {
      needed[id] = true;
      stack.push_back(id);
    }
  };
  for (const TensorRef& f : fetches) {
    if (!fed.contains(f)) need(f.node);
  }
  while (!stack.empty()) {
    const Node& n = graph.node(stack.back());
    stack.pop_back();
    for (const TensorRef& in : n.inputs()) {
      if (!fed.contains(in)) need(in.node);
    }
    for (int c : n.control_inputs()) need(c);
  }
  return needed;
}

void SumLinks(Partitioning* out) {
  std::map<std::pair<int, int>, LinkTraffic> links;
  for (const Transfer& t : out->transfers) {
    if (t.constant) continue;  // held where read: nothing moves per step
    LinkTraffic& l = links[{t.src_device, t.dst_device}];
    l.src = t.src_device;
    l.dst = t.dst_device;
    l.bytes += t.bytes;
    ++l.transfers;
  }
  for (const auto& [key, l] : links) out->links.push_back(l);
}

}  // namespace

std::vector<LinkTraffic> HostTraffic(const DeviceTopology& topo,
                                     const Partitioning& parts) {
  std::map<std::pair<int, int>, LinkTraffic> hosts;
  for (const LinkTraffic& l : parts.links) {
    const int a = topo.devices[l.src].host;
    const int b = topo.devices[l.dst].host;
    if (a == b) continue;
    LinkTraffic& h = hosts[{a, b}];
    h.src = a;
    h.dst = b;
    h.bytes += l.bytes;
    h.transfers += l.transfers;
  }
  std::vector<LinkTraffic> out;
  for (const auto& [key, h] : hosts) out.push_back(h);
  return out;
}

int Partitioning::FindTransfer(const TensorRef& value, int dst) const {
  for (int t = 0; t < static_cast<int>(transfers.size()); ++t) {
    if (transfers[t].producer == value && transfers[t].dst_device == dst) {
      return t;
    }
  }
  return -1;
}

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
  out.host_device = options.host_device;
  if (out.host_device < 0) {
    for (int d = 0; d < nd && out.host_device < 0; ++d) {
      if (topo.devices[d].type == DeviceType::kCpu) out.host_device = d;
    }
  } else if (out.host_device >= nd) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host device ", out.host_device, " of ", nd));
  }
  const int host = out.host_device;
  if (options.io_device >= nd) {
    return absl::InvalidArgumentError(absl::StrCat(
        "io device ", options.io_device, " of ", nd));
  }
  out.io_device = options.io_device >= 0 ? options.io_device : host;
  const int io = out.io_device;
  ASSIGN_OR_RETURN(StepSignature sig, ResolveSignature(graph, options));
  ASSIGN_OR_RETURN(out.feed_devices,
                   EndpointDevices(options.feed_devices, sig.feeds.size(), io,
                                   nd, "feed"));
  ASSIGN_OR_RETURN(out.fetch_devices,
                   EndpointDevices(options.fetch_devices, sig.fetches.size(),
                                   io, nd, "fetch"));
  // Fed values, with the device each arrives on.
  absl::flat_hash_map<TensorRef, int> fed;
  for (size_t i = 0; i < sig.feeds.size(); ++i) {
    fed.emplace(sig.feeds[i], out.feed_devices[i]);
  }
  out.computed = ComputedNodes(graph, fed, sig.fetches);
  // Where a value lives at the start of its readers: fed values where they
  // arrive (the host, unless io_device or feed_devices say otherwise).
  auto home = [&](const TensorRef& r) {
    auto it = fed.find(r);
    return it != fed.end() && it->second >= 0 ? it->second
                                              : placement.device_of_node[r.node];
  };
  auto is_cpu = [&](int d) { return topo.devices[d].type == DeviceType::kCpu; };
  // Host memory is shared by the CPUs of one host (a cluster's task), not
  // across hosts.
  auto same_host = [&](int a, int b) {
    return topo.devices[a].host == topo.devices[b].host;
  };
  // Where a kernel on device `d` reads an input in host memory: the host
  // device, or on another host of a cluster that host's first CPU.
  auto host_of = [&](int d) {
    if (host < 0 || same_host(d, host)) return host;
    for (int c = 0; c < nd; ++c) {
      if (is_cpu(c) && same_host(c, d)) return c;
    }
    return host;
  };

  std::vector<int> part_of(nd, -1);
  auto use = [&](int d) { part_of[d] = 0; };  // numbered below
  for (int v : placement.run_order) {
    if (out.computed[v]) use(placement.device_of_node[v]);
  }
  TransferIndex index(graph, topo, placement, options.batch, &out);
  // Rewritten inputs per node, for the GraphDefs.
  std::vector<std::vector<std::string>> data_in, control_in;
  if (options.build_graph_defs) {
    data_in.resize(n);
    control_in.resize(n);
  }
  for (int v : placement.run_order) {
    if (!out.computed[v]) continue;
    const int d = placement.device_of_node[v];
    const Node& node = graph.node(v);
    std::vector<int> host_inputs;
    if (options.host_memory_inputs && host >= 0) {
      host_inputs = options.host_memory_inputs(node, topo.devices[d].type);
    }
    for (int i = 0; i < node.num_inputs(); ++i) {
      const TensorRef& r = node.input(i);
      const bool in_host_memory =
          std::find(host_inputs.begin(), host_inputs.end(), i) !=
          host_inputs.end();
      const int have = home(r);
      const int want = in_host_memory ? host_of(d) : d;
      std::string name;
      if (have == want ||
          (in_host_memory && is_cpu(have) && same_host(have, d))) {
        if (options.build_graph_defs) name = RefString(graph, r);
      } else {
        int t = index.Data(r, have, want, Consumer{v, i}, fed.contains(r));
        use(have);
        use(want);
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
  for (const TensorRef& f : sig.feeds) use(home(f));
  // The caller gets each fetch where it asked (the host, or the io device,
  // unless fetch_devices says otherwise): values elsewhere come back
  // through a copy. Values on a logical CPU are host memory already.
  for (size_t i = 0; i < sig.fetches.size(); ++i) {
    const TensorRef& f = sig.fetches[i];
    const int have = home(f);
    const int dst = out.fetch_devices[i];
    use(have);
    if (dst < 0 || have == dst ||
        (is_cpu(have) && is_cpu(dst) && same_host(have, dst))) {
      continue;
    }
    int t = index.Fetch(f, have, dst, fed.contains(f));
    out.transfers[t].fetched = true;
    use(have);
    use(dst);
  }
  for (int d = 0; d < nd; ++d) {
    if (part_of[d] < 0) continue;
    part_of[d] = static_cast<int>(out.partitions.size());
    out.partitions.emplace_back().device = d;
  }
  for (int v : placement.run_order) {
    if (out.computed[v]) {
      out.partitions[part_of[placement.device_of_node[v]]].nodes.push_back(v);
    }
  }
  for (Transfer& t : out.transfers) {
    t.constant = !t.fed && !t.fetched &&
                 same_host(t.src_device, t.dst_device) &&
                 HeldWhereRead(graph.node(t.producer.node), t.bytes,
                               is_cpu(t.src_device) || is_cpu(t.dst_device));
  }
  SumLinks(&out);
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
      NodeDef* added = p.def.mutable_node(p.def.node_size() - 1);
      added->set_device(topo.devices[p.device].name);
      // A graph's Const keeps its bytes in the value Tensor alone
      // (graph/builder.h); the partition's GraphDef holds them, or the
      // external range it had.
      auto value_attr = added->attr().find("value");
      if (const Tensor* value = graph.node(v).const_value();
          value != nullptr && value->on_host() &&
          value_attr != added->attr().end() &&
          !value_attr->second.tensor().has_external()) {
        (*added->mutable_attr())["value"] = MakeTensorAttr(TensorToProto(*value));
      }
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
  // Graph inputs that are fed sit where feeds arrive; fetched graph outputs
  // where their value lives.
  for (const GraphInput& in : graph.inputs()) {
    const TensorRef ref{in.node, 0};
    if (!fed.contains(ref)) continue;
    DevicePartition& p = out.partitions[part_of[home(ref)]];
    p.def.mutable_signature()->add_inputs()->set_name(in.name);
    if (!out.computed[in.node]) {
      NodeDef* input = p.def.add_node();
      input->set_name(graph.node(in.node).name());
      input->set_op(graph.node(in.node).op());
      input->set_device(topo.devices[p.device].name);
    }
  }
  const absl::flat_hash_set<TensorRef> fetched(sig.fetches.begin(),
                                               sig.fetches.end());
  for (const GraphOutput& o : graph.outputs()) {
    if (!fetched.contains(o.tensor)) continue;
    DevicePartition& p = out.partitions[part_of[home(o.tensor)]];
    TensorInfo* info = p.def.mutable_signature()->add_outputs();
    info->set_name(o.name);
    info->set_tensor(RefString(graph, o.tensor));
  }
  return out;
}

}  // namespace sluice
