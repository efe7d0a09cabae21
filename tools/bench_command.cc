// `sluice bench MODEL [--input NAME=FILE.npy]... [--random-inputs [--seed N]]
// [--warmup N] [--runs N | --seconds S] [--timeout S] [--config CFG] [--device DEV]
// [--top N] [--trace FILE.json] [--json]`: times session creation, the first
// step, and then repeated steps, reporting latency min / p50 / p90 / p99 /
// max, throughput and each GPU's peak memory; then one profiled step gives
// the top ops and nodes by time (GPU nodes by their time on the stream) and
// the bytes copied per link, and with --trace is written as a Chrome trace
// (tools/trace.h). A progress bar shows on a terminal and stays out of pipes
// and --json.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/byte_size.h"
#include "core/host_memory.h"
#include "core/status_macros.h"
#include "device/gpu_device.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "nlohmann/json.hpp"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "executor/runtime_config.h"
#include "tools/feeds.h"
#include "tools/trace.h"

namespace sluice {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Bounds on the timed steps: --runs and --warmup at most kMaxTimedRuns,
// --seconds at most kMaxSeconds; with --seconds, timing stops after
// kMaxTimedRuns steps too, so the list of latencies stays bounded.
constexpr int kMaxTimedRuns = 1000000;
constexpr double kMaxSeconds = 86400;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The q-quantile (0..1) of sorted values, nearest rank.
double Quantile(const std::vector<double>& sorted, double q) {
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string Ms(double seconds) { return absl::StrFormat("%.3f ms", seconds * 1e3); }


class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  void Show(double fraction) {
    if (!enabled_) return;
    int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 30);
    std::fprintf(stderr, "\r[%-30s] %3d%%", std::string(filled, '#').c_str(),
                 static_cast<int>(fraction * 100));
    std::fflush(stderr);
  }
  ~Progress() {
    if (enabled_) std::fprintf(stderr, "\r%40s\r", "");
  }

 private:
  bool enabled_;
};

// Bytes moved over one link ("/cpu:0 -> /gpu:0") in a step.
struct LinkBytes {
  std::string name;
  int64_t bytes = 0;
  int copies = 0;
  double seconds = 0;  // summed transfer time (GPU-timed where a GPU moves it)
};

// Time per op and per node from one profiled step, largest first, and the
// bytes copied per link.
struct Profile {
  std::vector<std::pair<std::string, double>> ops;    // op -> seconds
  std::vector<std::pair<std::string, double>> nodes;  // "name (op) on dev"
  std::vector<LinkBytes> links;                          // by bytes
  double total = 0;                                   // sum of node times
};

Profile Summarize(StepStats& stats) {
  absl::MutexLock lock(&stats.mu);
  std::map<std::string, double> ops;
  std::map<std::string, LinkBytes> links;
  Profile p;
  for (const NodeTiming& t : stats.nodes) {
    if (t.is_copy) {
      const std::string name =
          absl::StrCat(t.copy_source->name(), " -> ", t.device->name());
      LinkBytes& link = links[name];
      link.name = name;
      link.bytes += t.bytes;
      ++link.copies;
      link.seconds += t.seconds();
    }
    const std::string op = t.is_copy ? "(copy)" : t.node->op();
    ops[op] += t.seconds();
    p.nodes.emplace_back(
        absl::StrCat(t.is_copy ? "copy of " : "", t.node->name(), " (", op,
                     ") on ", t.device->name()),
        t.seconds());
    p.total += t.seconds();
  }
  p.ops.assign(ops.begin(), ops.end());
  auto larger = [](const auto& a, const auto& b) { return a.second > b.second; };
  std::sort(p.ops.begin(), p.ops.end(), larger);
  std::sort(p.nodes.begin(), p.nodes.end(), larger);
  for (const auto& [name, link] : links) p.links.push_back(link);
  std::sort(p.links.begin(), p.links.end(),
            [](const LinkBytes& a, const LinkBytes& b) { return a.bytes > b.bytes; });
  return p;
}

