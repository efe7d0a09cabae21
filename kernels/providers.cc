// The execution providers of a session or a plan (kernels/providers.h).
#include "kernels/providers.h"

#include "absl/strings/str_cat.h"
#include "device/device.h"
#include "device/discovery.h"

namespace sluice {

ProviderSet::ProviderSet(CpuProviderOptions cpu,
                         std::unique_ptr<const CudaProviderOptions> cuda,
                         bool gpus_compute)
    : cpu_(std::make_unique<CpuProvider>(cpu)), gpus_compute_(gpus_compute) {
  if (cuda != nullptr) cuda_ = std::make_unique<CudaProvider>(*cuda);
}

const ExecutionProvider* ProviderSet::Get(DeviceType type) const {
  if (type == DeviceType::kCpu) return cpu_.get();
  return cuda_.get();
}

const ExecutionProvider& ProviderSet::compute() const {
  if (cuda_ != nullptr && gpus_compute_) return *cuda_;
  return *cpu_;
}

bool ComputeOnGpus(const RuntimeConfig& config) {
  if (config.placement_strategy() != PLACEMENT_MANUAL ||
      config.default_device().empty()) {
    return true;
  }
  absl::StatusOr<DeviceName> name = ParseDeviceName(config.default_device());
  return !name.ok() || name->type != DeviceType::kCpu;
}

std::function<absl::Status(const Node& node, DeviceType type)>
ProviderSet::CapabilityQuery() const {
  return [this](const Node& node, DeviceType type) -> absl::Status {
    const ExecutionProvider* provider = Get(type);
    if (provider == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "no ", DeviceTypeName(type), " provider in this session"));
    }
    return provider->Supports(node);
  };
}

ProviderSet ProvidersForMachine(const RuntimeConfig& config) {
  std::unique_ptr<const CudaProviderOptions> cuda;
  if (!config.has_use_gpu() || config.use_gpu()) {
    for (const GpuInfo& g : DiscoverDevices().gpus) {
      if (!g.usable) continue;
      cuda = std::make_unique<CudaProviderOptions>(
          CudaProviderOptionsFromConfig(config, /*probe=*/true));
      break;
    }
  }
  return ProviderSet(CpuProviderOptionsFromConfig(config), std::move(cuda),
                     ComputeOnGpus(config));
}

ProviderSet ProvidersForPlan(const RuntimeConfig& config, bool gpus) {
  std::unique_ptr<const CudaProviderOptions> cuda;
  if (gpus) {
    cuda = std::make_unique<CudaProviderOptions>(
        CudaProviderOptionsFromConfig(config, /*probe=*/false));
  }
  return ProviderSet(CpuProviderOptionsFromConfig(config), std::move(cuda),
                     ComputeOnGpus(config));
}

}  // namespace sluice
