// Session: a loaded graph, the devices it runs on and their allocators, and a
// cache of compiled plans (one per set of input shapes, fetches, and devices
// the feeds are on and the fetches go to). The C++ entry point to sluice.
//
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Session> s,
//                           Session::CreateFromFile("examples/mlp.pbtxt", config));
//   SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> out,
//                           s->Run({{"x", x}}, {"logits"}));
//
// Tensors that stay on a GPU: a feed may live in a GPU's memory (a tensor
// an earlier step left there, one from CopyTo, or the caller's own memory
// through WrapExternalMemory, sluice/external_memory.h), and StepOptions
// can leave fetches on a GPU; neither then crosses to the host.
//
//   StepOptions on_gpu;
//   on_gpu.fetch_devices = {"/gpu:0"};
//   SLUICE_ASSIGN_OR_RETURN(Tensor x_gpu, s->CopyTo(x, "/gpu:0"));
//   SLUICE_ASSIGN_OR_RETURN(auto out, s->Run({{"x", x_gpu}}, {"logits"},
//                                            on_gpu));   // out[0] on /gpu:0
//
// Host tensors in page-locked ("pinned") memory, as torch's pin_memory():
// the GPUs read a pinned feed by one DMA, with no staging copy, and
// StepOptions::pinned_host_fetches brings results back the same way.
//
//   SLUICE_ASSIGN_OR_RETURN(Tensor x, s->AllocateHostTensor(DT_FLOAT,
//                                                           Shape({32, 64})));
//   FillInput(x.flat<float>());                  // the caller's data
//   StepOptions pinned;
//   pinned.pinned_host_fetches = true;
//   SLUICE_ASSIGN_OR_RETURN(auto out, s->Run({{"x", x}}, {"logits"}, pinned));
//
// Run may be called from several threads at once.
#ifndef SLUICE_SESSION_H_
#define SLUICE_SESSION_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/config.h"
#include "sluice/placement.h"
#include "sluice/step_cancellation.h"
#include "sluice/tensor.h"

