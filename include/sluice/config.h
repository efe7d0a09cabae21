// Runtime configuration: a RuntimeConfig (proto/config.proto, installed as
// sluice/proto/config.pb.h) says which GPUs a session may use, their memory
// limits and growth, logical CPUs, placement and thread counts. It is usually
// a text proto:
//
//   gpu_memory_limit { fraction: 0.5 }   # or { bytes: 4294967296 }
//   allow_growth: true
//   inter_op_threads: 4
//   optimization_level: BASIC            # or OPTIMIZATION_BASIC
//
//   SLUICE_ASSIGN_OR_RETURN(sluice::RuntimeConfig config,
//                           sluice::LoadRuntimeConfig("run.pbtxt"));
//   SLUICE_RETURN_IF_ERROR(sluice::ValidateRuntimeConfig(config));
//
// A config belongs to the session it is given to. Session::Create validates
// it and applies the environment variables below, which override it (and the
// session's log says so).
//
// Stateless functions; thread-safe.
#ifndef SLUICE_CONFIG_H_
#define SLUICE_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sluice/proto/config.pb.h"  // IWYU pragma: export

namespace sluice {

// Environment variables that override a config: "true" or "false" for
// growth, graphs and cuDNN, bytes ("4GiB", "512M") or a fraction ("0.5")
// for the limit.
inline constexpr char kEnvGpuAllowGrowth[] = "SLUICE_GPU_ALLOW_GROWTH";
inline constexpr char kEnvGpuMemoryLimit[] = "SLUICE_GPU_MEMORY_LIMIT";
inline constexpr char kEnvGpuGraphs[] = "SLUICE_GPU_GRAPHS";
inline constexpr char kEnvUseCudnn[] = "SLUICE_USE_CUDNN";

// Reads a text-format RuntimeConfig; an enum value may be written by its
// short name (NONE for OPTIMIZATION_NONE) in any case. Errors: NOT_FOUND for
// a missing file, INVALID_ARGUMENT for malformed text, as
// "PATH:LINE:COLUMN: message" for the first error (the parser stops there;
// an unknown enum name lists the accepted ones). Does not validate: call
// ValidateRuntimeConfig.
absl::StatusOr<RuntimeConfig> LoadRuntimeConfig(const std::string& path);
// The same for text already in memory; `source_name` prefixes error messages.
absl::StatusOr<RuntimeConfig> ParseRuntimeConfig(
    absl::string_view text, absl::string_view source_name = "<config>");

// Checks the values: memory fractions in (0, 1], byte limits > 0 (logical
// CPUs may use 0, meaning no budget), thread counts in [0, 4096], no GPU
// index listed twice, logical GPUs each with a limit that fits the GPU's
// own, a value its enum declares in every enum field, a parseable default
// device. The first
// problem found is returned as INVALID_ARGUMENT naming the field
// ("gpu[1].logical_devices[0].memory_limit: ...").
absl::Status ValidateRuntimeConfig(const RuntimeConfig& config);

}  // namespace sluice

#endif  // SLUICE_CONFIG_H_
