// A GPU's AlgorithmCache and the device its candidates run on
// (gpu_algorithm_cache.h).
#include "kernels/cuda/gpu_algorithm_cache.h"

#include <memory>

#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"
#include "device/gpu_graph.h"

namespace sluice::cuda {
namespace {

constexpr char kResourceKey[] = "algorithm_cache";

class CacheResource final : public GpuDevice::Resource {
 public:
  AlgorithmCache cache;
};

}  // namespace

absl::StatusOr<AlgorithmCache*> GpuAlgorithmCache(GpuDevice* gpu) {
  ASSIGN_OR_RETURN(
      GpuDevice::Resource * r,
      gpu->GetOrCreateResource(
          kResourceKey, []() -> absl::StatusOr<std::unique_ptr<GpuDevice::Resource>> {
            return std::make_unique<CacheResource>();
          }));
  return &static_cast<CacheResource*>(r)->cache;
}

absl::StatusOr<Tensor> GpuAlgorithmDevice::Workspace(int64_t bytes) {
  return ctx_->allocate_temp(DT_UINT8, Shape({bytes}));
}

bool GpuAlgorithmDevice::CanTime() const { return !CapturingOnThisThread(gpu_); }

absl::StatusOr<float> GpuAlgorithmDevice::Time(const std::function<absl::Status()>& run) {
  constexpr int kTimedRuns = 3;
  cudaStream_t stream = static_cast<cudaStream_t>(gpu_->compute_stream());
  RETURN_IF_ERROR(run());
  // Each timed run starts with the L2 cache holding none of its operands, as
  // a layer's weights are when a step reaches it: written over by a buffer
  // of the L2's size. Without it, the candidates that read their operands
  // most often look fastest.
  int device = 0, l2_bytes = 0;
  RETURN_IF_CUDA_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  RETURN_IF_CUDA_ERROR(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device),
                       "cudaDeviceGetAttribute");
  Tensor flush;
  if (l2_bytes > 0) {
    absl::StatusOr<Tensor> t = ctx_->allocate_temp(DT_UINT8, Shape({int64_t{l2_bytes}}));
    if (t.ok()) {
      flush = *std::move(t);
    } else if (!absl::IsResourceExhausted(t.status())) {  // no room: L2 as it is
      return t.status();
    }
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  RETURN_IF_CUDA_ERROR(cudaEventCreate(&start), "cudaEventCreate");
  absl::Status s = CudaStatus(cudaEventCreate(&stop), "cudaEventCreate");
  float total = 0;
  for (int i = 0; s.ok() && i < kTimedRuns; ++i) {
    if (flush.NumElements() > 0) {
      s = CudaStatus(cudaMemsetAsync(flush.raw_data(), i, l2_bytes, stream), "cudaMemsetAsync");
    }
    if (s.ok()) s = CudaStatus(cudaEventRecord(start, stream), "cudaEventRecord");
    if (s.ok()) s = run();
    if (s.ok()) s = CudaStatus(cudaEventRecord(stop, stream), "cudaEventRecord");
    if (s.ok()) s = CudaStatus(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    if (s.ok()) s = CudaStatus(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    total += ms;
  }
  cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  RETURN_IF_ERROR(s);
  return total / kTimedRuns;
}

}  // namespace sluice::cuda
