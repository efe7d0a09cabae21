#include "placer/baechi.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "placer/constraints.h"
#include "placer/cost_model.h"
#include "placer/schedule.h"
#include "placer/stages.h"

namespace sluice {
namespace {

// A node that computes nothing and reads nothing (Const, Input): it goes
// with its first consumer.
bool IsSource(const Graph& graph, const CostModel& cost, int v) {
  const Node& node = graph.node(v);
  return !cost.runs(v) && node.num_inputs() == 0 &&
         node.control_inputs().empty();
}

// Placement state shared by both algorithms, with Baechi's memory model.
class BaechiState {
 public:
  BaechiState(const Graph& graph, const DeviceTopology& topo,
              const CostModel& cost, const NodeConstraints& c)
      : graph_(graph),
        topo_(topo),
        cost_(cost),
        c_(c),
        dev_(graph.num_nodes(), -1),
        used_(topo.num_devices(), 0),
        holds_(topo.num_devices(),
               std::vector<char>(cost.num_outputs_total(), 0)) {}

  int dev(int v) const { return dev_[v]; }
  bool source(int v) const { return IsSource(graph_, cost_, v); }

  // Bytes placing `v` on `d` adds there: its weights, its outputs, the
  // sources it brings along and the values copied in.
  int64_t Needs(int v, int d) const {
    int64_t bytes = cost_.weight_bytes(v);
    const Node& node = graph_.node(v);
    for (int p = 0; p < node.num_outputs(); ++p) {
      bytes += cost_.output_bytes(v, p);
    }
    std::vector<int> counted;
    for (const TensorRef& in : node.inputs()) {
      const int index = cost_.output_index(in.node, in.port);
      if (holds_[d][index] ||
          std::find(counted.begin(), counted.end(), index) != counted.end()) {
        continue;
      }
      counted.push_back(index);
      // A Const's output is its weights; an Input's its feed.
      bytes += cost_.output_bytes(in.node, in.port);
    }
    return bytes;
  }

  bool Allowed(int v, int d) const { return (c_.mask[v] & DeviceBit(d)) != 0; }

  bool Fits(int v, int d) const {
    return Allowed(v, d) &&
           used_[d] + Needs(v, d) <= topo_.devices[d].memory_budget;
  }

  // Places `v` (and the unplaced sources it reads) on `d`; appends them to
  // `order`, sources first.
  void Place(int v, int d, std::vector<int>* order) {
    used_[d] += Needs(v, d);
    const Node& node = graph_.node(v);
    for (const TensorRef& in : node.inputs()) {
      holds_[d][cost_.output_index(in.node, in.port)] = 1;
      if (dev_[in.node] < 0 && source(in.node)) {
        dev_[in.node] = d;
        order->push_back(in.node);
      }
    }
    for (int p = 0; p < node.num_outputs(); ++p) {
      holds_[d][cost_.output_index(v, p)] = 1;
    }
    dev_[v] = d;
    order->push_back(v);
  }

  absl::Status NoRoom(int v) const {
    std::string budgets;
    for (int d = 0; d < topo_.num_devices(); ++d) {
      if ((c_.mask[v] & DeviceBit(d)) == 0) continue;
      absl::StrAppend(&budgets, budgets.empty() ? "" : ", ",
                      topo_.devices[d].name, " ", HumanBytes(used_[d]), " of ",
                      HumanBytes(topo_.devices[d].memory_budget),
                      " used, needs ", HumanBytes(Needs(v, d)), " more");
    }
    return absl::ResourceExhaustedError(
        absl::StrCat(graph_.node(v).DebugName(),
                     " fits on no device in Baechi's memory model (every "
                     "output and copy kept for the step): ",
                     budgets));
  }

  // Sources no node reads go to `d`.
  void PlaceUnreadSources(int d, std::vector<int>* order) {
    for (int v = 0; v < graph_.num_nodes(); ++v) {
      if (dev_[v] < 0) {
        dev_[v] = d;
        order->push_back(v);
      }
    }
  }

