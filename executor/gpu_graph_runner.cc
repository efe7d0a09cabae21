#include "executor/gpu_graph_runner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/parallel_memcpy.h"
#include "device/pinned_memory.h"
#include "executor/copy_kernel.h"
#include "kernels/kernel_registry.h"
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

// Whether `slot` holds a constant in host memory.
bool IsConstantSlot(const ExecutionPlan& plan, int slot) {
  for (const auto& [s, value] : plan.constant_slots) {
    if (s == slot) return true;
  }
  return false;
}

bool HostConstant(const ExecutionPlan& plan, int slot) {
  for (const auto& [s, value] : plan.constant_slots) {
    if (s == slot) return value.on_host();
  }
  return false;
}

}  // namespace

std::unique_ptr<GpuGraphRunner> GpuGraphRunner::ForPlan(
    std::shared_ptr<const ExecutionPlan> plan, std::string* why_not) {
  auto no = [why_not](std::string why) {
    if (why_not != nullptr) *why_not = std::move(why);
    return nullptr;
  };
  GpuDevice* gpu = nullptr;
  // Feeds the caller keeps in a GPU's memory (sluice/session.h): the
  // kernels read them where they are in an ordinary step.
  const Partitioning* parts = plan->partitioning.get();
  auto fed_on_gpu = [&](int slot) {
    for (size_t f = 0; f < plan->feed_slots.size(); ++f) {
      if (plan->feed_slots[f] != slot) continue;
      return parts != nullptr && f < parts->feed_devices.size() &&
             parts->feed_devices[f] != parts->host_device;
    }
    return false;
  };
  for (int slot : plan->feed_slots) {
    if (Contains(plan->fetch_slots, slot)) return no("a feed is also fetched");
  }
  std::vector<int> feed_copies, kernels, fetch_copies, staged, device_feeds;
  std::vector<int> staged_constants, unstageable_constants;
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
      absl::StatusOr<const KernelDef*> def =
          KernelRegistry::Global()->Find(*pn.node, DeviceType::kGpu);
      if (def.ok() && (*def)->sizes_outputs_from_gpu_values) {
        return no(absl::StrCat(pn.node->name(), " (", pn.node->op(),
                               ") sizes its output from values on the GPU, "
                               "waiting for them inside the step"));
      }
      for (size_t in = 0; in < pn.input_slots.size(); ++in) {
        const int slot = pn.input_slots[in];
        const bool stageable =
            def.ok() &&
            Contains((*def)->stageable_host_inputs, static_cast<int>(in));
        if (Contains(plan->feed_slots, slot) && fed_on_gpu(slot)) {
          // Copied into a buffer of the graph's before each launch.
          if (!Contains(device_feeds, slot)) device_feeds.push_back(slot);
        } else if (Contains(plan->feed_slots, slot)) {
          // A fed value read in host memory: staged, where the kernel can
          // read it on the GPU when recorded.
          if (!stageable) {
            return no(absl::StrCat(pn.node->name(), " (", pn.node->op(),
                                   ") reads a fed value in host memory"));
          }
          if (!Contains(staged, slot)) staged.push_back(slot);
        } else if (HostConstant(*plan, slot)) {
          // Copied once, when recorded, if every reader can take it there.
          auto& list = stageable ? staged_constants : unstageable_constants;
          if (!Contains(list, slot)) list.push_back(slot);
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
  // A constant on the GPU, or a feed the caller keeps on the GPU (token
  // ids with --io-device), copied to the host only for kernels that can
  // read it on the GPU when recorded (Gather's indices): they read the GPU
  // value (the feed: the graph's buffer of it) and the copy is not recorded.
  std::vector<std::pair<int, int>> constant_copies;  // (from, to) slots
  for (auto it = fetch_copies.begin(); it != fetch_copies.end();) {
    const PlanNode& copy = plan->nodes[*it];
    const int from = copy.input_slots[0], to = copy.output_slot;
    const bool gpu_feed = Contains(plan->feed_slots, from) && fed_on_gpu(from);
    bool aliased = (IsConstantSlot(*plan, from) || gpu_feed) &&
                   !Contains(plan->fetch_slots, to);
    bool read = false;
    for (int k : kernels) {
      const PlanNode& pn = plan->nodes[k];
      for (size_t in = 0; aliased && in < pn.input_slots.size(); ++in) {
        if (pn.input_slots[in] != to) continue;
        read = true;
        absl::StatusOr<const KernelDef*> def =
            KernelRegistry::Global()->Find(*pn.node, DeviceType::kGpu);
        aliased = def.ok() && Contains((*def)->stageable_host_inputs,
                                       static_cast<int>(in));
      }
    }
    if (aliased && read) {
      constant_copies.emplace_back(from, to);
      if (gpu_feed && !Contains(device_feeds, from)) device_feeds.push_back(from);
      it = fetch_copies.erase(it);
    } else {
      ++it;
    }
  }
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
  runner->staged_slots_ = std::move(staged);
  runner->constant_copies_ = std::move(constant_copies);
  for (int slot : staged_constants) {
    if (!Contains(unstageable_constants, slot)) {
      runner->staged_constants_.push_back(slot);
    }
  }
  // What the recording frees after its last reader, and what it keeps.
  const ExecutionPlan& p = *runner->plan_;
  runner->kernel_reads_.assign(p.num_slots, 0);
  runner->kept_.assign(p.num_slots, false);
  for (int k : runner->kernels_) {
    for (int slot : p.nodes[k].input_slots) ++runner->kernel_reads_[slot];
  }
  // Feeds come in through the graph's own pinned buffers (RecordHostInput),
  // so their GPU copies are values like any other.
  for (int slot : p.fetch_slots) runner->kept_[slot] = true;
  for (int slot : device_feeds) runner->kept_[slot] = true;
  for (const auto& [slot, value] : p.constant_slots) runner->kept_[slot] = true;
  for (const auto& [from, to] : runner->constant_copies_) runner->kept_[to] = true;
  for (int i : runner->fetch_copies_) {
    runner->kept_[p.nodes[i].input_slots[0]] = true;
  }
  for (size_t f = 0; f < p.feed_slots.size(); ++f) {
    for (int i : runner->feed_copies_) {
      if (p.nodes[i].input_slots[0] == p.feed_slots[f]) {
        runner->feed_inputs_.push_back({static_cast<int>(f), i, -1});
      }
    }
    if (Contains(runner->staged_slots_, p.feed_slots[f])) {
      runner->feed_inputs_.push_back({static_cast<int>(f), -1, p.feed_slots[f]});
    }
    if (Contains(device_feeds, p.feed_slots[f])) {
      runner->device_feeds_.push_back({static_cast<int>(f), p.feed_slots[f]});
    }
  }
  return runner;
}

GpuGraphRunner::~GpuGraphRunner() {
  absl::MutexLock lock(&mu_);
  DropRecording();
}

void GpuGraphRunner::DropRecording() {
  graph_.reset();  // waits for its last launch
  direct_feeds_.clear();
  direct_ok_.clear();
  values_.clear();
  temps_.clear();
  host_inputs_.clear();
  if (pool_ != 0) gpu_->arena()->ReleasePool(pool_);
  pool_ = 0;
}

std::string GpuGraphRunner::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::Run(
    std::vector<Tensor> feed_values, const Scheduler& scheduler,
    bool may_record, const StepLimits* limits) {
  auto ordinary = [&](std::vector<Tensor> feeds) {
    return RunPlan(*plan_, std::move(feeds), scheduler, nullptr, limits);
  };
  FaultInjector* const faults = limits != nullptr ? limits->faults : nullptr;
  if (!mu_.TryLock()) {  // another step is using the graph's buffers
    return ordinary(std::move(feed_values));
  }
  absl::StatusOr<std::vector<Tensor>> out;
  switch (state_) {
    case State::kOff:
      mu_.Unlock();
      return ordinary(std::move(feed_values));
    case State::kWarmUp:
      out = ordinary(std::move(feed_values));
      if (out.ok()) {
        state_ = State::kRecord;
        wants_to_record_.store(true, std::memory_order_relaxed);
      }
      break;
    case State::kRecord: {
      if (!may_record) {
        mu_.Unlock();
        return ordinary(std::move(feed_values));
      }
      wants_to_record_.store(false, std::memory_order_relaxed);
      std::vector<Tensor> again = feed_values;  // for an ordinary step
      out = Record(std::move(feed_values), faults);
      if (out.ok()) {
        state_ = State::kReplay;
        active_.store(true, std::memory_order_relaxed);
        replays_.fetch_add(1, std::memory_order_relaxed);
        held_bytes_.store(pool_ != 0 ? gpu_->arena()->PoolBytes(pool_)
                                     : DeviceBytes(values_, temps_),
                          std::memory_order_relaxed);
        break;
      }
      // Nothing is kept; this step and the later ones run the ordinary way.
      failure_ = std::string(out.status().message());
      DropRecording();
      state_ = State::kOff;
      mu_.Unlock();
      return ordinary(std::move(again));
    }
    case State::kReplay:
      out = Replay(std::move(feed_values), faults);
      if (out.ok()) {
        replays_.fetch_add(1, std::memory_order_relaxed);
        // A cancellation or deadline that came while the graph ran is seen
        // when it ends, the replay's one synchronisation.
        if (limits != nullptr && limits->watches_the_clock_or_a_flag()) {
          absl::Status s = graph_->Wait();
          if (s.ok()) s = limits->CheckAfter(Span());
          if (!s.ok()) out = s;
        }
      }
      break;
  }
  mu_.Unlock();
  return out;
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::Record(
    std::vector<Tensor> feed_values, FaultInjector* faults) {
  const ExecutionPlan& plan = *plan_;
  // Everything the recording allocates on the GPU comes from a pool of the
  // runner's (device/arena.h), so values can be freed after their last
  // reader without another step reusing memory that a replay writes.
  ArenaAllocator* arena = gpu_->arena();
  if (arena != nullptr) pool_ = arena->CreatePool();
  std::optional<ArenaAllocator::PoolScope> in_pool;
  in_pool.emplace(arena, pool_);
  const bool by_lifetime = pool_ != 0;

  values_.assign(plan.num_slots, Tensor());
  for (const auto& [slot, value] : plan.constant_slots) values_[slot] = value;
  for (int slot : staged_constants_) {  // the graph's own copy, made once
    ASSIGN_OR_RETURN(values_[slot], gpu_->CopyToDevice(values_[slot]));
  }
  // GPU feeds: into buffers of the graph's, before each launch (their
  // addresses change from step to step; the graph's do not).
  for (const DeviceFeed& in : device_feeds_) {
    const Tensor& fed = feed_values[in.feed];
    ASSIGN_OR_RETURN(Tensor dst, Tensor::Create(fed.dtype(), fed.shape(),
                                                gpu_->allocator()));
    RETURN_IF_ERROR(gpu_->CopyDeviceToDevice(fed, gpu_, &dst));
    values_[in.slot] = std::move(dst);
  }
  // After the feeds' buffers exist: a copy's output may alias one.
  for (const auto& [from, to] : constant_copies_) values_[to] = values_[from];
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
  // The feeds travel inside the graph: each from a pinned buffer of the
  // graph's, which every step fills before the launch. The staged ones go
  // to the slots their kernels read in place of the host values.
  for (const FeedInput& in : feed_inputs_) {
    const Tensor& fed = feed_values[in.feed];
    absl::StatusOr<Tensor> dst =
        Tensor::Create(fed.dtype(), fed.shape(), gpu_->allocator());
    absl::StatusOr<void*> host =
        dst.ok() ? RecordHostInput(gpu_, *dst) : absl::StatusOr<void*>(dst.status());
    if (!host.ok()) {
      s = host.status();
      break;
    }
    if (fed.bytes() > 0) ParallelMemcpy(*host, fed.raw_data(), fed.bytes());
    host_inputs_.push_back(*host);
    values_[in.copy >= 0 ? plan.nodes[in.copy].output_slot : in.staged_slot] =
        *std::move(dst);
  }
  std::vector<int> reads = kernel_reads_;
  auto release_unread = [&](int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (by_lifetime && reads[slot] == 0 && !kept_[slot]) values_[slot] = Tensor();
  };
  for (size_t k = 0; s.ok() && k < kernels_.size(); ++k) {
    const PlanNode& pn = plan.nodes[kernels_[k]];
    // Temps go back to the pool when the kernel returns: later kernels of
    // the graph may reuse them, in stream order, as in an ordinary step.
    s = RunPlanNode(pn, values_, by_lifetime ? nullptr : &temps_, faults);
    if (!s.ok()) break;
    for (int slot : pn.input_slots) {
      --reads[slot];
      release_unread(slot);
    }
    for (int p = 0; p < pn.num_outputs; ++p) release_unread(pn.output_slot + p);
  }
  absl::StatusOr<std::unique_ptr<GpuGraph>> graph = EndGpuCapture(gpu_);
  in_pool.reset();  // results handed out are not the pool's
  RETURN_IF_ERROR(s);
  RETURN_IF_ERROR(graph.status());
  graph_ = *std::move(graph);
  direct_ok_.assign(host_inputs_.size(), true);
  RETURN_IF_ERROR(InGraph(graph_->Launch()));
  return FetchResults(faults);
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::Replay(
    std::vector<Tensor> feed_values, FaultInjector* faults) {
  // The last launch may still be reading the pinned inputs (when no result
  // was copied out after it).
  RETURN_IF_ERROR(graph_->Wait());
  direct_feeds_.clear();  // the last launch has read them
  for (size_t i = 0; i < feed_inputs_.size(); ++i) {
    // The step's plan signature fixes every feed's shape, so the bytes fit.
    const Tensor& fed = feed_values[feed_inputs_[i].feed];
    if (fed.bytes() == 0) continue;
    const int input = static_cast<int>(i);
    // A page-locked feed is read where it is, by the graph's own copy;
    // where the graph cannot (another context's memory), it is copied
    // from then on.
    if (direct_ok_[i] && IsPageLocked(fed)) {
      if (graph_->SetHostInputSource(input, fed.raw_data()).ok()) {
        direct_feeds_.push_back(fed);
        direct_host_feeds_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      direct_ok_[i] = false;
    }
    // Back to the graph's own buffer, if an earlier step pointed it away.
    RETURN_IF_ERROR(graph_->SetHostInputSource(input, nullptr));
    ParallelMemcpy(host_inputs_[i], fed.raw_data(), fed.bytes());
    copied_host_feeds_.fetch_add(1, std::memory_order_relaxed);
  }
  for (const DeviceFeed& in : device_feeds_) {
    RETURN_IF_ERROR(gpu_->CopyDeviceToDevice(feed_values[in.feed], gpu_,
                                             &values_[in.slot]));
  }
  if (faults != nullptr) {
    RETURN_IF_ERROR(InGraph(faults->Check(FaultKind::kKernel, "CUDA graph launch")));
  }
  RETURN_IF_ERROR(InGraph(graph_->Launch()));
  return FetchResults(faults);
}

std::string GpuGraphRunner::Span() const {
  if (kernels_.empty()) return "the step's CUDA graph";
  const ExecutionPlan& plan = *plan_;
  return absl::StrCat("the step's CUDA graph (", kernels_.size(), " nodes, node '",
                      plan.nodes[kernels_.front()].node->name(), "' to node '",
                      plan.nodes[kernels_.back()].node->name(), "')");
}

absl::Status GpuGraphRunner::InGraph(absl::Status s) const {
  if (s.ok() || kernels_.empty()) return s;
  return absl::Status(s.code(), absl::StrCat(Span(), ": ", s.message()));
}

absl::StatusOr<std::vector<Tensor>> GpuGraphRunner::FetchResults(
    FaultInjector* faults) {
  const ExecutionPlan& plan = *plan_;
  absl::Status s;
  for (int i : fetch_copies_) {
    s = RunPlanNode(plan.nodes[i], values_, nullptr, faults);
    if (!s.ok()) break;
  }
  // What the graph checked on the GPU (indices in range) comes first: a
  // result it reports on is not one to return.
  if (absl::Status checked = graph_->CheckErrors(); !checked.ok()) s = checked;
  std::vector<Tensor> out;
  out.reserve(plan.fetch_slots.size());
  for (size_t i = 0; s.ok() && i < plan.fetch_slots.size(); ++i) {
    const Tensor& value = values_[plan.fetch_slots[i]];
    if (value.on_host()) {
      out.push_back(value);
      continue;
    }
    // A fetch left on the GPU (sluice/session.h): the caller's own copy,
    // since the next replay writes the graph's buffer again.
    absl::StatusOr<Tensor> copy =
        Tensor::Create(value.dtype(), value.shape(), gpu_->allocator());
    if (copy.ok()) s = gpu_->CopyDeviceToDevice(value, gpu_, &*copy);
    else s = copy.status();
    if (s.ok()) out.push_back(*std::move(copy));
  }
  // Let go of host memory: the results.
  for (int i : fetch_copies_) values_[plan.nodes[i].output_slot] = Tensor();
  if (!s.ok()) return s;
  return out;
}

}  // namespace sluice
