// CudaProvider: the CUDA GPUs' execution provider
// (kernels/execution_provider.h): the kernels of kernels/cuda/ (CUDA
// builds only), on cuBLAS, cuBLASLt, NVRTC and cuDNN loaded at run time.
// Its description (layout, libraries) compiles in every build, so that a
// CPU-only build can plan GPUs (`sluice place --devices 2xgpu:80GiB`).
//
//   CudaProvider planned({.use_cudnn = true, .cudnn_usable = true});
//   planned.Target().conv_layout_reduced;   // kNhwc
//
// Immutable after construction; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_CUDA_PROVIDER_H_
#define SLUICE_KERNELS_CUDA_CUDA_PROVIDER_H_

#include "kernels/execution_provider.h"
#include "proto/config.pb.h"

namespace sluice {

struct CudaProviderOptions {
  // Convolutions on cuDNN (RuntimeConfig.use_cudnn, default true).
  bool use_cudnn = true;
  // Whether cuDNN loads: probed on this machine for a session, assumed for
  // a plan of GPUs that are not here (a deployment would have it).
  bool cudnn_usable = true;
};

// The options a config asks for; `probe` asks this machine whether cuDNN
// loads (device/cudnn_info.h), else it is assumed to.
CudaProviderOptions CudaProviderOptionsFromConfig(const RuntimeConfig& config,
                                                  bool probe);

class CudaProvider final : public ExecutionProvider {
 public:
  explicit CudaProvider(CudaProviderOptions options = {});

  const CudaProviderOptions& options() const { return options_; }

  std::string_view name() const override { return "cuda"; }
  DeviceType device_type() const override { return DeviceType::kGpu; }
  // NHWC for float16 and bfloat16 where cuDNN runs the convolutions (its
  // tensor-core engines want channels last), graphs with grouped
  // convolutions kept NCHW; float32 NCHW (docs/design.md decision 31).
  OptimizationTarget Target() const override;
  std::vector<LibraryReport> Libraries() const override;

 private:
  const CudaProviderOptions options_;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_CUDA_CUDA_PROVIDER_H_
