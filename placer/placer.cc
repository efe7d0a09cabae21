// PlaceGraph: constraints, costs, run order by upward rank, and the three
// strategies over the Scheduler.
#include "placer/placer.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "device/device.h"
#include "placer/schedule.h"
#include "placer/stages.h"

namespace sluice {
namespace {

// Mean transfer cost between distinct devices: latency + bytes * inv_bw.
struct MeanLink {
  double latency = 0;
  double inv_bw = 0;
};

MeanLink MeanLinkCost(const DeviceTopology& topo) {
  MeanLink m;
  int pairs = 0;
  for (int a = 0; a < topo.num_devices(); ++a) {
    for (int b = 0; b < topo.num_devices(); ++b) {
      const Link& l = topo.link(a, b);
      if (a == b || l.kind == LinkKind::kSame) continue;
      m.latency += l.latency_s;
      m.inv_bw += 1.0 / l.bytes_per_s;
      ++pairs;
    }
  }
  if (pairs > 0) {
    m.latency /= pairs;
    m.inv_bw /= pairs;
  }
  return m;
}

// Nodes by decreasing upward rank (mean time of the node plus the longest
// mean-cost path to a sink), ties in topological order. Upward rank never
// increases along an edge, so this is a topological order.
std::vector<int> RankOrder(const Graph& graph, const DeviceTopology& topo,
                           const CostModel& cost,
                           const NodeConstraints& c) {
  const int n = graph.num_nodes();
  const MeanLink link = MeanLinkCost(topo);
  std::vector<double> rank(n, 0);
  absl::Span<const int> topo_order = graph.topological_order();
  for (int i = n - 1; i >= 0; --i) {
    const int v = topo_order[i];
    double mean = 0;
    int count = 0;
    for (DeviceMask m = c.mask[v]; m != 0; m &= m - 1) {
      mean += cost.NodeSeconds(v, topo.devices[__builtin_ctzll(m)]);
      ++count;
    }
    double tail = 0;
    const Node& node = graph.node(v);
    for (int p = 0; p < node.num_outputs(); ++p) {
      double comm = link.latency +
                    static_cast<double>(cost.output_bytes(v, p)) * link.inv_bw;
      for (const Consumer& k : graph.consumers(v, p)) {
        tail = std::max(tail, comm + rank[k.node]);
      }
    }
    for (int k : graph.control_consumers(v)) tail = std::max(tail, rank[k]);
    rank[v] = mean / std::max(count, 1) + tail;
  }
  std::vector<std::pair<double, int>> keyed(n);
  for (int i = 0; i < n; ++i) keyed[i] = {-rank[topo_order[i]], i};
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = topo_order[keyed[i].second];
  return order;
}

// Devices fastest first (fp32 rate, then memory bandwidth, then index).
std::vector<int> BySpeed(const DeviceTopology& topo) {
  std::vector<int> d(topo.num_devices());
  std::iota(d.begin(), d.end(), 0);
  std::stable_sort(d.begin(), d.end(), [&](int a, int b) {
    const DeviceSpec& x = topo.devices[a];
    const DeviceSpec& y = topo.devices[b];
    if (x.flops_per_s != y.flops_per_s) return x.flops_per_s > y.flops_per_s;
    return x.bytes_per_s > y.bytes_per_s;
  });
  return d;
}

// `first`, then the others in `rest` order.
std::vector<int> Preference(int first, const std::vector<int>& rest) {
  std::vector<int> p = {first};
  for (int d : rest) {
    if (d != first) p.push_back(d);
  }
  return p;
}

// The configured default device, else the first GPU, else the first CPU.
absl::StatusOr<int> DefaultDevice(const DeviceTopology& topo,
                                  const std::string& name) {
  if (!name.empty()) {
    int d = topo.Find(name);
    if (d < 0) {
      std::vector<std::string> names;
      for (const DeviceSpec& s : topo.devices) names.push_back(s.name);
      return absl::InvalidArgumentError(
          absl::StrCat("default device '", name, "' is not among ",
                       absl::StrJoin(names, ", ")));
    }
    return d;
  }
  for (int d = 0; d < topo.num_devices(); ++d) {
    if (topo.devices[d].type == DeviceType::kGpu) return d;
  }
  return 0;
}

// Whether a default device or a request names a CPU ("/cpu:0", "cpu:1",
// "/device:CPU:0").
bool NamesCpu(const std::string& name) {
  absl::StatusOr<DeviceName> parsed = ParseDeviceName(name);
  return parsed.ok() && parsed->type == DeviceType::kCpu;
}

bool DefaultsToCpu(const PlacerOptions& options) {
  return (options.strategy == PLACEMENT_MANUAL ||
          options.strategy == PLACEMENT_SINGLE) &&
         NamesCpu(options.default_device);
}

// Whether rule 1's GPUs-first restriction applies to this placement: a CPU
// default device asks for the CPU on behalf of every unrequested node.
bool GpuFirstApplies(const DeviceTopology& topo, const PlacerOptions& options) {
  if (!options.gpu_first || DefaultsToCpu(options)) return false;
  for (const DeviceSpec& d : topo.devices) {
    if (d.type == DeviceType::kGpu) return true;
  }
  return false;
}

// `base`, with the CPUs' kernels hidden (NOT_FOUND: not a refusal worth a
// note) for nodes a GPU can run, unless they request the CPU.
KernelQuery GpuFirst(KernelQuery base) {
  return [base = std::move(base)](const Node& node,
                                  DeviceType type) -> absl::Status {
    absl::Status s = base(node, type);
    if (!s.ok() || type == DeviceType::kGpu) return s;
    if (NamesCpu(node.requested_device()) ||
        !base(node, DeviceType::kGpu).ok()) {
      return absl::OkStatus();
    }
    return absl::NotFoundError("a GPU can run it (GPUs first)");
  };
}

struct Inputs {
  const Graph& graph;
  const DeviceTopology& topo;
  const CostModel& cost;
  const NodeConstraints& constraints;
  const std::vector<int>& order;
  const PlacerOptions& options;
  // Set when the model is known not to fit on any single device.
  bool* fits_no_device = nullptr;
};

absl::StatusOr<Placement> RunPolicy(const Inputs& in, bool defer,
                                    const SchedulePolicy& policy) {
  Scheduler s(in.graph, in.topo, in.cost, in.constraints, in.order, defer);
  RETURN_IF_ERROR(s.Run(policy, in.options.soft_placement));
  return s.Result(in.options.record_reasons);
}

// How far back a stage's end may move to find a cheaper cut, tried in turn
// until the stages fit (a later stage gets what an earlier one gives up).
constexpr double kStageWindows[] = {0.5, 0.3, 0.15, 0.05, 0};

// AUTO for a model that no single device holds: contiguous pipeline stages
// (stages.h). nullopt when the model fits on the first device or no split
// fits; the earliest-finish placement is used then.
std::optional<Placement> PlaceStages(const Inputs& in) {
  StagePlanner planner(in.graph, in.topo, in.cost, in.constraints, in.order,
                       StageDeviceOrder(in.topo));
  if (!planner.must_split()) return std::nullopt;
  // The first stage's device is the largest of the fastest; where every
  // device is of its type with no larger budget, none holds the model.
  const DeviceSpec& first = in.topo.devices[StageDeviceOrder(in.topo)[0]];
  bool others_differ = false;
  for (const DeviceSpec& d : in.topo.devices) {
    others_differ = others_differ || d.type != first.type ||
                    d.memory_budget > first.memory_budget;
  }
  if (!others_differ && in.fits_no_device != nullptr) {
    *in.fits_no_device = true;
  }
  for (double window : kStageWindows) {
    std::optional<StageSplit> split = planner.Plan(window);
    if (!split) continue;  // out of devices: a narrower window fills fuller
    SchedulePolicy staged{SchedulePolicy::kStaged, BySpeed(in.topo),
                          /*fill=*/false, /*strict_first=*/false,
                          "pipeline stage: no single device holds the model, "
                          "so it is cut into contiguous stages in run order "
                          "where few values cross"};
    staged.stage_device = &split->stage_device;
    Scheduler s(in.graph, in.topo, in.cost, in.constraints, split->order,
                /*defer_sources=*/true);
    if (!s.Run(staged, in.options.soft_placement).ok()) continue;
    Placement p = s.Result(in.options.record_reasons);
    std::vector<std::string> stages;
    for (size_t i = 0; i < split->devices.size(); ++i) {
      stages.push_back(in.topo.devices[split->devices[i]].name);
    }
    p.notes.push_back(absl::StrFormat(
        "auto: no single device holds the model; %d pipeline stages in run "
        "order (%s), %d value%s crossing between them per step (%s)",
        static_cast<int>(stages.size()), absl::StrJoin(stages, " -> "),
        split->cut_values, split->cut_values == 1 ? "" : "s",
        HumanBytes(split->cut_bytes)));
    return p;
  }
  return std::nullopt;
}

absl::StatusOr<Placement> PlaceAuto(const Inputs& in) {
  if (in.options.pipeline_stages) {
    if (std::optional<Placement> staged = PlaceStages(in)) {
      return *std::move(staged);
    }
  }
  SchedulePolicy eft;
  absl::StatusOr<Placement> p = RunPolicy(in, /*defer=*/true, eft);
  if (p.ok() || !absl::IsResourceExhausted(p.status())) return p;
  // The greedy pass ran out of room; fill devices one after another.
  SchedulePolicy fill{SchedulePolicy::kPreference, BySpeed(in.topo),
                      /*fill=*/true, /*strict_first=*/false,
                      "filled in order of speed"};
  absl::StatusOr<Placement> filled = RunPolicy(in, /*defer=*/true, fill);
  if (!filled.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        p.status().message(), " (filling the devices in order failed too)"));
  }
  filled->notes.push_back(absl::StrCat(
      "earliest-finish placement ran out of room (", p.status().message(),
      "); devices were filled in order of speed instead"));
  return filled;
}

