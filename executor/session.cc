#include "executor/session.h"

#include <atomic>
#include <thread>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cpu_device.h"
#include "device/gpu_device.h"
#include "executor/copy_kernel.h"
#include "executor/executor.h"
#include "executor/gpu_graph_runner.h"
#include "executor/plan.h"
#include "executor/runtime_config.h"
#include "graph/loader.h"
#include "placer/device_spec.h"
#include "placer/placer.h"
#include "onnx/model_loader.h"

namespace sluice {
namespace {

#ifdef SLUICE_WITH_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

int ThreadCount(int configured) {
  if (configured > 0) return configured;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string Describe(const std::string& name, DataType dtype,
                     const Shape& shape) {
  return absl::StrCat(name, ": ", DataTypeName(dtype), shape.DebugString());
}

class SessionImpl final : public Session {
 public:
  SessionImpl(std::unique_ptr<const Graph> graph, RuntimeConfig config)
      : graph_(std::move(graph)), config_(std::move(config)) {}
  ~SessionImpl() override {
    // Device work still queued may use tensors the plans hold.
    for (const auto& d : devices_) {
      if (d->type() == DeviceType::kGpu) {
        static_cast<GpuDevice*>(d.get())->Synchronize().IgnoreError();
      }
    }
    absl::MutexLock lock(&mu_);
    plans_.clear();
  }

  absl::Status Init() {
    RETURN_IF_ERROR(ApplyEnvironmentOverrides(&config_, &log_));
    RETURN_IF_ERROR(ValidateRuntimeConfig(config_));
    int intra = ThreadCount(config_.intra_op_threads());
    int num_cpus = std::max(1, config_.logical_cpus_size());
    for (int i = 0; i < num_cpus; ++i) {
      int64_t limit = 0;
      if (i < config_.logical_cpus_size() &&
          config_.logical_cpus(i).memory_limit().has_bytes()) {
        limit = config_.logical_cpus(i).memory_limit().bytes();
      }
      devices_.push_back(std::make_unique<CpuDevice>(i, limit, intra));
    }
    host_ = devices_[0].get();
    RETURN_IF_ERROR(AddGpusAndPlace());
    int inter = ThreadCount(config_.inter_op_threads());
    if (inter > 1) {
      pool_ = std::make_unique<Eigen::ThreadPool>(inter);
      scheduler_ = [pool = pool_.get()](std::function<void()> fn) {
        pool->Schedule(std::move(fn));
      };
    }
    plan_options_.devices = &assignment_;
    plan_options_.order = &placement_.run_order;
    plan_options_.host = host_;
    plan_options_.allow_parallel = pool_ != nullptr;
    plan_options_.constant_on = [this](const Node& n, Device* d) {
      return ConstantOn(n, d);
    };
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      const Feeds& feeds, const std::vector<std::string>& fetches) override {
    return RunWithStats(feeds, fetches, nullptr);
  }

  absl::StatusOr<std::vector<Tensor>> RunWithStats(
      const Feeds& feeds, const std::vector<std::string>& fetches,
      StepStats* stats) override {
    std::vector<TensorRef> feed_refs;
    std::vector<Tensor> feed_values;
    feed_refs.reserve(feeds.size());
    feed_values.reserve(feeds.size());
    std::string key;
    for (const auto& [name, value] : feeds) {
      ASSIGN_OR_RETURN(TensorRef ref, ResolveFeed(name, value));
      for (const TensorRef& seen : feed_refs) {
        if (seen == ref) {
          return absl::InvalidArgumentError(
              absl::StrCat("feed '", name, "' is given more than once"));
        }
      }
      feed_refs.push_back(ref);
      feed_values.push_back(value);
      absl::StrAppend(&key, ref.node, ":", ref.port, "=",
                      value.shape().DebugString(), ";");
    }
    std::vector<TensorRef> fetch_refs;
    const std::vector<std::string> names =
        fetches.empty() ? DefaultFetchNames() : fetches;
    key += "|";
    for (const std::string& name : names) {
      ASSIGN_OR_RETURN(TensorRef ref, ResolveFetch(name));
      fetch_refs.push_back(ref);
      absl::StrAppend(&key, ref.node, ":", ref.port, ";");
    }
    ASSIGN_OR_RETURN(CachedPlan cached, GetPlan(key, feed_refs, fetch_refs));
    // A profiled step runs node by node; others replay the GPU graph where
    // there is one.
    // Recording a graph captures a GPU's compute stream, which every step of
    // this session on that GPU uses, so that step runs with no other in
    // flight (steps_mu_ held exclusively). Replays run alone too: on the
    // H200, a replay overlapping ordinary steps of the same plan from other
    // threads gave one wrong result in 16 (2026-11-29; cause not found), so
    // a session's graph steps do not overlap any of its other steps. All
    // other steps share steps_mu_.
    absl::StatusOr<std::vector<Tensor>> result;
    GpuGraphRunner* runner =
        stats == nullptr ? cached.graph_runner.get() : nullptr;
    if (runner != nullptr && (runner->wants_to_record() || runner->active())) {
      absl::WriterMutexLock lock(&steps_mu_);
      result = runner->Run(std::move(feed_values), scheduler_,
                           /*may_record=*/true);
    } else {
      absl::ReaderMutexLock lock(&steps_mu_);
      result = runner != nullptr
                   ? runner->Run(std::move(feed_values), scheduler_,
                                 /*may_record=*/false)
                   : RunPlan(*cached.plan, std::move(feed_values), scheduler_,
                             stats);
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> out, std::move(result));
    runs_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  const Graph& graph() const override { return *graph_; }
  const RuntimeConfig& config() const override { return config_; }
  const std::vector<std::string>& log() const override { return log_; }
  const DeviceAssignment& assignment() const override { return assignment_; }
  const Placement& placement() const override { return placement_; }
  std::vector<Device*> devices() const override {
    std::vector<Device*> out;
    for (const auto& d : devices_) out.push_back(d.get());
    return out;
  }
  Stats stats() const override {
    absl::MutexLock lock(&mu_);
    Stats s;
    s.runs = runs_.load(std::memory_order_relaxed);
    s.plans_compiled = plans_compiled_;
    s.plans_cached = static_cast<int64_t>(plans_.size());
    for (const auto& [key, cached] : plans_) {
      if (cached.graph_runner == nullptr) continue;
      s.gpu_graphs += cached.graph_runner->active() ? 1 : 0;
      s.gpu_graph_steps += cached.graph_runner->replays();
    }
    return s;
  }

 private:
  std::string InputSignature() const {
    std::vector<std::string> parts;
    for (const GraphInput& in : graph_->inputs()) {
      parts.push_back(Describe(in.name, in.dtype, in.shape));
    }
    return parts.empty() ? "(none)" : absl::StrJoin(parts, ", ");
  }

  std::string OutputSignature() const {
    std::vector<std::string> parts;
    for (const GraphOutput& out : graph_->outputs()) {
      parts.push_back(Describe(out.name, out.dtype, out.shape));
    }
    return parts.empty() ? "(none)" : absl::StrJoin(parts, ", ");
  }

  // A graph input name, or "node[:port]".
  absl::StatusOr<TensorRef> ResolveRef(const std::string& name,
                                       bool is_feed) const {
    if (is_feed) {
      if (const GraphInput* in = graph_->FindInput(name)) {
        return TensorRef{in->node, 0};
      }
    } else if (const GraphOutput* out = graph_->FindOutput(name)) {
      return out->tensor;
    }
    absl::StatusOr<ParsedInput> parsed = ParseInputString(name);
    if (parsed.ok() && !parsed->control) {
      const Node* node = graph_->FindNode(parsed->node);
      if (node != nullptr && parsed->port < node->num_outputs()) {
        return TensorRef{node->id(), parsed->port};
      }
    }
    if (is_feed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown input '", name, "'; the model's inputs are: ",
          InputSignature()));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown fetch '", name, "'; the model's outputs are: ",
        OutputSignature()));
  }

