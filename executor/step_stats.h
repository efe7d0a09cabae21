// StepStats: where one step's time went, node by node. Filled by RunPlan
// when the caller asks (Session::RunWithStats); `sluice bench` aggregates it
// per op and per node.
//
//   StepStats stats;
//   ASSIGN_OR_RETURN(auto out, session->RunWithStats(feeds, {}, &stats));
//   for (const NodeTiming& t : stats.nodes) ... t.seconds() ...
//
// While stats are collected, each node on a GPU is followed by a
// synchronisation of its device, so its time is the kernel's, not only the
// launch's: a profiled step is slower than a plain one. Filled by the step's
// threads under a mutex; read it after the step returns.
#ifndef SLUICE_EXECUTOR_STEP_STATS_H_
#define SLUICE_EXECUTOR_STEP_STATS_H_

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "device/device.h"
#include "graph/graph.h"

namespace sluice {

struct NodeTiming {
  const Node* node = nullptr;    // for copies: the producer of the value
  const Device* device = nullptr;
  bool is_copy = false;          // a transfer the plan inserted
  double start_seconds = 0;      // since the step started
  double end_seconds = 0;
  size_t thread = 0;             // a hash of the host thread that ran it
  double seconds() const { return end_seconds - start_seconds; }
};

struct StepStats {
  absl::Mutex mu;
  std::vector<NodeTiming> nodes ABSL_GUARDED_BY(mu);
  double step_seconds = 0;  // wall time of the whole step
};

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_STEP_STATS_H_
