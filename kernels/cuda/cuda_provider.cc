// The CUDA GPUs' execution provider (kernels/cuda/cuda_provider.h). Free of
// CUDA headers: compiled in every build.
#include "kernels/cuda/cuda_provider.h"

#include "device/cudnn_info.h"
#include "device/gpu_device.h"

namespace sluice {

CudaProviderOptions CudaProviderOptionsFromConfig(const RuntimeConfig& config,
                                                  bool probe) {
  CudaProviderOptions options;
  options.use_cudnn =
      config.has_use_cudnn() ? config.use_cudnn() : kUseCudnnByDefault;
  options.cudnn_usable = !probe || !options.use_cudnn || GetCudnnInfo().usable;
  return options;
}

CudaProvider::CudaProvider(CudaProviderOptions options) : options_(options) {}

OptimizationTarget CudaProvider::Target() const {
  OptimizationTarget target;
  target.provider = std::string(name());
  // Without cuDNN the direct kernels run, no faster channels last.
  if (options_.use_cudnn && options_.cudnn_usable) {
    target.conv_layout_reduced = DataFormat::kNhwc;
    target.nhwc_where_fewer_transposes = true;
  }
  target.grouped_convs_stay_nchw = true;
  return target;
}

std::vector<LibraryReport> CudaProvider::Libraries() const {
  LibraryReport cudnn;
  cudnn.name = "cuDNN";
  if (!options_.use_cudnn) {
    cudnn.detail = "off (use_cudnn false): sluice's own convolution kernels";
    return {cudnn};
  }
  const CudnnInfo info = GetCudnnInfo();
  cudnn.available = info.usable;
  cudnn.detail = info.usable ? CudnnVersionString(info.version) : info.reason;
  return {cudnn};
}

}  // namespace sluice
