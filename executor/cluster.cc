#include "executor/cluster.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "device/gpu_device.h"
#include "device/nccl_communicator.h"
#include "distributed/process_group_info.h"

namespace sluice {
namespace {

constexpr absl::Duration kDefaultTimeout = absl::Seconds(300);

absl::Duration Seconds(double s) {
  return s > 0 ? absl::Seconds(s) : kDefaultTimeout;
}

// FNV-1a, 64 bits: the same on every platform and process (absl::Hash is
// salted per process).
void Mix(uint64_t* h, absl::string_view bytes) {
  for (unsigned char c : bytes) {
    *h ^= c;
    *h *= 1099511628211ull;
  }
  *h ^= 0xff;  // a separator, so "ab","c" differs from "a","bc"
  *h *= 1099511628211ull;
}

ClusterDevice ToProto(const DeviceSpec& d) {
  ClusterDevice p;
  p.set_name(d.name);
  p.set_type(static_cast<int>(d.type));
  p.set_index(d.index);
  p.set_memory_limit(d.memory_limit);
  p.set_memory_budget(d.memory_budget);
  p.set_flops_per_s(d.flops_per_s);
  p.set_half_flops_per_s(d.half_flops_per_s);
  p.set_bytes_per_s(d.bytes_per_s);
  p.set_launch_seconds(d.launch_seconds);
  p.set_physical_id(d.physical_id);
  return p;
}

DeviceSpec FromProto(const ClusterDevice& p) {
  DeviceSpec d;
  d.name = p.name();
  d.type = p.type() == static_cast<int>(DeviceType::kGpu) ? DeviceType::kGpu
                                                          : DeviceType::kCpu;
  d.index = p.index();
  d.memory_limit = p.memory_limit();
  d.memory_budget = p.memory_budget();
  d.flops_per_s = p.flops_per_s();
  d.half_flops_per_s = p.half_flops_per_s();
  d.bytes_per_s = p.bytes_per_s();
  d.launch_seconds = p.launch_seconds();
  d.physical_id = p.physical_id();
  return d;
}

absl::StatusOr<DeviceTopology> TopologyOf(const RankReport& report, int rank) {
  DeviceTopology topo;
  for (const ClusterDevice& d : report.devices()) {
    topo.devices.push_back(FromProto(d));
  }
  const size_t n = topo.devices.size();
  if (report.link_kind_size() != static_cast<int>(n * n) ||
      report.link_latency_s_size() != static_cast<int>(n * n) ||
      report.link_bytes_per_s_size() != static_cast<int>(n * n)) {
    return absl::DataLossError(absl::StrCat(
        "rank ", rank, " reported ", n, " devices but not their links"));
  }
  for (size_t i = 0; i < n * n; ++i) {
    Link link;
    link.kind = static_cast<LinkKind>(report.link_kind(i));
    link.latency_s = report.link_latency_s(i);
    link.bytes_per_s = report.link_bytes_per_s(i);
    topo.links.push_back(link);
  }
  if (n == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", rank, " reported no device"));
  }
  return topo;
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown host";
  return name;
}

// The GPU route over an NCCL communicator: a header, then the bytes.
class NcclGpuTransport final : public GpuTransport {
 public:
  explicit NcclGpuTransport(std::unique_ptr<NcclCommunicator> comm)
      : comm_(std::move(comm)) {}
  Device* device() const override { return comm_->device(); }
  absl::Status Send(const TensorHeader& header, const Tensor& value,
                    Device* device, int peer) override {
    RETURN_IF_ERROR(comm_->SendHost(&header, sizeof(header), peer));
    if (value.bytes() == 0) return absl::OkStatus();
    return comm_->Send(value.raw_data(), static_cast<size_t>(value.bytes()),
                       peer);
  }
  absl::StatusOr<Tensor> Receive(Device* device, int peer) override {
    TensorHeader header;
    RETURN_IF_ERROR(comm_->RecvHost(&header, sizeof(header), peer));
    ASSIGN_OR_RETURN(Shape shape, ShapeFromHeader(header, peer));
    ASSIGN_OR_RETURN(Tensor value,
                     Tensor::Create(static_cast<DataType>(header.dtype), shape,
                                    device->allocator()));
    if (value.bytes() > 0) {
      RETURN_IF_ERROR(comm_->Recv(value.raw_data(),
                                  static_cast<size_t>(value.bytes()), peer));
    }
    return value;
  }
  void Abort() override { comm_->Abort(); }

