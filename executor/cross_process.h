// CrossProcessTransfers: the tensors of one session's steps that cross
// processes of a job (executor/cluster.h). A plan of one rank
// (CrossProcessPlan in plan.h) gets one kernel per transfer with an end on
// this rank: a send on the source's rank, a receive on the destination's.
// Two routes:
//   - with a GPU at either end, when the job has a GpuTransport (NCCL
//     between one GPU per rank: device/nccl_communicator.h): on the GPUs'
//     compute streams, the tensor's dtype and shape first, then its bytes;
//     a host end (or another GPU of the rank) copies to or from the
//     transport's GPU. Host to host too, when the job has no MPI;
//   - otherwise through host memory, by the ProcessGroup's messages (MPI):
//     a header (dtype, shape) then the bytes, tag = the transfer's index; a
//     GPU end copies to or from this rank's host first.
// Sends do not wait for their receiver; FinishStep waits for them once the
// step is over on every rank. Each step's messages have tags of their own
// (StepTag: the step's channel), so several steps may be in flight.
//
//   CrossProcessTransfers transfers(group, host_cpu, &topology,
//                                   &rank_of_device, timeout);
//   cross_plan.make_kernel = ... transfers.MakeKernel(...) ...;
//   CrossProcessStep step(n);
//   absl::Status local;
//   {
//     ScopedCrossProcessStep scope(&step);  // the kernels find it here
//     local = RunPlan(...).status();
//   }
//   ... the status exchange (cluster.h), then transfers.EndStep(&step, ...)
//
// Thread safety: steps may run on several threads at once, each with its
// own CrossProcessStep bound to the thread that runs its plan (a plan with
// cross-process kernels runs sequentially, on the calling thread);
// set_gpu_transport before the first step. The GPU route (NCCL matches
// messages in the order issued) takes one step at a time: the caller
// serialises steps when there is a GPU transport.
#ifndef SLUICE_EXECUTOR_CROSS_PROCESS_H_
#define SLUICE_EXECUTOR_CROSS_PROCESS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/tensor.h"
#include "device/device.h"
#include "distributed/process_group.h"
#include "kernels/kernel.h"
#include "placer/partition.h"

namespace sluice {

// What precedes a tensor's bytes: its dtype and shape (fixed size, so a
// GPU route can receive it without knowing more).
inline constexpr int kMaxHeaderDims = 14;
struct TensorHeader {
  int64_t dtype = 0;
  int64_t rank = 0;
  int64_t dims[kMaxHeaderDims] = {};
};
static_assert(sizeof(TensorHeader) == 128);

// The shape a header describes; DATA_LOSS naming `src_rank` when it is
// malformed (an unknown dtype, a rank or dimension out of range).
absl::StatusOr<Shape> ShapeFromHeader(const TensorHeader& header,
                                      int src_rank);

// GPU tensors between ranks, one GPU per rank (NCCL). Calls are made in
// the same global order on every rank (CrossProcessPlan), so a send always
// meets its receive.
class GpuTransport {
 public:
  virtual ~GpuTransport() = default;
  // The GPU of this rank the transport uses; tensors on another GPU of the
  // rank are copied to it first.
  virtual Device* device() const = 0;
  // Enqueues `header` and then `value`'s bytes to rank `peer` on `device`'s
  // compute stream; `value` must stay allocated until the stream has run
  // it (the caller keeps it until the step's end).
  virtual absl::Status Send(const TensorHeader& header, const Tensor& value,
                            Device* device, int peer) = 0;
  // Receives a header from `peer` (waits for it on the host: the shape
  // decides the allocation), then the bytes into a new tensor on `device`.
  virtual absl::StatusOr<Tensor> Receive(Device* device, int peer) = 0;
  // Ends every operation in flight (ncclCommAbort): after a failed step,
  // so that no rank waits on a GPU for a peer that will not come. The
  // transport is unusable afterwards.
  virtual void Abort() = 0;
};

// What one step of this rank sends and receives across processes.
class CrossProcessStep {
 public:
  explicit CrossProcessStep(uint64_t step) : step_(step) {}
  CrossProcessStep(const CrossProcessStep&) = delete;
  CrossProcessStep& operator=(const CrossProcessStep&) = delete;

