#include "device/gpu_graph.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"

namespace sluice {
namespace {

// The device whose compute stream the calling thread is recording, if any.
thread_local const GpuDevice* capturing_here = nullptr;

cudaStream_t Compute(const GpuDevice* gpu) {
  return static_cast<cudaStream_t>(gpu->compute_stream());
}

// What the recording on this thread adds to the graph besides the captured
// work: error words (RecordErrorWord) and pinned host inputs
// (RecordHostInput). The graph owns it once recorded.
struct Extras {
  Tensor words;              // kMaxErrorWords words in the GPU's memory
  uint64_t* host_words = nullptr;  // pinned: where each launch copies them
  std::vector<ErrorWordExplainer> explain;  // one per word used
  std::vector<void*> host_inputs;  // pinned buffers the graph copies from
  std::vector<size_t> host_input_bytes;  // and the bytes of each

  void FreeHost() {
    if (host_words != nullptr) cudaFreeHost(host_words);
    host_words = nullptr;
    for (void* p : host_inputs) cudaFreeHost(p);
    host_inputs.clear();
  }
};
thread_local Extras* recording_extras = nullptr;

// The recorded copy of one host input (RecordHostInput): its node in the
// graph, where it writes, how many bytes, and what it reads now.
struct HostInputCopy {
  cudaGraphNode_t node = nullptr;  // null: not found, never redirected
  void* dst = nullptr;
  size_t bytes = 0;
  const void* src = nullptr;       // the graph's buffer, or a caller's
};

// Finds the memcpy node of `graph` that reads each of `extras`' host
// inputs (by its source address). An input whose node is not found (or
// that copies nothing) keeps a null node: SetHostInputSource refuses it,
// and its feed is copied into the graph's buffer as before.
std::vector<HostInputCopy> FindHostInputCopies(cudaGraph_t graph,
                                               const Extras& extras) {
  std::vector<HostInputCopy> out(extras.host_inputs.size());
  for (size_t i = 0; i < out.size(); ++i) out[i].src = extras.host_inputs[i];
  if (out.empty()) return out;
  size_t count = 0;
  if (cudaGraphGetNodes(graph, nullptr, &count) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  std::vector<cudaGraphNode_t> nodes(count);
  if (cudaGraphGetNodes(graph, nodes.data(), &count) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (type != cudaGraphNodeTypeMemcpy) continue;
    cudaMemcpy3DParms p{};
    if (cudaGraphMemcpyNodeGetParams(node, &p) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (extras.host_input_bytes[i] == 0 ||
          p.srcPtr.ptr != extras.host_inputs[i] || p.srcArray != nullptr) {
        continue;
      }
      out[i].node = node;
      out[i].dst = p.dstPtr.ptr;
      out[i].bytes = extras.host_input_bytes[i];
    }
  }
  return out;
}

class CudaGpuGraph final : public GpuGraph {
 public:
  // Owns `graph` (kept for its nodes' handles: SetHostInputSource), `exec`,
  // `done` and the extras' pinned memory.
  CudaGpuGraph(const GpuDevice* gpu, cudaGraph_t graph, cudaGraphExec_t exec,
               int nodes, Extras extras, cudaEvent_t done)
      : gpu_(gpu), graph_(graph), exec_(exec), nodes_(nodes),
        extras_(std::move(extras)), done_(done),
        inputs_(FindHostInputCopies(graph, extras_)) {}
  ~CudaGpuGraph() override {
    ScopedCudaDevice on(gpu_->physical_index());
    if (launched_) cudaEventSynchronize(done_);
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
    cudaEventDestroy(done_);
    extras_.FreeHost();
  }
  absl::Status SetHostInputSource(int i, const void* src) override {
    if (i < 0 || i >= static_cast<int>(inputs_.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SetHostInputSource: no host input ", i, " (the graph has ",
          inputs_.size(), ")"));
    }
    HostInputCopy& in = inputs_[i];
    const void* want = src != nullptr ? src : extras_.host_inputs[i];
    if (want == in.src) return absl::OkStatus();
    if (in.node == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          gpu_->name(), ": the copy of host input ", i,
          " was not found in the recorded graph"));
    }
    ScopedCudaDevice on(gpu_->physical_index());
    RETURN_IF_ERROR(on.status());
    RETURN_IF_ERROR(CudaStatus(
        cudaGraphExecMemcpyNodeSetParams1D(exec_, in.node, in.dst, want,
                                           in.bytes, cudaMemcpyHostToDevice),
        absl::StrCat(gpu_->name(), ": pointing a replayed step's input copy "
                                   "at page-locked memory")));
    in.src = want;
    return absl::OkStatus();
  }
  absl::Status Launch() override {
    ScopedCudaDevice on(gpu_->physical_index());
    RETURN_IF_ERROR(on.status());
    RETURN_IF_ERROR(CudaStatus(cudaGraphLaunch(exec_, Compute(gpu_)),
                               absl::StrCat(gpu_->name(), ": cudaGraphLaunch")));
    launched_ = true;
    return CudaStatus(cudaEventRecord(done_, Compute(gpu_)),
                      absl::StrCat(gpu_->name(), ": cudaEventRecord"));
  }
  absl::Status Wait() override {
    if (!launched_) return absl::OkStatus();
    ScopedCudaDevice on(gpu_->physical_index());
    RETURN_IF_ERROR(on.status());
    return CudaStatus(cudaEventSynchronize(done_),
                      absl::StrCat(gpu_->name(), ": the replayed step"));
  }
  absl::Status CheckErrors() override {
    if (extras_.explain.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(Wait());
    for (size_t i = 0; i < extras_.explain.size(); ++i) {
      const uint64_t value = extras_.host_words[i];
      if (value != 0) return extras_.explain[i](value);
    }
    return absl::OkStatus();
  }
  int num_nodes() const override { return nodes_; }
  int num_error_words() const override {
    return static_cast<int>(extras_.explain.size());
  }

 private:
  const GpuDevice* const gpu_;
  const cudaGraph_t graph_;
  const cudaGraphExec_t exec_;
  const int nodes_;
  Extras extras_;
  const cudaEvent_t done_;
  std::vector<HostInputCopy> inputs_;  // one per host input
  bool launched_ = false;
};

}  // namespace

// Not analysed for locks (ABSL_NO_THREAD_SAFETY_ANALYSIS), on purpose: a
// successful BeginGpuCapture returns holding capture_mutex() as a writer and
// EndGpuCapture releases it, so the lock spans two calls and is taken only
// when Begin returns OK, which clang's analysis cannot express (its
// try-lock attributes need a bool result). The pairing is checked at run
// time instead: capturing_here says which GPU this thread is recording.
absl::Status BeginGpuCapture(GpuDevice* gpu, const Tensor& cublas_workspace)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (!cublas_workspace.valid() || cublas_workspace.bytes() == 0 ||
      cublas_workspace.allocator() != gpu->allocator()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BeginGpuCapture: the cuBLAS workspace ", cublas_workspace.DebugString(0),
        " is not a non-empty tensor in ", gpu->name(), " memory"));
  }
  if (capturing_here != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "BeginGpuCapture on ", gpu->name(), ": this thread is already recording ",
        capturing_here->name()));
  }
  RETURN_IF_ERROR(gpu->MakeCurrent());
  gpu->capture_mutex().WriterLock();  // copies in flight end first
  absl::Status s = gpu->SetCublasWorkspace(cublas_workspace.raw_data(),
                                           cublas_workspace.bytes());
  if (s.ok()) {
    s = CudaStatus(
        cudaStreamBeginCapture(Compute(gpu), cudaStreamCaptureModeRelaxed),
        absl::StrCat(gpu->name(), ": cudaStreamBeginCapture"));
    if (!s.ok()) gpu->ResetCublasWorkspace().IgnoreError();
  }
  if (!s.ok()) {
    gpu->capture_mutex().WriterUnlock();
    return s;
  }
  capturing_here = gpu;
  recording_extras = new Extras();
  return absl::OkStatus();
}

