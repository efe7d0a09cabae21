// Scheduler: list scheduling over a fixed order with exact memory checks.
#include "placer/schedule.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace sluice {

void Scheduler::Eval::Clear() {
  finish = 0;
  new_weights = 0;
  intervals.clear();
  recv_outputs.clear();
}

int64_t Scheduler::Eval::NewBytes() const {
  int64_t b = new_weights;
  for (const LiveInterval& iv : intervals) b += iv.bytes;
  return b;
}

Scheduler::Scheduler(const Graph& graph, const DeviceTopology& topo,
                     const CostModel& cost, const NodeConstraints& constraints,
                     const std::vector<int>& order, bool defer_sources)
    : graph_(graph),
      topo_(topo),
      cost_(cost),
      c_(constraints),
      order_(order),
      defer_sources_(defer_sources),
      n_(graph.num_nodes()),
      num_devices_(topo.num_devices()) {}  // Run() initialises

void Scheduler::Init() {
  pos_.assign(n_, 0);
  for (int i = 0; i < n_; ++i) pos_[order_[i]] = i;
  const int outputs = cost_.num_outputs_total();
  last_use_.assign(outputs, 0);
  remaining_.assign(outputs, 0);
  copies_.assign(outputs, 0);
  deferred_.assign(n_, 0);
  for (const Node& node : graph_.nodes()) {
    bool has_consumer = false;
    for (int p = 0; p < node.num_outputs(); ++p) {
      int o = cost_.output_index(node.id(), p);
      last_use_[o] = pos_[node.id()];
      for (const Consumer& k : graph_.consumers(node.id(), p)) {
        last_use_[o] = std::max(last_use_[o], pos_[k.node]);
        ++remaining_[o];
        has_consumer = true;
      }
    }
    const bool source = node.op() == "Const" || node.op() == "Input";
    deferred_[node.id()] =
        defer_sources_ && source && has_consumer && c_.group[node.id()] < 0;
  }
  for (const GraphOutput& out : graph_.outputs()) {
    last_use_[cost_.output_index(out.tensor.node, out.tensor.port)] = n_;
  }
  group_weight_.assign(c_.group_names.size(), 0);
  group_members_.assign(c_.group_names.size(), {});
  for (int v = 0; v < n_; ++v) {
    if (c_.group[v] < 0) continue;
    group_weight_[c_.group[v]] += cost_.weight_bytes(v);
    group_members_[c_.group[v]].push_back(v);
  }
  dev_.assign(n_, -1);
  finish_.assign(n_, 0);
  avail_.assign(num_devices_, 0);
  precharged_.assign(n_, 0);
  group_dev_.assign(c_.group_names.size(), -1);
  mem_.clear();
  for (const DeviceSpec& d : topo_.devices) {
    mem_.emplace_back(n_ + 1, d.memory_budget);
  }
  why_.assign(n_, PlaceWhy{});
  extra_notes_.assign(n_, std::string());
  fill_cursor_ = 0;
}

DeviceMask Scheduler::AllowedNow(int v) const {
  int g = c_.group[v];
  if (g >= 0 && group_dev_[g] >= 0) return DeviceBit(group_dev_[g]);
  return c_.mask[v];
}

bool Scheduler::Evaluate(int v, int d, Eval* e) {
  e->Clear();
  const DeviceSpec& spec = topo_.devices[d];
  double start = avail_[d];
  const Node& node = graph_.node(v);
  for (const TensorRef& in : node.inputs()) {
    const int u = in.node;
    const int o = cost_.output_index(u, in.port);
    const int64_t bytes = cost_.output_bytes_flat(o);
    bool seen = std::find(e->recv_outputs.begin(), e->recv_outputs.end(), o) !=
                e->recv_outputs.end();
    if (dev_[u] < 0) {  // a deferred source: it comes along to d
      if (seen) continue;
      e->recv_outputs.push_back(o);
      if (cost_.weight_bytes(u) > 0) {
        e->new_weights += cost_.weight_bytes(u);
      } else {
        e->intervals.push_back({pos_[u], last_use_[o], bytes});
      }
      continue;
    }
    if (dev_[u] == d) {
      start = std::max(start, finish_[u]);
      continue;
    }
    start = std::max(start,
                     finish_[u] + topo_.TransferSeconds(dev_[u], d, bytes));
    if ((copies_[o] & DeviceBit(d)) || seen) continue;
    e->recv_outputs.push_back(o);
    e->intervals.push_back({pos_[u], last_use_[o], bytes});
  }
  for (int u : node.control_inputs()) {
    if (dev_[u] >= 0) start = std::max(start, finish_[u]);
  }
  e->finish = start + cost_.NodeSeconds(v, spec);
  if (cost_.weight_bytes(v) > 0) {
    if (!precharged_[v]) e->new_weights += cost_.weight_bytes(v);
  } else {
    for (int p = 0; p < node.num_outputs(); ++p) {
      int o = cost_.output_index(v, p);
      e->intervals.push_back(
          {pos_[v], last_use_[o], cost_.output_bytes_flat(o)});
    }
  }
  int g = c_.group[v];
  if (g >= 0 && group_dev_[g] < 0) {
    // The first member fixes the group's device and pays all its weights.
    e->new_weights += group_weight_[g] - cost_.weight_bytes(v);
  }
  return mem_[d].Fits(e->new_weights, e->intervals);
}

