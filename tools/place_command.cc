// `sluice place`: placement without running (tools/place_command.h).
#include "tools/place_command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "graph/loader.h"
#include "model/model_loader.h"
#include "graph/op_registry.h"
#include "executor/plan.h"
#include "kernels/kernel_registry.h"
#include "nlohmann/json.hpp"
#include "kernels/providers.h"
#include "optimizer/pipeline.h"
#include "placer/machine_topology.h"
#include "placer/partition.h"
#include "placer/placer.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/feeds.h"

extern char** environ;

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

void PrintText(const Graph& g, const DeviceTopology& topo, const Placement& p,
               const Partitioning& parts,
               const std::vector<std::string>& notes,
               const std::vector<std::string>& optimization, bool explain,
               std::ostream& out) {
  size_t width = 4;
  for (const Node& n : g.nodes()) {
    width = std::min<size_t>(
        60, std::max(width, EscapeForTerminal(n.name(), 200).size() +
                                EscapeForTerminal(n.op(), 100).size() + 3));
  }
  out << "strategy: " << StrategyName(p.strategy) << "\n";
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
  if (explain && !parts.transfers.empty()) {
    out << "transfers:\n";
    for (const Transfer& t : parts.transfers) {
      out << absl::StrFormat("  %-30s %s -> %s  %s\n",
                             EscapeForTerminal(TransferLabel(g, t), 200),
                             topo.devices[t.src_device].name,
                             topo.devices[t.dst_device].name,
                             HumanBytes(t.bytes));
    }
  }
  for (const std::string& note : p.notes) {
    out << "note: " << EscapeForTerminal(note) << "\n";
  }
}

json ToJson(const PlaceOptions& o, const Graph& g, const DeviceTopology& topo,
            const Placement& p, const Partitioning& parts,
            const std::vector<std::string>& notes, const OptimizedGraph& opt) {
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
    if (o.explain) j["reason"] = p.reason[n.id()];
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
         {"consumers", t.consumers.size()}});
  }
  std::vector<std::string> all_notes = notes;
  all_notes.insert(all_notes.end(), p.notes.begin(), p.notes.end());
  return {{"model", o.model_path}, {"strategy", StrategyName(p.strategy)},
          {"batch", o.batch}, {"devices", devices}, {"nodes", nodes},
          {"estimated_step_seconds", p.estimated_step_seconds},
          {"links", links}, {"host_links", hosts},
          {"num_hosts", topo.num_hosts}, {"transfers", transfers}, {"notes", all_notes},
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

std::string Dot(const Graph& g, const DeviceTopology& topo, const Placement& p,
                const Partitioning& parts) {
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

// Runs `dot -Tsvg dot_path -o svg_path` when dot is on the PATH. Returns a
// note for the user.
std::string WriteSvg(const std::string& dot_path) {
  std::string svg = dot_path;
  if (absl::EndsWith(svg, ".dot") || absl::EndsWith(svg, ".gv")) {
    svg = svg.substr(0, svg.rfind('.'));
  }
  svg += ".svg";
  std::vector<std::string> args = {"dot", "-Tsvg", dot_path, "-o", svg};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ) != 0) {
    return "Graphviz 'dot' is not on the PATH; no SVG written";
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::StrCat("dot failed to write ", svg);
  }
  return absl::StrCat("wrote ", svg);
}

absl::StatusOr<DeviceTopology> Topology(const PlaceOptions& o,
                                        const RuntimeConfig& config) {
  if (!o.devices.empty()) return ParseDeviceSpecs(o.devices);
  // This machine's devices, as a session with `config` sees them.
  ASSIGN_OR_RETURN(MachineDevices machine,
                   PlanMachineDevices(config, DiscoverDevices()));
  return std::move(machine.topology);
}

