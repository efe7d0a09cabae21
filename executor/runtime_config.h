// Runtime configuration: loading a RuntimeConfig text proto (--config CFG)
// and checking it (public: sluice/config.h), and applying the environment
// variables that override it.
//
//   ASSIGN_OR_RETURN(RuntimeConfig config, LoadRuntimeConfig("run.pbtxt"));
//   std::vector<std::string> log;
//   RETURN_IF_ERROR(ApplyEnvironmentOverrides(&config, &log));
//   RETURN_IF_ERROR(ValidateRuntimeConfig(config));
//
// Stateless functions; thread-safe (ApplyEnvironmentOverrides reads the
// process environment, which must not be modified concurrently).
#ifndef SLUICE_EXECUTOR_RUNTIME_CONFIG_H_
#define SLUICE_EXECUTOR_RUNTIME_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/byte_size.h"
#include "core/resource_limits.h"
#include "proto/config.pb.h"
#include "sluice/config.h"  // IWYU pragma: export

namespace sluice {

// Plans a session caches when the config leaves plan_cache_max_plans 0.
inline constexpr int kDefaultPlanCachePlans = 64;

// kEnvGpuAllowGrowth, kEnvGpuMemoryLimit, kEnvGpuGraphs, kEnvUseCudnn, LoadRuntimeConfig,
// ParseRuntimeConfig and ValidateRuntimeConfig: sluice/config.h.

// Applies SLUICE_GPU_ALLOW_GROWTH (true|false), SLUICE_GPU_GRAPHS
// (true|false), SLUICE_USE_CUDNN (true|false) and SLUICE_GPU_MEMORY_LIMIT
// (bytes such as "4GiB" or "512M", or a fraction such as "0.5") to `config`.
// A variable for one field reads its value as SetFieldFromText does
// (executor/config_fields.h), so one for an enum field takes its short
// names.
// The memory limit replaces gpu_memory_limit and clears per-GPU limits, so
// the environment wins everywhere. Appends one line per change to `log`
// (may be null). A variable that is set to anything else (including the empty
// string) is INVALID_ARGUMENT naming the variable, and `config` is unchanged.
absl::Status ApplyEnvironmentOverrides(RuntimeConfig* config,
                                       std::vector<std::string>* log);
// The same with the environment read through `getenv` (for tests).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
absl::Status ApplyEnvironmentOverrides(RuntimeConfig* config,
                                       std::vector<std::string>* log,
                                       const EnvLookup& getenv);

// A memory limit as written on the command line or in the environment: a
// number with a decimal point and no unit is a fraction in (0, 1] ("0.5",
// "1.0"); anything else is a byte size for ParseByteSize.
absl::StatusOr<MemoryLimit> ParseMemoryLimit(absl::string_view text);

// "4.0 GiB" or "50% of the card"; "none" when unset.
std::string DescribeMemoryLimit(const MemoryLimit& limit);

// The limit in force for physical GPU `gpu_index`: its GpuConfig's limit if
// set, else gpu_memory_limit. A MemoryLimit with no value means the whole
// card.
MemoryLimit EffectiveGpuMemoryLimit(const RuntimeConfig& config,
                                    int gpu_index);
// Bytes allowed by `limit` on a device of `total_bytes` (the whole device
// when the limit is unset; a fraction rounds down). Never more than
// total_bytes when total_bytes > 0.
int64_t ResolveMemoryLimit(const MemoryLimit& limit, int64_t total_bytes);

// EffectiveResourceLimits(config): core/resource_limits.h.

// `overlay` laid over `base`, as a session's config over the process
// defaults (Python's sluice.config): every field `overlay` sets replaces
// base's, and a singular message merges field by field (a MemoryLimit takes
// the overlay's bytes or fraction), except `gpu`, merged entry by entry by
// `index` (an overlay entry's memory_limit and, when it lists any, its
// logical_devices replace the base entry's). Other repeated fields
// (visible_gpus, logical_cpus) are replaced whole when `overlay` lists any.
RuntimeConfig MergeRuntimeConfig(const RuntimeConfig& base,
                                 const RuntimeConfig& overlay);
// RuntimeConfigText(config): ConfigText (executor/config_fields.h), the text
// a config file holds.

// One line per deprecated field `config` sets, saying what replaced it
// ("config: max_folded_constant_bytes is deprecated; ..."), appended to
// `log`. The session and the command line show them with their notes.
void NoteDeprecatedFields(const RuntimeConfig& config,
                          std::vector<std::string>* log);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_RUNTIME_CONFIG_H_
