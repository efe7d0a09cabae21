#include "device/gpu_graph.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"

namespace sluice {
namespace {

// The device whose compute stream the calling thread is recording, if any.
thread_local const GpuDevice* capturing_here = nullptr;

// The error words of the recording on this thread (RecordErrorWord).
struct ErrorWords {
  Tensor words;            // kMaxErrorWords words in the GPU's memory
  uint64_t* host = nullptr;  // pinned: where each launch copies them
  std::vector<ErrorWordExplainer> explain;  // one per word used
};
thread_local ErrorWords* recording_words = nullptr;

void FreeHostWords(uint64_t* host) {
  if (host != nullptr) cudaFreeHost(host);
}

cudaStream_t Compute(const GpuDevice* gpu) {
  return static_cast<cudaStream_t>(gpu->compute_stream());
}

class CudaGpuGraph final : public GpuGraph {
 public:
  // Owns `exec`, `done` (null without error words) and `words.host`.
  CudaGpuGraph(const GpuDevice* gpu, cudaGraphExec_t exec, int nodes,
               ErrorWords words, cudaEvent_t done)
      : gpu_(gpu), exec_(exec), nodes_(nodes), words_(std::move(words)),
        done_(done) {}
  ~CudaGpuGraph() override {
    ScopedCudaDevice on(gpu_->physical_index());
    cudaGraphExecDestroy(exec_);
    if (done_ != nullptr) cudaEventDestroy(done_);
    FreeHostWords(words_.host);
  }
  absl::Status Launch() override {
    ScopedCudaDevice on(gpu_->physical_index());
    RETURN_IF_ERROR(on.status());
    RETURN_IF_ERROR(CudaStatus(cudaGraphLaunch(exec_, Compute(gpu_)),
                               absl::StrCat(gpu_->name(), ": cudaGraphLaunch")));
    if (done_ == nullptr) return absl::OkStatus();
    return CudaStatus(cudaEventRecord(done_, Compute(gpu_)),
                      absl::StrCat(gpu_->name(), ": cudaEventRecord"));
  }
  absl::Status CheckErrors() override {
    if (done_ == nullptr) return absl::OkStatus();
    ScopedCudaDevice on(gpu_->physical_index());
    RETURN_IF_ERROR(on.status());
    RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(done_),
                               absl::StrCat(gpu_->name(), ": the replayed step")));
    for (size_t i = 0; i < words_.explain.size(); ++i) {
      const uint64_t value = words_.host[i];
      if (value != 0) return words_.explain[i](value);
    }
    return absl::OkStatus();
  }
  int num_nodes() const override { return nodes_; }
  int num_error_words() const override {
    return static_cast<int>(words_.explain.size());
  }

 private:
  const GpuDevice* const gpu_;
  const cudaGraphExec_t exec_;
  const int nodes_;
  const ErrorWords words_;
  const cudaEvent_t done_;
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
  recording_words = new ErrorWords();
  return absl::OkStatus();
}

absl::StatusOr<unsigned long long*> RecordErrorWord(GpuDevice* gpu,
                                                    ErrorWordExplainer explain) {
  if (capturing_here != gpu || recording_words == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "RecordErrorWord: this thread is not recording ", gpu->name()));
  }
  ErrorWords& w = *recording_words;
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
    w.host = static_cast<uint64_t*>(host);
  }
  auto* word = static_cast<unsigned long long*>(w.words.raw_data()) +
               w.explain.size();
  RETURN_IF_ERROR(CudaStatus(
      cudaMemsetAsync(word, 0, sizeof(*word), Compute(gpu)),
      absl::StrCat(gpu->name(), ": recording a check")));
  w.explain.push_back(std::move(explain));
  return word;
}

// Releases what BeginGpuCapture took; see there for why not analysed.
absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice* gpu)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (capturing_here != gpu) {
    return absl::FailedPreconditionError(absl::StrCat(
        "EndGpuCapture: this thread is not recording ", gpu->name()));
  }
  std::unique_ptr<ErrorWords> words(recording_words);
  recording_words = nullptr;
  cudaGraph_t graph = nullptr;
  absl::Status ended = gpu->MakeCurrent();
  if (ended.ok() && !words->explain.empty()) {
    // The graph's last operation: its words to pinned memory, for
    // CheckErrors.
    ended = CudaStatus(
        cudaMemcpyAsync(words->host, words->words.raw_data(),
                        words->explain.size() * sizeof(uint64_t),
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
    FreeHostWords(words->host);
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
  cudaGraphDestroy(graph);
  cudaEvent_t done = nullptr;
  if (s.ok() && !words->explain.empty()) {
    s = CudaStatus(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                   absl::StrCat(gpu->name(), ": cudaEventCreate"));
  }
  if (!s.ok()) {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    FreeHostWords(words->host);
    return s;
  }
  return std::unique_ptr<GpuGraph>(new CudaGpuGraph(
      gpu, exec, static_cast<int>(nodes), std::move(*words), done));
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