 private:
  std::unique_ptr<NcclCommunicator> comm_;
};

}  // namespace

std::string GraphDigest(const Graph& graph) {
  uint64_t h = 14695981039346656037ull;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& n = graph.node(id);
    Mix(&h, n.name());
    Mix(&h, n.op());
    for (int i = 0; i < n.num_inputs(); ++i) {
      Mix(&h, absl::StrCat(n.input(i).node, ":", n.input(i).port));
    }
  }
  return absl::StrFormat("%016x (%d nodes)", h, graph.num_nodes());
}

absl::StatusOr<std::unique_ptr<ClusterRuntime>> ClusterRuntime::Join(
    const RuntimeConfig& config, const Graph& graph) {
  ASSIGN_OR_RETURN(ProcessGroupInfo info, DetectProcessGroup());
  ProcessGroupOptions options;
  options.join_timeout = Seconds(config.cluster().join_timeout_seconds());
  options.collective_timeout =
      Seconds(config.cluster().step_timeout_seconds());
  std::string digest = GraphDigest(graph);
  ASSIGN_OR_RETURN(
      std::unique_ptr<ProcessGroup> group,
      ConnectProcessGroup(info, {FingerprintPart{"graph", digest}}, options));
  return std::unique_ptr<ClusterRuntime>(new ClusterRuntime(
      std::move(group), std::move(digest), options.collective_timeout));
}

absl::StatusOr<const ClusterTopology*> ClusterRuntime::ExchangeDevices(
    const DeviceTopology& mine, const std::string& hostname,
    const absl::Status& error) {
  RankReport report;
  report.set_hostname(hostname.empty() ? Hostname() : hostname);
  (*report.mutable_fingerprint())["graph"] = graph_digest_;
  if (!error.ok()) {
    report.set_error(std::string(error.message()));
  } else {
    for (const DeviceSpec& d : mine.devices) *report.add_devices() = ToProto(d);
    for (const Link& l : mine.links) {
      report.add_link_kind(static_cast<int>(l.kind));
      report.add_link_latency_s(l.latency_s);
      report.add_link_bytes_per_s(l.bytes_per_s);
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> blobs,
                   group_->AllGather(report.SerializeAsString(),
                                     step_timeout_));
  std::vector<DeviceTopology> ranks;
  std::string rank0_digest;
  for (int r = 0; r < static_cast<int>(blobs.size()); ++r) {
    RankReport theirs;
    if (!theirs.ParseFromString(blobs[r])) {
      return absl::DataLossError(
          absl::StrCat("rank ", r, "'s device report does not parse"));
    }
    if (!theirs.error().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", r, " (", theirs.hostname(),
          ") could not start its session: ", theirs.error()));
    }
    const std::string& digest = theirs.fingerprint().count("graph")
                                    ? theirs.fingerprint().at("graph")
                                    : std::string("none");
    if (r == 0) rank0_digest = digest;
    if (digest != rank0_digest) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", r, " (", theirs.hostname(), ") runs another graph than "
          "rank 0: digest ", digest, " against ", rank0_digest,
          "; every rank must load the same model with the same "
          "optimization settings"));
    }
    ASSIGN_OR_RETURN(DeviceTopology topo, TopologyOf(theirs, r));
    ranks.push_back(std::move(topo));
  }
  topology_ = JoinRankTopologies(ranks);
  return &topology_;
}