 private:
  const Graph& graph_;
  const DeviceTopology& topo_;
  const CostModel& cost_;
  const NodeConstraints& c_;
  std::vector<int> dev_;
  std::vector<int64_t> used_;
  std::vector<std::vector<char>> holds_;  // [device][output index]
};

// m-TOPO: topological order, each device filled before the next.
absl::Status PlaceTopo(const Graph& graph, const std::vector<int>& devices,
                       BaechiState* s, std::vector<int>* order) {
  size_t current = 0;
  for (int v : graph.topological_order()) {
    if (s->source(v)) continue;
    while (!s->Fits(v, devices[current]) && s->Allowed(v, devices[current]) &&
           current + 1 < devices.size()) {
      ++current;  // full: the next device
    }
    int d = devices[current];
    if (!s->Fits(v, d)) {
      // The current device's kernels cannot run it (or the last is full):
      // the first allowed device with room, without moving on.
      d = -1;
      for (int other : devices) {
        if (s->Fits(v, other)) {
          d = other;
          break;
        }
      }
      if (d < 0) return s->NoRoom(v);
    }
    s->Place(v, d, order);
  }
  s->PlaceUnreadSources(devices[current], order);
  return absl::OkStatus();
}

// m-ETF: of the ready nodes, the (node, device) pair that starts first.
absl::Status PlaceEtf(const Graph& graph, const DeviceTopology& topo,
                      const CostModel& cost, const std::vector<int>& devices,
                      BaechiState* s, std::vector<int>* order) {
  const int n = graph.num_nodes();
  std::vector<int> waiting(n, 0);  // unplaced predecessors (not sources)
  std::vector<double> finish(n, 0);
  std::vector<double> avail(topo.num_devices(), 0);
  std::vector<int> ready;
  for (int v = 0; v < n; ++v) {
    if (s->source(v)) continue;
    const Node& node = graph.node(v);
    for (const TensorRef& in : node.inputs()) {
      waiting[v] += s->source(in.node) ? 0 : 1;
    }
    for (int k : node.control_inputs()) waiting[v] += s->source(k) ? 0 : 1;
    if (waiting[v] == 0) ready.push_back(v);
  }
  auto start_on = [&](int v, int d) {
    double t = avail[d];
    for (const TensorRef& in : graph.node(v).inputs()) {
      const int from = s->dev(in.node);
      if (from < 0) continue;  // a source that comes along
      double arrive = finish[in.node];
      if (from != d) {
        arrive +=
            topo.TransferSeconds(from, d, cost.output_bytes(in.node, in.port));
      }
      t = std::max(t, arrive);
    }
    for (int k : graph.node(v).control_inputs()) {
      if (s->dev(k) >= 0) t = std::max(t, finish[k]);
    }
    return t;
  };
  auto release = [&](int u) {
    const Node& node = graph.node(u);
    for (int p = 0; p < node.num_outputs(); ++p) {
      for (const Consumer& k : graph.consumers(u, p)) {
        if (--waiting[k.node] == 0) ready.push_back(k.node);
      }
    }
    for (int k : graph.control_consumers(u)) {
      if (--waiting[k] == 0) ready.push_back(k);
    }
  };
  while (!ready.empty()) {
    double best = std::numeric_limits<double>::infinity();
    int best_i = -1;
    int best_d = -1;
    for (size_t i = 0; i < ready.size(); ++i) {
      const int v = ready[i];
      for (int d : devices) {
        if (!s->Fits(v, d)) continue;
        const double t = start_on(v, d);
        if (t < best || (t == best && v < ready[best_i])) {
          best = t;
          best_i = static_cast<int>(i);
          best_d = d;
        }
      }
    }
    if (best_i < 0) {
      int first = ready[0];
      for (int v : ready) first = std::min(first, v);
      return s->NoRoom(first);
    }
    const int v = ready[best_i];
    ready.erase(ready.begin() + best_i);
    s->Place(v, best_d, order);
    finish[v] = best + cost.NodeSeconds(v, topo.devices[best_d]);
    avail[best_d] = finish[v];
    release(v);
  }
  for (int v = 0; v < n; ++v) {
    if (!s->source(v) && s->dev(v) < 0) {
      return absl::InternalError(
          absl::StrCat("m-ETF left ", graph.node(v).DebugName(),
                       " unplaced (a cycle through control edges?)"));
    }
  }
  s->PlaceUnreadSources(devices[0], order);
  return absl::OkStatus();
}

}  // namespace

const char* BaechiAlgorithmName(BaechiAlgorithm algorithm) {
  return algorithm == BaechiAlgorithm::kTopo ? "m-TOPO" : "m-ETF";
}

std::optional<BaechiAlgorithm> ParseBaechiAlgorithm(std::string_view name) {
  for (BaechiAlgorithm a : {BaechiAlgorithm::kTopo, BaechiAlgorithm::kEtf}) {
    if (absl::EqualsIgnoreCase(absl::string_view(name.data(), name.size()),
                               BaechiAlgorithmName(a))) {
      return a;
    }
  }
  return std::nullopt;
}

absl::StatusOr<Placement> PlaceBaechi(const Graph& graph,
                                      const DeviceTopology& topo,
                                      const PlacerOptions& options,
                                      BaechiAlgorithm algorithm) {
  ASSIGN_OR_RETURN(NodeConstraints constraints,
                   PlacementConstraints(graph, topo, options));
  CostModel cost(graph, options.cost);
  const std::vector<int> devices = StageDeviceOrder(topo);
  BaechiState state(graph, topo, cost, constraints);
  std::vector<int> order;
  order.reserve(graph.num_nodes());
  if (algorithm == BaechiAlgorithm::kTopo) {
    RETURN_IF_ERROR(PlaceTopo(graph, devices, &state, &order));
  } else {
    RETURN_IF_ERROR(PlaceEtf(graph, topo, cost, devices, &state, &order));
  }
  // The assignment as fixed stages, scheduled as PlaceGraph's are.
  std::vector<int> stage_device(graph.num_nodes(), -1);
  for (int v = 0; v < graph.num_nodes(); ++v) {
    if (!state.source(v)) stage_device[v] = state.dev(v);
  }
  SchedulePolicy policy{
      SchedulePolicy::kStaged, devices, /*fill=*/false,
      /*strict_first=*/false,
      absl::StrCat(BaechiAlgorithmName(algorithm), " (Baechi, SoCC 2020)")};
  policy.stage_device = &stage_device;
  Scheduler scheduler(graph, topo, cost, constraints, order,
                      /*defer_sources=*/true);
  RETURN_IF_ERROR(scheduler.Run(policy, options.soft_placement));
  Placement p = scheduler.Result(options.record_reasons);
  p.strategy = PLACEMENT_AUTO;
  for (const DeviceSpec& d : topo.devices) p.device_names.push_back(d.name);
  p.notes.push_back(absl::StrCat(BaechiAlgorithmName(algorithm),
                                 ": Baechi's placement (SoCC 2020), for "
                                 "comparison; not what sessions use"));
  return p;
}

}  // namespace sluice