void Scheduler::Commit(int v, int d, const Eval& e) {
  dev_[v] = d;
  finish_[v] = e.finish;
  avail_[d] = std::max(avail_[d], e.finish);
  mem_[d].AddWeights(e.new_weights);
  for (const LiveInterval& iv : e.intervals) {
    mem_[d].AddActivation(iv.first, iv.last, iv.bytes);
  }
  const Node& node = graph_.node(v);
  for (int p = 0; p < node.num_outputs(); ++p) {
    copies_[cost_.output_index(v, p)] |= DeviceBit(d);
  }
  int g = c_.group[v];
  if (g >= 0 && group_dev_[g] < 0) {
    group_dev_[g] = d;
    for (int u : group_members_[g]) precharged_[u] = 1;
  }
  for (const TensorRef& in : node.inputs()) {
    const int u = in.node;
    const int o = cost_.output_index(u, in.port);
    if (dev_[u] < 0) {  // deferred source follows v
      dev_[u] = d;
      copies_[o] |= DeviceBit(d);
      why_[u] = {PlaceWhy::kFollows, -1, v};
    } else {
      copies_[o] |= DeviceBit(d);
    }
    if (--remaining_[o] == 0) Finalize(in);
  }
}

void Scheduler::Finalize(const TensorRef& ref) {
  // Every consumer is placed: each copy now ends at its last consumer on its
  // own device rather than at the output's last consumer anywhere.
  const int u = ref.node;
  const int o = cost_.output_index(u, ref.port);
  const int last = last_use_[o];
  const int64_t bytes = cost_.output_bytes_flat(o);
  int end[64];
  for (DeviceMask m = copies_[o]; m != 0; m &= m - 1) {
    end[__builtin_ctzll(m)] = -1;
  }
  for (const Consumer& k : graph_.consumers(u, ref.port)) {
    int d = dev_[k.node];
    end[d] = std::max(end[d], pos_[k.node]);
  }
  for (DeviceMask m = copies_[o]; m != 0; m &= m - 1) {
    const int d = __builtin_ctzll(m);
    int e = end[d];
    if (d == dev_[u]) {
      // Weights are not activations; a graph output stays to the end.
      if (cost_.weight_bytes(u) > 0 || last == n_) continue;
      e = std::max(e, pos_[u]);
    }
    if (e >= 0 && e < last) mem_[d].AddActivation(e + 1, last, -bytes);
  }
}

PlaceWhy Scheduler::ConstrainedWhy(int v, int d) const {
  PlaceWhy why;
  int g = c_.group[v];
  if (g >= 0 && group_dev_[g] >= 0 && group_dev_[g] == d) {
    why.kind = PlaceWhy::kColocated;
  } else if (c_.request[v] == RequestKind::kFull ||
             c_.request[v] == RequestKind::kPartial) {
    why.kind = PlaceWhy::kRequested;
  } else if (num_devices_ == 1) {
    why.kind = PlaceWhy::kOnlyDevice;
  } else {
    why.kind = PlaceWhy::kOnlyKernel;
  }
  return why;
}