absl::StatusOr<unsigned long long*> RecordErrorWord(GpuDevice* gpu,
                                                    ErrorWordExplainer explain) {
  if (capturing_here != gpu || recording_extras == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "RecordErrorWord: this thread is not recording ", gpu->name()));
  }
  Extras& w = *recording_extras;
  if (w.explain.size() >= static_cast<size_t>(kMaxErrorWords)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a recorded step checks at most ", kMaxErrorWords,
        " values on the GPU"));
  }
  if (!w.words.valid()) {
    ASSIGN_OR_RETURN(w.words, Tensor::Create(DT_UINT64, Shape({kMaxErrorWords}),
                                             gpu->allocator()));
    void* host = nullptr;
    RETURN_IF_ERROR(CudaStatus(
        cudaHostAlloc(&host, kMaxErrorWords * sizeof(uint64_t),
                      cudaHostAllocDefault),
        absl::StrCat(gpu->name(), ": pinned memory for the step's checks")));
    w.host_words = static_cast<uint64_t*>(host);
  }
  auto* word = static_cast<unsigned long long*>(w.words.raw_data()) +
               w.explain.size();
  RETURN_IF_ERROR(CudaStatus(
      cudaMemsetAsync(word, 0, sizeof(*word), Compute(gpu)),
      absl::StrCat(gpu->name(), ": recording a check")));
  w.explain.push_back(std::move(explain));
  return word;
}

