#include "executor/executor.h"

#include <atomic>
#include <functional>
#include <memory>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "device/fault_injector.h"
#include "executor/step_timer.h"

namespace sluice {
namespace {

absl::Status WithNode(const Node& node, const absl::Status& s) {
  return absl::Status(s.code(),
                      absl::StrCat(node.DebugName(), ": ", s.message()));
}

// Runs one node's kernel, reading its inputs from `values` and writing its
// outputs there, timed when a timer is given; first stops the step if its
// limits say so (executor/step_limits.h). Does not release anything.
absl::Status RunNode(const PlanNode& pn, std::vector<Tensor>& values,
                     StepTimer* timer, const StepLimits* limits) {
  FaultInjector* faults = nullptr;
  if (limits != nullptr) {
    if (absl::Status s = limits->CheckBefore(*pn.node); !s.ok()) return s;
    faults = limits->faults;
  }
  if (timer == nullptr) return RunPlanNode(pn, values, nullptr, faults, limits);
  return timer->Time(pn, values, [&] {
    return RunPlanNode(pn, values, nullptr, faults, limits);
  });
}

void InitSlots(const ExecutionPlan& plan, std::vector<Tensor>& feed_values,
               std::vector<Tensor>& values) {
  values.resize(plan.num_slots);
  for (size_t i = 0; i < plan.feed_slots.size(); ++i) {
    values[plan.feed_slots[i]] = std::move(feed_values[i]);
  }
  for (const auto& [slot, value] : plan.constant_slots) values[slot] = value;
}

std::vector<Tensor> CollectFetches(const ExecutionPlan& plan,
                                   std::vector<Tensor>& values) {
  std::vector<Tensor> out;
  out.reserve(plan.fetch_slots.size());
  for (int slot : plan.fetch_slots) out.push_back(values[slot]);
  return out;
}

absl::StatusOr<std::vector<Tensor>> RunSequential(
    const ExecutionPlan& plan, std::vector<Tensor> feed_values, StepTimer* timer,
    const StepLimits* limits) {
  std::vector<Tensor> values;
  InitSlots(plan, feed_values, values);
  std::vector<int> reads = plan.slot_reads;
  auto release_unread = [&](int slot) {
    if (reads[slot] == 0) values[slot] = Tensor();
  };
  for (const PlanNode& pn : plan.nodes) {
    absl::Status s = RunNode(pn, values, timer, limits);
    if (!s.ok()) return s;
    for (int slot : pn.input_slots) {
      --reads[slot];
      release_unread(slot);
    }
    for (int p = 0; p < pn.num_outputs; ++p) release_unread(pn.output_slot + p);
  }
  return CollectFetches(plan, values);
}

// State shared by the threads of one parallel step.
class ParallelStep {
 public:
  ParallelStep(const ExecutionPlan& plan, std::vector<Tensor> feed_values,
               const Scheduler& scheduler, StepTimer* timer,
               const StepLimits* limits)
      : plan_(plan),
        scheduler_(scheduler),
        timer_(timer),
        limits_(limits),
        pending_(new std::atomic<int>[plan.nodes.size()]),
        reads_(new std::atomic<int>[plan.num_slots]),
        remaining_(static_cast<int>(plan.nodes.size())) {
    InitSlots(plan, feed_values, values_);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      pending_[i].store(plan.nodes[i].num_predecessors,
                        std::memory_order_relaxed);
    }
    for (int i = 0; i < plan.num_slots; ++i) {
      reads_[i].store(plan.slot_reads[i], std::memory_order_relaxed);
    }
  }

  absl::StatusOr<std::vector<Tensor>> Run() {
    if (plan_.nodes.empty()) return CollectFetches(plan_, values_);
    for (size_t i = 1; i < plan_.roots.size(); ++i) Schedule(plan_.roots[i]);
    if (!plan_.roots.empty()) Process(plan_.roots[0]);
    done_.WaitForNotification();
    absl::MutexLock lock(&mu_);
    if (!status_.ok()) return status_;
    return CollectFetches(plan_, values_);
  }

