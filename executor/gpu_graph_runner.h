// GpuGraphRunner: runs a plan's steps by replaying its GPU kernels as one
// CUDA graph (device/gpu_graph.h), so a step costs one launch instead of one
// per kernel. The session keeps one per cached plan that qualifies.
//
//   std::unique_ptr<GpuGraphRunner> runner = GpuGraphRunner::ForPlan(plan);
//   if (runner) out = runner->Run(std::move(feed_values), scheduler);
//   else        out = RunPlan(*plan, std::move(feed_values), scheduler);
//
// Feeds the caller keeps in the GPU's memory (sluice/session.h) are copied
// into buffers of the graph's before each launch, on the GPU, and results
// the caller takes on the GPU are copied out of the graph's buffers, since
// the next replay writes them again.
//
// A plan qualifies when every kernel runs on one GPU, none runs subgraphs
// (If, Loop, Scan) or sizes its outputs from values on the GPU
// (KernelDef::sizes_outputs_from_gpu_values: NonZero), every kernel that
// reads a fed value in host memory can
// also read it in the GPU's memory when recorded
// (KernelDef::stageable_host_inputs: Gather's indices, such as token ids),
// and the only copies bring feeds to that GPU and take results back to the
// host. Steps then go:
//   1st: an ordinary step (kernels load, the arena grows, cuBLAS warms up);
//   2nd: the feed copies and the kernels are recorded in plan order, the
//        graph is launched and the results copied out;
//   3rd on: the feeds are written into the graph's pinned buffers, the
//        graph is launched, and the results are copied out. A feed in
//        page-locked memory (device/pinned_memory.h: the session's
//        AllocateHostTensor, or the caller's own pinned memory) is not
//        copied there: the graph's copy of it is pointed at the caller's
//        memory for that launch (GpuGraph::SetHostInputSource), and back at
//        the graph's buffer for a later pageable feed, so it goes by the
//        graph's own DMA with no host-to-host copy.
// Feeds travel inside the graph: each step writes them into pinned buffers
// of the graph's (device/gpu_graph.h: RecordHostInput), and the graph's
// first operations copy them to the GPU. A fed value a kernel reads in host
// memory is staged the same way, the kernel recorded reading the GPU copy
// (a constant is copied once, when recorded, or read where the plan keeps
// it on the GPU); what it checked on the host (indices in range) the graph
// checks on the GPU and reports after the launch (GpuGraph::CheckErrors), as
// the same error an ordinary step gives.
//
// Memory (a static plan): the recording step allocates from a private pool
// of the GPU's arena (device/arena.h) and frees each value after its last
// reader, as an ordinary step does, so the step's values share memory by
// lifetime and the graph holds about the live set of an ordinary step, not
// the sum of its intermediates. The pool's memory is used by nothing else
// while the runner lives (a replay writes the same addresses again); only
// the values copied to the host after the graph are kept whole. Without an arena (test doubles) every tensor is kept.
// When the recording fails (a kernel that waits for the GPU or copies, or
// memory runs out) the step runs the ordinary way and so do all later ones.
//
// Thread-safe. One step replays at a time; a step that arrives while
// another replays runs the ordinary way, meanwhile. Replays share nothing
// writable with ordinary steps (or other runners' replays) on the same
// GPU: the graph's buffers are the runner's, and its GEMMs have a cuBLAS
// workspace of their own (device/gpu_graph.h), so they may overlap. Only
// the recording step needs the GPU alone: it captures the compute stream
// that every step on that GPU uses, and the session runs it with no other
// step of its own in flight (`may_record`).
#ifndef SLUICE_EXECUTOR_GPU_GRAPH_RUNNER_H_
#define SLUICE_EXECUTOR_GPU_GRAPH_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "device/gpu_device.h"
#include "device/gpu_graph.h"
#include "executor/executor.h"
#include "executor/plan.h"

namespace sluice {

class GpuGraphRunner {
 public:
  // Null when `plan` does not qualify (see above); `why_not`, if given, then
  // says why.
  static std::unique_ptr<GpuGraphRunner> ForPlan(
      std::shared_ptr<const ExecutionPlan> plan, std::string* why_not = nullptr);

  // One step, as RunPlan would run it (same feeds, same fetches). The step
  // that records the graph captures the GPU's compute stream, so nothing
  // else may enqueue work on that GPU meanwhile: it records only when
  // `may_record` says the caller holds the GPU alone (else the step runs
  // the ordinary way and a later one records). `limits` (not owned; may be
  // null) stop the steps run the ordinary way before each node, as RunPlan
  // does, and a replay once it has ended (CANCELLED or DEADLINE_EXCEEDED
  // naming the graph's span; the results are dropped); a fault injector
  // among them (tests) also sees the recording's nodes and a replay's
  // launch and result copies (device/fault_injector.h).
  // A recording that fails is dropped and the step runs the ordinary way.
  absl::StatusOr<std::vector<Tensor>> Run(std::vector<Tensor> feed_values,
                                          const Scheduler& scheduler,
                                          bool may_record,
                                          const StepLimits* limits = nullptr);
  // Whether the next step would record (so the caller should take the GPU
  // alone for it).
  bool wants_to_record() const {
    return wants_to_record_.load(std::memory_order_relaxed);
  }

