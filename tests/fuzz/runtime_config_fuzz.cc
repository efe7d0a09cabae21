// libFuzzer target: arbitrary bytes as a RuntimeConfig text proto (--config
// CFG) through ParseRuntimeConfig, ValidateRuntimeConfig and, for a config
// that passes, what a session derives from it: the environment overrides
// (with fixed values), the effective GPU memory limit, the placer options
// and the device topology on a made-up machine of 2 GPUs (PlanMachineDevices).
// Any crash, sanitizer report or abort is a bug.
//
//   build-asan/tests/fuzz/runtime_config_fuzz -timeout=2 \
//     tests/fuzz/corpus/runtime_config_fuzz
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "executor/runtime_config.h"
#include "placer/machine_topology.h"
#include "placer/placer.h"

namespace {

sluice::DeviceInventory FakeMachine() {
  sluice::DeviceInventory inv;
  inv.cpu.model_name = "fuzz CPU";
  inv.cpu.cores = 8;
  inv.cpu.memory_bytes = int64_t{64} << 30;
  inv.cpu.available_bytes = int64_t{32} << 30;
  for (int i = 0; i < 2; ++i) {
    sluice::GpuInfo g;
    g.index = i;
    g.name = "fuzz GPU";
    g.cc_major = 9;
    g.total_memory = int64_t{80} << 30;
    g.free_memory = int64_t{79} << 30;
    g.sm_count = 132;
    inv.gpus.push_back(g);
  }
  inv.peer_access = {{true, true}, {true, true}};
  return inv;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sluice::RuntimeConfig> config =
      sluice::ParseRuntimeConfig(text, "fuzz.pbtxt");
  if (!config.ok()) return 0;
  if (!sluice::ValidateRuntimeConfig(*config).ok()) return 0;

  static const sluice::DeviceInventory* machine =
      new sluice::DeviceInventory(FakeMachine());
  (void)sluice::PlacerOptionsFromConfig(*config);
  (void)sluice::PlanMachineDevices(*config, *machine);
  for (int gpu = 0; gpu < 2; ++gpu) {
    (void)sluice::ResolveMemoryLimit(
        sluice::EffectiveGpuMemoryLimit(*config, gpu), int64_t{80} << 30);
  }

  sluice::RuntimeConfig overridden = *config;
  auto env = [](const char* name) -> std::optional<std::string> {
    if (absl::string_view(name) == sluice::kEnvGpuMemoryLimit) return "0.5";
    if (absl::string_view(name) == sluice::kEnvGpuAllowGrowth) return "false";
    return std::nullopt;
  };
  std::vector<std::string> log;
  if (sluice::ApplyEnvironmentOverrides(&overridden, &log, env).ok()) {
    (void)sluice::ValidateRuntimeConfig(overridden);
    (void)sluice::PlanMachineDevices(overridden, *machine);
  }
  return 0;
}