  uint64_t step() const { return step_; }
  // The transfers this rank sent and received (fully) in the step.
  const std::vector<int>& sent() const { return sent_; }
  const std::vector<int>& sent_to() const { return sent_to_; }  // ranks
  const std::vector<int>& received() const { return received_; }

 private:
  friend class CrossProcessTransfers;
  const uint64_t step_;
  std::vector<int> sent_;
  std::vector<int> sent_to_;
  std::vector<int> received_;
  // Transfers whose header arrived but not their bytes (an abort came in
  // between): EndStep reads only the bytes.
  absl::flat_hash_map<int, TensorHeader> header_only_;
  std::deque<TensorHeader> headers_;  // stable addresses for the sends
  std::vector<Tensor> keep_alive_;    // what the sends read
};

// Binds `step` to the calling thread for its lifetime: the send and
// receive kernels that run on this thread (shared by every step of a plan)
// record and tag their messages as `step`'s. Not owned; scopes nest.
class ScopedCrossProcessStep {
 public:
  explicit ScopedCrossProcessStep(CrossProcessStep* step);
  ~ScopedCrossProcessStep();
  ScopedCrossProcessStep(const ScopedCrossProcessStep&) = delete;
  ScopedCrossProcessStep& operator=(const ScopedCrossProcessStep&) = delete;

 private:
  CrossProcessStep* const previous_;
};

class CrossProcessTransfers {
 public:
  // `group`, `host` (this rank's /cpu:0: GPU tensors are staged there),
  // `topology` (every rank's devices) and `rank_of_device` (per device of
  // it) must outlive this object. `timeout`: the longest wait for a peer.
  CrossProcessTransfers(ProcessGroup* group, Device* host,
                        const DeviceTopology* topology,
                        const std::vector<int>* rank_of_device,
                        absl::Duration timeout)
      : group_(group), host_(host), topology_(topology),
        rank_of_device_(rank_of_device), timeout_(timeout) {}

  // The GPU route; null (the default): every transfer goes through host
  // memory.
  void set_gpu_transport(std::unique_ptr<GpuTransport> gpu) {
    gpu_ = std::move(gpu);
  }
  GpuTransport* gpu_transport() const { return gpu_.get(); }

  // The kernel of transfer `t`, as CrossProcessPlan::make_kernel. Errors:
  // UNIMPLEMENTED when neither route can carry it (host memory without MPI
  // messages), naming the value and the ranks.
  absl::StatusOr<std::unique_ptr<OpKernel>> MakeKernel(
      int t, const Transfer& x, const Node& producer, Device* local,
      bool send);

  // Called by the kernels, for the step bound to the calling thread
  // (ScopedCrossProcessStep; INTERNAL without one).
  absl::Status Send(int t, int dst_rank, bool gpu_route, const Tensor& value,
                    Device* src);
  absl::StatusOr<Tensor> Receive(int t, int src_rank, bool gpu_route,
                                 Device* dst);

  // Whether transfer `x` goes by the GPU route.
  bool GpuRoute(const Transfer& x) const;

  // After every rank reported (cluster.h): reads and drops each message of
  // the step's partitioning `parts` (null: this rank failed before it had
  // one) that `sent_by_peers` holds for this rank (rank, transfer) and
  // `step` did not receive, then waits for the step's own sends and drops
  // the tensors it kept for them. A GPU route message left unreceived
  // cannot be drained: the GPU transport is aborted, and later steps that
  // need it fail saying so.
  absl::Status EndStep(CrossProcessStep* step, const Partitioning* parts,
                       const std::vector<std::pair<int, int>>& sent_by_peers);

 private:
  bool RankHas(int device, int rank) const {
    return (*rank_of_device_)[device] == rank;
  }

  ProcessGroup* const group_;
  Device* const host_;
  const DeviceTopology* const topology_;
  const std::vector<int>* const rank_of_device_;
  const absl::Duration timeout_;
  std::unique_ptr<GpuTransport> gpu_;
  // Set by EndStep, read by the kernels: the GPU route runs one step at a
  // time (see the thread safety note above).
  bool gpu_aborted_ = false;
};

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_CROSS_PROCESS_H_