absl::StatusOr<void*> RecordHostInput(GpuDevice* gpu, const Tensor& dst) {
  if (capturing_here != gpu || recording_extras == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "RecordHostInput: this thread is not recording ", gpu->name()));
  }
  if (!dst.valid() || dst.allocator() != gpu->allocator()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RecordHostInput: ", dst.DebugString(0), " is not a tensor in ",
        gpu->name(), " memory"));
  }
  const size_t bytes = std::max<size_t>(dst.bytes(), 1);
  void* host = nullptr;
  RETURN_IF_ERROR(CudaStatus(
      cudaHostAlloc(&host, bytes, cudaHostAllocDefault),
      absl::StrCat(gpu->name(), ": pinned memory for a step's input of ",
                   dst.bytes(), " bytes")));
  recording_extras->host_inputs.push_back(host);
  recording_extras->host_input_bytes.push_back(dst.bytes());
  if (dst.bytes() == 0) return host;
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(dst.raw_data(), host, dst.bytes(), cudaMemcpyHostToDevice,
                      Compute(gpu)),
      absl::StrCat(gpu->name(), ": recording an input copy")));
  return host;
}

// Releases what BeginGpuCapture took; see there for why not analysed.
absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice* gpu)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (capturing_here != gpu) {
    return absl::FailedPreconditionError(absl::StrCat(
        "EndGpuCapture: this thread is not recording ", gpu->name()));
  }
  std::unique_ptr<Extras> extras(recording_extras);
  recording_extras = nullptr;
  cudaGraph_t graph = nullptr;
  absl::Status ended = gpu->MakeCurrent();
  if (ended.ok() && !extras->explain.empty()) {
    // The graph's last operation: its words to pinned memory, for
    // CheckErrors.
    ended = CudaStatus(
        cudaMemcpyAsync(extras->host_words, extras->words.raw_data(),
                        extras->explain.size() * sizeof(uint64_t),
                        cudaMemcpyDeviceToHost, Compute(gpu)),
        absl::StrCat(gpu->name(), ": recording the step's checks"));
  }
  {
    absl::Status s = CudaStatus(cudaStreamEndCapture(Compute(gpu), &graph),
                                absl::StrCat(gpu->name(), ": capturing the step"));
    if (ended.ok()) ended = s;
  }
  ended.Update(gpu->ResetCublasWorkspace());
  capturing_here = nullptr;
  gpu->capture_mutex().WriterUnlock();
  if (!ended.ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    extras->FreeHost();
    return ended;
  }
  size_t nodes = 0;
  absl::Status s = CudaStatus(cudaGraphGetNodes(graph, nullptr, &nodes),
                              "cudaGraphGetNodes");
  if (s.ok() && nodes == 0) {
    s = absl::FailedPreconditionError("the captured step has no GPU work");
  }
  cudaGraphExec_t exec = nullptr;
  if (s.ok()) {
    s = CudaStatus(cudaGraphInstantiate(&exec, graph, 0),
                   absl::StrCat(gpu->name(), ": cudaGraphInstantiate"));
  }
  cudaEvent_t done = nullptr;
  if (s.ok()) {
    s = CudaStatus(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                   absl::StrCat(gpu->name(), ": cudaEventCreate"));
  }
  if (!s.ok()) {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    extras->FreeHost();
    return s;
  }
  // The graph is kept with its instance: exec updates name its nodes.
  return std::unique_ptr<GpuGraph>(new CudaGpuGraph(
      gpu, graph, exec, static_cast<int>(nodes), std::move(*extras), done));
}

bool CapturingOnThisThread(const GpuDevice* gpu) {
  return capturing_here == gpu;
}

bool IsCapturing(const GpuDevice* gpu) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(Compute(gpu), &status) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace sluice
