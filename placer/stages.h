// StagePlanner: pipeline-stage slicing for a model that no single device
// holds (internal to placer/; PlaceGraph's AUTO strategy uses it). The nodes
// are laid out in one topological run order (Const and Input nodes right
// before their first consumer, which they follow); the order is cut into
// contiguous stages, stage i on the i-th device of a fixed device order, so
// every value flows from a stage to a later one and never back. Each stage is
// first filled as far as its device's budget allows (the same memory rules
// as the Scheduler: weights plus the peak of live activations), then its end
// is moved back, within a window, to the boundary that the fewest values
// cross (then the fewest bytes): so cheap shape ops stay beside their
// producer or consumer and a transformer is cut between layers.
//
//   StagePlanner planner(graph, topo, cost, constraints, rank_order,
//                        StageDeviceOrder(topo));
//   if (planner.must_split()) {
//     std::optional<StageSplit> s = planner.Plan(/*window=*/0.5);
//     ... Scheduler(graph, topo, cost, constraints, s->order, true) with
//         SchedulePolicy{.kind = kStaged, .stage_device = &s->stage_device}
//   }
//
// Borrows every argument (they must outlive the planner); thread-compatible.
#ifndef SLUICE_PLACER_STAGES_H_
#define SLUICE_PLACER_STAGES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "placer/constraints.h"
#include "placer/cost_model.h"
#include "placer/device_spec.h"

namespace sluice {

struct StageSplit {
  // The run order the Scheduler uses: a topological order.
  std::vector<int> order;
  // Per node, the device of its stage; -1 for a Const or Input that
  // follows its first consumer.
  std::vector<int> stage_device;
  // Per stage: its device and its first position in the planner's order of
  // running nodes (sources excluded).
  std::vector<int> devices;
  std::vector<int> starts;
  // Values crossing the chosen boundaries, as planned (a value crossing two
  // boundaries counts twice), and their bytes.
  int cut_values = 0;
  int64_t cut_bytes = 0;
};

// The devices stages go to, in order: fastest first (fp32 rate, then memory
// bandwidth), then the larger budget, then the topology's order, which keeps
// the GPUs of one host together in a cluster.
std::vector<int> StageDeviceOrder(const DeviceTopology& topo);

class StagePlanner {
 public:
  StagePlanner(const Graph& graph, const DeviceTopology& topo,
               const CostModel& cost, const NodeConstraints& constraints,
               const std::vector<int>& rank_order,
               std::vector<int> device_order);

  // Whether the first device of the order cannot hold every node it may
  // run (the model must be split).
  bool must_split() const { return first_stage_end_ < num_running(); }

  // Stages with each boundary moved back by up to `window` (0..1) of its
  // stage's length to the cheapest cut; nullopt when the devices run out.
  std::optional<StageSplit> Plan(double window) const;

 private:
  int num_running() const { return static_cast<int>(running_.size()); }
  // The first position from `start` that does not fit on `device` (the
  // number of positions when everything from `start` fits).
  int FillEnd(int start, int device) const;

  // Borrowed, fixed at construction.
  const Graph& graph_;
  const DeviceTopology& topo_;
  const CostModel& cost_;
  const NodeConstraints& c_;
  const std::vector<int> devices_;

  std::vector<char> deferred_;   // node follows its first consumer
  std::vector<int> running_;     // nodes that are not deferred, in order
  std::vector<int> pos_;         // node -> position in running_ (deferred:
                                 // its first consumer's)
  std::vector<int> last_use_;    // output -> last consumer position
                                 // (graph outputs: num_running())
  std::vector<int> cut_count_;   // boundary c (before position c) -> values
  std::vector<int64_t> cut_bytes_;
  int first_stage_end_ = 0;
  // FillEnd's scratch: outputs counted on the stage's device carry the
  // stage's stamp.
  mutable std::vector<int> stamp_;
  mutable int stamp_id_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_PLACER_STAGES_H_