int Scheduler::ChooseEarliest(int v, DeviceMask mask, Eval* best,
                              PlaceWhy* why) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double best_f = kInf, second_f = kInf, full_f = kInf;
  int best_d = -1, second_d = -1, full_d = -1;
  for (DeviceMask m = mask; m != 0; m &= m - 1) {
    const int d = __builtin_ctzll(m);
    if (!Evaluate(v, d, &cur_)) {
      if (cur_.finish < full_f) full_f = cur_.finish, full_d = d;
      continue;
    }
    if (cur_.finish < best_f) {
      second_f = best_f, second_d = best_d;
      best_f = cur_.finish, best_d = d;
      std::swap(*best, cur_);
    } else if (cur_.finish < second_f) {
      second_f = cur_.finish, second_d = d;
    }
  }
  if (best_d < 0) return -1;
  if ((mask & (mask - 1)) == 0) {
    *why = ConstrainedWhy(v, best_d);
  } else if (full_d >= 0 && full_f < best_f) {
    *why = {PlaceWhy::kBudgetFull, static_cast<int16_t>(full_d), -1, best_f,
            full_f, mem_[full_d].weight_bytes() +
                        mem_[full_d].peak_activation_bytes()};
  } else {
    *why = {PlaceWhy::kEarliest, static_cast<int16_t>(second_d), -1, best_f,
            second_f, 0};
  }
  return best_d;
}

int Scheduler::ChoosePreferred(int v, DeviceMask mask,
                               const SchedulePolicy& policy, Eval* best,
                               PlaceWhy* why) {
  const int p = static_cast<int>(policy.preference.size());
  const int start = policy.fill ? fill_cursor_ : 0;
  int full_d = -1;
  for (int i = 0; i < p; ++i) {
    const int idx = (start + i) % p;
    const int d = policy.preference[idx];
    if (!(mask & DeviceBit(d))) continue;
    if (!Evaluate(v, d, best)) {
      if (policy.strict_first && d == policy.preference[0]) return -2;
      if (full_d < 0) full_d = d;
      continue;
    }
    if (policy.fill && (mask & DeviceBit(policy.preference[fill_cursor_]))) {
      fill_cursor_ = idx;
    }
    if ((mask & (mask - 1)) == 0) {
      *why = ConstrainedWhy(v, d);
    } else if (full_d >= 0) {
      *why = {PlaceWhy::kSpilled, static_cast<int16_t>(full_d), -1,
              best->finish, 0,
              mem_[full_d].weight_bytes() + mem_[full_d].peak_activation_bytes()};
    } else {
      *why = {PlaceWhy::kPreferred, -1, -1, best->finish, 0, 0};
    }
    return d;
  }
  return -1;
}

int Scheduler::ChooseStaged(int v, DeviceMask mask,
                            const SchedulePolicy& policy, Eval* best,
                            PlaceWhy* why) {
  const int d = (*policy.stage_device)[v];
  if (d < 0 || !(mask & DeviceBit(d))) {
    return ChoosePreferred(v, mask, policy, best, why);
  }
  if (!Evaluate(v, d, best)) return -2;
  *why = (mask & (mask - 1)) == 0
             ? ConstrainedWhy(v, d)
             : PlaceWhy{PlaceWhy::kPreferred, -1, -1, best->finish, 0, 0};
  return d;
}

absl::Status Scheduler::PlaceSourceNow(int u, DeviceMask prefer,
                                      bool soft) {
  // A deferred source that cannot follow its consumer everywhere: place it
  // now, on a device its consumer may use if possible.
  DeviceMask mask = c_.mask[u];
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (DeviceMask pass : {mask & prefer, mask & ~prefer}) {
      for (DeviceMask m = pass; m != 0; m &= m - 1) {
        const int d = __builtin_ctzll(m);
        if (!Evaluate(u, d, &best_)) continue;
        Commit(u, d, best_);
        why_[u] = (mask & (mask - 1)) == 0
                      ? ConstrainedWhy(u, d)
                      : PlaceWhy{PlaceWhy::kEarliest, -1, -1, best_.finish};
        return absl::OkStatus();
      }
    }
    if (attempt == 0) {
      DeviceMask wider = 0;
      RETURN_IF_ERROR(RelaxFullRequest(u, mask, soft, &wider));
      if (wider == 0) break;
      mask = wider;
    }
  }
  return NoRoom(u, mask);
}