absl::StatusOr<Placement> ClusterRuntime::SharePlacement(
    const std::function<absl::StatusOr<Placement>()>& place) {
  ClusterPlacement message;
  absl::StatusOr<Placement> placed;
  if (rank() == 0) {
    placed = place();
    if (!placed.ok()) {
      message.set_error(std::string(placed.status().message()));
      message.set_error_code(static_cast<int>(placed.status().code()));
    } else {
      for (int d : placed->device_of_node) message.add_device_of_node(d);
      for (int v : placed->run_order) message.add_run_order(v);
      for (const std::string& r : placed->reason) message.add_reason(r);
      for (const std::string& n : placed->notes) message.add_notes(n);
      message.set_estimated_step_seconds(placed->estimated_step_seconds);
    }
  }
  ASSIGN_OR_RETURN(std::string blob,
                   group_->Broadcast(message.SerializeAsString(),
                                     step_timeout_));
  if (rank() == 0) return placed;
  if (!message.ParseFromString(blob)) {
    return absl::DataLossError("rank 0's placement does not parse");
  }
  if (!message.error().empty()) {
    return absl::Status(static_cast<absl::StatusCode>(message.error_code()),
                        absl::StrCat("rank 0 could not place the graph: ",
                                     message.error()));
  }
  Placement p;
  for (const DeviceSpec& d : topology_.topology.devices) {
    p.device_names.push_back(d.name);
  }
  p.device_of_node.assign(message.device_of_node().begin(),
                          message.device_of_node().end());
  p.run_order.assign(message.run_order().begin(), message.run_order().end());
  p.reason.assign(message.reason().begin(), message.reason().end());
  p.notes.assign(message.notes().begin(), message.notes().end());
  p.estimated_step_seconds = message.estimated_step_seconds();
  p.devices.resize(topology_.topology.devices.size());
  for (int d : p.device_of_node) {
    if (d < 0 || d >= topology_.topology.num_devices()) {
      return absl::DataLossError(absl::StrCat(
          "rank 0's placement names device ", d, " of ",
          topology_.topology.num_devices()));
    }
  }
  return p;
}

CrossProcessTransfers* ClusterRuntime::MakeTransfers(Device* host) {
  transfers_ = std::make_unique<CrossProcessTransfers>(
      group_.get(), host, &topology_.topology, &topology_.rank_of_device,
      step_timeout_);
  plan_.rank_of_device = &topology_.rank_of_device;
  plan_.rank = rank();
  plan_.make_kernel = [transfers = transfers_.get()](
                          int t, const Transfer& x, const Node& producer,
                          Device* local, bool send) {
    return transfers->MakeKernel(t, x, producer, local, send);
  };
  return transfers_.get();
}

absl::StatusOr<std::string> ClusterRuntime::SetUpGpuRoute(Device* local) {
  const bool ready = local != nullptr && NcclAvailable();
  ASSIGN_OR_RETURN(std::vector<std::string> all,
                   group_->AllGather(ready ? "1" : "0", step_timeout_));
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r] != "1") {
      return absl::StrCat(
          "cluster: tensors between ranks go through host memory (rank ", r,
          local == nullptr && r == rank() ? " has no GPU with nodes"
                                          : " has no GPU with nodes or no NCCL",
          "; this rank's NCCL: ", NcclDescription(), ")");
    }
  }
  std::string id;
  if (rank() == 0) {
    absl::StatusOr<std::string> made = NcclUniqueId();
    if (made.ok()) id = *std::move(made);
  }
  ASSIGN_OR_RETURN(id, group_->Broadcast(id, step_timeout_));
  if (id.empty()) {
    return absl::UnavailableError(
        "rank 0 could not make an NCCL unique id");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                   NcclCommunicator::Create(id, rank(), world_size(),
                                            static_cast<GpuDevice*>(local),
                                            step_timeout_));
  transfers_->set_gpu_transport(
      std::make_unique<NcclGpuTransport>(std::move(comm)));
  return absl::StrCat("cluster: GPU tensors between ranks go by ",
                      NcclDescription(), " from ", local->name());
}

