#include "executor/gpu_graph_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/copy_kernel.h"
#include "kernels/subgraph_kernel.h"

namespace sluice {
namespace {

bool IsGpu(const Device* d) { return d->type() == DeviceType::kGpu; }

// Bytes of the distinct device buffers among `values` and `temps`.
int64_t DeviceBytes(const std::vector<Tensor>& values,
                    const std::vector<Tensor>& temps) {
  std::vector<const void*> seen;
  int64_t bytes = 0;
  for (const auto* list : {&values, &temps}) {
    for (const Tensor& t : *list) {
      if (!t.valid() || t.on_host() || t.buffer() == nullptr) continue;
      const void* b = t.buffer().get();
      if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
      seen.push_back(b);
      bytes += static_cast<int64_t>(t.buffer()->bytes());
    }
  }
  return bytes;
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::unique_ptr<GpuGraphRunner> GpuGraphRunner::ForPlan(
    std::shared_ptr<const ExecutionPlan> plan, std::string* why_not) {
  auto no = [why_not](std::string why) {
    if (why_not != nullptr) *why_not = std::move(why);
    return nullptr;
  };
  GpuDevice* gpu = nullptr;
  std::vector<int> feed_copies, kernels, fetch_copies;
  for (size_t i = 0; i < plan->nodes.size(); ++i) {
    const PlanNode& pn = plan->nodes[i];
    if (!pn.is_copy) {
      if (!IsGpu(pn.device)) {
        return no(absl::StrCat(pn.node->name(), " runs on ", pn.device->name()));
      }
      if (gpu != nullptr && pn.device != gpu) return no("the plan uses two GPUs");
      if (dynamic_cast<const SubgraphKernel*>(pn.kernel.get()) != nullptr) {
        // Its subgraphs' steps allocate and free within the step, and Loop
        // waits for the GPU: nothing a recorded graph could replay.
        return no(absl::StrCat(pn.node->name(), " runs subgraphs (",
                               pn.node->op(), ")"));
      }
      gpu = static_cast<GpuDevice*>(pn.device);
      for (int slot : pn.input_slots) {
        if (Contains(plan->feed_slots, slot)) {
          return no(absl::StrCat(pn.node->name(),
                                 " reads a fed value in host memory"));
        }
      }
      kernels.push_back(static_cast<int>(i));
      continue;
    }
    const Device* src = static_cast<const CopyKernel*>(pn.kernel.get())->src();
    if (!IsGpu(src) && IsGpu(pn.device) &&
        Contains(plan->feed_slots, pn.input_slots[0])) {
      feed_copies.push_back(static_cast<int>(i));
    } else if (IsGpu(src) && !IsGpu(pn.device)) {
      fetch_copies.push_back(static_cast<int>(i));
    } else {
      return no(absl::StrCat("a copy from ", src->name(), " to ",
                             pn.device->name(), " inside the step"));
    }
  }
  if (gpu == nullptr) return no("no kernel runs on a GPU");
  // Copies to the host run after the graph: only the caller may read them.
  for (int i : fetch_copies) {
    const int slot = plan->nodes[i].output_slot;
    for (int k : kernels) {
      if (Contains(plan->nodes[k].input_slots, slot)) {
        return no(absl::StrCat(plan->nodes[k].node->name(),
                               " reads a value copied to the host"));
      }
    }
  }
  for (int i : feed_copies) {
    if (plan->nodes[i].device != gpu) return no("a feed goes to another GPU");
  }
  for (int i : fetch_copies) {
    if (static_cast<const CopyKernel*>(plan->nodes[i].kernel.get())->src() != gpu) {
      return no("a result comes from another GPU");
    }
  }
  std::unique_ptr<GpuGraphRunner> runner(new GpuGraphRunner(std::move(plan), gpu));
  runner->feed_copies_ = std::move(feed_copies);
  runner->kernels_ = std::move(kernels);
  runner->fetch_copies_ = std::move(fetch_copies);
  return runner;
}

std::string GpuGraphRunner::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::Run(
    std::vector<Tensor> feed_values, const Scheduler& scheduler,
    bool may_record) {
  if (!mu_.TryLock()) {  // another step is using the graph's buffers
    return RunPlan(*plan_, std::move(feed_values), scheduler);
  }
  absl::StatusOr<std::vector<Tensor>> out;
  switch (state_) {
    case State::kOff:
      mu_.Unlock();
      return RunPlan(*plan_, std::move(feed_values), scheduler);
    case State::kWarmUp:
      out = RunPlan(*plan_, std::move(feed_values), scheduler);
      if (out.ok()) {
        state_ = State::kRecord;
        wants_to_record_.store(true, std::memory_order_relaxed);
      }
      break;
    case State::kRecord: {
      if (!may_record) {
        mu_.Unlock();
        return RunPlan(*plan_, std::move(feed_values), scheduler);
      }
      wants_to_record_.store(false, std::memory_order_relaxed);
      std::vector<Tensor> again = feed_values;  // for an ordinary step
      out = Record(std::move(feed_values));
      if (out.ok()) {
        state_ = State::kReplay;
        active_.store(true, std::memory_order_relaxed);
        replays_.fetch_add(1, std::memory_order_relaxed);
        held_bytes_.store(DeviceBytes(values_, temps_),
                          std::memory_order_relaxed);
        break;
      }
      // Nothing is kept; this step and the later ones run the ordinary way.
      failure_ = std::string(out.status().message());
      graph_.reset();
      values_.clear();
      temps_.clear();
      state_ = State::kOff;
      mu_.Unlock();
      return RunPlan(*plan_, std::move(again), scheduler);
    }
    case State::kReplay:
      out = Replay(std::move(feed_values));
      if (out.ok()) replays_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  mu_.Unlock();
  return out;
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::Record(
    std::vector<Tensor> feed_values) {
  const ExecutionPlan& plan = *plan_;
  values_.assign(plan.num_slots, Tensor());
  for (size_t i = 0; i < plan.feed_slots.size(); ++i) {
    values_[plan.feed_slots[i]] = std::move(feed_values[i]);
  }
  for (const auto& [slot, value] : plan.constant_slots) values_[slot] = value;
  // The feeds' GPU buffers are made here, outside the recording; replays
  // copy into the same buffers.
  for (int i : feed_copies_) RETURN_IF_ERROR(RunPlanNode(plan.nodes[i], values_));
  // The graph's GEMMs get a cuBLAS workspace of their own, so a replay never
  // writes scratch that a GEMM of a concurrent ordinary step is using
  // (device/gpu_graph.h).
  const int64_t workspace_bytes = static_cast<int64_t>(
      std::max<size_t>(gpu_->cublas_workspace_bytes(), kArenaAlignment));
  ASSIGN_OR_RETURN(Tensor workspace, Tensor::Create(DT_UINT8,
                                                    Shape({workspace_bytes}),
                                                    gpu_->allocator()));
  temps_.push_back(workspace);
  RETURN_IF_ERROR(BeginGpuCapture(gpu_, workspace));
  absl::Status s;
  for (int i : kernels_) {
    s = RunPlanNode(plan.nodes[i], values_, &temps_);
    if (!s.ok()) break;
  }
  absl::StatusOr<std::unique_ptr<GpuGraph>> graph = EndGpuCapture(gpu_);
  RETURN_IF_ERROR(s);
  RETURN_IF_ERROR(graph.status());
  graph_ = *std::move(graph);
  RETURN_IF_ERROR(graph_->Launch());
  return FetchResults();
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::Replay(
    std::vector<Tensor> feed_values) {
  const ExecutionPlan& plan = *plan_;
  for (size_t i = 0; i < plan.feed_slots.size(); ++i) {
    values_[plan.feed_slots[i]] = std::move(feed_values[i]);
  }
  for (int i : feed_copies_) {
    const PlanNode& pn = plan.nodes[i];
    // The step's plan signature fixes every feed's shape, so the bytes fit.
    RETURN_IF_ERROR(gpu_->CopyHostToDevice(values_[pn.input_slots[0]],
                                           &values_[pn.output_slot]));
  }
  RETURN_IF_ERROR(graph_->Launch());
  return FetchResults();
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::FetchResults() {
  const ExecutionPlan& plan = *plan_;
  for (int i : fetch_copies_) RETURN_IF_ERROR(RunPlanNode(plan.nodes[i], values_));
  std::vector<Tensor> out;
  out.reserve(plan.fetch_slots.size());
  for (int slot : plan.fetch_slots) out.push_back(values_[slot]);
  // Let go of host memory: the caller's feeds and the results.
  for (int slot : plan.feed_slots) values_[slot] = Tensor();
  for (int i : fetch_copies_) values_[plan.nodes[i].output_slot] = Tensor();
  return out;
}

}  // namespace sluice
