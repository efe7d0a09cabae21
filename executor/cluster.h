// ClusterRuntime: what a session does differently when its config has a
// `cluster` (proto/config.proto ClusterConfig, docs/design.md decision 41):
// it joins the job the launcher started (distributed/process_group.h: MPI
// under mpirun, else sluice's bootstrap), every rank reports its devices
// and rank 0 gets them all (one topology, placer/cluster_topology.h), rank
// 0 places the graph and sends the placement to the others (so the placer
// runs once and every rank partitions the same placement), and each step
// is a protocol:
//   1. rank 0 broadcasts the step's signature (feed names, dtypes and
//      shapes; fetch names); the other ranks wait for it in Session::Serve;
//   2. every rank compiles (once per signature) and runs its own plan:
//      its nodes, and a send or receive per transfer with an end on it
//      (executor/cross_process.h); feeds enter at rank 0, fetches come
//      back to it;
//   3. a rank whose part fails tells the others at once (their receives end
//      with ABORTED), then every rank all-gathers its outcome and the
//      transfers it sent, drops the messages nobody received, and waits for
//      its sends; rank 0 returns the failing rank's error, "rank R: ...".
// Every wait inside a step is bounded by cluster.step_timeout_seconds.
// Steps pipeline: several Run calls may be in flight on rank 0 (each its
// own thread), each rank runs its part of the steps in their order, and
// rank 0 starts step i+1 as soon as its own part of step i is done (the
// requests go point to point, each step's messages have their own tags),
// so with a model split into stages step i+1's first stage runs while
// step i's second one does. Status exchanges stay in step order. Over a
// GPU transport (NCCL) or without MPI messages whole steps run one at a
// time.
//
//   ASSIGN_OR_RETURN(auto cluster, ClusterRuntime::Join(config, graph));
//   ASSIGN_OR_RETURN(const ClusterTopology* topo,
//                    cluster->ExchangeDevices(machine.topology));
//   ASSIGN_OR_RETURN(Placement p, cluster->SharePlacement(place_fn));
//
// Thread safety: RunStep may be called from several threads at once (the
// steps in flight); the rest from one thread, before steps (Join through
// SetUpGpuRoute) or on the ranks other than 0 (Serve).
#ifndef SLUICE_EXECUTOR_CLUSTER_H_
#define SLUICE_EXECUTOR_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distributed/process_group.h"
#include "executor/cross_process.h"
#include "executor/executor.h"
#include "executor/plan.h"
#include "graph/graph.h"
#include "placer/cluster_topology.h"
#include "placer/partition.h"
#include "proto/cluster.pb.h"
#include "proto/config.pb.h"
#include "sluice/placement.h"

namespace sluice {

class ClusterRuntime {
 public:
  // Detects the launcher (DetectProcessGroup) and joins its job, checking
  // that every rank runs the same graph (a digest of its nodes, compared
  // in ExchangeDevices; at join under the bootstrap). A process started by
  // no launcher is a job of one. Errors: the launcher's variables'
  // (process_group_info.h), joining's (who is missing, a wrong token).
  static absl::StatusOr<std::unique_ptr<ClusterRuntime>> Join(
      const RuntimeConfig& config, const Graph& graph);

  int rank() const { return group_->rank(); }
  int world_size() const { return group_->world_size(); }
  ProcessGroup* group() const { return group_.get(); }
  absl::Duration step_timeout() const { return step_timeout_; }

  // All-gathers every rank's devices (`mine`, the topology this rank's
  // config and hardware give; or `error`, why it has none) and joins them.
  // Errors name the rank: one that could not start, one whose graph
  // differs from rank 0's.
  absl::StatusOr<const ClusterTopology*> ExchangeDevices(
      const DeviceTopology& mine, const std::string& hostname,
      const absl::Status& error = absl::OkStatus());
  const ClusterTopology& topology() const { return topology_; }

  // Rank 0 runs `place` and sends its placement (or its error) to every
  // rank; the others return what rank 0 sent.
  absl::StatusOr<Placement> SharePlacement(
      const std::function<absl::StatusOr<Placement>()>& place);

