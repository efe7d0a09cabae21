#include "executor/session.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <iterator>
#include <list>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <map>
#include <thread>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/byte_size.h"
#include "core/status_macros.h"
#include "device/cpu_device.h"
#include "device/cpu_memory.h"
#include "device/discovery.h"
#include "device/external_memory.h"
#include "device/gpu_device.h"
#include "device/pinned_memory.h"
#include "executor/cluster.h"
#include "executor/copy_kernel.h"
#include "executor/executor.h"
#include "executor/gpu_graph_runner.h"
#include "executor/plan.h"
#include "executor/runtime_config.h"
#include "executor/session_model.h"
#include "graph/data_format.h"
#include "graph/loader.h"
#include "kernels/kernel_registry.h"
#include "kernels/providers.h"
#include "optimizer/pipeline.h"
#include "placer/device_spec.h"
#include "placer/machine_topology.h"
#include "placer/placer.h"
#include "model/model_loader.h"

namespace sluice {
namespace {

#ifdef SLUICE_WITH_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

// Moving at least this many bytes of weights to the GPUs trims the C
// library's heap afterwards (MoveWeightsToDevices).
constexpr int64_t kTrimAfterMovingBytes = int64_t{16} << 20;

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
  // Loads `model_path` in Init (LoadSessionModel: a prepared model is used
  // as it is, passes not run).
  SessionImpl(std::string model_path, RuntimeConfig config)
      : config_(std::move(config)), model_path_(std::move(model_path)) {}
  ~SessionImpl() override {
    // The other ranks of a job stop serving.
    if (cluster_ != nullptr) cluster_->End();
    // Device work still queued may use tensors the plans hold.
    for (const auto& d : devices_) {
      if (d->type() == DeviceType::kGpu) {
        static_cast<GpuDevice*>(d.get())->Synchronize().IgnoreError();
      }
    }
    {
      absl::MutexLock lock(&mu_);
      plans_.clear();
    }
    // Weights moved to a GPU (MoveWeightsToDevices) go back to its
    // allocator before the device does.
    {
      absl::MutexLock lock(&constants_mu_);
      constants_.clear();
    }
    graph_.reset();
  }

  absl::Status Init(const CreateOptions& options) {
    progress_ = options.progress;
    RETURN_IF_ERROR(ApplyEnvironmentOverrides(&config_, &log_));
    RETURN_IF_ERROR(ValidateRuntimeConfig(config_));
    NoteDeprecatedFields(config_, &log_);
    providers_ = std::make_unique<const ProviderSet>(
        ProvidersForMachine(config_));
    bool prepared = false;
    SessionModel model;
    if (graph_ == nullptr) {
      Progress("loading the model");
      ASSIGN_OR_RETURN(model,
                       LoadSessionModel(model_path_, config_, *providers_));
      graph_ = std::move(model.graph);
      log_.insert(log_.end(), model.log.begin(), model.log.end());
      prepared = model.prepared;
      if (prepared) {
        optimization_level_ = model.level;
        removed_nodes_.insert(model.removed_nodes.begin(),
                              model.removed_nodes.end());
      }
    }
    if (!prepared) {
      RETURN_IF_ERROR(Optimize(
          model.cache_path.empty() ? nullptr : &model.cache_header));
      // The config's prepared_model_cache_dir: the next session of this
      // setup starts from what the passes made.
      if (!model.cache_path.empty()) {
        log_.push_back(WritePreparedModelCache(*graph_, model));
      }
    }
    if (config_.has_cluster()) RETURN_IF_ERROR(JoinCluster());
    Progress("placing");
    RETURN_IF_ERROR(cluster_ != nullptr ? PlaceOverCluster()
                                        : PlaceAndSetUpDevices());
    int inter = ThreadCount(config_.inter_op_threads());
    // A provider whose kernels take every core themselves (the CPU's on
    // OpenMP teams: its channels-last convolutions on oneDNN's, and from
    // 8 intra-op threads every parallel region) has the session run its
    // nodes one at a time, unless the config sets inter_op_threads: teams
    // started from several inter-op threads would share the cores.
    if (config_.inter_op_threads() == 0 && inter > 1) {
      if (const ExecutionProvider* p = ProviderWantingOneAtATime()) {
        inter = 1;
        log_.push_back(absl::StrCat(
            "threads: nodes run one at a time: the ", std::string(p->name()),
            " provider's kernels run on OpenMP teams of the intra-op thread "
            "count (inter_op_threads set in the config runs them in "
            "parallel)"));
      }
    }
    if (inter > 1) {
      pool_ = std::make_unique<Eigen::ThreadPool>(inter);
      scheduler_ = [pool = pool_.get()](std::function<void()> fn) {
        pool->Schedule(std::move(fn));
      };
    }
    plan_options_.devices = &assignment_;
    plan_options_.topology_devices = &topology_devices_;
    plan_options_.order = &placement_.run_order;
    plan_options_.host = host_;
    plan_options_.allow_parallel = pool_ != nullptr;
    plan_options_.constant_on = [this](const Node& n, Device* d) {
      return ConstantOn(n, d);
    };
    return MoveWeightsToDevices();
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      const Feeds& feeds, const std::vector<std::string>& fetches) override {
    return RunStep(feeds, fetches, StepOptions(), nullptr);
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      const Feeds& feeds, const std::vector<std::string>& fetches,
      const StepOptions& options) override {
    return RunStep(feeds, fetches, options, options.stats);
  }

  absl::StatusOr<std::vector<Tensor>> RunWithStats(
      const Feeds& feeds, const std::vector<std::string>& fetches,
      StepStats* stats) override {
    return RunStep(feeds, fetches, StepOptions(), stats);
  }