bool ClusterRuntime::pipelined() const {
  return group_->HasMessages() &&
         (transfers_ == nullptr || transfers_->gpu_transport() == nullptr);
}

bool ClusterRuntime::broken() const {
  absl::MutexLock lock(&mu_);
  return !broken_.ok();
}

int ClusterRuntime::max_steps_in_flight() const {
  absl::MutexLock lock(&mu_);
  return max_in_flight_;
}

absl::StatusOr<uint64_t> ClusterRuntime::StartStep(StepRequest request) {
  absl::MutexLock lock(&mu_);
  // A step's channel (its tags) is free once the step kStepChannels
  // before it has finished.
  auto channel_free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return step_ + 1 < finishing_ + kStepChannels || !broken_.ok();
  };
  mu_.Await(absl::Condition(&channel_free));
  RETURN_IF_ERROR(broken_);
  const uint64_t step = step_ + 1;
  request.set_step(step);
  // Under the lock: the requests go out in the steps' order.
  absl::Status sent =
      group_->Announce(request.SerializeAsString(), step_timeout_);
  if (!sent.ok()) {
    broken_ = sent;
    return sent;
  }
  step_ = step;
  max_in_flight_ =
      std::max(max_in_flight_, static_cast<int>(step_ + 1 - finishing_));
  return step;
}

absl::StatusOr<StepRequest> ClusterRuntime::NextStep() {
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(broken_);
  }
  absl::StatusOr<std::string> blob = group_->NextAnnouncement();
  absl::MutexLock lock(&mu_);
  if (!blob.ok()) {
    broken_ = blob.status();
    return blob.status();
  }
  StepRequest request;
  if (!request.ParseFromString(*blob)) {
    return absl::DataLossError("rank 0's step request does not parse");
  }
  step_ = request.step();
  finishing_ = step_;
  return request;
}

absl::Status ClusterRuntime::FinishStep(CrossProcessStep* step,
                                        const absl::Status& local,
                                        const Partitioning* parts,
                                        int nodes_run) {
  const uint64_t n = step->step();
  {
    // Status exchanges (collectives) run in the steps' order.
    absl::MutexLock lock(&mu_);
    auto my_turn = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return finishing_ == n;
    };
    mu_.Await(absl::Condition(&my_turn));
  }
  absl::Status broken;
  absl::Status all = ExchangeStatus(step, local, parts, nodes_run, &broken);
  absl::MutexLock lock(&mu_);
  if (!broken.ok() && broken_.ok()) broken_ = broken;
  finishing_ = n + 1;
  return all;
}