  absl::StatusOr<TensorRef> ResolveFeed(const std::string& name,
                                        const Tensor& value) const {
    ASSIGN_OR_RETURN(TensorRef ref, ResolveRef(name, /*is_feed=*/true));
    const Node& node = graph_->node(ref.node);
    DataType want = node.output_dtype(ref.port);
    const Shape& shape = node.output_shape(ref.port);
    std::string expected = Describe(name, want, shape);
    if (!value.valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' is an empty tensor; expected ", expected));
    }
    if (!value.on_host()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' must be a host tensor"));
    }
    if (value.dtype() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' has dtype ", DataTypeName(value.dtype()),
          " but the model expects ", expected, "; the model's inputs are: ",
          InputSignature()));
    }
    if (!value.shape().IsCompatibleWith(shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' has shape ", value.shape().DebugString(),
          " but the model expects ", expected, "; the model's inputs are: ",
          InputSignature()));
    }
    return ref;
  }

  absl::StatusOr<TensorRef> ResolveFetch(const std::string& name) const {
    return ResolveRef(name, /*is_feed=*/false);
  }

  // Sets up the GPUs (unless use_gpu is false) and places the graph. Manual
  // placement on a CPU with no node requesting a GPU (StaysOnCpus) tries the
  // CPUs alone first: when they take every node, no GPU is set up, so
  // `sluice run --device cpu:0` reserves no GPU memory and makes no CUDA
  // context. A node with no CPU kernel, or no room on the CPUs, still gets
  // the GPUs, as manual placement's fallback promises.
  absl::Status AddGpusAndPlace() {
    const bool use_gpu = !config_.has_use_gpu() || config_.use_gpu();
    if (use_gpu && StaysOnCpus(*graph_, PlacerOptionsFromConfig(config_))) {
      // A CPU that is not there would not be there with the GPUs either.
      ASSIGN_OR_RETURN(Device* cpu, DefaultDevice());
      const size_t mark = log_.size();
      if (Place().ok()) {
        if (kCudaBuild) {
          log_.insert(log_.begin() + mark,
                      absl::StrCat("devices: no GPU set up: manual placement on ",
                                   cpu->name(), " and no node requests a GPU"));
        }
        return absl::OkStatus();
      }
    }
    if (use_gpu) {
      ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GpuDevice>> gpus,
                       CreateGpuDevices(config_));
      for (auto& gpu : gpus) devices_.push_back(std::move(gpu));
    }
    RETURN_IF_ERROR(DefaultDevice().status());
    return Place();
  }

  // Runs the placer over this session's devices, GPUs first (placer.h rule
  // 1): with a GPU present, the CPU takes only what no GPU can run, what asks
  // for it by name, or, under MANUAL or SINGLE with a CPU default device,
  // what has no request. So a model whose nodes all have GPU kernels stays
  // on the GPUs, as TensorFlow users expect, and feeds and results are the
  // only traffic with the host. On error nothing has changed.
  absl::Status Place() {
    std::vector<const Device*> devs;
    RealDeviceInfo info;
    info.cpu_cores = ThreadCount(config_.intra_op_threads());
    for (const auto& d : devices_) {
      devs.push_back(d.get());
      if (d->type() != DeviceType::kGpu) continue;
      const auto* gpu = static_cast<const GpuDevice*>(d.get());
      if (static_cast<int>(info.gpu_total_memory.size()) <= gpu->index()) {
        info.gpu_total_memory.resize(gpu->index() + 1, 0);
        info.physical_gpu.resize(gpu->index() + 1, 0);
      }
      info.gpu_total_memory[gpu->index()] = gpu->info().total_memory;
      info.physical_gpu[gpu->index()] = gpu->physical_index();
    }
    ASSIGN_OR_RETURN(DeviceTopology topo, TopologyFromDevices(devs, info));
    // gpu_first and min_spread_gain come with the config's options, as for
    // `sluice place`.
    ASSIGN_OR_RETURN(placement_,
                     PlaceGraph(*graph_, topo, PlacerOptionsFromConfig(config_)));
    for (const std::string& note : placement_.notes) {
      log_.push_back(absl::StrCat("placement: ", note));
    }
    assignment_.resize(graph_->num_nodes());
    for (int id = 0; id < graph_->num_nodes(); ++id) {
      assignment_[id] = devices_[placement_.device_of_node[id]].get();
      if (config_.log_placement()) {
        std::string line = absl::StrCat("placement: ", graph_->node(id).name(),
                                        " -> ", assignment_[id]->name());
        if (id < static_cast<int>(placement_.reason.size())) {
          absl::StrAppend(&line, " (", placement_.reason[id], ")");
        }
        log_.push_back(line);
      }
    }
    return absl::OkStatus();
  }

  // config.default_device, else the first GPU, else the CPU.
  absl::StatusOr<Device*> DefaultDevice() const {
    if (config_.default_device().empty()) {
      for (const auto& d : devices_) {
        if (d->type() == DeviceType::kGpu) return d.get();
      }
      return host_;
    }
    ASSIGN_OR_RETURN(DeviceName want, ParseDeviceName(config_.default_device()));
    for (const auto& d : devices_) {
      if (d->type() == want.type && (want.index < 0 || d->index() == want.index)) {
        return d.get();
      }
    }
    std::vector<std::string> names;
    for (const auto& d : devices_) names.push_back(d->name());
    return absl::InvalidArgumentError(absl::StrCat(
        "default_device '", config_.default_device(),
        "' is not present; this session has ", absl::StrJoin(names, ", ")));
  }

  // A Const node's value on a device, copied there once per session.
  absl::StatusOr<Tensor> ConstantOn(const Node& node, Device* device) {
    absl::MutexLock lock(&constants_mu_);
    auto key = std::make_pair(node.id(), device);
    auto it = constants_.find(key);
    if (it != constants_.end()) return it->second;
    ASSIGN_OR_RETURN(Tensor value,
                     CopyTensor(*node.const_value(), host_, device));
    constants_.emplace(key, value);
    return value;
  }

  // A compiled plan and, where it qualifies and the config allows, the
  // runner that replays its GPU work as a CUDA graph.
  struct CachedPlan {
    std::shared_ptr<const ExecutionPlan> plan;
    std::shared_ptr<GpuGraphRunner> graph_runner;  // null: ordinary steps
  };

  absl::StatusOr<CachedPlan> GetPlan(const std::string& key,
                                     const std::vector<TensorRef>& feeds,
                                     const std::vector<TensorRef>& fetches) {
    {
      absl::MutexLock lock(&mu_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    ASSIGN_OR_RETURN(std::unique_ptr<const ExecutionPlan> compiled,
                     CompilePlan(*graph_, feeds, fetches, plan_options_));
    CachedPlan entry;
    entry.plan = std::move(compiled);
    if (!config_.has_gpu_graphs() || config_.gpu_graphs()) {
      entry.graph_runner = GpuGraphRunner::ForPlan(entry.plan);
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = plans_.emplace(key, std::move(entry));
    // Two threads may compile the same signature at once; one plan is kept.
    if (inserted) ++plans_compiled_;
    return it->second;
  }


  // Fixed after Init().
  const std::unique_ptr<const Graph> graph_;
  RuntimeConfig config_;  // with environment overrides applied
  std::vector<std::string> log_;
  std::vector<std::unique_ptr<Device>> devices_;
  Device* host_ = nullptr;  // devices_[0], /cpu:0
  Placement placement_;
  DeviceAssignment assignment_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  Scheduler scheduler_;
  PlanOptions plan_options_;

  absl::Mutex constants_mu_;
  absl::flat_hash_map<std::pair<int, Device*>, Tensor> constants_
      ABSL_GUARDED_BY(constants_mu_);

  // Held shared by every step, exclusively by a step that records a GPU
  // graph (see RunWithStats).
  absl::Mutex steps_mu_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, CachedPlan> plans_ ABSL_GUARDED_BY(mu_);
  int64_t plans_compiled_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> runs_{0};
};

}  // namespace

std::vector<std::string> Session::DefaultFetchNames() const {
  std::vector<std::string> names;
  for (const GraphOutput& out : graph().outputs()) names.push_back(out.name);
  return names;
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(
    std::unique_ptr<const Graph> graph, const RuntimeConfig& config) {
  if (graph == nullptr) {
    return absl::InvalidArgumentError("Session::Create needs a graph");
  }
  auto session = std::make_unique<SessionImpl>(std::move(graph), config);
  RETURN_IF_ERROR(session->Init());
  return std::unique_ptr<Session>(std::move(session));
}

absl::StatusOr<std::unique_ptr<Session>> Session::CreateFromFile(
    const std::string& path, const RuntimeConfig& config) {
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph, LoadModelGraph(path));
  return Create(std::move(graph), config);
}

}  // namespace sluice