  absl::StatusOr<std::vector<Tensor>> RunStep(
      const Feeds& feeds, const std::vector<std::string>& fetches,
      const StepOptions& options, StepStats* stats) {
    std::vector<TensorRef> feed_refs;
    std::vector<Tensor> feed_values;
    // Topology index of each feed's and fetch's device; -1: the host.
    std::vector<int> feed_devices;
    std::vector<int> fetch_devices;
    bool on_gpu = false;  // some feed or fetch is on a GPU
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
      ASSIGN_OR_RETURN(int device, FeedDevice(name, value));
      on_gpu = on_gpu || device >= 0;
      feed_refs.push_back(ref);
      feed_values.push_back(value);
      feed_devices.push_back(device);
      absl::StrAppend(&key, ref.node, ":", ref.port, "=",
                      value.shape().DebugString(), "@", device, ";");
    }
    std::vector<TensorRef> fetch_refs;
    const std::vector<std::string> names =
        fetches.empty() ? DefaultFetchNames() : fetches;
    ASSIGN_OR_RETURN(fetch_devices,
                     FetchDevices(options.fetch_devices, names.size()));
    // Page-locked host fetches come from copies of their own (the plan's
    // fetch copies allocate there); only a GPU copies anything to the host.
    const bool pinned_fetches = options.pinned_host_fetches && HasGpu();
    key += pinned_fetches ? "|pinned|" : "|";
    for (size_t i = 0; i < names.size(); ++i) {
      ASSIGN_OR_RETURN(TensorRef ref, ResolveFetch(names[i]));
      fetch_refs.push_back(ref);
      on_gpu = on_gpu || fetch_devices[i] >= 0;
      absl::StrAppend(&key, ref.node, ":", ref.port, "@", fetch_devices[i],
                      ";");
    }
    if (cluster_ != nullptr && cluster_->rank() != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "this is rank ", cluster_->rank(), " of a job of ",
          cluster_->world_size(), ": rank 0 runs the steps, the others call "
          "Serve"));
    }
    if (cluster_ != nullptr && on_gpu) {
      return absl::InvalidArgumentError(
          "a job of several processes takes its feeds and gives its fetches "
          "in host memory; GPU feeds and fetch_devices are for one process");
    }
    // Feeds given on other ranks: in the signature after Run's own, at that
    // rank's host.
    const size_t local_feeds = feed_refs.size();
    for (const auto& [name, r] : options.feeds_on_ranks) {
      if (cluster_ == nullptr || r <= 0 || r >= cluster_->world_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "feeds_on_ranks: feed '", name, "' on rank ", r, ": ",
            cluster_ == nullptr
                ? "this session is one process (a config with `cluster` "
                  "makes it one rank of a job)"
                : absl::StrCat("ranks 1 to ", cluster_->world_size() - 1,
                               " (rank 0's feeds go in Run's feeds)")));
      }
      ASSIGN_OR_RETURN(TensorRef ref, ResolveRef(name, /*is_feed=*/true));
      for (const TensorRef& seen : feed_refs) {
        if (seen == ref) {
          return absl::InvalidArgumentError(absl::StrCat(
              "feed '", name, "' is given more than once (Run's feeds and "
              "feeds_on_ranks)"));
        }
      }
      feed_refs.push_back(ref);
      feed_devices.push_back(cluster_->topology().first_device[r]);
      absl::StrAppend(&key, ref.node, ":", ref.port, "@rank", r, ";");
    }
    ASSIGN_OR_RETURN(CachedPlan cached,
                     GetPlan(key, feed_refs, fetch_refs, feed_devices,
                             fetch_devices, pinned_fetches));
    if (cluster_ != nullptr) {
      StepRequest request;
      for (size_t i = 0; i < feeds.size(); ++i) {
        StepFeed* f = request.add_feeds();
        f->set_name(feeds[i].first);
        f->set_dtype(feed_values[i].dtype());
        for (int64_t d : feed_values[i].shape().dims()) f->add_dims(d);
      }
      for (size_t i = local_feeds; i < feed_refs.size(); ++i) {
        StepFeed* f = request.add_feeds();
        f->set_name(options.feeds_on_ranks[i - local_feeds].first);
        f->set_rank(options.feeds_on_ranks[i - local_feeds].second);
      }
      for (const std::string& name : names) request.add_fetches(name);
      // Steps of several Run calls pipeline (executor/cluster.h).
      ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       cluster_->RunStep(std::move(request), *cached.plan,
                                         std::move(feed_values), scheduler_,
                                         stats));
      runs_.fetch_add(1, std::memory_order_relaxed);
      return out;
    }
    // A profiled step runs node by node; others replay the GPU graph where
    // there is one.
    // Recording a graph captures a GPU's compute stream, which every step of
    // this session on that GPU uses, and points its cuBLAS handle at the
    // graph's own workspace, so that step runs with no other in flight
    // (steps_mu_ held exclusively). Every other step shares steps_mu_,
    // replays included: they overlap ordinary steps and other plans' replays
    // (one replay per plan at a time; GpuGraphRunner runs the rest the
    // ordinary way). Replays used to run alone, because one that overlapped
    // ordinary steps gave one wrong result in 16 on the H200 (2026-11-29).
    // The cause, found by reading the code: the graph's GEMMs shared the
    // cuBLAS workspace with GEMMs other threads were enqueueing; a graph now
    // has its own (device/gpu_graph.h).
    absl::StatusOr<std::vector<Tensor>> result;
    GpuGraphRunner* runner =
        stats == nullptr ? cached.graph_runner.get() : nullptr;
    // A deadline or a cancellation flag: checked before each node, or
    // before and after a CUDA graph's replay (executor/step_limits.h).
    const StepLimits limits = StepLimits::From(options);
    if (runner != nullptr) RETURN_IF_ERROR(limits.CheckBeforeStep());
    if (runner != nullptr && runner->wants_to_record()) {
      absl::WriterMutexLock lock(&steps_mu_);
      result = runner->Run(std::move(feed_values), scheduler_,
                           /*may_record=*/true, &limits);
    } else {
      absl::ReaderMutexLock lock(&steps_mu_);
      result = runner != nullptr
                   ? runner->Run(std::move(feed_values), scheduler_,
                                 /*may_record=*/false, &limits)
                   : RunPlan(*cached.plan, std::move(feed_values), scheduler_,
                             stats, &limits);
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> out, std::move(result));
    if (on_gpu) {
      // GPU fetches are handed out finished, and GPU feeds are read by the
      // time the caller may free them (sluice/session.h).
      RETURN_IF_ERROR(SynchronizeGpus());
    }
    runs_.fetch_add(1, std::memory_order_relaxed);
    if (runner != nullptr && config_.plan_cache_max_bytes() > 0) {
      // A step that recorded a graph made its plan hold memory.
      absl::MutexLock lock(&mu_);
      EvictLocked(key);
    }
    return out;
  }

  const Graph& graph() const override { return *graph_; }
  const RuntimeConfig& config() const override { return config_; }
  const std::vector<std::string>& log() const override { return log_; }
  const DeviceAssignment& assignment() const override { return assignment_; }
  const Placement& placement() const override { return placement_; }
  int64_t ReleaseUnusedMemory() override {
    int64_t released = ReleaseCachedCpuMemory();
    for (const auto& d : devices_) {
      if (d->type() == DeviceType::kGpu) {
        released += static_cast<GpuDevice*>(d.get())->ReleaseUnusedMemory();
      }
    }
    return released;
  }
  absl::StatusOr<Tensor> CopyTo(const Tensor& tensor,
                                const std::string& device) override {
    if (!tensor.valid()) {
      return absl::InvalidArgumentError("CopyTo: an empty tensor");
    }
    ASSIGN_OR_RETURN(int dst, SessionDevice(device, "CopyTo: device"));
    ASSIGN_OR_RETURN(int src, TensorDevice(tensor));
    if (src == -2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CopyTo: the tensor is in memory of ", tensor.allocator()->Name(),
          ", on none of this session's devices (",
          absl::StrJoin(DeviceNames(), ", "), ")"));
    }
    Device* from = src >= 0 ? topology_devices_[src] : host_;
    Device* to = dst >= 0 ? topology_devices_[dst] : host_;
    ASSIGN_OR_RETURN(Tensor out, CopyTensor(tensor, from, to));
    if (from->type() == DeviceType::kGpu || to->type() == DeviceType::kGpu) {
      RETURN_IF_ERROR(SynchronizeGpus());
    }
    return out;
  }
  std::string DeviceOf(const Tensor& tensor) const override {
    absl::StatusOr<int> d = TensorDevice(tensor);
    if (!d.ok() || *d == -2) return "";
    return *d >= 0 ? topology_devices_[*d]->name() : host_->name();
  }
  absl::StatusOr<Tensor> AllocateHostTensor(DataType dtype,
                                            const Shape& shape) override {
    if (DataTypeSize(dtype) == 0) {
      return absl::InvalidArgumentError(
          "AllocateHostTensor: an invalid dtype");
    }
    if (!shape.IsFullyDefined()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AllocateHostTensor: shape ", shape.DebugString(),
          " is not fully defined; give every dimension"));
    }
    // Page-locked only where a GPU will read it: a CPU-only session (which
    // may run where CUDA is not usable at all) gives ordinary memory. The
    // memory is pinned for every GPU; it is allocated in the context of the
    // session's first GPU, which a replayed graph on it needs in order to
    // read it in place (GpuGraph::SetHostInputSource).
    Allocator* allocator = CpuAllocator();
    for (const auto& d : devices_) {
      if (d->type() != DeviceType::kGpu) continue;
      RETURN_IF_ERROR(static_cast<GpuDevice*>(d.get())->MakeCurrent());
      allocator = PinnedHostAllocator();
      break;
    }
    absl::StatusOr<Tensor> t = Tensor::Create(dtype, shape, allocator);
    if (!t.ok()) {
      return absl::Status(t.status().code(),
                          absl::StrCat("AllocateHostTensor(",
                                       DataTypeName(dtype), shape.DebugString(),
                                       "): ", t.status().message()));
    }
    return t;
  }
  std::vector<Device*> devices() const override {
    std::vector<Device*> out;
    for (const auto& d : devices_) out.push_back(d.get());
    return out;
  }
  int rank() const override {
    return cluster_ != nullptr ? cluster_->rank() : 0;
  }
  int world_size() const override {
    return cluster_ != nullptr ? cluster_->world_size() : 1;
  }
  absl::Status Serve(const Feeds& feeds) override {
    if (cluster_ == nullptr) {
      return absl::FailedPreconditionError(
          "Serve is for the ranks other than 0 of a job of several "
          "processes (a config with `cluster`); this session is one process");
    }
    return cluster_->Serve(
        [this, &feeds](const StepRequest& request) {
          return ServedPlan(request, feeds);
        },
        scheduler_);
  }

  Stats stats() const override {
    absl::MutexLock lock(&mu_);
    Stats s;
    s.runs = runs_.load(std::memory_order_relaxed);
    s.plans_compiled = plans_compiled_;
    s.plans_cached = static_cast<int64_t>(plans_.size());
    s.plans_evicted = plans_evicted_;
    for (const auto& [key, entry] : plans_) {
      const CachedPlan& cached = entry.cached;
      s.plan_cache_bytes += PlanBytes(cached);
      if (cached.graph_runner == nullptr) continue;
      s.gpu_graphs += cached.graph_runner->active() ? 1 : 0;
      s.gpu_graph_steps += cached.graph_runner->replays();
      s.gpu_graph_direct_feeds += cached.graph_runner->direct_host_feeds();
      s.gpu_graph_copied_feeds += cached.graph_runner->copied_host_feeds();
    }
    bool has_gpu = false;
    for (const auto& d : devices_) {
      if (d->type() != DeviceType::kGpu) continue;
      has_gpu = true;
      const auto* gpu = static_cast<const GpuDevice*>(d.get());
      const GpuDevice::HostCopyStats c = gpu->host_copy_stats();
      s.host_copies_direct += c.to_device_direct + c.to_host_direct;
      s.host_copies_staged += c.to_device_staged + c.to_host_staged;
      s.gpu_kernel_host_waits += gpu->kernel_host_waits();
    }
    if (has_gpu) {
      for (const std::string& key : lru_) {  // most recently used first
        const CachedPlan& cached = plans_.at(key).cached;
        if (cached.graph_runner != nullptr) {
          if (cached.graph_runner->active()) break;
          const std::string failure = cached.graph_runner->failure();
          if (failure.empty()) break;
          s.gpu_graph_why_not = "recording it failed: " + failure;
          break;
        }
        if (cached.graph_why_not != nullptr) {
          s.gpu_graph_why_not = *cached.graph_why_not;
          break;
        }
      }
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
    if (parsed.ok() && removed_nodes_.contains(parsed->node)) {
      return absl::InvalidArgumentError(absl::StrCat(
          is_feed ? "cannot feed '" : "cannot fetch '", name, "': node '",
          parsed->node, "' is not in the optimised graph (optimization level ",
          OptimizationLevelName(optimization_level_),
          " removed or fused it); use the model's ",
          is_feed ? "inputs: " : "outputs: ",
          is_feed ? InputSignature() : OutputSignature(),
          ", or set optimization_level: OPTIMIZATION_NONE in the config"));
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

  // The names of the devices the session set up.
  std::vector<std::string> DeviceNames() const {
    std::vector<std::string> names;
    for (const auto& d : devices_) names.push_back(d->name());
    return names;
  }

  // The topology index of the session device named `name`; -1 for the host
  // ("", or any CPU: host memory). `what` opens the error.
  absl::StatusOr<int> SessionDevice(const std::string& name,
                                    absl::string_view what) const {
    if (name.empty()) return -1;
    absl::StatusOr<DeviceName> parsed = ParseDeviceName(name);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", name, "': ", parsed.status().message()));
    }
    if (parsed->type == DeviceType::kCpu) return -1;
    for (int i = 0; i < static_cast<int>(topology_devices_.size()); ++i) {
      const Device* d = topology_devices_[i];
      if (d != nullptr && d->type() == DeviceType::kGpu &&
          (parsed->index < 0 || d->index() == parsed->index)) {
        return i;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", name, "' is not a device of this session; it uses ",
        absl::StrJoin(DeviceNames(), ", "),
        HasGpu() ? "" : " (no GPU: it runs on the CPU only)"));
  }

  bool HasGpu() const {
    for (const auto& d : devices_) {
      if (d->type() == DeviceType::kGpu) return true;
    }
    return false;
  }

  // Where `tensor`'s memory is: -1 the host, a topology index for one of
  // the session's GPUs, -2 none of the session's devices (a GPU it does
  // not use, or memory it cannot tell). Errors: external memory naming a
  // device that does not parse (cannot happen for WrapExternalMemory's).
  absl::StatusOr<int> TensorDevice(const Tensor& tensor) const {
    if (tensor.on_host()) return -1;
    const std::string external = ExternalMemoryDevice(tensor);
    if (!external.empty()) {
      absl::StatusOr<int> d = SessionDevice(external, "device");
      return d.ok() ? *d : -2;
    }
    for (int i = 0; i < static_cast<int>(topology_devices_.size()); ++i) {
      Device* d = topology_devices_[i];
      if (d != nullptr && d->allocator() == tensor.allocator()) return i;
    }
    return -2;
  }

  // The topology index of the device feed `name` arrives on; -1 the host.
  absl::StatusOr<int> FeedDevice(const std::string& name,
                                 const Tensor& value) const {
    ASSIGN_OR_RETURN(int d, TensorDevice(value));
    if (d != -2) return d;
    const std::string external = ExternalMemoryDevice(value);
    if (!external.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' is in the memory of ", external,
          ", which this session does not use; it uses ",
          absl::StrJoin(DeviceNames(), ", "),
          HasGpu() ? "" : " (no GPU: it runs on the CPU only)",
          ". Copy the input to the host or to one of those devices"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", name, "' is in device memory of ",
        value.allocator()->Name(),
        ", which belongs to none of this session's devices (",
        absl::StrJoin(DeviceNames(), ", "),
        "); pass a host tensor, or wrap GPU memory with WrapExternalMemory "
        "naming its device"));
  }

  // StepOptions::fetch_devices resolved per fetch (topology index; -1 the
  // host).
  absl::StatusOr<std::vector<int>> FetchDevices(
      const std::vector<std::string>& given, size_t count) const {
    std::vector<int> out(count, -1);
    if (given.empty()) return out;
    if (given.size() != 1 && given.size() != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fetch_devices has ", given.size(), " names for ", count,
          " fetches; give one per fetch, or one for all"));
    }
    for (size_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(out[i], SessionDevice(given.size() == 1 ? given[0]
                                                               : given[i],
                                             "fetch device"));
    }
    return out;
  }

  // Waits for every GPU of the session to finish its work so far.
  absl::Status SynchronizeGpus() {
    for (const auto& d : devices_) {
      if (d->type() == DeviceType::kGpu) {
        RETURN_IF_ERROR(static_cast<GpuDevice*>(d.get())->Synchronize());
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TensorRef> ResolveFetch(const std::string& name) const {
    return ResolveRef(name, /*is_feed=*/false);
  }

  // Runs the optimisation passes the config asks for (optimizer/pipeline.h)
  // and keeps their graph; placement and every step use it. A pass that
  // failed is skipped, and said so in the log.
  // Runs the passes on graph_; `record` (when not null) gets what they did,
  // for a prepared model's header.
  absl::Status Optimize(PreparedModelHeader* record) {
    const PassOptions options =
        PassOptionsFromConfig(config_, providers_->compute().Target());
    PassStartFn on_pass;
    if (progress_) {
      on_pass = [this](const std::string& pass, int done, int total) {
        progress_({"optimizing", pass, done, total});
      };
    }
    ASSIGN_OR_RETURN(
        OptimizedGraph opt,
        OptimizeGraph(std::move(graph_), config_.optimization_level(),
                      options, on_pass));
    if (record != nullptr) RecordOptimization(opt, record);
    graph_ = std::move(opt.graph);
    optimization_level_ = opt.level;
    removed_nodes_.insert(opt.removed_nodes.begin(), opt.removed_nodes.end());
    for (const PassRecord& r : opt.records) {
      if (r.error.empty()) continue;
      log_.push_back(absl::StrCat("optimizer: pass ", r.pass,
                                  " failed and was skipped: ", r.error));
    }
    return absl::OkStatus();
  }

  // Places the graph on this machine's devices (placer/machine_topology.h,
  // the topology `sluice place` uses), then sets up the CPUs and only the
  // GPUs that received nodes, so a model on /gpu:0 reserves no memory on
  // /gpu:1. Manual placement on a CPU with no node requesting a GPU
  // (StaysOnCpus) tries the CPUs alone first, without asking the driver
  // about GPUs: when they take every node, no CUDA context is made. A node
  // with no CPU kernel, or no room on the CPUs, still gets the GPUs, as
  // manual placement's fallback promises.
  absl::Status PlaceAndSetUpDevices() {
    const bool use_gpu = !config_.has_use_gpu() || config_.use_gpu();
    PlacerOptions options = PlacerOptionsFromConfig(config_);
    options.has_kernel = providers_->CapabilityQuery();
    if (!use_gpu || StaysOnCpus(*graph_, options)) {
      // The CPUs alone, as the config shapes them (GPUs it names are not
      // looked at: they would get no node).
      RuntimeConfig cpus_only = config_;
      cpus_only.set_use_gpu(false);
      cpus_only.clear_visible_gpus();
      cpus_only.clear_gpu();
      DeviceInventory cpu;
      cpu.cpu = DiscoverCpu();
      absl::Status s = Place(cpus_only, cpu, options);
      if (!use_gpu) RETURN_IF_ERROR(s);
      if (s.ok()) {
        if (use_gpu && kCudaBuild) {
          log_.push_back(absl::StrCat(
              "devices: no GPU set up: manual placement on ",
              config_.default_device(), " and no node requests a GPU"));
        }
        return SetUpDevices();
      }
    }
    const DeviceInventory inventory = DiscoverDevices();
    for (const GpuInfo& gpu : inventory.gpus) {
      if (gpu.usable) continue;
      // Said once, where the user looks, rather than a silent CPU fallback.
      log_.push_back(absl::StrCat("devices: GPU ", gpu.index, " (", gpu.name,
                                  ") is not used: ", gpu.unusable_reason));
    }
    RETURN_IF_ERROR(Place(config_, inventory, options));
    return SetUpDevices();
  }

  // Runs the placer over `inventory`'s devices as `config` shapes them,
  // GPUs first (placer.h rule 1): with a GPU present, the CPU takes only
  // what no GPU can run, what asks for it by name, or, under MANUAL or
  // SINGLE with a CPU default device, what has no request. So a model whose
  // nodes all have GPU kernels stays on the GPUs, as TensorFlow users
  // expect, and feeds and results are the only traffic with the host.
  absl::Status Place(const RuntimeConfig& config,
                     const DeviceInventory& inventory,
                     const PlacerOptions& options) {
    ASSIGN_OR_RETURN(machine_, PlanMachineDevices(config, inventory));
    RETURN_IF_ERROR(CheckDefaultDevice());
    ASSIGN_OR_RETURN(placement_,
                     PlaceGraph(*graph_, machine_.topology, options));
    return absl::OkStatus();
  }

  // The CPUs, and the GPUs the placement uses, in topology order.
  // In a job of several processes, this rank's devices are a slice of the
  // cluster's topology, from `offset` on; the others' stay null.
  absl::Status SetUpDevices() {
    Progress("setting up devices");
    const int intra = ThreadCount(config_.intra_op_threads());
    const int offset =
        cluster_ != nullptr
            ? cluster_->topology().first_device[cluster_->rank()]
            : 0;
    topology_devices_.assign(Topology().num_devices(), nullptr);
    for (int i = 0; i < machine_.num_cpus; ++i) {
      const int64_t limit = machine_.topology.devices[i].memory_limit;
      devices_.push_back(std::make_unique<CpuDevice>(i, limit, intra,
                                                     /*reuse_blocks=*/true));
      devices_.back()->set_provider(&providers_->cpu());
      topology_devices_[offset + i] = devices_.back().get();
    }
    host_ = devices_[0].get();
    std::vector<int> used_gpus;
    if (cluster_ == nullptr) {
      used_gpus = machine_.UsedGpus(placement_);
    } else {
      absl::flat_hash_set<int> seen;
      for (int d : placement_.device_of_node) {
        const int local = d - offset - machine_.num_cpus;
        if (local >= 0 && d - offset < machine_.topology.num_devices() &&
            seen.insert(local).second) {
          used_gpus.push_back(local);
        }
      }
      std::sort(used_gpus.begin(), used_gpus.end());
    }
    std::vector<GpuDeviceSpec> used;
    for (int n : used_gpus) used.push_back(machine_.gpu_specs[n]);
    if (!used.empty()) {
      ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GpuDevice>> gpus,
                       CreateGpuDevicesFromSpecs(config_, used));
      for (auto& gpu : gpus) {
        gpu->set_provider(providers_->cuda());
        topology_devices_[offset + machine_.gpu_device(gpu->index())] =
            gpu.get();
        devices_.push_back(std::move(gpu));
      }
    }
    if (machine_.gpu_specs.size() > used.size()) {
      log_.push_back(absl::StrCat(
          "devices: ", used.size(), " of ", machine_.gpu_specs.size(),
          " GPUs set up (the others have no nodes)"));
    }
    for (const std::string& note : placement_.notes) {
      log_.push_back(absl::StrCat("placement: ", note));
    }
    assignment_.resize(graph_->num_nodes());
    for (int id = 0; id < graph_->num_nodes(); ++id) {
      const int d = placement_.device_of_node[id];
      assignment_[id] = topology_devices_[d];  // null: another rank's
      if (config_.log_placement()) {
        std::string line = absl::StrCat("placement: ", graph_->node(id).name(),
                                        " -> ", Topology().devices[d].name);
        if (id < static_cast<int>(placement_.reason.size())) {
          absl::StrAppend(&line, " (", placement_.reason[id], ")");
        }
        log_.push_back(line);
      }
    }
    return absl::OkStatus();
  }

  // The topology placed on: this machine's, or every rank's in a job.
  const DeviceTopology& Topology() const {
    return cluster_ != nullptr ? cluster_->topology().topology
                               : machine_.topology;
  }

  // Joins the job the launcher started (config `cluster`); a job of one
  // process runs as without it.
  absl::Status JoinCluster() {
    ASSIGN_OR_RETURN(std::unique_ptr<ClusterRuntime> cluster,
                     ClusterRuntime::Join(config_, *graph_));
    log_.push_back(absl::StrCat("cluster: rank ", cluster->rank(), " of ",
                                cluster->world_size(), " over ",
                                cluster->group()->Describe()));
    if (cluster->world_size() > 1) cluster_ = std::move(cluster);
    return absl::OkStatus();
  }

  // Every rank reports the devices its config and hardware give
  // (PlanMachineDevices, as one process would use), rank 0 places the
  // graph over all of them and sends the placement; each rank sets up its
  // own devices (the GPUs with nodes) and compiles its plans with a send
  // or receive per transfer that crosses ranks (executor/cluster.h).
  absl::Status PlaceOverCluster() {
    const bool use_gpu = !config_.has_use_gpu() || config_.use_gpu();
    DeviceInventory inventory;
    if (use_gpu) {
      inventory = DiscoverDevices();
    } else {
      inventory.cpu = DiscoverCpu();
    }
    absl::StatusOr<MachineDevices> machine =
        PlanMachineDevices(config_, inventory);
    ASSIGN_OR_RETURN(const ClusterTopology* topo,
                     cluster_->ExchangeDevices(
                         machine.ok() ? machine->topology : DeviceTopology(),
                         "", machine.status()));
    machine_ = *std::move(machine);
    PlacerOptions options = PlacerOptionsFromConfig(config_);
    options.has_kernel = providers_->CapabilityQuery();
    ASSIGN_OR_RETURN(placement_, cluster_->SharePlacement([&] {
      return PlaceGraph(*graph_, topo->topology, options);
    }));
    RETURN_IF_ERROR(SetUpDevices());
    cluster_->MakeTransfers(host_);
    plan_options_.cross_process = cluster_->plan_options();
    Device* gpu = nullptr;  // this rank's first GPU with nodes
    for (Device* d : topology_devices_) {
      if (d != nullptr && d->type() == DeviceType::kGpu) {
        gpu = d;
        break;
      }
    }
    ASSIGN_OR_RETURN(std::string route, cluster_->SetUpGpuRoute(gpu));
    log_.push_back(std::move(route));
    std::vector<int> per_rank(cluster_->world_size(), 0);
    for (int d : placement_.device_of_node) {
      ++per_rank[topo->rank_of_device[d]];
    }
    for (int r = 0; r < cluster_->world_size(); ++r) {
      log_.push_back(absl::StrCat("cluster: rank ", r, " has ", per_rank[r],
                                  " of ", graph_->num_nodes(), " nodes"));
    }
    return absl::OkStatus();
  }

  // A worker's plan for rank 0's step `request` (the same signature rank
  // 0 compiled: feeds and fetches in its order), and the values of the
  // feeds given on this rank (from `mine`, Serve's).
  absl::StatusOr<ClusterRuntime::ServedStep> ServedPlan(
      const StepRequest& request, const Feeds& mine) {
    std::vector<TensorRef> feed_refs, fetch_refs;
    std::vector<int> feed_devices;
    ClusterRuntime::ServedStep served;
    std::string key;
    for (const StepFeed& f : request.feeds()) {
      ASSIGN_OR_RETURN(TensorRef ref, ResolveRef(f.name(), /*is_feed=*/true));
      feed_refs.push_back(ref);
      if (f.rank() == 0) {
        feed_devices.push_back(-1);
        absl::StrAppend(&key, ref.node, ":", ref.port, "=",
                        absl::StrJoin(f.dims(), ","), "@-1;");
        continue;
      }
      if (f.rank() < 0 || f.rank() >= cluster_->world_size()) {
        return absl::DataLossError(absl::StrCat(
            "rank 0's step names rank ", f.rank(), " for feed '", f.name(),
            "'"));
      }
      feed_devices.push_back(cluster_->topology().first_device[f.rank()]);
      absl::StrAppend(&key, ref.node, ":", ref.port, "@rank", f.rank(), ";");
      if (f.rank() != cluster_->rank()) continue;
      const Tensor* value = nullptr;
      for (const auto& [name, v] : mine) {
        if (name == f.name()) value = &v;
      }
      if (value == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "no feed '", f.name(), "' was given to this rank's Serve, and "
            "rank 0's step expects it here (feeds_on_ranks)"));
      }
      ASSIGN_OR_RETURN(TensorRef checked, ResolveFeed(f.name(), *value));
      (void)checked;
      served.feeds.push_back(*value);
    }
    key += "|";
    for (const std::string& name : request.fetches()) {
      ASSIGN_OR_RETURN(TensorRef ref, ResolveFetch(name));
      fetch_refs.push_back(ref);
      absl::StrAppend(&key, ref.node, ":", ref.port, "@-1;");
    }
    ASSIGN_OR_RETURN(
        CachedPlan cached,
        GetPlan(key, feed_refs, fetch_refs, feed_devices,
                std::vector<int>(fetch_refs.size(), -1), false));
    served.plan = cached.plan;
    return served;
  }

  // The first provider that asks for the nodes placed on its devices to
  // run one at a time (ExecutionProvider::RunsNodesOneAtATime), or null.
  const ExecutionProvider* ProviderWantingOneAtATime() const {
    for (DeviceType type : {DeviceType::kCpu, DeviceType::kGpu}) {
      const ExecutionProvider* provider = providers_->Get(type);
      if (provider == nullptr) continue;
      std::vector<int> nodes;
      for (int id = 0; id < graph_->num_nodes(); ++id) {
        if (assignment_[id] != nullptr && assignment_[id]->type() == type) {
          nodes.push_back(id);
        }
      }
      if (provider->RunsNodesOneAtATime(*graph_, nodes)) return provider;
    }
    return nullptr;
  }

  // config.default_device must name a device of the machine.
  absl::Status CheckDefaultDevice() const {
    if (config_.default_device().empty()) return absl::OkStatus();
    ASSIGN_OR_RETURN(DeviceName want, ParseDeviceName(config_.default_device()));
    std::vector<std::string> names;
    for (const DeviceSpec& d : machine_.topology.devices) {
      if (d.type == want.type && (want.index < 0 || d.index == want.index)) {
        return absl::OkStatus();
      }
      names.push_back(d.name);
    }
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
    const Tensor& held = *node.const_value();
    if (!held.on_host()) {
      // Moved to the one GPU that reads it (MoveWeightsToDevices).
      if (device->type() == DeviceType::kGpu &&
          static_cast<GpuDevice*>(device)->HoldsMemoryOf(held)) {
        return held;
      }
      return absl::InternalError(absl::StrCat(
          node.DebugName(), " is held in another device's memory, not ",
          device->name(), "'s"));
    }
    ASSIGN_OR_RETURN(Tensor value, CopyTensor(held, host_, device));
    constants_.emplace(key, value);
    return value;
  }

  // A GPU session's weights go to the GPU that reads them now, at
  // creation (GpuDevice::CopyHostToDevice: through its two pinned staging
  // buffers, chunk by chunk), and the graph's host copy is released, so
  // that the host holds a model's weights once while it loads, not for the
  // session's life. A Const keeps its host value where a CPU node reads it,
  // where a GPU kernel reads it in host memory (Resize's sizes:
  // KernelHostMemoryInputs), or where another device reads it. A step that
  // fetches one copies it back from its GPU.
  absl::Status MoveWeightsToDevices() {
    struct Moved {
      int constants = 0;
      int64_t bytes = 0;
    };
    std::map<std::string, Moved> moved;  // by device name, in order
    int64_t total = 0;
    // The session owns its graph and nothing else reads it yet
    // (Graph::MoveConstValue).
    Graph& graph = const_cast<Graph&>(*graph_);
    for (const Node& n : graph.nodes()) {
      if (!n.is_const() || n.const_value() == nullptr ||
          !n.const_value()->on_host()) {
        continue;
      }
      Device* device = assignment_[n.id()];
      if (device == nullptr || device->type() != DeviceType::kGpu ||
          !OnlyReadInMemoryOf(n, device)) {
        continue;
      }
      if (moved.empty()) Progress("moving the weights to the GPUs");
      ASSIGN_OR_RETURN(Tensor on_device, ConstantOn(n, device));
      const int64_t bytes = static_cast<int64_t>(on_device.bytes());
      RETURN_IF_ERROR(graph.MoveConstValue(n.id(), std::move(on_device)));
      Moved& m = moved[device->name()];
      ++m.constants;
      m.bytes += bytes;
      total += bytes;
    }
#ifdef __GLIBC__
    // Weights the loader read into the heap (not mapped from a file) leave
    // free pages inside it that glibc keeps resident; hand them back.
    if (total >= kTrimAfterMovingBytes) malloc_trim(0);
#endif
    for (const auto& [name, m] : moved) {
      log_.push_back(absl::StrCat(
          "weights: ", m.constants, " constants (", FormatBytes(m.bytes),
          ") moved to ", name, " at creation; their host copies released"));
    }
    return absl::OkStatus();
  }

  // Whether every reader of Const `n` runs on `device` and reads it in that
  // device's memory.
  bool OnlyReadInMemoryOf(const Node& n, Device* device) const {
    for (const Consumer& c : graph_->consumers(n.id(), 0)) {
      if (assignment_[c.node] != device) return false;
      const std::vector<int> host_inputs =
          KernelHostMemoryInputs(graph_->node(c.node), device->type());
      if (std::find(host_inputs.begin(), host_inputs.end(), c.input) !=
          host_inputs.end()) {
        return false;
      }
    }
    return true;
  }

  // A compiled plan and, where it qualifies and the config allows, the
  // runner that replays its GPU work as a CUDA graph.
  struct CachedPlan {
    std::shared_ptr<const ExecutionPlan> plan;
    std::shared_ptr<GpuGraphRunner> graph_runner;  // null: ordinary steps
    // Why graph_runner is null, for a plan with a GPU kernel (shared: the
    // entry is copied for every step).
    std::shared_ptr<const std::string> graph_why_not;
  };

  absl::StatusOr<CachedPlan> GetPlan(const std::string& key,
                                     const std::vector<TensorRef>& feeds,
                                     const std::vector<TensorRef>& fetches,
                                     const std::vector<int>& feed_devices,
                                     const std::vector<int>& fetch_devices,
                                     bool pinned_fetches) {
    {
      absl::MutexLock lock(&mu_);
      auto it = plans_.find(key);
      if (it != plans_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        return it->second.cached;
      }
    }
    // The placement split for this signature: the transfers in it are the
    // copies the plan runs (and what `sluice place` prints for the default
    // signature).
    PartitionOptions po;
    po.build_graph_defs = false;
    po.feeds = &feeds;
    po.fetches = &fetches;
    po.feed_devices = &feed_devices;
    po.fetch_devices = &fetch_devices;
    po.host_device = 0;
    po.host_memory_inputs = KernelHostMemoryInputs;
    ASSIGN_OR_RETURN(Partitioning parts,
                     PartitionGraph(*graph_, Topology(), placement_, po));
    PlanOptions plan_options = plan_options_;
    if (pinned_fetches) plan_options.host_fetch_allocator = PinnedHostAllocator();
    ASSIGN_OR_RETURN(
        std::unique_ptr<const ExecutionPlan> compiled,
        CompilePlan(*graph_, feeds, fetches,
                    std::make_shared<const Partitioning>(std::move(parts)),
                    plan_options));
    CachedPlan entry;
    entry.plan = std::move(compiled);
    // A CUDA graph replays in memory of its own: GPU feeds are copied into
    // it before each launch and GPU fetches out of it after
    // (executor/gpu_graph_runner.h).
    if ((!config_.has_gpu_graphs() || config_.gpu_graphs()) &&
        cluster_ == nullptr) {
      std::string why_not;
      entry.graph_runner = GpuGraphRunner::ForPlan(entry.plan, &why_not);
      bool on_gpu = false;
      for (const PlanNode& pn : entry.plan->nodes) {
        on_gpu = on_gpu || (!pn.is_copy && pn.device->type() == DeviceType::kGpu);
      }
      if (entry.graph_runner == nullptr && on_gpu) {
        entry.graph_why_not = std::make_shared<const std::string>(std::move(why_not));
      }
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = plans_.try_emplace(key);
    // Two threads may compile the same signature at once; one plan is kept.
    if (inserted) {
      ++plans_compiled_;
      it->second.cached = std::move(entry);
      lru_.push_front(key);
      it->second.lru = lru_.begin();
    }
    CachedPlan out = it->second.cached;
    EvictLocked(key);
    return out;
  }

  // Device bytes a cached plan holds beyond the step it runs: what its CUDA
  // graph keeps (ordinary plans hold nothing between steps).
  static int64_t PlanBytes(const CachedPlan& p) {
    return p.graph_runner != nullptr ? p.graph_runner->held_bytes() : 0;
  }

  // Drops least recently used plans until the cache is within
  // plan_cache_max_plans and plan_cache_max_bytes, never `keep` (the plan a
  // step is about to use). A step already running an evicted plan keeps it
  // alive until it ends.
  void EvictLocked(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t max_plans = config_.plan_cache_max_plans() > 0
                                 ? config_.plan_cache_max_plans()
                                 : kDefaultPlanCachePlans;
    const int64_t max_bytes = config_.plan_cache_max_bytes();
    int64_t bytes = 0;
    if (max_bytes > 0) {
      for (const auto& [k, e] : plans_) bytes += PlanBytes(e.cached);
    }
    auto next_victim = lru_.end();
    while (true) {
      const bool too_many = plans_.size() > max_plans;
      const bool too_big = max_bytes > 0 && bytes > max_bytes;
      if ((!too_many && !too_big) || next_victim == lru_.begin()) break;
      next_victim = std::prev(next_victim);
      if (*next_victim == keep) continue;
      auto it = plans_.find(*next_victim);
      bytes -= PlanBytes(it->second.cached);
      plans_.erase(it);
      next_victim = lru_.erase(next_victim);
      ++plans_evicted_;
    }
  }


  // Declared first, so destroyed last: host blocks the steps free are kept
  // for reuse while a session lives; after the last one, once its tensors
  // are gone, they go back to the C library (device/cpu_memory.h).
  CpuMemoryUse cpu_memory_use_;

  // Fixed after Init(): the graph after the optimisation passes.
  std::unique_ptr<const Graph> graph_;
  OptimizationLevel optimization_level_ = OPTIMIZATION_NONE;
  // Nodes of the loaded graph the passes removed, for fetch errors.
  absl::flat_hash_set<std::string> removed_nodes_;
  RuntimeConfig config_;  // with environment overrides applied
  std::string model_path_;  // CreateFromFile's; "" for Create
  std::vector<std::string> log_;
  // CreateOptions::progress, for Init's stages (called on the creating
  // thread only).
  std::function<void(const CreationProgress&)> progress_;
  void Progress(const std::string& stage) {
    if (progress_) progress_({stage, "", 0, 0});
  }
  MachineDevices machine_;  // the topology placed on
  // The execution providers of this machine's devices, as the config sets
  // them; declared before devices_, which point to them.
  std::unique_ptr<const ProviderSet> providers_;
  std::vector<std::unique_ptr<Device>> devices_;
  // Per topology index, the device set up for it; null for GPUs without
  // nodes.
  std::vector<Device*> topology_devices_;
  Device* host_ = nullptr;  // devices_[0], /cpu:0
  Placement placement_;
  DeviceAssignment assignment_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  Scheduler scheduler_;
  // A job of several processes (config `cluster`); null: one process.
  std::unique_ptr<ClusterRuntime> cluster_;
  PlanOptions plan_options_;

  absl::Mutex constants_mu_;
  absl::flat_hash_map<std::pair<int, Device*>, Tensor> constants_
      ABSL_GUARDED_BY(constants_mu_);

  // Held shared by every step, exclusively by a step that records a GPU
  // graph (see RunWithStats).
  absl::Mutex steps_mu_;
  mutable absl::Mutex mu_;
  struct CacheEntry {
    CachedPlan cached;
    std::list<std::string>::iterator lru;  // its key in lru_
  };
  absl::flat_hash_map<std::string, CacheEntry> plans_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // most recent first
  int64_t plans_compiled_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t plans_evicted_ ABSL_GUARDED_BY(mu_) = 0;
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
  return Create(std::move(graph), config, CreateOptions());
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(
    std::unique_ptr<const Graph> graph, const RuntimeConfig& config,
    const CreateOptions& options) {
  if (graph == nullptr) {
    return absl::InvalidArgumentError("Session::Create needs a graph");
  }
  auto session = std::make_unique<SessionImpl>(std::move(graph), config);
  RETURN_IF_ERROR(session->Init(options));
  return std::unique_ptr<Session>(std::move(session));
}

absl::StatusOr<std::unique_ptr<Session>> Session::CreateFromFile(
    const std::string& path, const RuntimeConfig& config) {
  return CreateFromFile(path, config, CreateOptions());
}

absl::StatusOr<std::unique_ptr<Session>> Session::CreateFromFile(
    const std::string& path, const RuntimeConfig& config,
    const CreateOptions& options) {
  // Loaded in Init, once the config's environment overrides and providers
  // are known: a prepared model's key depends on them.
  auto session = std::make_unique<SessionImpl>(path, config);
  RETURN_IF_ERROR(session->Init(options));
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace sluice