  // Steps that replayed the graph (the recording step included).
  int64_t replays() const { return replays_.load(std::memory_order_relaxed); }
  // Whether a graph is recorded and in use.
  bool active() const { return active_.load(std::memory_order_relaxed); }
  // GPU bytes the recorded graph keeps between steps (its feeds,
  // intermediates and scratch); 0 until it is recorded. What the session's
  // plan cache counts against plan_cache_max_bytes.
  int64_t held_bytes() const {
    return held_bytes_.load(std::memory_order_relaxed);
  }
  // Why the recording failed; empty when it has not.
  std::string failure() const;
  // Fed values the graph reads from GPU buffers of its own (see above).
  int num_staged_feeds() const { return static_cast<int>(staged_slots_.size()); }
  // Host feeds of replays (the recording step not counted) that the graph
  // read straight from the caller's page-locked memory, and those copied
  // into the graph's pinned buffers first.
  int64_t direct_host_feeds() const {
    return direct_host_feeds_.load(std::memory_order_relaxed);
  }
  int64_t copied_host_feeds() const {
    return copied_host_feeds_.load(std::memory_order_relaxed);
  }

  ~GpuGraphRunner();

 private:
  enum class State { kWarmUp, kRecord, kReplay, kOff };

  GpuGraphRunner(std::shared_ptr<const ExecutionPlan> plan, GpuDevice* gpu)
      : plan_(std::move(plan)), gpu_(gpu) {}
  // The recording step; on error nothing is kept.
  // `faults` (tests; may be null) as in Run.
  absl::StatusOr<std::vector<Tensor>> Record(std::vector<Tensor> feed_values,
                                             FaultInjector* faults)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<Tensor>> Replay(std::vector<Tensor> feed_values,
                                             FaultInjector* faults)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "the step's CUDA graph (N nodes, node 'a' to node 'z')".
  std::string Span() const;
  // `s` of a call for the whole recorded graph (its launch), which no one
  // node made: the error names the span of nodes the graph holds.
  absl::Status InGraph(absl::Status s) const;
  // Copies the results out of values_, checks what the graph checked on
  // the GPU, and returns the fetches.
  absl::StatusOr<std::vector<Tensor>> FetchResults(FaultInjector* faults)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lets go of the recording: the graph, the values and the pool.
  void DropRecording() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<const ExecutionPlan> plan_;
  GpuDevice* const gpu_;
  std::vector<int> feed_copies_;   // plan indices: host -> GPU feed copies
  std::vector<int> kernels_;       // plan indices, in plan order
  std::vector<int> fetch_copies_;  // plan indices: GPU -> host result copies
  std::vector<int> staged_slots_;  // fed slots kernels read in host memory
  // Constant slots such kernels read in host memory: copied to the GPU once,
  // when recorded, and kept in values_.
  std::vector<int> staged_constants_;
  // GPU constants, and feeds kept on the GPU, that the plan copies to the
  // host only for such kernels: (constant or fed slot, copy's slot); the
  // kernels read the GPU value (a feed's: the graph's buffer of it).
  std::vector<std::pair<int, int>> constant_copies_;
  // Each input the graph copies in from a pinned buffer of its own: the
  // feed (index in the plan's feeds), and either the feed copy it replaces
  // (plan index) or the fed slot a kernel reads staged.
  struct FeedInput {
    int feed = 0;
    int copy = -1;
    int staged_slot = -1;
  };
  std::vector<FeedInput> feed_inputs_;
  // Feeds the caller keeps in this GPU's memory: copied into the graph's
  // buffer for their slot (kept in values_) before each launch.
  struct DeviceFeed {
    int feed = 0;
    int slot = 0;
  };
  std::vector<DeviceFeed> device_feeds_;
  // Per slot: the kernels' reads of it (the recording frees a value after
  // its last), and whether it is kept whole for the runner's life.
  std::vector<int> kernel_reads_;
  std::vector<bool> kept_;

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kWarmUp;
  std::unique_ptr<GpuGraph> graph_ ABSL_GUARDED_BY(mu_);
  // Every slot's value as recorded: what the graph reads and writes.
  std::vector<Tensor> values_ ABSL_GUARDED_BY(mu_);
  std::vector<Tensor> temps_ ABSL_GUARDED_BY(mu_);
  // The graph's pinned buffer of each of feed_inputs_ (owned by the graph).
  std::vector<void*> host_inputs_ ABSL_GUARDED_BY(mu_);
  // Per feed input: false once the graph refused to read a caller's
  // page-locked memory for it (its feeds are copied from then on).
  std::vector<bool> direct_ok_ ABSL_GUARDED_BY(mu_);
  // Page-locked feeds the last launch reads in place: kept until it is
  // done (the next step's Wait(), or DropRecording).
  std::vector<Tensor> direct_feeds_ ABSL_GUARDED_BY(mu_);
  // The arena pool the recording allocated from; 0: none.
  int pool_ ABSL_GUARDED_BY(mu_) = 0;
  std::string failure_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> replays_{0};
  std::atomic<int64_t> direct_host_feeds_{0};
  std::atomic<int64_t> copied_host_feeds_{0};
  std::atomic<int64_t> held_bytes_{0};
  std::atomic<bool> active_{false};
  std::atomic<bool> wants_to_record_{false};
};

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_GPU_GRAPH_RUNNER_H_