  // The transfers of this rank's steps, once the session's host device is
  // known (`host`: this rank's /cpu:0).
  CrossProcessTransfers* MakeTransfers(Device* host);
  CrossProcessTransfers* transfers() const { return transfers_.get(); }
  // Joins one GPU per rank (`local`: this rank's GPU with nodes; null:
  // none) in an NCCL communicator when every rank has one and NCCL loads on
  // every rank (a collective); otherwise tensors between ranks go through
  // host memory. Returns a line for the session's log saying which.
  absl::StatusOr<std::string> SetUpGpuRoute(Device* local);
  // What a plan of this rank needs (plan.h).
  const CrossProcessPlan* plan_options() const { return &plan_; }

  // Whether steps pipeline (see above): MPI messages and no GPU transport.
  bool pipelined() const;

  // Rank 0: numbers the step (waiting while kStepChannels steps are in
  // flight) and sends its signature to the others. Returns the number.
  absl::StatusOr<uint64_t> StartStep(StepRequest request);
  // Other ranks: waits (without a deadline) for rank 0's next step; a
  // request with `end` set when rank 0's session ends.
  absl::StatusOr<StepRequest> NextStep();
  // Every rank, after running its part of `step` (`local`: how it went;
  // `parts`: the partitioning it ran, null when it failed before having
  // one): the status exchange of step 3 above, in step order (rank 0
  // waits here for the steps before). Returns OK when every rank
  // succeeded, else the first rank's root error ("rank R: ..."),
  // preferring errors that are not a consequence of another rank's
  // failure (ABORTED).
  absl::Status FinishStep(CrossProcessStep* step, const absl::Status& local,
                          const Partitioning* parts, int nodes_run);
  // Rank 0: ends the others' Serve (the session is going away; no step in
  // flight).
  void End();
  // True once the job can run no more steps (a rank stopped answering).
  bool broken() const;

  // Rank 0's step: StartStep(request), its own part of `plan` with
  // `feeds`, FinishStep. Returns the fetches, or the first rank's error.
  // Several may run at once (pipelined()), else one at a time.
  absl::StatusOr<std::vector<Tensor>> RunStep(StepRequest request,
                                              const ExecutionPlan& plan,
                                              std::vector<Tensor> feeds,
                                              const Scheduler& scheduler,
                                              StepStats* stats);
  // The other ranks: runs this rank's part of each step rank 0 starts,
  // with the plan and feeds `plan_for` gives for it, until rank 0 ends the
  // session (OK) or the job breaks (its error). A step that fails does not
  // end it: rank 0 reports the error, and the next step runs.
  struct ServedStep {
    std::shared_ptr<const ExecutionPlan> plan;
    std::vector<Tensor> feeds;  // this rank's, in the plan's feed order
  };
  using PlanFor =
      std::function<absl::StatusOr<ServedStep>(const StepRequest&)>;
  absl::Status Serve(const PlanFor& plan_for, const Scheduler& scheduler);
  // Steps this rank served, and how many failed (on any rank).
  int64_t steps_served() const { return steps_served_; }
  int64_t steps_failed() const { return steps_failed_; }
  // Rank 0: the most steps that were in flight at once (StartStep to the
  // end of FinishStep).
  int max_steps_in_flight() const;

 private:
  // FinishStep's exchange; `broken` set when the job can run no more.
  absl::Status ExchangeStatus(CrossProcessStep* step, const absl::Status& local,
                              const Partitioning* parts, int nodes_run,
                              absl::Status* broken);

  ClusterRuntime(std::unique_ptr<ProcessGroup> group, std::string digest,
                 absl::Duration step_timeout)
      : group_(std::move(group)), graph_digest_(std::move(digest)),
        step_timeout_(step_timeout) {}

  std::unique_ptr<ProcessGroup> group_;
  const std::string graph_digest_;
  const absl::Duration step_timeout_;
  ClusterTopology topology_;
  std::unique_ptr<CrossProcessTransfers> transfers_;
  CrossProcessPlan plan_;
  int64_t steps_served_ = 0;  // the ranks other than 0 (Serve's thread)
  int64_t steps_failed_ = 0;

  // Whole steps, one at a time, where they do not pipeline.
  absl::Mutex serial_mu_;
  mutable absl::Mutex mu_;
  // The last step started (rank 0) or received (the others).
  uint64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  // The next step whose status exchange may run (they run in order).
  uint64_t finishing_ ABSL_GUARDED_BY(mu_) = 1;
  int max_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Set once a collective failed: the job can run no more steps.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

// A digest of `graph` (its nodes' names, ops and inputs, in order), the
// same on every platform: what every rank of a job must agree on.
std::string GraphDigest(const Graph& graph);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_CLUSTER_H_