// The first `top` of `entries` (name, seconds) with their share of `total`:
// as JSON ({key: name, "seconds", "share"}) and as text lines, the name
// padded to `width`.
json TopEntries(const std::vector<std::pair<std::string, double>>& entries,
                size_t top, double total, const char* key, int width,
                std::vector<std::string>* lines) {
  json out = json::array();
  for (size_t i = 0; i < entries.size() && i < top; ++i) {
    const auto& [name, secs] = entries[i];
    const double share = total > 0 ? secs / total : 0;
    out.push_back({{key, name}, {"seconds", secs}, {"share", share}});
    lines->push_back(absl::StrFormat("  %-*s %10.3f ms  %5.1f%%", width,
                                     EscapeForTerminal(name, 200),
                                     secs * 1e3, share * 100));
  }
  return out;
}

}  // namespace

void AddBenchOptions(CLI::App* app, BenchOptions* options) {
  app->description(
      "Time a model: session creation, the first step, then repeated steps "
      "(latency percentiles, throughput, peak GPU memory).");
  app->add_option("MODEL", options->model_path,
                  "Model file (.pb, .pbtxt or .onnx)")
      ->required()
      ->check(RegularFile());
  app->add_option("--input", options->inputs,
                  "NAME=FILE.npy: a value for graph input NAME (repeatable)");
  CLI::Option* random = app->add_flag(
      "--random-inputs", options->random_inputs,
      "Random values for every input not given with --input");
  app->add_option("--seed", options->seed, "Seed for --random-inputs")
      ->check(Uint64())
      ->needs(random);
  app->add_option("--warmup", options->warmup, "Untimed steps after the first")
      ->check(IntegerIn(0, kMaxTimedRuns))
      ->capture_default_str();
  CLI::Option* runs = app->add_option(
      "--runs", options->runs, "Timed steps (default: as many as --seconds allows)");
  runs->check(IntegerIn(1, kMaxTimedRuns));
  app->add_option("--seconds", options->seconds,
                  "Time budget for the timed steps when --runs is not given "
                  "(at most a day, and at most 1,000,000 steps)")
      ->check(FiniteAbove(0, kMaxSeconds))
      ->excludes(runs)
      ->capture_default_str();
  app->add_option("--timeout", options->timeout,
                  "Seconds each step may take (a decimal); a step past them "
                  "stops before its next node and bench fails with "
                  "DEADLINE_EXCEEDED")
      ->check(FiniteAbove(0, kMaxSeconds));
  app->add_option("--top", options->top, "How many ops and nodes to list")
      ->check(IntegerIn(1, 1000000))
      ->capture_default_str();
  app->add_option("--trace", options->trace_path,
                  "Write one profiled step as a Chrome trace (JSON)")
      ->check(NonEmpty());
  CLI::Option* io_device = app->add_option(
      "--io-device", options->io_device,
      "Keep feeds and results on this device (e.g. gpu:0): "
      "feeds are copied there once, before timing");
  io_device->check(NonEmpty());
  app->add_flag("--pinned", options->pinned,
                "Feed from page-locked host buffers and fetch into "
                "page-locked memory (copies by one DMA, no staging); "
                "ordinary memory on a session with no GPU")
      ->excludes(io_device);
  AddDimOption(app, &options->dims);
  AddConfigFlags(app, kBenchConfigFlags, &options->config);
  app->add_flag("--json", options->json, "Print JSON instead of text");
}

