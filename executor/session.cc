#include "executor/session.h"

#include <atomic>
#include <thread>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cpu_device.h"
#include "executor/executor.h"
#include "executor/plan.h"
#include "graph/loader.h"

namespace sluice {
namespace {

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

  absl::Status Init() {
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
    // Until the placer exists every node runs on the first device.
    assignment_.assign(graph_->num_nodes(), devices_[0].get());
    int inter = ThreadCount(config_.inter_op_threads());
    if (inter > 1) {
      pool_ = std::make_unique<Eigen::ThreadPool>(inter);
      scheduler_ = [pool = pool_.get()](std::function<void()> fn) {
        pool->Schedule(std::move(fn));
      };
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      const Feeds& feeds, const std::vector<std::string>& fetches) override {
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
    ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan,
                     GetPlan(key, feed_refs, fetch_refs));
    ASSIGN_OR_RETURN(std::vector<Tensor> out,
                     RunPlan(*plan, std::move(feed_values), scheduler_));
    runs_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  const Graph& graph() const override { return *graph_; }
  const RuntimeConfig& config() const override { return config_; }
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

  absl::StatusOr<std::shared_ptr<const ExecutionPlan>> GetPlan(
      const std::string& key, const std::vector<TensorRef>& feeds,
      const std::vector<TensorRef>& fetches) {
    {
      absl::MutexLock lock(&mu_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    ASSIGN_OR_RETURN(std::unique_ptr<const ExecutionPlan> compiled,
                     CompilePlan(*graph_, feeds, fetches, assignment_,
                                 /*allow_parallel=*/pool_ != nullptr));
    std::shared_ptr<const ExecutionPlan> plan = std::move(compiled);
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = plans_.emplace(key, plan);
    // Two threads may compile the same signature at once; one plan is kept.
    if (inserted) ++plans_compiled_;
    return it->second;
  }

  // Fixed after Init().
  const std::unique_ptr<const Graph> graph_;
  const RuntimeConfig config_;
  std::vector<std::unique_ptr<Device>> devices_;
  DeviceAssignment assignment_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  Scheduler scheduler_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const ExecutionPlan>>
      plans_ ABSL_GUARDED_BY(mu_);
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
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph, LoadGraph(path));
  return Create(std::move(graph), config);
}

}  // namespace sluice
