// StepTimer: fills a StepStats (executor/step_stats.h) while RunPlan runs one
// step. Host slices come from steady_clock; nodes whose work runs on a GPU
// stream are bracketed by two marks on that stream's GpuTimeline
// (device/gpu_timeline.h), resolved into GPU slices when the step ends.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<StepTimer> timer,
//                    StepTimer::Start(plan, &stats));
//   RETURN_IF_ERROR(timer->Time(pn, values, [&] { return Compute(pn); }));
//   ...
//   RETURN_IF_ERROR(timer->Finish());
//
// While a GPU node is bracketed, no other node is enqueued on that GPU (a
// lock per GPU), so each slice holds exactly its node's work. Thread-safe.
#ifndef SLUICE_EXECUTOR_STEP_TIMER_H_
#define SLUICE_EXECUTOR_STEP_TIMER_H_

#include <chrono>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "device/gpu_timeline.h"
#include "executor/plan.h"
#include "executor/step_stats.h"

namespace sluice {

class StepTimer {
 public:
  // Synchronises every GPU the plan uses and starts a timeline on each.
  static absl::StatusOr<std::unique_ptr<StepTimer>> Start(
      const ExecutionPlan& plan, StepStats* stats);

  // Runs `compute` (which runs `pn`'s kernel on `values`) and records the
  // node: its slices, the shapes of its inputs and outputs and its output
  // bytes. Returns what `compute` returned, or a timeline error.
  absl::Status Time(const PlanNode& pn, const std::vector<Tensor>& values,
                    absl::FunctionRef<absl::Status()> compute);

  // Ends the step: waits for the GPUs' marks and fills in the GPU slices
  // and step_seconds.
  absl::Status Finish();

 private:
  struct Track {  // one GPU's timeline
    GpuDevice* gpu = nullptr;
    std::unique_ptr<GpuTimeline> timeline;
    absl::Mutex mu;  // held while a node's work is enqueued on this GPU
  };
  using Clock = std::chrono::steady_clock;

  explicit StepTimer(StepStats* stats) : stats_(stats) {}
  double Now() const;
  // The GPU track and stream `pn`'s work runs on; null for host-only work.
  Track* TrackFor(const PlanNode& pn, GpuStream* stream);

  StepStats* const stats_;
  std::vector<std::unique_ptr<Track>> tracks_;
  Clock::time_point start_;
};

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_STEP_TIMER_H_