absl::StatusOr<Placement> PlaceSingle(const Inputs& in) {
  std::vector<int> candidates = BySpeed(in.topo);
  if (!in.options.default_device.empty()) {
    ASSIGN_OR_RETURN(int d, DefaultDevice(in.topo, in.options.default_device));
    candidates = Preference(d, candidates);
  }
  std::vector<std::string> tried;
  for (int c : candidates) {
    SchedulePolicy policy{SchedulePolicy::kPreference,
                          Preference(c, candidates), /*fill=*/false,
                          /*strict_first=*/true,
                          absl::StrCat("single device ", in.topo.devices[c].name,
                                       ": the fastest that holds the model")};
    absl::StatusOr<Placement> p = RunPolicy(in, /*defer=*/false, policy);
    if (p.ok() || !absl::IsResourceExhausted(p.status())) return p;
    tried.push_back(absl::StrCat(in.topo.devices[c].name, " (budget ",
                                 HumanBytes(in.topo.devices[c].memory_budget),
                                 "): ", p.status().message()));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "no single device holds the model (weights ",
      HumanBytes(in.cost.total_weight_bytes()), ", ",
      in.cost.total_weight_bytes(), " bytes): ", absl::StrJoin(tried, "; ")));
}

absl::StatusOr<Placement> PlaceManual(const Inputs& in) {
  ASSIGN_OR_RETURN(int d, DefaultDevice(in.topo, in.options.default_device));
  std::vector<int> rest(in.topo.num_devices());
  std::iota(rest.begin(), rest.end(), 0);
  SchedulePolicy policy{SchedulePolicy::kPreference, Preference(d, rest),
                        /*fill=*/false, /*strict_first=*/false,
                        absl::StrCat("default device ", in.topo.devices[d].name)};
  return RunPolicy(in, /*defer=*/false, policy);
}

}  // namespace

