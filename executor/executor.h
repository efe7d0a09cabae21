// RunPlan: executes one step of a compiled plan. Nodes run in dataflow order;
// a chain runs on the calling thread, anything wider runs its independent
// branches on the inter-op scheduler. Each value slot is released as soon as
// its last reader has run, so peak memory follows the live set.
//
//   ASSIGN_OR_RETURN(std::vector<Tensor> fetched,
//                    RunPlan(*plan, std::move(feed_values), scheduler));
//
// Thread-safe: concurrent calls on one plan share nothing mutable.
#ifndef SLUICE_EXECUTOR_EXECUTOR_H_
#define SLUICE_EXECUTOR_EXECUTOR_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "executor/plan.h"
#include "executor/step_limits.h"
#include "executor/step_stats.h"

namespace sluice {

// Runs a closure on another thread (the session's inter-op pool).
using Scheduler = std::function<void(std::function<void()>)>;

// `feed_values` are in the order of the plan's feeds. Returns the fetched
// values in fetch order. A kernel error stops the step (nodes not yet started
// are skipped) and is returned with the node's name and op.
// With `stats`, every node's host slice is recorded, and the GPU slice of
// every node whose work runs on a GPU stream (see step_stats.h); a failure
// to time the GPUs fails the step. With `limits` (not owned), the step
// stops before a node once its deadline has passed or it is cancelled, as
// on a kernel error, and its fault injector (tests) fails the call it chose
// (executor/step_limits.h): a scheduling it fails stops the step as a
// kernel error does, naming the node that was not scheduled.
absl::StatusOr<std::vector<Tensor>> RunPlan(const ExecutionPlan& plan,
                                            std::vector<Tensor> feed_values,
                                            const Scheduler& scheduler,
                                            StepStats* stats = nullptr,
                                            const StepLimits* limits = nullptr);

// Runs one node's kernel, reading its inputs from `values` (indexed by
// slot) and writing its outputs there; the error names the node. With
// `keep_alive`, the kernel's temps are also kept there (GPU graph capture).
// With `faults` (tests; not owned), it is the thread's injector while the
// kernel runs (device/fault_injector.h), and the kernel's launch is one of
// its calls. `limits` (not owned; null: none) are the step's, handed to the
// kernel (OpKernelContext::step_limits) for the subgraphs it runs; this
// function checks nothing of them (RunPlan does, before each node).
absl::Status RunPlanNode(const PlanNode& pn, std::vector<Tensor>& values,
                         std::vector<Tensor>* keep_alive = nullptr,
                         FaultInjector* faults = nullptr,
                         const StepLimits* limits = nullptr);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_EXECUTOR_H_
