// The placement report (see placement_report.h).
#include "reports/placement_report.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/escape.h"
#include "core/status_macros.h"
#include "device/discovery.h"
#include "executor/plan.h"
#include "graph/op_registry.h"
#include "kernels/kernel_registry.h"
#include "kernels/providers.h"
#include "placer/machine_topology.h"

namespace sluice {
namespace {

using nlohmann::json;

// Whether this build registered any GPU kernel.
bool HasGpuKernels() {
  for (const std::string& op : OpRegistry::Global()->OpNames()) {
    for (const KernelDef* k : KernelRegistry::Global()->KernelsFor(op)) {
      if (k->device == DeviceType::kGpu) return true;
    }
  }
  return false;
}

std::string LinkLine(const DeviceTopology& topo, const LinkTraffic& l) {
  return absl::StrFormat("  %s -> %s: %s in %d transfer%s (%s)",
                         topo.devices[l.src].name, topo.devices[l.dst].name,
                         HumanBytes(l.bytes), l.transfers,
                         l.transfers == 1 ? "" : "s",
                         LinkKindName(topo.link(l.src, l.dst).kind));
}

// "x:0 (fed)", "logits:0 (fetched)".
std::string TransferLabel(const Graph& g, const Transfer& t) {
  std::string s = absl::StrCat(g.node(t.producer.node).name(), ":",
                               t.producer.port);
  if (t.fed) s += " (fed)";
  if (t.fetched) s += " (fetched)";
  return s;
}

void PrintText(const PlacementReport& r, std::ostream& out) {
  const Graph& g = r.graph();
  const DeviceTopology& topo = r.topology;
  const Placement& p = r.placement;
  const Partitioning& parts = r.partitioning;
  const std::vector<std::string>& notes = r.notes;
  const std::vector<std::string>& optimization = r.optimization;
  const bool explain = r.explain;
  size_t width = 4;
  for (const Node& n : g.nodes()) {
    width = std::min<size_t>(
        60, std::max(width, EscapeForTerminal(n.name(), 200).size() +
                                EscapeForTerminal(n.op(), 100).size() + 3));
  }
  out << "strategy: " << StrategyName(p.strategy);
  if (r.baseline) {
    out << " (" << BaechiAlgorithmName(*r.baseline)
        << ", Baechi's placement, for comparison)";
  }
  out << "\n";
  for (const std::string& note : notes) {
    out << "note: " << EscapeForTerminal(note) << "\n";
  }
  if (explain && !optimization.empty()) {
    out << "optimization (the nodes below are the graph after it):\n";
    for (const std::string& line : optimization) {
      out << "  " << EscapeForTerminal(line) << "\n";
    }
  }
  out << "nodes:\n";
  for (const Node& n : g.nodes()) {
    std::string label = absl::StrCat(EscapeForTerminal(n.name(), 200), " (",
                                     EscapeForTerminal(n.op(), 100), ")");
    out << "  " << label
        << std::string(width + 1 - std::min(width, label.size()), ' ')
        << topo.devices[p.device_of_node[n.id()]].name;
    if (explain) out << "  " << EscapeForTerminal(p.reason[n.id()]);
    out << "\n";
  }
  out << "devices:\n";
  for (int d = 0; d < topo.num_devices(); ++d) {
    const DeviceUsage& u = p.devices[d];
    out << absl::StrFormat(
        "  %-7s %6d nodes  weights %-10s peak activations %-10s budget %-10s "
        "busy %s\n",
        topo.devices[d].name, u.num_nodes, HumanBytes(u.weight_bytes),
        HumanBytes(u.peak_activation_bytes), HumanBytes(u.budget),
        HumanSeconds(u.busy_seconds));
  }
  out << "estimated step time: " << HumanSeconds(p.estimated_step_seconds)
      << "\n";
  // What a step copies: the partitioning's transfers, which are the copy
  // nodes `sluice run` executes (feeds in, results out included).
  out << "links:" << (parts.links.empty() ? " none\n" : "\n");
  for (const LinkTraffic& l : parts.links) out << LinkLine(topo, l) << "\n";
  if (topo.num_hosts > 1) {
    // What each network link between hosts carries per step.
    std::vector<LinkTraffic> hosts = HostTraffic(topo, parts);
    out << "between hosts:" << (hosts.empty() ? " none\n" : "\n");
    for (const LinkTraffic& h : hosts) {
      out << absl::StrFormat("  task:%d -> task:%d: %s per step in %d "
                             "transfer%s (network)\n",
                             h.src, h.dst, HumanBytes(h.bytes), h.transfers,
                             h.transfers == 1 ? "" : "s");
    }
  }
  // Constants the reading device holds itself: copied there once, when
  // the plan is made, not each step (Transfer::constant).
  int held = 0;
  int64_t held_bytes = 0;
  for (const Transfer& t : parts.transfers) {
    held += t.constant;
    held_bytes += t.constant ? t.bytes : 0;
  }
  if (held > 0) {
    out << absl::StrFormat(
        "constants held where read: %d (%s), placed there once, not copied "
        "per step\n",
        held, HumanBytes(held_bytes));
  }
  if (explain && !parts.transfers.empty()) {
    out << "transfers:\n";
    for (const Transfer& t : parts.transfers) {
      out << absl::StrFormat("  %-30s %s -> %s  %s%s\n",
                             EscapeForTerminal(TransferLabel(g, t), 200),
                             topo.devices[t.src_device].name,
                             topo.devices[t.dst_device].name,
                             HumanBytes(t.bytes),
                             t.constant ? "  (constant, held there)" : "");
    }
  }
  for (const std::string& note : p.notes) {
    out << "note: " << EscapeForTerminal(note) << "\n";
  }
}

json ToJson(const PlacementReport& r) {
  const Graph& g = r.graph();
  const DeviceTopology& topo = r.topology;
  const Placement& p = r.placement;
  const Partitioning& parts = r.partitioning;
  const std::vector<std::string>& notes = r.notes;
  const OptimizedGraph& opt = r.optimized;
  json devices = json::array();
  for (int d = 0; d < topo.num_devices(); ++d) {
    const DeviceSpec& s = topo.devices[d];
    const DeviceUsage& u = p.devices[d];
    devices.push_back(
        {{"name", s.name}, {"type", DeviceTypeName(s.type)},
         {"memory_limit", s.memory_limit},
         {"budget", s.memory_budget == kUnlimitedBudget
                        ? json(nullptr) : json(s.memory_budget)},
         {"nodes", u.num_nodes}, {"weight_bytes", u.weight_bytes},
         {"peak_activation_bytes", u.peak_activation_bytes},
         {"busy_seconds", u.busy_seconds}});
  }
  json nodes = json::array();
  for (const Node& n : g.nodes()) {
    json j = {{"name", n.name()}, {"op", n.op()},
              {"device", topo.devices[p.device_of_node[n.id()]].name}};
    if (r.explain) j["reason"] = p.reason[n.id()];
    nodes.push_back(std::move(j));
  }
  json links = json::array();
  for (const LinkTraffic& l : parts.links) {
    links.push_back({{"src", topo.devices[l.src].name},
                     {"dst", topo.devices[l.dst].name},
                     {"bytes", l.bytes}, {"transfers", l.transfers},
                     {"kind", LinkKindName(topo.link(l.src, l.dst).kind)}});
  }
  json hosts = json::array();
  for (const LinkTraffic& h : HostTraffic(topo, parts)) {
    hosts.push_back({{"src_task", h.src}, {"dst_task", h.dst},
                     {"bytes", h.bytes}, {"transfers", h.transfers}});
  }
  json transfers = json::array();
  for (const Transfer& t : parts.transfers) {
    transfers.push_back(
        {{"tensor", absl::StrCat(g.node(t.producer.node).name(), ":",
                                 t.producer.port)},
         {"src", topo.devices[t.src_device].name},
         {"dst", topo.devices[t.dst_device].name},
         {"bytes", t.bytes}, {"fed", t.fed}, {"fetched", t.fetched},
         {"constant", t.constant}, {"consumers", t.consumers.size()}});
  }
  std::vector<std::string> all_notes = notes;
  all_notes.insert(all_notes.end(), p.notes.begin(), p.notes.end());
  return {
      {"model", r.model_name},
      {"strategy", StrategyName(p.strategy)},
      {"algorithm", r.baseline ? BaechiAlgorithmName(*r.baseline) : "sluice"},
      {"batch", r.batch},
      {"devices", devices},
      {"nodes", nodes},
      {"estimated_step_seconds", p.estimated_step_seconds},
      {"links", links},
      {"host_links", hosts},
      {"num_hosts", topo.num_hosts},
      {"transfers", transfers},
      {"notes", all_notes},
      {"optimization",
       {{"level", OptimizationLevelName(opt.level)},
        {"nodes_before", opt.nodes_before},
        {"nodes_after", g.num_nodes()},
        {"summary", DescribeOptimization(opt, 0)}}}};
}

// A DOT string literal; newlines become line breaks in the label.
std::string Quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string Dot(const PlacementReport& r) {
  const Graph& g = r.graph();
  const DeviceTopology& topo = r.topology;
  const Placement& p = r.placement;
  const Partitioning& parts = r.partitioning;
  static constexpr const char* kColors[] = {
      "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
      "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
  auto color = [&](int d) { return kColors[d % 10]; };
  std::string s = "digraph placement {\n  rankdir=TB;\n"
                  "  node [style=filled, fontname=\"Helvetica\"];\n";
  s += "  subgraph cluster_legend {\n    label=\"devices\";\n";
  for (int d = 0; d < topo.num_devices(); ++d) {
    absl::StrAppend(&s, "    legend_", d, " [shape=box, label=",
                    Quote(topo.devices[d].name), ", fillcolor=\"", color(d),
                    "\"];\n");
  }
  s += "  }\n";
  for (const Node& n : g.nodes()) {
    int d = p.device_of_node[n.id()];
    absl::StrAppend(&s, "  n", n.id(), " [label=",
                    Quote(absl::StrCat(n.name(), "\n", n.op())),
                    ", fillcolor=\"", color(d), "\"];\n");
  }
  // An input that no transfer brings is read where it lives: a plain edge.
  std::set<std::pair<int, int>> transferred;
  for (const Transfer& x : parts.transfers) {
    for (const Consumer& c : x.consumers) transferred.insert({c.node, c.input});
  }
  for (const Node& n : g.nodes()) {
    const int d = p.device_of_node[n.id()];
    for (int i = 0; i < n.num_inputs(); ++i) {
      const TensorRef& in = n.input(i);
      if (!transferred.count({n.id(), i}) && p.device_of_node[in.node] == d) {
        absl::StrAppend(&s, "  n", in.node, " -> n", n.id(), ";\n");
      }
    }
    for (int c : n.control_inputs()) {
      if (p.device_of_node[c] == d) {
        absl::StrAppend(&s, "  n", c, " -> n", n.id(), " [style=dashed];\n");
      }
    }
  }
  for (size_t t = 0; t < parts.transfers.size(); ++t) {
    const Transfer& x = parts.transfers[t];
    absl::StrAppend(
        &s, "  t", t, " [shape=cds, fillcolor=white, label=",
        Quote(absl::StrCat(topo.devices[x.src_device].name, " -> ",
                           topo.devices[x.dst_device].name, "\n",
                           HumanBytes(x.bytes))),
        "];\n  n", x.producer.node, " -> t", t, ";\n");
    for (const Consumer& c : x.consumers) {
      absl::StrAppend(&s, "  t", t, " -> n", c.node, ";\n");
    }
  }
  for (size_t t = 0; t < parts.control_transfers.size(); ++t) {
    const ControlTransfer& x = parts.control_transfers[t];
    absl::StrAppend(&s, "  c", t,
                    " [shape=cds, style=dashed, label=\"control\"];\n  n",
                    x.producer, " -> c", t, " [style=dashed];\n");
    for (int c : x.consumers) {
      absl::StrAppend(&s, "  c", t, " -> n", c, " [style=dashed];\n");
    }
  }
  return s + "}\n";
}

absl::StatusOr<DeviceTopology> Topology(const PlacementRequest& o,
                                        const RuntimeConfig& config) {
  if (!o.devices.empty()) return ParseDeviceSpecs(o.devices);
  // This machine's devices, as a session with `config` sees them.
  ASSIGN_OR_RETURN(MachineDevices machine,
                   PlanMachineDevices(config, DiscoverDevices()));
  return std::move(machine.topology);
}

}  // namespace

absl::StatusOr<PlacementReport> PlaceForReport(
    const PlacementRequest& o, const RuntimeConfig& config,
    std::unique_ptr<const Graph> graph, std::vector<std::string> notes) {
  const RuntimeConfig& effective = config;
  ASSIGN_OR_RETURN(DeviceTopology topo, Topology(o, effective));
  bool plans_gpus = false;
  for (const DeviceSpec& d : topo.devices) {
    plans_gpus = plans_gpus || d.type == DeviceType::kGpu;
  }
  // The providers of the devices planned: `--devices` need not be here, so
  // its GPUs are planned with the GPU provider's rules (its libraries
  // assumed), not with this machine's.
  const ProviderSet providers = o.devices.empty()
                                    ? ProvidersForMachine(effective)
                                    : ProvidersForPlan(effective, plans_gpus);
  ASSIGN_OR_RETURN(
      OptimizedGraph opt,
      OptimizeGraph(std::move(graph), effective.optimization_level(),
                    PassOptionsFromConfig(effective,
                                          providers.compute().Target())));
  const Graph* placed = opt.graph.get();
  if (opt.level != OPTIMIZATION_NONE) {
    notes.push_back(absl::StrCat(
        "placing the graph after optimisation (level ",
        OptimizationLevelName(opt.level), ": ", opt.nodes_before, " -> ",
        placed->num_nodes(), " nodes", o.explain ? "" : "; --explain lists the passes",
        "; --optimization-level none places it as loaded)"));
  }
  PlacementReport report;
  if (opt.level != OPTIMIZATION_NONE) {
    report.optimization = DescribeOptimization(opt, /*max_changes=*/50);
  }
  PlacerOptions options = PlacerOptionsFromConfig(effective);
  options.has_kernel = KernelCapabilityQuery();
  options.cost.batch = o.batch;
  options.pipeline_stages = o.pipeline_stages;
  options.record_reasons = o.explain || o.record_reasons;
  if (plans_gpus && !HasGpuKernels()) {
    notes.push_back(
        "this build has no GPU kernels; planning assumes every op with a CPU "
        "kernel has a GPU kernel too");
    options.has_kernel = [](const Node& node, DeviceType) {
      return KernelRegistry::Global()->Supports(node, DeviceType::kCpu);
    };
  }
  ASSIGN_OR_RETURN(Placement p,
                   o.baseline ? PlaceBaechi(*placed, topo, options, *o.baseline)
                              : PlaceGraph(*placed, topo, options));
  // The step `sluice run` takes (every input fed, every output fetched),
  // split as the session splits it.
  PartitionOptions po;
  po.build_graph_defs = false;
  po.batch = o.batch;
  po.host_memory_inputs = KernelHostMemoryInputs;
  ASSIGN_OR_RETURN(Partitioning parts, PartitionGraph(*placed, topo, p, po));
  report.model_name = o.model_name;
  report.baseline = o.baseline;
  report.batch = o.batch;
  report.explain = o.explain;
  report.optimized = std::move(opt);
  report.topology = std::move(topo);
  report.placement = std::move(p);
  report.partitioning = std::move(parts);
  report.notes = std::move(notes);
  return report;
}

json PlacementReportJson(const PlacementReport& report) { return ToJson(report); }

void PrintPlacementReport(const PlacementReport& report, std::ostream& out) {
  PrintText(report, out);
}

std::string PlacementDot(const PlacementReport& report) { return Dot(report); }

}  // namespace sluice
