// A GPU's AlgorithmCache (kernels/algorithm_cache.h), kept as a GpuDevice
// resource and shared by cuDNN's convolutions (cudnn_conv.cc) and
// cuBLASLt's matrix products (cublaslt_matmul.cc), and the
// AlgorithmCache::Device its candidates run on: workspace from the
// device's arena (ctx->allocate_temp, so it counts against the memory
// limit), timing with CUDA events on the compute stream from a cold L2
// cache, and no timing while this thread records a CUDA graph (timing
// waits for the GPU).
// CUDA-free header.
//
//   ASSIGN_OR_RETURN(AlgorithmCache* cache, GpuAlgorithmCache(gpu));
//   GpuAlgorithmDevice device(ctx, gpu);
//   ASSIGN_OR_RETURN(AlgorithmCache::Ran ran,
//                    cache->Run(key, algorithms, call, options, &device));
//
// Thread-safety: GpuAlgorithmCache may be called from any thread; a
// GpuAlgorithmDevice belongs to one kernel call.
#ifndef SLUICE_KERNELS_CUDA_GPU_ALGORITHM_CACHE_H_
#define SLUICE_KERNELS_CUDA_GPU_ALGORITHM_CACHE_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "device/gpu_device.h"
#include "kernels/algorithm_cache.h"
#include "kernels/kernel.h"

namespace sluice::cuda {

// `gpu`'s cache, made on first use; owned by the device.
absl::StatusOr<AlgorithmCache*> GpuAlgorithmCache(GpuDevice* gpu);

class GpuAlgorithmDevice final : public AlgorithmCache::Device {
 public:
  // Both must outlive this object (one kernel call).
  GpuAlgorithmDevice(OpKernelContext* ctx, GpuDevice* gpu) : ctx_(ctx), gpu_(gpu) {}

  absl::StatusOr<Tensor> Workspace(int64_t bytes) override;
  bool CanTime() const override;
  // One untimed run first (CUDA and the libraries load kernels lazily, on
  // their first launch), then the mean of three, each started with the L2
  // cache written over (a temp of the L2's size, where the arena has room),
  // so that no candidate finds its operands there as the step would not.
  // Synchronises with the compute stream.
  absl::StatusOr<float> Time(const std::function<absl::Status()>& run) override;

 private:
  OpKernelContext* const ctx_;
  GpuDevice* const gpu_;
};

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_GPU_ALGORITHM_CACHE_H_