absl::StatusOr<BenchReport> BenchSession(Session& session, const Feeds& feeds,
                                         const BenchOptions& options,
                                         double create_s,
                                         std::vector<std::string> notes) {
  if (!options.trace_path.empty()) {
    RETURN_IF_ERROR(CheckOutputFile(options.trace_path, "--trace"));
  }
  // With --io-device, the feeds live on that device from the start and the
  // results stay there: the steps copy nothing to or from the host.
  Feeds step_feeds = feeds;
  StepOptions step;
  if (!options.io_device.empty()) {
    for (auto& [name, value] : step_feeds) {
      absl::StatusOr<Tensor> moved = session.CopyTo(value, options.io_device);
      if (!moved.ok()) {
        return absl::Status(moved.status().code(),
                            absl::StrCat("--io-device: ", moved.status().message()));
      }
      value = *std::move(moved);
    }
    step.fetch_devices = {options.io_device};
    notes.push_back(absl::StrCat("feeds and results stay on ",
                                 options.io_device,
                                 " (--io-device): no step copies them to or "
                                 "from the host"));
  }
  // With --pinned, the feeds are copied once into page-locked buffers
  // (as a caller that pins its buffers does) and results come back into
  // page-locked memory.
  if (options.pinned) {
    for (auto& [name, value] : step_feeds) {
      if (!value.on_host()) continue;
      absl::StatusOr<Tensor> pinned =
          session.AllocateHostTensor(value.dtype(), value.shape());
      if (!pinned.ok()) {
        return absl::Status(pinned.status().code(),
                            absl::StrCat("--pinned: input '", name, "': ",
                                         pinned.status().message()));
      }
      if (value.bytes() > 0) {
        std::memcpy(pinned->raw_data(), value.raw_data(), value.bytes());
      }
      value = *std::move(pinned);
    }
    step.pinned_host_fetches = true;
    bool has_gpu = false;
    for (Device* d : session.devices()) {
      has_gpu = has_gpu || d->type() == DeviceType::kGpu;
    }
    notes.push_back(has_gpu
                        ? "feeds from and results into page-locked host "
                          "memory (--pinned): host copies go by one DMA, "
                          "with no staging copy"
                        : "--pinned: the session has no GPU, so feeds and "
                          "results are ordinary host memory");
  }
  // The first step runs kernel by kernel: its peak above what the session
  // already holds (weights) is the live set a replayed graph is held to.
  int64_t held_before = 0;
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    auto* gpu = static_cast<GpuDevice*>(d);
    if (gpu->arena() != nullptr) gpu->arena()->ResetPeak();
    held_before += gpu->allocator_stats().bytes_in_use;
  }
  // Host memory: the process's peak RSS so far (session creation, for the
  // CLI, which has done little else), then the first step's alone.
  const HostMemoryUsage created = ReadHostMemoryUsage();
  const bool peak_reset = ResetPeakHostMemory();
  // Each step with its own deadline (--timeout).
  auto limited = [&options](StepOptions o) {
    if (options.timeout > 0) {
      o.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.timeout));
    }
    return o;
  };
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<Tensor>> first =
      session.Run(step_feeds, {}, limited(step));
  if (!first.ok()) {
    return WithFeedHint(first.status(), session.graph(), feeds,
                        options.random_inputs);
  }
  const HostMemoryUsage stepped = ReadHostMemoryUsage();
  int64_t first_step_peak = 0;
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    first_step_peak += static_cast<GpuDevice*>(d)->allocator_stats().peak_bytes_in_use;
  }
  first_step_peak -= held_before;
  // The cuBLAS workspace each GPU set aside at start-up (in held_before):
  // the kernel-by-kernel step uses it, and a replayed graph holds a copy of
  // its own, so the graph's memory compares with the peak plus this.
  int64_t step_workspace = 0;
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    step_workspace +=
        static_cast<int64_t>(static_cast<GpuDevice*>(d)->cublas_workspace_bytes());
  }
  const double first_s = Seconds(start, Clock::now());
  for (int i = 0; i < options.warmup; ++i) {
    RETURN_IF_ERROR(session.Run(step_feeds, {}, limited(step)).status());
  }

  Progress progress(options.progress && !options.json && isatty(STDERR_FILENO));
  std::vector<double> latencies;
  const Clock::time_point timed = Clock::now();
  while (true) {
    const double elapsed = Seconds(timed, Clock::now());
    if (options.runs > 0 ? static_cast<int>(latencies.size()) >= options.runs
                         : (elapsed >= options.seconds && !latencies.empty())) {
      break;
    }
    if (latencies.size() >= static_cast<size_t>(kMaxTimedRuns)) {
      notes.push_back(absl::StrCat("stopped after ", FormatCount(kMaxTimedRuns),
                                   " timed steps (the most bench takes)"));
      break;
    }
    start = Clock::now();
    RETURN_IF_ERROR(session.Run(step_feeds, {}, limited(step)).status());
    latencies.push_back(Seconds(start, Clock::now()));
    progress.Show(options.runs > 0
                      ? static_cast<double>(latencies.size()) / options.runs
                      : elapsed / options.seconds);
  }
  const double total = Seconds(timed, Clock::now());
  const Session::Stats session_stats = session.stats();
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());

  // One more step, profiled node by node.
  StepStats stats;
  StepOptions profiled = step;
  profiled.stats = &stats;
  RETURN_IF_ERROR(session.Run(step_feeds, {}, limited(profiled)).status());
  if (!options.trace_path.empty()) {
    RETURN_IF_ERROR(WriteChromeTrace(stats, options.trace_path));
  }
  const Profile profile = Summarize(stats);
  const size_t top = static_cast<size_t>(options.top);

  json result = {{"ok", true},
                 {"model", options.model_path},
                 {"session_create_s", create_s},
                 {"first_run_s", first_s},
                 {"runs", latencies.size()},
                 {"latency_s",
                  {{"min", sorted.front()},
                   {"p50", Quantile(sorted, 0.5)},
                   {"p90", Quantile(sorted, 0.9)},
                   {"p99", Quantile(sorted, 0.99)},
                   {"max", sorted.back()}}},
                 {"steps_per_s", static_cast<double>(latencies.size()) / total},
                 {"gpu_graph_steps", session_stats.gpu_graph_steps},
                 {"host_copies",
                  {{"direct", session_stats.host_copies_direct},
                   {"staged", session_stats.host_copies_staged},
                   {"graph_direct_feeds", session_stats.gpu_graph_direct_feeds},
                   {"graph_copied_feeds", session_stats.gpu_graph_copied_feeds}}},
                 {"first_step_peak_bytes", first_step_peak},
                 {"cublas_workspace_bytes", step_workspace},
                 {"gpu_graph_bytes", session_stats.plan_cache_bytes},
                 {"host_memory",
                  {{"peak_rss_after_create_bytes", created.peak_rss_bytes},
                   {"rss_after_create_bytes", created.rss_bytes},
                   {"peak_rss_first_step_bytes",
                    peak_reset ? stepped.peak_rss_bytes : int64_t{-1}},
                   {"rss_after_first_step_bytes", stepped.rss_bytes}}}};
  json memory = json::array();
  std::vector<std::string> memory_lines;
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    AllocatorStats st = static_cast<GpuDevice*>(d)->allocator_stats();
    memory.push_back({{"device", d->name()}, {"peak_bytes_in_use", st.peak_bytes_in_use},
                      {"limit", st.limit}});
    memory_lines.push_back(absl::StrCat("  ", d->name(), ": peak ",
                                        FormatBytes(st.peak_bytes_in_use), " of ",
                                        FormatBytes(st.limit)));
  }
  result["peak_memory"] = memory;
  std::vector<std::string> op_lines, node_lines;
  const json ops = TopEntries(profile.ops, top, profile.total, "op", 16, &op_lines);
  const json nodes =
      TopEntries(profile.nodes, top, profile.total, "node", 40, &node_lines);
  json links = json::array();
  std::vector<std::string> link_lines;
  for (const LinkBytes& link : profile.links) {
    const double rate = link.seconds > 0 ? link.bytes / link.seconds : 0;
    links.push_back({{"link", link.name}, {"bytes", link.bytes},
                     {"copies", link.copies}, {"seconds", link.seconds},
                     {"bytes_per_s", rate}});
    link_lines.push_back(absl::StrFormat(
        "  %-24s %12s in %d cop%s, %10.3f ms (%s/s)", link.name,
        FormatBytes(link.bytes), link.copies, link.copies == 1 ? "y" : "ies",
        link.seconds * 1e3, FormatBytes(static_cast<int64_t>(rate))));
  }
  result["profile"] = {{"step_seconds", stats.step_seconds},
                       {"top_ops", ops},
                       {"top_nodes", nodes},
                       {"links", links}};
  result["notes"] = notes;

  std::ostringstream out;
  out << "model: " << EscapeForTerminal(options.model_path) << "\n"
      << "session creation: " << Ms(create_s) << "\n"
      << "first run: " << Ms(first_s) << "\n"
      << "host memory: peak RSS " << FormatBytes(created.peak_rss_bytes)
      << " up to the end of session creation (" << FormatBytes(created.rss_bytes)
      << " resident then)";
  if (peak_reset) {
    out << ", peak " << FormatBytes(stepped.peak_rss_bytes)
        << " during the first step";
  }
  out << "\n"
      << "timed runs: " << latencies.size() << " in "
      << absl::StrFormat("%.2f s", total) << "\n"
      << "latency: min " << Ms(sorted.front()) << ", p50 "
      << Ms(Quantile(sorted, 0.5)) << ", p90 " << Ms(Quantile(sorted, 0.9))
      << ", p99 " << Ms(Quantile(sorted, 0.99)) << ", max " << Ms(sorted.back())
      << "\n"
      << "throughput: "
      << absl::StrFormat("%.1f steps/s", latencies.size() / total) << "\n";
  if (session_stats.gpu_graph_steps > 0) {
    out << "steps replayed as a CUDA graph: " << session_stats.gpu_graph_steps
        << " of " << latencies.size() + options.warmup + 1 << "\n"
        << "GPU memory of the replayed graph: "
        << FormatBytes(session_stats.plan_cache_bytes)
        << " (the first, kernel-by-kernel step's peak above the weights: "
        << FormatBytes(first_step_peak) << ", and the "
        << FormatBytes(step_workspace) << " cuBLAS workspace it uses)\n";
  }
  if (session_stats.host_copies_direct + session_stats.host_copies_staged +
          session_stats.gpu_graph_direct_feeds +
          session_stats.gpu_graph_copied_feeds >
      0) {
    out << "host copies: " << session_stats.host_copies_direct
        << " by one DMA from or into page-locked memory, "
        << session_stats.host_copies_staged << " through staging; "
        << "replayed graphs read " << session_stats.gpu_graph_direct_feeds
        << " feeds in place and copied " << session_stats.gpu_graph_copied_feeds
        << " into their buffers\n";
  }
  if (!memory_lines.empty()) {
    out << "peak GPU memory:\n";
    for (const std::string& line : memory_lines) out << line << "\n";
  }
  out << "profiled step: " << Ms(stats.step_seconds)
      << " (kernel by kernel; GPU nodes: time on their stream)\ntop ops:\n";
  for (const std::string& line : op_lines) out << line << "\n";
  out << "top nodes:\n";
  for (const std::string& line : node_lines) out << line << "\n";
  out << "bytes copied per link:";
  if (link_lines.empty()) out << " none (no copies between devices)";
  out << "\n";
  for (const std::string& line : link_lines) out << line << "\n";
  return BenchReport{DumpJson(result), out.str(), std::move(notes)};
}

int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> notes;
  const Clock::time_point t0 = Clock::now();
  absl::StatusOr<std::unique_ptr<Session>> session = OpenSession(
      options.model_path, options.config, options.dims, &notes);
  if (!session.ok()) return FailCommand(session.status(), options.json, out, err);
  const double create_s = Seconds(t0, Clock::now());

  Feeds feeds;
  absl::Status s = MakeFeeds((*session)->graph(), options.inputs,
                             options.random_inputs, options.seed, &feeds, &notes,
                             EffectiveResourceLimits((*session)->config()));
  if (!s.ok()) return FailCommand(s, options.json, out, err);
  absl::StatusOr<BenchReport> report =
      BenchSession(**session, feeds, options, create_s, std::move(notes));
  if (!report.ok()) return FailCommand(report.status(), options.json, out, err);
  if (options.json) {
    out << report->json << "\n";
    return kExitOk;
  }
  for (const std::string& note : report->notes) {
    err << "note: " << EscapeForTerminal(note) << "\n";
  }
  out << report->text;
  return kExitOk;
}

int BenchMain(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  CLI::App app;
  app.name("sluice bench");
  BenchOptions options;
  AddBenchOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunBench(options, out, err);
}

}  // namespace sluice
