// Scheduler: the placer's inner loop (internal to placer/). Walks the nodes
// in a fixed run order, gives each a device by one of two policies (earliest
// finish, or a device preference list), tracks every device's memory with a
// MemoryTracker so no budget is exceeded, and records a compact reason per
// node. placer.cc builds the order and drives the strategies.
//
//   Scheduler s(graph, topo, cost, constraints, order, /*defer_sources=*/true);
//   RETURN_IF_ERROR(s.Run(SchedulePolicy{.kind = SchedulePolicy::kEarliest}));
//   Placement p = s.Result(/*record_reasons=*/true);
//
// Borrows every argument; they must outlive the Scheduler. Thread-compatible.
#ifndef SLUICE_PLACER_SCHEDULE_H_
#define SLUICE_PLACER_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graph/graph.h"
#include "placer/constraints.h"
#include "placer/cost_model.h"
#include "placer/device_spec.h"
#include "placer/memory_tracker.h"
#include "placer/placer.h"

namespace sluice {

struct SchedulePolicy {
  enum Kind { kEarliestFinish, kPreference, kStaged };
  Kind kind = kEarliestFinish;
  // kPreference: devices in the order to try.
  std::vector<int> preference;
  // kPreference: keep using the device the last node went to before the
  // earlier ones (fill devices one after another: a pipeline split).
  bool fill = false;
  // kPreference: a node allowed on preference[0] that does not fit there
  // fails the run (SINGLE checks whether one device holds everything).
  bool strict_first = false;
  // How reasons describe a preference choice: "default device", "single
  // device", "filled in order".
  std::string label;
  // kStaged: per node, the device of its pipeline stage (stages.h); a node
  // that may run there and does not fit fails the run (RESOURCE_EXHAUSTED),
  // one that may not run there goes by `preference`. Borrowed.
  const std::vector<int>* stage_device = nullptr;
};

// Why a node went where it did, compactly; formatted at the end.
struct PlaceWhy {
  enum Kind : uint8_t {
    kRequested, kFollows, kColocated, kOnlyKernel, kOnlyDevice,
    kEarliest, kBudgetFull, kPreferred, kSpilled,
  };
  Kind kind = kEarliest;
  int16_t other_device = -1;  // runner-up, or the full device
  int other_node = -1;        // the consumer followed, the group's first
  double best_s = 0;          // finish time on the chosen device
  double other_s = 0;         // finish time on other_device
  int64_t other_used = 0;     // bytes in use on the full device
};

class Scheduler {
 public:
  // `order` is a topological order; `defer_sources` lets Const and Input
  // nodes follow their first consumer.
  Scheduler(const Graph& graph, const DeviceTopology& topo,
            const CostModel& cost, const NodeConstraints& constraints,
            const std::vector<int>& order, bool defer_sources);

  // Places every node. RESOURCE_EXHAUSTED when a node fits nowhere (or,
  // with strict_first, not on the preferred device); INVALID_ARGUMENT when
  // soft placement is off and a requested device is full.
  absl::Status Run(const SchedulePolicy& policy, bool soft_placement);

  // REQUIRES: Run returned OK.
  Placement Result(bool record_reasons) const;

 private:
  // What placing one node on one device would cost and need.
  struct Eval {
    double finish = 0;
    int64_t new_weights = 0;
    std::vector<LiveInterval> intervals;
    std::vector<int> recv_outputs;  // outputs that get a copy on the device
    void Clear();
    int64_t NewBytes() const;
  };

  void Init();
  absl::Status PlaceNode(int v, const SchedulePolicy& policy, bool soft);
  // Evaluates v on d; false when d lacks room.
  bool Evaluate(int v, int d, Eval* e);
  void Commit(int v, int d, const Eval& e);
  void Finalize(const TensorRef& ref);
  absl::Status PlaceSourceNow(int u, DeviceMask prefer, bool soft);
  // Soft placement for a node whose requested devices (`mask`) are full:
  // sets *wider to the devices to try instead (0: nothing to relax), or
  // fails when soft placement is off.
  absl::Status RelaxFullRequest(int v, DeviceMask mask, bool soft,
                                DeviceMask* wider);
  PlaceWhy ConstrainedWhy(int v, int d) const;
  DeviceMask AllowedNow(int v) const;
  int ChooseEarliest(int v, DeviceMask mask, Eval* e, PlaceWhy* why);
  int ChoosePreferred(int v, DeviceMask mask, const SchedulePolicy& policy,
                      Eval* e, PlaceWhy* why);
  // kStaged: the stage's device, -2 when it has no room, else by preference.
  int ChooseStaged(int v, DeviceMask mask, const SchedulePolicy& policy,
                   Eval* e, PlaceWhy* why);
  absl::Status NoRoom(int v, DeviceMask mask);
  std::string ReasonText(int v) const;

  // Borrowed, fixed at construction.
  const Graph& graph_;
  const DeviceTopology& topo_;
  const CostModel& cost_;
  const NodeConstraints& c_;
  const std::vector<int>& order_;
  const bool defer_sources_;
  const int n_;
  const int num_devices_;

  // Derived once in Init().
  std::vector<int> pos_;            // node -> position in order_
  std::vector<int> last_use_;       // output -> last consumer position
  std::vector<char> deferred_;      // node follows its first consumer
  std::vector<int64_t> group_weight_;
  std::vector<std::vector<int>> group_members_;

  // Placement state.
  std::vector<int> dev_;
  std::vector<double> finish_;
  std::vector<double> avail_;
  std::vector<int> remaining_;      // output -> consumer edges unplaced
  std::vector<DeviceMask> copies_;  // output -> devices holding it
  std::vector<char> precharged_;    // Const whose group paid its weight
  std::vector<int> group_dev_;
  std::vector<MemoryTracker> mem_;
  std::vector<PlaceWhy> why_;
  std::vector<std::string> extra_notes_;  // per node, rare
  int fill_cursor_ = 0;
  std::string label_;  // the policy's label, for reasons
  Eval cur_, best_;  // scratch, reused across nodes
};

}  // namespace sluice

#endif  // SLUICE_PLACER_SCHEDULE_H_