namespace sluice {

// Defined in sluice's private headers (graph/graph.h, device/device.h,
// executor/step_stats.h, device/fault_injector.h).
class Device;
class FaultInjector;
class Graph;
struct StepStats;

// Feeds: name -> value. A name is a graph input ("x"), or any node output
// ("node" or "node:port") of the graph the session runs, which is then not
// computed. With optimisation on (RuntimeConfig.optimization_level, default
// all) that graph is the one after the passes: nodes they removed or fused
// cannot be fed or fetched (INVALID_ARGUMENT saying so).
//
// A feed's value may be on the host (any host-accessible memory) or in the
// memory of one of the session's GPUs: a tensor a step of this session
// left on a GPU, or external memory (WrapExternalMemory) on "/gpu:N". A
// GPU feed is read where it is: a node on that GPU reads it with no copy, a
// node on another GPU through a device-to-device copy, a node on the CPU
// (or a kernel input read in host memory) through a copy to the host.
// Ordering: the step reads a GPU feed on the GPU's compute stream, so the
// work that wrote it must be finished when Run is called (for example
// cudaStreamSynchronize, torch.cuda.synchronize()).
//
// A host feed in page-locked memory (Session::AllocateHostTensor's, or the
// caller's own: cudaHostAlloc, cudaHostRegister, torch's pin_memory(),
// wrapped with WrapExternalMemory on "/cpu:0") goes to a GPU by one DMA
// straight from it, with no copy into staging buffers; pageable memory is
// copied into staging first. Both give the same results. Run returns after
// the DMA has read a pinned feed, so the caller may then overwrite it.
using Feeds = std::vector<std::pair<std::string, Tensor>>;

// Options for one Run call.
struct StepOptions {
  // Where the fetched tensors are left: one device name per fetch, or one
  // name for every fetch; empty: all on the host. "/cpu:0" or "" is the
  // host; "/gpu:N" must be a GPU this session uses (see devices()): the
  // fetched tensor is then in that GPU's memory, held by the Tensor and
  // returned to the session's allocator when the last copy of it goes
  // away. A value computed on that GPU is handed out with no copy; one
  // elsewhere is copied there. REQUIRES: tensors in a session GPU's memory
  // (GPU fetches, CopyTo results) go away before the session does.
  // Results share memory as they are: a graph constant, or a feed fetched
  // back, is the session's or the caller's own buffer, not a copy.
  std::vector<std::string> fetch_devices;
  // Host fetches copied from a GPU are returned in page-locked memory (as
  // Session::AllocateHostTensor's), filled by one DMA with no staging copy;
  // ready to feed a GPU again at DMA speed. They are the caller's, like
  // AllocateHostTensor's, and may outlive the session. Fetches computed on
  // the CPU, and every fetch of a session with no GPU, are ordinary host
  // memory as without this option (nothing to validate: it is a request
  // about speed, never about results). Part of the plan's signature: the
  // first step with it compiles a plan of its own.
  bool pinned_host_fetches = false;
  // Not owned; when set, every node's time is recorded there, as
  // RunWithStats does (copies included: a trace shows which transfers the
  // step made).
  StepStats* stats = nullptr;
  // A job of several processes (rank 0's Run): feeds given on another rank,
  // by that rank's Serve(feeds): (feed name, rank). Such a value enters the
  // graph in that rank's host memory and goes from there to the nodes that
  // read it, not through rank 0; Run's own `feeds` hold the others. Part of
  // the plan's signature. Empty: every feed at rank 0.
  std::vector<std::pair<std::string, int>> feeds_on_ranks;
  // When the step must stop early. Past `deadline` the step stops before its
  // next node with DEADLINE_EXCEEDED; once `cancellation` (not owned; it must
  // outlive the call) is raised from any thread, with CANCELLED. Either
  // error names the node the step stopped before, the step frees what it
  // held, and the session stays usable. Checked between nodes on the CPU
  // and before each GPU node is launched; a step that replays a CUDA graph
  // is checked once, before the replay. time_point::max(): no deadline.
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
  const StepCancellation* cancellation = nullptr;
  // For tests: not owned; when set, the step's calls at the execution
  // providers' boundary (allocations, copies, kernel launches, library
  // calls, scheduling) are counted there and the one it chose fails, as a
  // real failure of that call would (device/fault_injector.h). The step
  // then ends with that error naming the node, frees what it held, and the
  // session stays usable.
  FaultInjector* faults = nullptr;
};

// Where creating a session is, for a progress line (`sluice run` and
// `bench` print one on a terminal): `stage` is "loading the model",
// "optimizing", "placing" or "setting up devices", in that order (a
// prepared model skips "optimizing"); while optimizing, `detail` is the
// pass about to run, `done` of `total` passes having run.
struct CreationProgress {
  std::string stage;
  std::string detail;
  int done = 0;
  int total = 0;
};

// Options for creating a session, beside its RuntimeConfig.
struct CreateOptions {
  // Called on the creating thread as each stage (and each pass) starts;
  // empty: not called.
  std::function<void(const CreationProgress&)> progress;
};

class Session {
 public:
  virtual ~Session() = default;

  // Takes ownership of the graph. Errors: an invalid config, devices that
  // cannot be set up, a graph some node of which has no kernel anywhere.
  static absl::StatusOr<std::unique_ptr<Session>> Create(
      std::unique_ptr<const Graph> graph, const RuntimeConfig& config = {});
  // Loads a .pb, .pbtxt or .onnx model (model/model_loader.h), then Create;
  // or a prepared model (`sluice convert --optimized`), whose graph is used
  // without running the passes when it was prepared for this config, these
  // providers and this build; otherwise its source model is loaded and log()
  // says why (docs/design.md decision 44).
  static absl::StatusOr<std::unique_ptr<Session>> CreateFromFile(
      const std::string& path, const RuntimeConfig& config = {});
  // Create and CreateFromFile, reporting progress as `options` asks.
  static absl::StatusOr<std::unique_ptr<Session>> Create(
      std::unique_ptr<const Graph> graph, const RuntimeConfig& config,
      const CreateOptions& options);
  static absl::StatusOr<std::unique_ptr<Session>> CreateFromFile(
      const std::string& path, const RuntimeConfig& config,
      const CreateOptions& options);