 private:
  // Runs node `index`, then whatever it made ready: one successor inline,
  // the others on the scheduler.
  void Process(int index) {
    while (index >= 0) {
      const PlanNode& pn = plan_.nodes[index];
      if (!failed_.load(std::memory_order_acquire)) {
        absl::Status s = RunNode(pn, values_, timer_, limits_);
        if (!s.ok()) Fail(s);
      }
      for (int slot : pn.input_slots) Release(slot);
      for (int p = 0; p < pn.num_outputs; ++p) {
        if (reads_[pn.output_slot + p].load(std::memory_order_acquire) == 0) {
          values_[pn.output_slot + p] = Tensor();
        }
      }
      int next = -1;
      for (int succ : pn.successors) {
        if (pending_[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          if (next < 0) {
            next = succ;
          } else {
            Schedule(succ);
          }
        }
      }
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        done_.Notify();
      }
      index = next;
    }
  }

  void Fail(const absl::Status& s) {
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = s;
    failed_.store(true, std::memory_order_release);
  }

  // Hands node `index` to the scheduler. A scheduling the step's fault
  // injector fails stops the step (naming the node), and the node is then
  // processed here, skipped like every node after a failure, so that the
  // step still drains.
  void Schedule(int index) {
    if (limits_ != nullptr && limits_->faults != nullptr) {
      absl::Status s = limits_->faults->Check(FaultKind::kSchedule,
                                              "inter-op thread pool");
      if (!s.ok()) {
        Fail(WithNode(*plan_.nodes[index].node, s));
        Process(index);
        return;
      }
    }
    scheduler_([this, index] { Process(index); });
  }

  void Release(int slot) {
    if (reads_[slot].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      values_[slot] = Tensor();
    }
  }

  const ExecutionPlan& plan_;
  const Scheduler& scheduler_;
  StepTimer* const timer_;  // null: no stats
  const StepLimits* const limits_;  // null: none
  std::vector<Tensor> values_;
  std::unique_ptr<std::atomic<int>[]> pending_;
  std::unique_ptr<std::atomic<int>[]> reads_;
  std::atomic<int> remaining_;
  std::atomic<bool> failed_{false};
  absl::Notification done_;
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status RunPlanNode(const PlanNode& pn, std::vector<Tensor>& values,
                         std::vector<Tensor>* keep_alive,
                         FaultInjector* faults, const StepLimits* limits) {
  absl::InlinedVector<Tensor, 4> inputs;
  inputs.reserve(pn.input_slots.size());
  for (int slot : pn.input_slots) inputs.push_back(values[slot]);
  absl::Span<Tensor> outputs(values.data() + pn.output_slot, pn.num_outputs);
  OpKernelContext ctx(pn.node, pn.device, inputs, outputs);
  ctx.set_keep_alive(keep_alive);
  ctx.set_step_limits(limits);
  absl::Status s;
  if (faults == nullptr) {
    s = pn.kernel->Compute(&ctx);
  } else {
    // The launch fails after the kernel ran, as a CUDA launch error is seen
    // once the launch returns: its outputs exist and must be let go.
    FaultScope scope(faults);
    s = pn.kernel->Compute(&ctx);
    if (s.ok()) s = faults->Check(FaultKind::kKernel, "kernel launch");
  }
  if (!s.ok()) return WithNode(*pn.node, s);
  for (int p = 0; p < pn.num_outputs; ++p) {
    if (!outputs[p].valid()) {
      return WithNode(*pn.node, absl::InternalError(absl::StrCat(
                                    "kernel did not produce output ", p)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> RunPlan(const ExecutionPlan& plan,
                                            std::vector<Tensor> feed_values,
                                            const Scheduler& scheduler,
                                            StepStats* stats,
                                            const StepLimits* limits) {
  if (limits != nullptr && !limits->active()) limits = nullptr;
  std::unique_ptr<StepTimer> timer;
  if (stats != nullptr) {
    absl::StatusOr<std::unique_ptr<StepTimer>> started =
        StepTimer::Start(plan, stats);
    if (!started.ok()) return started.status();
    timer = *std::move(started);
  }
  absl::StatusOr<std::vector<Tensor>> out;
  if (plan.sequential || !scheduler) {
    out = RunSequential(plan, std::move(feed_values), timer.get(), limits);
  } else {
    ParallelStep step(plan, std::move(feed_values), scheduler, timer.get(),
                      limits);
    out = step.Run();
  }
  if (timer != nullptr && out.ok()) {
    if (absl::Status s = timer->Finish(); !s.ok()) return s;
  }
  return out;
}

}  // namespace sluice
