#include "device/gpu_graph.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"

namespace sluice {
namespace {

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

absl::Status BeginGpuCapture(GpuDevice* gpu) {
  RETURN_IF_ERROR(gpu->MakeCurrent());
  return CudaStatus(
      cudaStreamBeginCapture(Compute(gpu), cudaStreamCaptureModeRelaxed),
      absl::StrCat(gpu->name(), ": cudaStreamBeginCapture"));
}

absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice* gpu) {
  RETURN_IF_ERROR(gpu->MakeCurrent());
  cudaGraph_t graph = nullptr;
  RETURN_IF_CUDA_ERROR(cudaStreamEndCapture(Compute(gpu), &graph),
                       absl::StrCat(gpu->name(), ": capturing the step"));
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

bool IsCapturing(const GpuDevice* gpu) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(Compute(gpu), &status) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace sluice
