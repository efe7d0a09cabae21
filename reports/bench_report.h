// The bench report: what `sluice bench` measures on a session already made
// (session creation, the first step, latency percentiles and throughput
// over timed steps, host and GPU memory, CUDA graph replay and host-copy
// counts) and, from one more step profiled node by node, the top ops and
// nodes by time and the bytes copied per link. `sluice bench` prints it;
// Python's Session.bench() returns it as a dict.
//
//   BenchSettings settings;
//   settings.model_name = "model.onnx";
//   settings.runs = 100;
//   ASSIGN_OR_RETURN(BenchReport report,
//                    BenchSession(*session, feeds, settings, create_s, notes));
//   PrintBenchReport(report, std::cout);           // the text
//   nlohmann::json j = BenchReportJson(report);     // `--json`
//   RETURN_IF_ERROR(WriteChromeTrace(*report.profiled_step, "step.json"));
//
// BenchSession runs steps on the session (Session::Run is thread-safe); the
// functions over a report are stateless.
#ifndef SLUICE_REPORTS_BENCH_REPORT_H_
#define SLUICE_REPORTS_BENCH_REPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/host_memory.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "nlohmann/json.hpp"

namespace sluice {

// Timed steps: at most kMaxBenchRuns (also with `seconds`, so the list of
// latencies stays bounded), for at most kMaxBenchSeconds.
inline constexpr int kMaxBenchRuns = 1000000;
inline constexpr double kMaxBenchSeconds = 86400;

struct BenchSettings {
  std::string model_name;  // the model's name in the report
  int warmup = 3;          // untimed steps after the first
  int runs = 0;            // timed steps; 0: as many as `seconds` allows
  double seconds = 2.0;
  int top = 10;            // ops and nodes listed
  // Feeds are copied to this device ("gpu:0") once, before any step, and
  // results stay there, so no step copies to or from the host. "": the host.
  std::string io_device;
  // Feeds from page-locked host buffers made once, results into page-locked
  // memory (StepOptions::pinned_host_fetches). Excludes io_device.
  bool pinned = false;
  // Each step's own deadline, in seconds from its start (StepOptions::
  // deadline; `--timeout`); 0: none.
  double step_timeout_s = 0;
  // Called with the fraction done after each timed step (a progress bar);
  // may be empty.
  std::function<void(double)> progress;
  // Called with true just before the first step and false just after (a
  // progress line while it runs); may be empty.
  std::function<void(bool running)> first_step_running;
  // Makes the error reported when the first step fails from that step's
  // error (the CLI adds a hint to give the inputs); may be empty.
  std::function<absl::Status(const absl::Status&)> first_step_error;
};

struct BenchReport {
  std::string model_name;
  double session_create_s = 0;
  double first_run_s = 0;
  int warmup = 0;
  std::vector<double> latencies_s;  // the timed steps', sorted
  double timed_s = 0;               // wall time of the timed steps
  Session::Stats session_stats;     // after the timed steps
  // Waits for the GPU inside kernels (Session::Stats::
  // gpu_kernel_host_waits) per timed step.
  double gpu_kernel_host_waits_per_step = 0;
  // The first (kernel-by-kernel) step's GPU peak above what the session
  // held before it, and the cuBLAS workspace the GPUs set aside.
  int64_t first_step_peak_bytes = 0;
  int64_t cublas_workspace_bytes = 0;
  HostMemoryUsage after_create;      // up to the end of session creation
  HostMemoryUsage after_first_step;  // peak: the first step's alone...
  bool first_step_peak_known = false;  // ...when the peak could be reset
  struct GpuMemory {
    std::string device;
    int64_t peak_bytes_in_use = 0;
    int64_t limit = 0;
  };
  std::vector<GpuMemory> peak_memory;  // per GPU of the session
  // The profiled step.
  struct Entry {
    std::string name;  // an op, or "name (op) on device" for a node
    double seconds = 0;
  };
  struct Link {
    std::string name;  // "/cpu:0 -> /gpu:0"
    int64_t bytes = 0;
    int copies = 0;
    double seconds = 0;  // summed transfer time
  };
  double profiled_step_s = 0;
  double profiled_node_s = 0;  // the sum of node times (the shares' whole)
  std::vector<Entry> top_ops;    // largest first, at most `top`
  std::vector<Entry> top_nodes;  // largest first, at most `top`
  std::vector<Link> links;       // by bytes, largest first
  std::vector<std::string> notes;
  // The profiled step's timings, for a Chrome trace (tools/trace.h).
  std::shared_ptr<StepStats> profiled_step;
};

// Runs the first step, `warmup` more, the timed steps and one profiled
// step on `session` with `feeds` (creation took `create_s`). `notes` start
// the report's notes. Errors: the first failed step's (through
// first_step_error for the first), or the io_device / pinned copies'.
absl::StatusOr<BenchReport> BenchSession(Session& session, const Feeds& feeds,
                                         const BenchSettings& settings,
                                         double create_s,
                                         std::vector<std::string> notes = {});

// {"ok", "model", "session_create_s", "first_run_s", "runs", "latency_s"
// {min, p50, p90, p99, max}, "steps_per_s", "gpu_graph_steps",
// "host_copies", "first_step_peak_bytes", "cublas_workspace_bytes",
// "gpu_graph_bytes", "host_memory", "peak_memory", "profile", "notes"}.
nlohmann::json BenchReportJson(const BenchReport& report);

// The text `sluice bench` prints (the notes go elsewhere: to stderr).
void PrintBenchReport(const BenchReport& report, std::ostream& out);

}  // namespace sluice

#endif  // SLUICE_REPORTS_BENCH_REPORT_H_