PlacerOptions PlacerOptionsFromConfig(const RuntimeConfig& config) {
  PlacerOptions o;
  o.strategy = config.placement_strategy() == PLACEMENT_DEFAULT
                   ? PLACEMENT_AUTO
                   : config.placement_strategy();
  o.soft_placement =
      config.has_soft_placement() ? config.soft_placement() : true;
  o.default_device = config.default_device();
  o.gpu_first = true;
  o.min_spread_gain = kRuntimeMinSpreadGain;
  return o;
}

bool StaysOnCpus(const Graph& graph, const PlacerOptions& options) {
  if (options.strategy != PLACEMENT_MANUAL || !NamesCpu(options.default_device)) {
    return false;
  }
  for (const Node& node : graph.nodes()) {
    if (node.requested_device().empty()) continue;
    // An unparseable request is left to PlaceGraph to report.
    absl::StatusOr<DeviceName> parsed = ParseDeviceName(node.requested_device());
    if (!parsed.ok() || parsed->type != DeviceType::kCpu) return false;
  }
  return true;
}

std::string StrategyName(PlacementStrategy strategy) {
  switch (strategy) {
    case PLACEMENT_SINGLE: return "single";
    case PLACEMENT_MANUAL: return "manual";
    default: return "auto";
  }
}

