// PlanGpuDevices: from a RuntimeConfig and the discovered GPUs to the list of
// logical GPUs (physical index, byte limit), in /gpu:N order. Pure logic, no
// CUDA calls; it lives here because only CUDA builds create GPU devices.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "device/gpu_device.h"

namespace sluice {
namespace {

// Bytes a MemoryLimit allows on `gpu`; `field` names it in errors.
absl::StatusOr<int64_t> ResolveLimit(const MemoryLimit& limit,
                                     const GpuInfo& gpu,
                                     const std::string& field) {
  switch (limit.limit_case()) {
    case MemoryLimit::kBytes:
      if (limit.bytes() <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": byte limit must be positive, got ",
                         limit.bytes()));
      }
      if (gpu.total_memory > 0 && limit.bytes() > gpu.total_memory) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ": limit of ", limit.bytes(), " bytes (",
            FormatBytes(limit.bytes()), ") exceeds GPU ", gpu.index, " (",
            gpu.name, ") with ", FormatBytes(gpu.total_memory), " in total"));
      }
      return limit.bytes();
    case MemoryLimit::kFraction: {
      const double f = limit.fraction();
      if (!(f > 0.0 && f <= 1.0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ": fraction must be in (0, 1], got ", f));
      }
      return static_cast<int64_t>(
          std::floor(f * static_cast<double>(gpu.total_memory)));
    }
    case MemoryLimit::LIMIT_NOT_SET:
      break;
  }
  // The whole card: what is free, less room for the context and libraries.
  const int64_t whole = std::max<int64_t>(
      gpu.free_memory - kGpuReservedBytes, gpu.free_memory / 2);
  return whole;
}

const GpuConfig* FindGpuConfig(const RuntimeConfig& config, int index,
                               int* position) {
  for (int i = 0; i < config.gpu_size(); ++i) {
    if (config.gpu(i).index() == index) {
      *position = i;
      return &config.gpu(i);
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<GpuDeviceSpec>> PlanGpuDevices(
    const RuntimeConfig& config, const std::vector<GpuInfo>& gpus) {
  std::vector<GpuDeviceSpec> specs;
  if (config.has_use_gpu() && !config.use_gpu()) return specs;

  std::vector<int> chosen;
  if (config.visible_gpus_size() > 0) {
    for (int i = 0; i < config.visible_gpus_size(); ++i) {
      const int index = config.visible_gpus(i);
      if (index < 0 || index >= static_cast<int>(gpus.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "visible_gpus[", i, "]: GPU ", index, " does not exist (",
            gpus.size(), " visible after CUDA_VISIBLE_DEVICES)"));
      }
      if (!gpus[index].usable) {
        return absl::InvalidArgumentError(
            absl::StrCat("visible_gpus[", i, "]: GPU ", index, " (",
                         gpus[index].name, ") cannot be used: ",
                         gpus[index].unusable_reason));
      }
      if (std::find(chosen.begin(), chosen.end(), index) != chosen.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("visible_gpus[", i, "]: GPU ", index, " listed twice"));
      }
      chosen.push_back(index);
    }
  } else {
    for (const GpuInfo& gpu : gpus) {
      if (gpu.usable) chosen.push_back(gpu.index);
    }
  }
  for (int i = 0; i < config.gpu_size(); ++i) {
    const int index = config.gpu(i).index();
    if (index < 0 || index >= static_cast<int>(gpus.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu[", i, "].index: GPU ", index, " does not exist (",
                       gpus.size(), " visible)"));
    }
  }

  for (int index : chosen) {
    const GpuInfo& gpu = gpus[index];
    int position = -1;
    const GpuConfig* gc = FindGpuConfig(config, index, &position);
    if (gc != nullptr && gc->logical_devices_size() > 0) {
      int64_t sum = 0;
      for (int j = 0; j < gc->logical_devices_size(); ++j) {
        const std::string field = absl::StrCat(
            "gpu[", position, "].logical_devices[", j, "].memory_limit");
        const MemoryLimit& limit = gc->logical_devices(j).memory_limit();
        if (limit.limit_case() == MemoryLimit::LIMIT_NOT_SET) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ": a logical GPU needs a memory limit"));
        }
        absl::StatusOr<int64_t> bytes = ResolveLimit(limit, gpu, field);
        if (!bytes.ok()) return bytes.status();
        sum += *bytes;
        specs.push_back({index, *bytes});
      }
      if (gpu.total_memory > 0 && sum > gpu.total_memory) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gpu[", position, "].logical_devices: limits add up to ",
            FormatBytes(sum), ", more than GPU ", index, "'s ",
            FormatBytes(gpu.total_memory)));
      }
      continue;
    }
    const bool own = gc != nullptr && gc->memory_limit().limit_case() !=
                                          MemoryLimit::LIMIT_NOT_SET;
    const MemoryLimit& limit =
        own ? gc->memory_limit() : config.gpu_memory_limit();
    const std::string field =
        own ? absl::StrCat("gpu[", position, "].memory_limit")
            : std::string("gpu_memory_limit");
    absl::StatusOr<int64_t> bytes = ResolveLimit(limit, gpu, field);
    if (!bytes.ok()) return bytes.status();
    specs.push_back({index, *bytes});
  }
  return specs;
}

}  // namespace sluice
