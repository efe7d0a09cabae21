// StagePlanner: fill each device in run order, then cut where little crosses.
#include "placer/stages.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "placer/constants_where_read.h"
#include "placer/memory_tracker.h"

namespace sluice {

std::vector<int> StageDeviceOrder(const DeviceTopology& topo) {
  std::vector<int> d(topo.num_devices());
  std::iota(d.begin(), d.end(), 0);
  std::stable_sort(d.begin(), d.end(), [&](int a, int b) {
    const DeviceSpec& x = topo.devices[a];
    const DeviceSpec& y = topo.devices[b];
    if (x.flops_per_s != y.flops_per_s) return x.flops_per_s > y.flops_per_s;
    if (x.bytes_per_s != y.bytes_per_s) return x.bytes_per_s > y.bytes_per_s;
    return x.memory_budget > y.memory_budget;
  });
  return d;
}

StagePlanner::StagePlanner(const Graph& graph, const DeviceTopology& topo,
                           const CostModel& cost,
                           const NodeConstraints& constraints,
                           const std::vector<int>& rank_order,
                           std::vector<int> device_order)
    : graph_(graph),
      topo_(topo),
      cost_(cost),
      c_(constraints),
      devices_(std::move(device_order)) {
  const int n = graph.num_nodes();
  // Deferred exactly as the Scheduler defers them (defer_sources = true).
  deferred_.assign(n, 0);
  for (const Node& node : graph.nodes()) {
    bool has_consumer = false;
    for (int p = 0; p < node.num_outputs() && !has_consumer; ++p) {
      has_consumer = !graph.consumers(node.id(), p).empty();
    }
    const bool source = node.op() == "Const" || node.op() == "Input";
    deferred_[node.id()] = source && has_consumer && c_.group[node.id()] < 0;
  }
  pos_.assign(n, 0);
  for (int v : rank_order) {
    if (deferred_[v]) continue;
    pos_[v] = num_running();
    running_.push_back(v);
  }
  const int m = num_running();
  for (int v = 0; v < n; ++v) {
    if (!deferred_[v]) continue;
    int first = m;
    for (int p = 0; p < graph.node(v).num_outputs(); ++p) {
      for (const Consumer& k : graph.consumers(v, p)) {
        first = std::min(first, pos_[k.node]);
      }
    }
    pos_[v] = first;
  }
  // Last use per output, and which boundaries each value crosses: a value
  // made at position p and last read at L > p crosses boundaries p+1..L.
  last_use_.assign(cost.num_outputs_total(), 0);
  std::vector<int> count_diff(m + 2, 0);
  std::vector<int64_t> bytes_diff(m + 2, 0);
  for (const Node& node : graph.nodes()) {
    const int v = node.id();
    for (int p = 0; p < node.num_outputs(); ++p) {
      const int o = cost.output_index(v, p);
      int last = pos_[v];
      for (const Consumer& k : graph.consumers(v, p)) {
        last = std::max(last, pos_[k.node]);
      }
      last_use_[o] = last;
      // A small constant read after a cut is held on both sides
      // (placer/constants_where_read.h): it does not cross.
      if (last > pos_[v] &&
          !HeldWhereRead(node, cost.output_bytes_flat(o),
                         /*host_memory_end=*/false)) {
        count_diff[pos_[v] + 1] += 1;
        count_diff[last + 1] -= 1;
        bytes_diff[pos_[v] + 1] += cost.output_bytes_flat(o);
        bytes_diff[last + 1] -= cost.output_bytes_flat(o);
      }
    }
  }
  for (const GraphOutput& out : graph.outputs()) {
    last_use_[cost.output_index(out.tensor.node, out.tensor.port)] = m;
  }
  cut_count_.assign(m + 1, 0);
  cut_bytes_.assign(m + 1, 0);
  int count = 0;
  int64_t bytes = 0;
  for (int c = 0; c <= m; ++c) {
    count += count_diff[c];
    bytes += bytes_diff[c];
    cut_count_[c] = count;
    cut_bytes_[c] = bytes;
  }
  first_stage_end_ = devices_.empty() ? 0 : FillEnd(0, devices_[0]);
}

int StagePlanner::FillEnd(int start, int device) const {
  const int m = num_running();
  const DeviceMask bit = DeviceBit(device);
  const int64_t budget = topo_.devices[device].memory_budget;
  // Positions relative to `start`. A value live past the current position
  // is live at it too (every interval starts at or before it), so the peak
  // over positions up to the current one is the peak over all: intervals
  // are clipped to the tracker's last position, and the tracker doubles
  // (re-adding them) when the scan reaches its end.
  int size = std::min(m - start + 1, 1024);
  std::optional<MemoryTracker> mem(std::in_place, size, budget);
  int64_t weights = 0;
  std::vector<LiveInterval> all;  // every interval added, unclipped
  ++stamp_id_;
  if (stamp_.size() != static_cast<size_t>(cost_.num_outputs_total())) {
    stamp_.assign(cost_.num_outputs_total(), 0);
  }
  std::vector<LiveInterval> intervals;
  for (int e = start; e < m; ++e) {
    const int v = running_[e];
    if (!(c_.mask[v] & bit)) continue;  // runs elsewhere in any case
    if (e - start >= size) {
      size = std::min(m - start + 1, 2 * size);
      mem.emplace(size, budget);
      mem->AddWeights(weights);
      for (const LiveInterval& iv : all) {
        mem->AddActivation(iv.first, std::min(iv.last, size - 1), iv.bytes);
      }
    }
    const Node& node = graph_.node(v);
    int64_t new_weights = 0;
    intervals.clear();
    for (const TensorRef& in : node.inputs()) {
      const int o = cost_.output_index(in.node, in.port);
      if (stamp_[o] == stamp_id_) continue;
      stamp_[o] = stamp_id_;
      if (deferred_[in.node] && cost_.weight_bytes(in.node) > 0) {
        new_weights += cost_.weight_bytes(in.node);
      } else {
        // Received from an earlier stage (or a fed input): live from the
        // stage's start to its last use, as the Scheduler counts a copy.
        intervals.push_back(
            {0, last_use_[o] - start, cost_.output_bytes_flat(o)});
      }
    }
    if (cost_.weight_bytes(v) > 0) {
      new_weights += cost_.weight_bytes(v);
    } else {
      for (int p = 0; p < node.num_outputs(); ++p) {
        const int o = cost_.output_index(v, p);
        intervals.push_back({e - start, std::max(e, last_use_[o]) - start,
                             cost_.output_bytes_flat(o)});
      }
    }
    std::vector<LiveInterval> clipped = intervals;
    for (LiveInterval& iv : clipped) iv.last = std::min(iv.last, size - 1);
    if (!mem->Fits(new_weights, clipped)) return e;
    for (int p = 0; p < node.num_outputs(); ++p) {
      stamp_[cost_.output_index(v, p)] = stamp_id_;
    }
    mem->AddWeights(new_weights);
    weights += new_weights;
    for (const LiveInterval& iv : clipped) {
      mem->AddActivation(iv.first, iv.last, iv.bytes);
    }
    all.insert(all.end(), intervals.begin(), intervals.end());
  }
  return m;
}

std::optional<StageSplit> StagePlanner::Plan(double window) const {
  const int m = num_running();
  StageSplit split;
  int start = 0;
  size_t next_device = 0;
  while (start < m) {
    if (next_device >= devices_.size()) return std::nullopt;
    const int d = devices_[next_device++];
    const int end = start == 0 ? first_stage_end_ : FillEnd(start, d);
    if (end == start) continue;  // not even one node fits: the next device
    split.devices.push_back(d);
    split.starts.push_back(start);
    if (end == m) break;
    // The cheapest boundary in [lo, end]: fewest values, then fewest bytes,
    // then the latest (the fuller the earlier, faster devices).
    const int lo = std::max(
        start + 1, end - static_cast<int>(window * (end - start)));
    int best = end;
    for (int c = end - 1; c >= lo; --c) {
      if (cut_count_[c] < cut_count_[best] ||
          (cut_count_[c] == cut_count_[best] &&
           cut_bytes_[c] < cut_bytes_[best])) {
        best = c;
      }
    }
    split.cut_values += cut_count_[best];
    split.cut_bytes += cut_bytes_[best];
    start = best;
  }
  // The run order, each deferred source just before its first consumer.
  const int n = graph_.num_nodes();
  split.stage_device.assign(n, -1);
  std::vector<std::vector<int>> sources_before(m + 1);
  for (int v = 0; v < n; ++v) {
    if (deferred_[v]) sources_before[pos_[v]].push_back(v);
  }
  split.order.reserve(n);
  size_t stage = 0;
  for (int e = 0; e <= m; ++e) {
    for (int s : sources_before[e]) split.order.push_back(s);
    if (e == m) break;
    while (stage + 1 < split.starts.size() && split.starts[stage + 1] <= e) {
      ++stage;
    }
    split.stage_device[running_[e]] = split.devices[stage];
    split.order.push_back(running_[e]);
  }
  return split;
}

}  // namespace sluice
