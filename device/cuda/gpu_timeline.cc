#include "device/gpu_timeline.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"

namespace sluice {
namespace {

class CudaGpuTimeline final : public GpuTimeline {
 public:
  explicit CudaGpuTimeline(GpuDevice* device) : device_(device) {}

  ~CudaGpuTimeline() override {
    ScopedCudaDevice on(device_->physical_index());
    absl::MutexLock lock(&mu_);
    if (anchor_ != nullptr) cudaEventDestroy(anchor_);
    for (cudaEvent_t e : marks_) cudaEventDestroy(e);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  }

  absl::Status Reserve(int marks) override {
    ScopedCudaDevice on(device_->physical_index());
    RETURN_IF_ERROR(on.status());
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < marks; ++i) {
      cudaEvent_t event = nullptr;
      RETURN_IF_CUDA_ERROR(cudaEventCreate(&event), "cudaEventCreate");
      spare_.push_back(event);
    }
    return absl::OkStatus();
  }

  absl::Status Start() {
    RETURN_IF_ERROR(device_->Synchronize());
    ScopedCudaDevice on(device_->physical_index());
    RETURN_IF_ERROR(on.status());
    RETURN_IF_CUDA_ERROR(cudaEventCreate(&anchor_), "cudaEventCreate");
    auto compute = static_cast<cudaStream_t>(device_->compute_stream());
    start_ = std::chrono::steady_clock::now();
    RETURN_IF_CUDA_ERROR(cudaEventRecord(anchor_, compute), "cudaEventRecord");
    RETURN_IF_CUDA_ERROR(cudaEventSynchronize(anchor_), "cudaEventSynchronize");
    alignment_error_ = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start_)
                           .count();
    return absl::OkStatus();
  }

  absl::StatusOr<int> Mark(GpuStream which) override {
    ScopedCudaDevice on(device_->physical_index());
    RETURN_IF_ERROR(on.status());
    absl::MutexLock lock(&mu_);
    cudaEvent_t event = nullptr;
    if (!spare_.empty()) {
      event = spare_.back();
      spare_.pop_back();
    } else {
      RETURN_IF_CUDA_ERROR(cudaEventCreate(&event), "cudaEventCreate");
    }
    marks_.push_back(event);  // destroyed with the timeline, even on error
    absl::Status s = CudaStatus(
        cudaEventRecord(event, static_cast<cudaStream_t>(device_->stream(which))),
        "cudaEventRecord");
    RETURN_IF_ERROR(s);
    return static_cast<int>(marks_.size()) - 1;
  }

  absl::StatusOr<std::vector<double>> Resolve() override {
    ScopedCudaDevice on(device_->physical_index());
    RETURN_IF_ERROR(on.status());
    absl::MutexLock lock(&mu_);
    std::vector<double> seconds;
    seconds.reserve(marks_.size());
    for (cudaEvent_t e : marks_) {
      RETURN_IF_CUDA_ERROR(cudaEventSynchronize(e), "cudaEventSynchronize");
      float ms = 0;
      RETURN_IF_CUDA_ERROR(cudaEventElapsedTime(&ms, anchor_, e),
                           absl::StrCat(device_->name(), ": timing a mark"));
      seconds.push_back(static_cast<double>(ms) * 1e-3);
    }
    return seconds;
  }

 private:
  GpuDevice* const device_;
  cudaEvent_t anchor_ = nullptr;
  absl::Mutex mu_;
  std::vector<cudaEvent_t> marks_ ABSL_GUARDED_BY(mu_);
  std::vector<cudaEvent_t> spare_ ABSL_GUARDED_BY(mu_);  // from Reserve
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuTimeline>> StartGpuTimeline(
    GpuDevice* device) {
  auto timeline = std::make_unique<CudaGpuTimeline>(device);
  RETURN_IF_ERROR(timeline->Start());
  return std::unique_ptr<GpuTimeline>(std::move(timeline));
}

}  // namespace sluice