absl::Status ClusterRuntime::ExchangeStatus(CrossProcessStep* step,
                                            const absl::Status& local,
                                            const Partitioning* parts,
                                            int nodes_run,
                                            absl::Status* broken) {
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(broken_);
  }
  const uint64_t n = step->step();
  StepReport mine;
  mine.set_code(static_cast<int>(local.code()));
  mine.set_error(std::string(local.message()));
  mine.set_nodes_run(nodes_run);
  for (int t : step->sent()) mine.add_sent(t);
  for (int r : step->sent_to()) mine.add_sent_to(r);
  for (int t : step->received()) mine.add_received(t);
  if (!local.ok() && local.code() != absl::StatusCode::kAborted) {
    // Peers waiting for this rank's tensors stop now, not at the timeout.
    absl::Status s = group_->SendAbort(n);
    mine.set_sent_abort(s.ok());
  }
  absl::StatusOr<std::vector<std::string>> blobs =
      group_->AllGather(mine.SerializeAsString(), step_timeout_);
  if (!blobs.ok()) {
    *broken = absl::Status(
        blobs.status().code(),
        absl::StrCat("the job can run no more steps: a rank did not report "
                     "how its part of step ", n, " went: ",
                     blobs.status().message()));
    return *broken;
  }
  std::vector<StepReport> reports(blobs->size());
  std::vector<std::pair<int, int>> sent_to_me;
  const absl::Time deadline = absl::Now() + step_timeout_;
  absl::Status drained;
  for (int r = 0; r < static_cast<int>(blobs->size()); ++r) {
    if (!reports[r].ParseFromString((*blobs)[r])) {
      return absl::DataLossError(
          absl::StrCat("rank ", r, "'s step report does not parse"));
    }
    if (r == rank()) continue;
    for (int i = 0; i < reports[r].sent_size(); ++i) {
      if (i < reports[r].sent_to_size() && reports[r].sent_to(i) == rank()) {
        sent_to_me.emplace_back(r, reports[r].sent(i));
      }
    }
    if (reports[r].sent_abort()) {
      drained.Update(group_->DiscardAbort(r, n, deadline));
    }
  }
  drained.Update(transfers_->EndStep(step, parts, sent_to_me));
  if (!drained.ok()) {
    *broken = absl::Status(
        drained.code(),
        absl::StrCat("the job can run no more steps: ending step ", n,
                     " failed: ", drained.message()));
  }
  // The root cause first: an error that is not another rank's abort.
  for (bool consequences : {false, true}) {
    for (int r = 0; r < static_cast<int>(reports.size()); ++r) {
      const auto code = static_cast<absl::StatusCode>(reports[r].code());
      if (code == absl::StatusCode::kOk) continue;
      if (!consequences && code == absl::StatusCode::kAborted) continue;
      return absl::Status(code,
                          absl::StrCat("rank ", r, ": ", reports[r].error()));
    }
  }
  return drained;
}

absl::StatusOr<std::vector<Tensor>> ClusterRuntime::RunStep(
    StepRequest request, const ExecutionPlan& plan, std::vector<Tensor> feeds,
    const Scheduler& scheduler, StepStats* stats) {
  // Without pipelining whole steps run one at a time.
  std::optional<absl::MutexLock> serial;
  if (!pipelined()) serial.emplace(&serial_mu_);
  ASSIGN_OR_RETURN(uint64_t n, StartStep(std::move(request)));
  CrossProcessStep step(n);
  absl::StatusOr<std::vector<Tensor>> out;
  {
    ScopedCrossProcessStep scope(&step);
    out = RunPlan(plan, std::move(feeds), scheduler, stats);
  }
  RETURN_IF_ERROR(FinishStep(&step, out.status(), plan.partitioning.get(),
                             static_cast<int>(plan.nodes.size())));
  return out;
}

absl::Status ClusterRuntime::Serve(const PlanFor& plan_for,
                                   const Scheduler& scheduler) {
  if (rank() == 0) {
    return absl::FailedPreconditionError(
        "Serve is for the ranks other than 0 of a job; rank 0 runs steps");
  }
  while (true) {
    ASSIGN_OR_RETURN(StepRequest request, NextStep());
    if (request.end()) return absl::OkStatus();
    CrossProcessStep step(request.step());
    absl::StatusOr<ServedStep> served = plan_for(request);
    absl::Status local = served.status();
    if (served.ok()) {
      ScopedCrossProcessStep scope(&step);
      local = RunPlan(*served->plan, std::move(served->feeds), scheduler,
                      nullptr)
                  .status();
    }
    absl::Status all = FinishStep(
        &step, local, served.ok() ? served->plan->partitioning.get() : nullptr,
        served.ok() ? static_cast<int>(served->plan->nodes.size()) : 0);
    ++steps_served_;
    if (!all.ok()) ++steps_failed_;
    absl::MutexLock lock(&mu_);
    if (!broken_.ok()) return broken_;
  }
}

void ClusterRuntime::End() {
  if (rank() != 0 || world_size() <= 1) return;
  absl::MutexLock lock(&mu_);
  if (!broken_.ok()) return;
  StepRequest end;
  end.set_end(true);
  end.set_step(++step_);
  group_->Announce(end.SerializeAsString(), absl::Seconds(30)).IgnoreError();
}

}  // namespace sluice