absl::Status Scheduler::RelaxFullRequest(int v, DeviceMask mask, bool soft,
                                         DeviceMask* wider) {
  *wider = 0;
  const bool requested = c_.request[v] == RequestKind::kFull ||
                         c_.request[v] == RequestKind::kPartial;
  const int g = c_.group[v];
  // Group members keep the group's devices.
  if (!requested || g >= 0) return absl::OkStatus();
  // Rule 4: the requested devices are full.
  std::string what = absl::StrCat("requested ",
                                  graph_.node(v).requested_device(),
                                  " but it has no room (",
                                  MaskToString(topo_, mask), ")");
  if (!soft) {
    return absl::ResourceExhaustedError(absl::StrCat(
        graph_.node(v).DebugName(), ": ", what,
        "; possible devices: ", MaskToString(topo_, c_.kernel_mask[v]),
        " (soft placement is off)"));
  }
  extra_notes_[v] = absl::StrCat(what, " (soft placement)");
  *wider = c_.kernel_mask[v];
  return absl::OkStatus();
}

absl::Status Scheduler::PlaceNode(int v, const SchedulePolicy& policy,
                                  bool soft) {
  if (dev_[v] >= 0 || deferred_[v]) return absl::OkStatus();
  DeviceMask mask = AllowedNow(v);
  for (const TensorRef& in : graph_.node(v).inputs()) {
    const int u = in.node;
    if (dev_[u] < 0 && (c_.mask[u] & mask) != mask) {
      RETURN_IF_ERROR(PlaceSourceNow(u, mask, soft));
    }
  }
  PlaceWhy why;
  auto choose = [&](DeviceMask m) {
    switch (policy.kind) {
      case SchedulePolicy::kEarliestFinish:
        return ChooseEarliest(v, m, &best_, &why);
      case SchedulePolicy::kStaged:
        return ChooseStaged(v, m, policy, &best_, &why);
      default:
        return ChoosePreferred(v, m, policy, &best_, &why);
    }
  };
  int d = choose(mask);
  if (d == -2 && policy.kind == SchedulePolicy::kStaged) {
    return absl::ResourceExhaustedError(absl::StrCat(
        graph_.node(v).DebugName(), " does not fit on its stage's device ",
        topo_.devices[(*policy.stage_device)[v]].name));
  }
  if (d == -2) {
    return absl::ResourceExhaustedError(absl::StrCat(
        graph_.node(v).DebugName(), " does not fit on ",
        topo_.devices[policy.preference[0]].name));
  }
  if (d < 0) {
    DeviceMask wider = 0;
    RETURN_IF_ERROR(RelaxFullRequest(v, mask, soft, &wider));
    if (wider != 0) d = choose(mask = wider);
  }
  if (d < 0) return NoRoom(v, mask);
  Commit(v, d, best_);
  why_[v] = why;
  return absl::OkStatus();
}

absl::Status Scheduler::NoRoom(int v, DeviceMask mask) {
  int64_t needed = std::numeric_limits<int64_t>::max();
  Eval e;
  for (DeviceMask m = mask; m != 0; m &= m - 1) {
    Evaluate(v, __builtin_ctzll(m), &e);
    needed = std::min(needed, e.NewBytes());
  }
  std::vector<std::string> devices;
  for (int d = 0; d < num_devices_; ++d) {
    devices.push_back(absl::StrCat(
        topo_.devices[d].name, " ",
        HumanBytes(mem_[d].weight_bytes() + mem_[d].peak_activation_bytes()),
        " used of ", HumanBytes(mem_[d].budget())));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "the model does not fit: ", graph_.node(v).DebugName(), " needs ",
      HumanBytes(needed), " (", needed, " bytes) more on one of ",
      MaskToString(topo_, mask), " and none has room; the model's weights are ",
      HumanBytes(cost_.total_weight_bytes()), " (",
      cost_.total_weight_bytes(), " bytes); per device, used of budget: ",
      absl::StrJoin(devices, ", ")));
}

absl::Status Scheduler::Run(const SchedulePolicy& policy, bool soft) {
  Init();
  label_ = policy.label;
  for (int v : order_) RETURN_IF_ERROR(PlaceNode(v, policy, soft));
  return absl::OkStatus();
}

