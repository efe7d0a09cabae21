#include "device/gpu_graph.h"

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

class CudaGpuGraph final : public GpuGraph {
 public:
  CudaGpuGraph(const GpuDevice* gpu, cudaGraphExec_t exec, int nodes)
      : gpu_(gpu), exec_(exec), nodes_(nodes) {}
  ~CudaGpuGraph() override {
    ScopedCudaDevice on(gpu_->physical_index());
    cudaGraphExecDestroy(exec_);
  }
  absl::Status Launch() override {
    ScopedCudaDevice on(gpu_->physical_index());
    RETURN_IF_ERROR(on.status());
    return CudaStatus(cudaGraphLaunch(exec_, Compute(gpu_)),
                      absl::StrCat(gpu_->name(), ": cudaGraphLaunch"));
  }
  int num_nodes() const override { return nodes_; }

 private:
  const GpuDevice* const gpu_;
  const cudaGraphExec_t exec_;
  const int nodes_;
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
  return absl::OkStatus();
}

// Releases what BeginGpuCapture took; see there for why not analysed.
absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice* gpu)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (capturing_here != gpu) {
    return absl::FailedPreconditionError(absl::StrCat(
        "EndGpuCapture: this thread is not recording ", gpu->name()));
  }
  cudaGraph_t graph = nullptr;
  absl::Status ended = gpu->MakeCurrent();
  if (ended.ok()) {
    ended = CudaStatus(cudaStreamEndCapture(Compute(gpu), &graph),
                       absl::StrCat(gpu->name(), ": capturing the step"));
  }
  ended.Update(gpu->ResetCublasWorkspace());
  capturing_here = nullptr;
  gpu->capture_mutex().WriterUnlock();
  if (!ended.ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
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
  RETURN_IF_ERROR(s);
  return std::unique_ptr<GpuGraph>(
      new CudaGpuGraph(gpu, exec, static_cast<int>(nodes)));
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