  // Runs one step and returns the fetched tensors, in order, on the host
  // (feeds may be host or GPU tensors, see Feeds). Fetches are graph output names or "node[:port]"; empty means every graph
  // output. Errors name the feed or node: a missing, unknown, wrongly typed
  // or wrongly shaped feed (INVALID_ARGUMENT, with the expected signature); a
  // kernel failure (the node and op); memory exhausted (RESOURCE_EXHAUSTED).
  // After an error the session stays usable.
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      const Feeds& feeds, const std::vector<std::string>& fetches = {}) = 0;
  // Run with options: fetches left on a GPU (StepOptions). When a feed or a
  // fetch is on a GPU, Run returns once the GPU work of the step is
  // finished (the session's GPUs are synchronised), so the caller may read
  // GPU fetches on any stream and free GPU feeds at once. Errors as Run,
  // and INVALID_ARGUMENT for a feed in the memory of a device the session
  // does not use (or that sluice cannot tell), or a fetch device that is
  // not one of the session's. Steps with a GPU feed or fetch replay a CUDA
  // graph like others (docs/design.md decision 23).
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      const Feeds& feeds, const std::vector<std::string>& fetches,
      const StepOptions& options) = 0;
  // Run, recording every node's time in `stats` (not owned; see
  // executor/step_stats.h: GPU nodes are synchronised one by one, so the
  // step is slower than Run).
  virtual absl::StatusOr<std::vector<Tensor>> RunWithStats(
      const Feeds& feeds, const std::vector<std::string>& fetches,
      StepStats* stats) = 0;

  // The graph the session runs: the one given, after the optimisation
  // passes of config().optimization_level (optimizer/pipeline.h).
  virtual const Graph& graph() const = 0;
  // The config in force: the one given, with environment overrides applied.
  virtual const RuntimeConfig& config() const = 0;
  // What the session noted while starting (environment overrides applied).
  virtual const std::vector<std::string>& log() const = 0;
  // The device of each node, by node id, and the placer's full result
  // (reasons, per-device memory, estimated step time).
  virtual const std::vector<Device*>& assignment() const = 0;
  virtual const Placement& placement() const = 0;
  // The devices this session uses (not owned by the caller).
  virtual std::vector<Device*> devices() const = 0;
  // Hands the GPU memory this session reserved but holds no tensor in back
  // to the driver (as PyTorch's torch.cuda.empty_cache), and the host
  // blocks of 1 MiB and more that CPU steps freed and sluice keeps for the
  // next steps to the C library (those are the process's, kept for every
  // session's steps, up to 1 GiB, and given back anyway when the last
  // session is destroyed); returns the bytes. Memory that cached
  // plans' CUDA graphs keep stays (see the plan cache bounds in
  // proto/config.proto). Safe to call while steps run.
  virtual int64_t ReleaseUnusedMemory() = 0;
  // A copy of `tensor` (host memory, or a GPU of this session) on `device`
  // ("/cpu:0", or "/gpu:N" this session uses), finished when it returns:
  // how a C++ caller puts a feed on a GPU without CUDA calls of its own, or
  // brings a GPU fetch to the host. Errors: INVALID_ARGUMENT for a device
  // the session does not use or a tensor on none of its devices.
  virtual absl::StatusOr<Tensor> CopyTo(const Tensor& tensor,
                                        const std::string& device) = 0;
  // The name of the session device whose memory `tensor` is in ("/cpu:0"
  // for host memory, "/gpu:N"); empty when it is none of them.
  virtual std::string DeviceOf(const Tensor& tensor) const = 0;
  // A host tensor of `dtype` and `shape` (contents uninitialised) in
  // page-locked memory when the session uses a GPU (cudaHostAlloc, pinned
  // for every GPU of the process), so that feeding it costs one DMA and no
  // staging copy (see Feeds). On a session with no GPU it is ordinary host
  // memory (Tensor::Create's), which runs the same. Either way it is a host
  // tensor like any other (flat<T>() works) and the caller's: it is not
  // counted against the session's memory limits (a logical CPU's budget),
  // and it may outlive the session (the memory is returned when the last
  // Tensor sharing it goes away, with or without the session: kept for
  // reuse by later page-locked tensors, up to 1 GiB per process, beyond
  // which it goes back to the driver). Page-locked memory is a scarce
  // resource of the machine: allocate buffers once and reuse them.
  // Errors: INVALID_ARGUMENT for an invalid dtype or a shape not fully
  // defined; RESOURCE_EXHAUSTED when the driver cannot lock that much
  // memory.
  virtual absl::StatusOr<Tensor> AllocateHostTensor(DataType dtype,
                                                    const Shape& shape) = 0;
  // A job of several processes (RuntimeConfig.cluster, started by mpirun
  // or SLUICE_RANK...: docs/design.md decision 41): this process's rank
  // and the number of processes; 0 and 1 for a session of one process.
  // Rank 0 calls Run, which runs the step over every rank (feeds and
  // fetches in its host memory); the others call Serve.
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Ranks other than 0: runs this rank's part of every step rank 0's
  // session runs, until rank 0's session is destroyed (OK) or the job
  // breaks (a rank stopped answering: its error). FAILED_PRECONDITION on
  // rank 0 and in a session of one process. `feeds`: the values of the
  // feeds rank 0's steps expect on this rank (StepOptions::feeds_on_ranks),
  // the same for every step; a step expecting one that is missing fails,
  // naming this rank and the feed.
  virtual absl::Status Serve(const Feeds& feeds) = 0;
  absl::Status Serve() { return Serve(Feeds()); }

  // Names of the fetches Run({}, {}) returns: the graph's outputs.
  std::vector<std::string> DefaultFetchNames() const;

  struct Stats {
    int64_t runs = 0;            // Run calls that succeeded
    int64_t plans_compiled = 0;  // cache misses
    int64_t plans_cached = 0;    // plans in the cache now
    int64_t plans_evicted = 0;   // dropped by the cache's bounds
    int64_t plan_cache_bytes = 0;  // device bytes the cached plans hold
    int64_t gpu_graphs = 0;      // cached plans replaying a CUDA graph
    int64_t gpu_graph_steps = 0; // steps that ran as a CUDA graph
    // Copies between the host and the session's GPUs by one DMA from or
    // into page-locked memory, and through the GPUs' pinned staging
    // buffers (pageable memory), since the session began.
    int64_t host_copies_direct = 0;
    int64_t host_copies_staged = 0;
    // Host feeds of replayed CUDA graphs that the graph read straight from
    // the caller's page-locked memory, and those copied into the graph's
    // own pinned buffers first (cached plans only, as gpu_graph_steps).
    int64_t gpu_graph_direct_feeds = 0;
    int64_t gpu_graph_copied_feeds = 0;
    // Waits for a GPU inside kernels that read a value back to size an
    // output or check one (NonZero's count, NonMaxSuppression's rows,
    // computed Gather indices, ...) on the session's GPUs since the
    // session began (copies of results to the host not counted).
    int64_t gpu_kernel_host_waits = 0;
    // Why the most recently used cached plan with a GPU kernel does not
    // replay a CUDA graph ("nz (NonZero) sizes its output from values on
    // the GPU, ..."; "x runs on /cpu:0" when it has CPU kernels too); empty
    // when it does, when graphs are off, when no cached plan has a GPU
    // kernel or when the most recent one has none.
    std::string gpu_graph_why_not;
  };
  virtual Stats stats() const = 0;
};

}  // namespace sluice

#endif  // SLUICE_SESSION_H_