std::string Scheduler::ReasonText(int v) const {
  const Node& node = graph_.node(v);
  const PlaceWhy& w = why_[v];
  const std::string& here = topo_.devices[dev_[v]].name;
  auto other = [&] { return topo_.devices[w.other_device].name; };
  std::string core;
  switch (w.kind) {
    case PlaceWhy::kRequested:
      core = absl::StrCat("requested ", node.requested_device());
      break;
    case PlaceWhy::kFollows:
      core = absl::StrCat(cost_.weight_bytes(v) > 0 ? "weights" : "input",
                          " placed with first consumer '",
                          graph_.node(w.other_node).name(), "'");
      break;
    case PlaceWhy::kColocated:
      core = absl::StrCat("colocation group '", c_.group_names[c_.group[v]],
                          "'");
      break;
    case PlaceWhy::kOnlyKernel:
      core = absl::StrCat("only ", MaskToString(topo_, c_.kernel_mask[v]),
                          " has a kernel");
      break;
    case PlaceWhy::kOnlyDevice:
      core = "the only device";
      break;
    case PlaceWhy::kEarliest:
      core = absl::StrCat("earliest finish: ", HumanSeconds(w.best_s), " on ",
                          here);
      if (w.other_device >= 0) {
        absl::StrAppend(&core, " vs ", HumanSeconds(w.other_s), " on ",
                        other());
      }
      break;
    case PlaceWhy::kBudgetFull:
      core = absl::StrCat(
          other(), " budget full: ", HumanBytes(w.other_used), " of ",
          HumanBytes(topo_.devices[w.other_device].memory_budget),
          "; earliest finish with room: ", HumanSeconds(w.best_s), " on ",
          here, " vs ", HumanSeconds(w.other_s), " on ", other());
      break;
    case PlaceWhy::kPreferred:
      core = label_;
      break;
    case PlaceWhy::kSpilled:
      core = absl::StrCat(other(), " budget full: ", HumanBytes(w.other_used),
                          " of ",
                          HumanBytes(topo_.devices[w.other_device].memory_budget),
                          "; next device in order");
      break;
  }
  std::vector<std::string> parts;
  if (auto it = c_.notes.find(v); it != c_.notes.end()) {
    parts.push_back(it->second);
  }
  if (!extra_notes_[v].empty()) parts.push_back(extra_notes_[v]);
  const DeviceMask all = num_devices_ == 64 ? ~DeviceMask{0}
                                            : DeviceBit(num_devices_) - 1;
  const bool choice = w.kind == PlaceWhy::kEarliest ||
                      w.kind == PlaceWhy::kBudgetFull ||
                      w.kind == PlaceWhy::kPreferred ||
                      w.kind == PlaceWhy::kSpilled;
  if (choice && c_.request[v] == RequestKind::kPartial) {
    parts.push_back(absl::StrCat("requested ", node.requested_device()));
  } else if (choice && c_.kernel_mask[v] != all) {
    parts.push_back(absl::StrCat("kernels only on ",
                                 MaskToString(topo_, c_.kernel_mask[v])));
  }
  parts.push_back(std::move(core));
  return absl::StrJoin(parts, "; ");
}

Placement Scheduler::Result(bool record_reasons) const {
  Placement p;
  p.device_of_node = dev_;
  p.run_order = order_;
  p.devices.resize(num_devices_);
  for (int d = 0; d < num_devices_; ++d) {
    p.devices[d].weight_bytes = mem_[d].weight_bytes();
    p.devices[d].peak_activation_bytes = mem_[d].peak_activation_bytes();
    p.devices[d].budget = mem_[d].budget();
  }
  for (int v = 0; v < n_; ++v) {
    DeviceUsage& u = p.devices[dev_[v]];
    ++u.num_nodes;
    u.busy_seconds += cost_.NodeSeconds(v, topo_.devices[dev_[v]]);
    p.estimated_step_seconds = std::max(p.estimated_step_seconds, finish_[v]);
  }
  for (int v = 0; v < n_; ++v) {
    if (auto it = c_.notes.find(v); it != c_.notes.end()) {
      p.notes.push_back(
          absl::StrCat(graph_.node(v).DebugName(), ": ", it->second));
    }
    if (!extra_notes_[v].empty()) {
      p.notes.push_back(absl::StrCat(graph_.node(v).DebugName(), ": ",
                                     extra_notes_[v]));
    }
  }
  if (record_reasons) {
    p.reason.resize(n_);
    for (int v = 0; v < n_; ++v) p.reason[v] = ReasonText(v);
  }
  return p;
}

}  // namespace sluice