absl::StatusOr<PlacementStrategy> ParseStrategy(std::string_view name) {
  std::string s = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  if (s == "auto" || s == "default") return PLACEMENT_AUTO;
  if (s == "single") return PLACEMENT_SINGLE;
  if (s == "manual") return PLACEMENT_MANUAL;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown placement strategy '", s, "' (expected auto, single or manual)"));
}

namespace {

absl::StatusOr<Placement> PlaceOnce(const Graph& graph,
                                    const DeviceTopology& topo,
                                    const PlacerOptions& options,
                                    bool* fits_no_device = nullptr) {
  ASSIGN_OR_RETURN(NodeConstraints constraints,
                   PlacementConstraints(graph, topo, options));
  CostModel cost(graph, options.cost);
  std::vector<int> order = RankOrder(graph, topo, cost, constraints);
  Inputs in{graph, topo, cost, constraints, order, options, fits_no_device};
  PlacementStrategy strategy = options.strategy == PLACEMENT_DEFAULT
                                   ? PLACEMENT_AUTO
                                   : options.strategy;
  absl::StatusOr<Placement> p;
  switch (strategy) {
    case PLACEMENT_SINGLE: p = PlaceSingle(in); break;
    case PLACEMENT_MANUAL: p = PlaceManual(in); break;
    default: p = PlaceAuto(in); break;
  }
  if (p.ok()) p->strategy = strategy;
  return p;
}

int DevicesUsed(const Placement& p) {
  int used = 0;
  for (const DeviceUsage& u : p.devices) used += u.num_nodes > 0;
  return used;
}

// AUTO's rule 6: a spread placement only when it is worth it.
absl::StatusOr<Placement> PlaceKeepingOneDeviceUnlessWorthIt(
    const Graph& graph, const DeviceTopology& topo,
    const PlacerOptions& options) {
  bool fits_no_device = false;
  absl::StatusOr<Placement> spread =
      PlaceOnce(graph, topo, options, &fits_no_device);
  const bool is_auto = options.strategy == PLACEMENT_AUTO ||
                       options.strategy == PLACEMENT_DEFAULT;
  if (!is_auto || options.min_spread_gain <= 0 || !spread.ok() ||
      fits_no_device) {
    return spread;
  }
  const int used = DevicesUsed(*spread);
  if (used <= 1) return spread;
  PlacerOptions single_options = options;
  single_options.strategy = PLACEMENT_SINGLE;
  absl::StatusOr<Placement> single = PlaceOnce(graph, topo, single_options);
  if (!single.ok() || DevicesUsed(*single) >= used ||
      spread->estimated_step_seconds <
          (1 - options.min_spread_gain) * single->estimated_step_seconds) {
    return spread;
  }
  single->notes.push_back(absl::StrFormat(
      "auto: kept on one device; spreading over %d would save only %.0f%% of "
      "the estimated step (%.1f us vs %.1f us)",
      used,
      100 * (1 - spread->estimated_step_seconds /
                     std::max(single->estimated_step_seconds, 1e-12)),
      spread->estimated_step_seconds * 1e6,
      single->estimated_step_seconds * 1e6));
  return single;
}

}  // namespace

absl::StatusOr<NodeConstraints> PlacementConstraints(
    const Graph& graph, const DeviceTopology& topo,
    const PlacerOptions& options) {
  if (static_cast<int>(topo.links.size()) !=
      topo.num_devices() * topo.num_devices()) {
    return absl::InvalidArgumentError(
        "device topology has no link table (call BuildLinks)");
  }
  KernelQuery has_kernel = options.has_kernel;
  if (has_kernel && GpuFirstApplies(topo, options)) {
    has_kernel = GpuFirst(std::move(has_kernel));
  }
  return ComputeConstraints(graph, topo, has_kernel, options.soft_placement,
                            options.colocation_groups);
}

absl::StatusOr<Placement> PlaceGraph(const Graph& graph,
                                     const DeviceTopology& topo,
                                     const PlacerOptions& options) {
  absl::StatusOr<Placement> p =
      PlaceKeepingOneDeviceUnlessWorthIt(graph, topo, options);
  if (p.ok()) {
    for (const DeviceSpec& d : topo.devices) p->device_names.push_back(d.name);
  }
  return p;
}

}  // namespace sluice
