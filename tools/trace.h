// Writing one profiled step (executor/step_stats.h) as a Chrome trace: the
// JSON that chrome://tracing and Perfetto (ui.perfetto.dev) open. Used by
// `sluice run --trace` and `sluice bench --trace`.
//
//   StepStats stats;
//   ASSIGN_OR_RETURN(auto out, session->RunWithStats(feeds, {}, &stats));
//   RETURN_IF_ERROR(WriteChromeTrace(stats, "step.json"));
//
// Layout: process "host" has a row per host thread (a slice per node it ran:
// the kernel for a CPU node, the launch for a GPU node; args.device tells
// logical CPUs apart); each GPU is a process
// ("/gpu:0") with a row per stream that did work ("compute",
// "host-to-device", "device-to-host", "device-to-device"), whose slices are
// the GPU's own timing. Every slice's args give the node, op, device, shapes
// and bytes (copies: from and to). Times are microseconds since the step
// started.
#ifndef SLUICE_TOOLS_TRACE_H_
#define SLUICE_TOOLS_TRACE_H_

#include <string>

#include "absl/status/status.h"
#include "executor/step_stats.h"
#include "nlohmann/json.hpp"

namespace sluice {

// The trace as JSON ({"traceEvents": [...], ...}).
nlohmann::json ChromeTrace(StepStats& stats);

// Writes ChromeTrace(stats) to `path`. Errors: PERMISSION_DENIED when the
// file cannot be opened, DATA_LOSS when writing fails.
absl::Status WriteChromeTrace(StepStats& stats, const std::string& path);

}  // namespace sluice

#endif  // SLUICE_TOOLS_TRACE_H_