// Places a loaded graph with `config` (environment overrides applied) and
// prints; a failed placement is an error status.
absl::Status PlaceLoaded(const PlaceOptions& o, const RuntimeConfig& config,
                         std::unique_ptr<const Graph> loaded,
                         std::vector<std::string> notes, std::ostream& out) {
  // The graph a session would run: after the config's passes, the config
  // as the flags change it.
  RuntimeConfig effective = config;
  RETURN_IF_ERROR(ApplyConfigFlags(o.config, &effective));
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
      OptimizeGraph(std::move(loaded), effective.optimization_level(),
                    PassOptionsFromConfig(effective,
                                          providers.compute().Target())));
  const Graph* graph = opt.graph.get();
  if (opt.level != OPTIMIZATION_NONE) {
    notes.push_back(absl::StrCat(
        "placing the graph after optimisation (level ",
        OptimizationLevelName(opt.level), ": ", opt.nodes_before, " -> ",
        graph->num_nodes(), " nodes", o.explain ? "" : "; --explain lists the passes",
        "; --optimization-level none places it as loaded)"));
  }
  std::vector<std::string> optimization;
  if (opt.level != OPTIMIZATION_NONE) {
    optimization = DescribeOptimization(opt, /*max_changes=*/50);
  }
  PlacerOptions options = PlacerOptionsFromConfig(effective);
  options.has_kernel = KernelCapabilityQuery();
  options.cost.batch = o.batch;
  options.pipeline_stages = !o.no_stages;
  options.record_reasons = o.explain || !o.dot_path.empty();
  if (plans_gpus && !HasGpuKernels()) {
    notes.push_back(
        "this build has no GPU kernels; planning assumes every op with a CPU "
        "kernel has a GPU kernel too");
    options.has_kernel = [](const Node& node, DeviceType) {
      return KernelRegistry::Global()->Supports(node, DeviceType::kCpu);
    };
  }
  ASSIGN_OR_RETURN(Placement p, PlaceGraph(*graph, topo, options));
  // The step `sluice run` takes (every input fed, every output fetched),
  // split as the session splits it.
  PartitionOptions po;
  po.build_graph_defs = false;
  po.batch = o.batch;
  po.host_memory_inputs = KernelHostMemoryInputs;
  ASSIGN_OR_RETURN(Partitioning parts, PartitionGraph(*graph, topo, p, po));
  if (!o.dot_path.empty()) {
    std::ofstream file(o.dot_path);
    file << Dot(*graph, topo, p, parts);
    if (!file) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write ", o.dot_path));
    }
    file.close();
    notes.push_back(absl::StrCat("wrote ", o.dot_path));
    notes.push_back(WriteSvg(o.dot_path));
  }
  if (o.json) {
    out << DumpJson(ToJson(o, *graph, topo, p, parts, notes, opt)) << "\n";
  } else {
    PrintText(*graph, topo, p, parts, notes, optimization, o.explain, out);
  }
  return absl::OkStatus();
}

// Places and prints; a failed placement is an error status.
absl::Status Place(const PlaceOptions& o, std::ostream& out) {
  std::vector<std::string> notes;
  if (!o.dot_path.empty()) RETURN_IF_ERROR(CheckOutputFile(o.dot_path, "--dot"));
  ASSIGN_OR_RETURN(RuntimeConfig config,
                   LoadEffectiveConfig(o.config.config_path, &notes));
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> loaded,
                   LoadModelGraph(o.model_path));
  return PlaceLoaded(o, config, std::move(loaded), std::move(notes), out);
}

}  // namespace

absl::StatusOr<std::string> PlaceGraphJson(PlaceOptions options,
                                           const RuntimeConfig& config,
                                           std::unique_ptr<const Graph> graph) {
  options.json = true;
  options.dot_path.clear();
  std::ostringstream out;
  RETURN_IF_ERROR(PlaceLoaded(options, config, std::move(graph), {}, out));
  return out.str();
}

void AddPlaceOptions(CLI::App* app, PlaceOptions* options) {
  app->description(
      "Place a model on devices without running it: each node's device, "
      "per device weights / peak activations / budget, the estimated step "
      "time and the bytes crossing each link.");
  app->add_option("MODEL", options->model_path, "Model file (.pb, .pbtxt or .onnx)")
      ->required()
      ->check(RegularFile());
  app->add_option("--devices", options->devices,
                  "Plan for these devices instead of this machine's, e.g. "
                  "4xgpu:80GiB or 2xgpu:16GiB,cpu, or a cluster of hosts: "
                  "2x(4xgpu:80GiB)")
      ->check(CLI::Validator(
          [](std::string& spec) -> std::string {
            if (spec.find_first_not_of(" \t") != std::string::npos) return "";
            return "empty; give devices such as 2xgpu:16GiB,cpu, or leave "
                   "the flag out to plan for this machine";
          },
          "SPEC"));
  app->add_flag("--no-stages", options->no_stages,
                "auto: place a model that no single device holds by "
                "earliest finish time (HEFT-style) instead of cutting it "
                "into pipeline stages");
  app->add_option("--batch", options->batch,
                  "Value assumed for unknown dimensions (default 1)")
      ->check(IntegerIn(1, 1000000));
  app->add_flag("--explain", options->explain,
                "Print why each node went where, and what the optimisation "
                "passes did to the graph first");
  AddConfigFlags(app, kPlaceConfigFlags, &options->config);
  app->add_option("--dot", options->dot_path,
                  "Write the placed graph as Graphviz (and an SVG beside it "
                  "when dot is installed)")
      ->check(NonEmpty());
  app->add_flag("--json", options->json, "Print JSON instead of text");
}

int RunPlace(const PlaceOptions& options, std::ostream& out,
             std::ostream& err) {
  absl::Status s = Place(options, out);
  if (s.ok()) return kExitOk;
  PrintStatusLines(err, "error", s);
  return kExitFailure;
}

int PlaceMain(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  CLI::App app;
  app.name("sluice place");
  PlaceOptions options;
  AddPlaceOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunPlace(options, out, err);
}

}  // namespace sluice
