// CUDA runtime and cuBLAS errors as absl::Status, and a scoped current
// device. Only device/cuda and kernels/cuda include this.
//
//   RETURN_IF_CUDA_ERROR(cudaMemsetAsync(p, 0, n, stream), "clearing flags");
//   ScopedCudaDevice on(gpu_ordinal);   // restored when `on` goes away
//
// Stateless; thread-safe (the current device is per thread).
#ifndef SLUICE_DEVICE_CUDA_CUDA_STATUS_H_
#define SLUICE_DEVICE_CUDA_CUDA_STATUS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cuda_runtime_api.h"

namespace sluice {

// INTERNAL (RESOURCE_EXHAUSTED for cudaErrorMemoryAllocation) naming `what`
// and the CUDA error; OK for cudaSuccess. Clears the error if it is not
// sticky, so that one failure does not poison later calls.
inline absl::Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();
  std::string message =
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ",
                   cudaGetErrorString(err), " (", cudaGetErrorName(err), ")");
  if (err == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

#define RETURN_IF_CUDA_ERROR(expr, what)                            \
  do {                                                              \
    ::absl::Status sluice_cuda_status_ = ::sluice::CudaStatus((expr), (what)); \
    if (!sluice_cuda_status_.ok()) return sluice_cuda_status_;      \
  } while (0)

// Makes `device` current for the scope; restores the previous one.
class ScopedCudaDevice {
 public:
  explicit ScopedCudaDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != device) {
      status_ = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
      changed_ = status_.ok();
    }
  }
  ~ScopedCudaDevice() {
    if (changed_ && previous_ >= 0) cudaSetDevice(previous_);
  }
  ScopedCudaDevice(const ScopedCudaDevice&) = delete;
  ScopedCudaDevice& operator=(const ScopedCudaDevice&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;
  bool changed_ = false;
  absl::Status status_;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDA_CUDA_STATUS_H_
