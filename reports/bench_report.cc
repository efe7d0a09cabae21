// The bench report (see bench_report.h).
#include "reports/bench_report.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/byte_size.h"
#include "core/escape.h"
#include "core/status_macros.h"
#include "device/gpu_device.h"

namespace sluice {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// `step` with its own deadline from now, when the settings give one.
StepOptions Limited(StepOptions step, const BenchSettings& settings) {
  if (settings.step_timeout_s > 0) {
    step.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(
                                           settings.step_timeout_s));
  }
  return step;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The q-quantile (0..1) of sorted values, nearest rank.
double Quantile(const std::vector<double>& sorted, double q) {
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string Ms(double seconds) { return absl::StrFormat("%.3f ms", seconds * 1e3); }

// Time per op and per node from the profiled step, largest first (at most
// `top` of each), and the bytes copied per link, into `report`.
void Summarize(StepStats& stats, size_t top, BenchReport* report) {
  absl::MutexLock lock(&stats.mu);
  std::map<std::string, double> ops;
  std::map<std::string, BenchReport::Link> links;
  std::vector<BenchReport::Entry> nodes;
  double total = 0;
  for (const NodeTiming& t : stats.nodes) {
    if (t.is_copy) {
      const std::string name =
          absl::StrCat(t.copy_source->name(), " -> ", t.device->name());
      BenchReport::Link& link = links[name];
      link.name = name;
      link.bytes += t.bytes;
      ++link.copies;
      link.seconds += t.seconds();
    }
    const std::string op = t.is_copy ? "(copy)" : t.node->op();
    ops[op] += t.seconds();
    nodes.push_back({absl::StrCat(t.is_copy ? "copy of " : "", t.node->name(),
                                  " (", op, ") on ", t.device->name()),
                     t.seconds()});
    total += t.seconds();
  }
  std::vector<BenchReport::Entry> by_op;
  for (const auto& [name, seconds] : ops) by_op.push_back({name, seconds});
  auto larger = [](const BenchReport::Entry& a, const BenchReport::Entry& b) {
    return a.seconds > b.seconds;
  };
  std::sort(by_op.begin(), by_op.end(), larger);
  std::sort(nodes.begin(), nodes.end(), larger);
  if (by_op.size() > top) by_op.resize(top);
  if (nodes.size() > top) nodes.resize(top);
  report->top_ops = std::move(by_op);
  report->top_nodes = std::move(nodes);
  report->profiled_node_s = total;
  for (const auto& [name, link] : links) report->links.push_back(link);
  std::sort(report->links.begin(), report->links.end(),
            [](const BenchReport::Link& a, const BenchReport::Link& b) {
              return a.bytes > b.bytes;
            });
}

// Entries with their share of `total`: as JSON ({key: name, "seconds",
// "share"}) and as text lines, the name padded to `width`.
json Entries(const std::vector<BenchReport::Entry>& entries, double total,
             const char* key, int width, std::vector<std::string>* lines) {
  json out = json::array();
  for (const BenchReport::Entry& e : entries) {
    const double share = total > 0 ? e.seconds / total : 0;
    out.push_back({{key, e.name}, {"seconds", e.seconds}, {"share", share}});
    if (lines != nullptr) {
      lines->push_back(absl::StrFormat("  %-*s %10.3f ms  %5.1f%%", width,
                                       EscapeForTerminal(e.name, 200),
                                       e.seconds * 1e3, share * 100));
    }
  }
  return out;
}

double Rate(const BenchReport::Link& link) {
  return link.seconds > 0 ? link.bytes / link.seconds : 0;
}

double StepsPerSecond(const BenchReport& r) {
  return static_cast<double>(r.latencies_s.size()) / r.timed_s;
}

}  // namespace

absl::StatusOr<BenchReport> BenchSession(Session& session, const Feeds& feeds,
                                         const BenchSettings& settings,
                                         double create_s,
                                         std::vector<std::string> notes) {
  // With io_device, the feeds live on that device from the start and the
  // results stay there: the steps copy nothing to or from the host.
  Feeds step_feeds = feeds;
  StepOptions step;
  if (!settings.io_device.empty()) {
    for (auto& [name, value] : step_feeds) {
      absl::StatusOr<Tensor> moved = session.CopyTo(value, settings.io_device);
      if (!moved.ok()) {
        return absl::Status(moved.status().code(),
                            absl::StrCat("--io-device: ", moved.status().message()));
      }
      value = *std::move(moved);
    }
    step.fetch_devices = {settings.io_device};
    notes.push_back(absl::StrCat("feeds and results stay on ",
                                 settings.io_device,
                                 " (--io-device): no step copies them to or "
                                 "from the host"));
  }
  // With pinned, the feeds are copied once into page-locked buffers (as a
  // caller that pins its buffers does) and results come back into
  // page-locked memory.
  if (settings.pinned) {
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
  BenchReport r;
  r.model_name = settings.model_name;
  r.session_create_s = create_s;
  r.warmup = settings.warmup;
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
  r.after_create = ReadHostMemoryUsage();
  r.first_step_peak_known = ResetPeakHostMemory();
  Clock::time_point start = Clock::now();
  if (settings.first_step_running) settings.first_step_running(true);
  absl::StatusOr<std::vector<Tensor>> first =
      session.Run(step_feeds, {}, Limited(step, settings));
  if (settings.first_step_running) settings.first_step_running(false);
  if (!first.ok()) {
    return settings.first_step_error ? settings.first_step_error(first.status())
                                     : first.status();
  }
  r.after_first_step = ReadHostMemoryUsage();
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    r.first_step_peak_bytes +=
        static_cast<GpuDevice*>(d)->allocator_stats().peak_bytes_in_use;
  }
  r.first_step_peak_bytes -= held_before;
  // The cuBLAS workspace each GPU set aside at start-up (in held_before):
  // the kernel-by-kernel step uses it, and a replayed graph holds a copy of
  // its own, so the graph's memory compares with the peak plus this.
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    r.cublas_workspace_bytes +=
        static_cast<int64_t>(static_cast<GpuDevice*>(d)->cublas_workspace_bytes());
  }
  r.first_run_s = Seconds(start, Clock::now());
  for (int i = 0; i < settings.warmup; ++i) {
    RETURN_IF_ERROR(session.Run(step_feeds, {}, Limited(step, settings)).status());
  }

  std::vector<double>& latencies = r.latencies_s;
  const int64_t waits_before = session.stats().gpu_kernel_host_waits;
  const Clock::time_point timed = Clock::now();
  while (true) {
    const double elapsed = Seconds(timed, Clock::now());
    if (settings.runs > 0 ? static_cast<int>(latencies.size()) >= settings.runs
                          : (elapsed >= settings.seconds && !latencies.empty())) {
      break;
    }
    if (latencies.size() >= static_cast<size_t>(kMaxBenchRuns)) {
      notes.push_back(absl::StrCat("stopped after ", FormatCount(kMaxBenchRuns),
                                   " timed steps (the most bench takes)"));
      break;
    }
    start = Clock::now();
    RETURN_IF_ERROR(session.Run(step_feeds, {}, Limited(step, settings)).status());
    latencies.push_back(Seconds(start, Clock::now()));
    if (settings.progress) {
      settings.progress(settings.runs > 0
                            ? static_cast<double>(latencies.size()) / settings.runs
                            : elapsed / settings.seconds);
    }
  }
  r.timed_s = Seconds(timed, Clock::now());
  r.session_stats = session.stats();
  r.gpu_kernel_host_waits_per_step =
      static_cast<double>(r.session_stats.gpu_kernel_host_waits - waits_before) /
      static_cast<double>(latencies.size());
  std::sort(latencies.begin(), latencies.end());

  // One more step, profiled node by node.
  r.profiled_step = std::make_shared<StepStats>();
  StepOptions profiled = step;
  profiled.stats = r.profiled_step.get();
  RETURN_IF_ERROR(session.Run(step_feeds, {}, Limited(profiled, settings)).status());
  r.profiled_step_s = r.profiled_step->step_seconds;
  Summarize(*r.profiled_step, static_cast<size_t>(settings.top), &r);
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    AllocatorStats st = static_cast<GpuDevice*>(d)->allocator_stats();
    r.peak_memory.push_back({d->name(), st.peak_bytes_in_use, st.limit});
  }
  r.notes = std::move(notes);
  return r;
}

json BenchReportJson(const BenchReport& r) {
  const std::vector<double>& sorted = r.latencies_s;
  const Session::Stats& s = r.session_stats;
  json result = {{"ok", true},
                 {"model", r.model_name},
                 {"session_create_s", r.session_create_s},
                 {"first_run_s", r.first_run_s},
                 {"runs", sorted.size()},
                 {"latency_s",
                  {{"min", sorted.front()},
                   {"p50", Quantile(sorted, 0.5)},
                   {"p90", Quantile(sorted, 0.9)},
                   {"p99", Quantile(sorted, 0.99)},
                   {"max", sorted.back()}}},
                 {"steps_per_s", StepsPerSecond(r)},
                 {"gpu_graph_steps", s.gpu_graph_steps},
                 {"gpu_graph_why_not", s.gpu_graph_why_not},
                 {"gpu_kernel_host_waits_per_step", r.gpu_kernel_host_waits_per_step},
                 {"host_copies",
                  {{"direct", s.host_copies_direct},
                   {"staged", s.host_copies_staged},
                   {"graph_direct_feeds", s.gpu_graph_direct_feeds},
                   {"graph_copied_feeds", s.gpu_graph_copied_feeds}}},
                 {"first_step_peak_bytes", r.first_step_peak_bytes},
                 {"cublas_workspace_bytes", r.cublas_workspace_bytes},
                 {"gpu_graph_bytes", s.plan_cache_bytes},
                 {"host_memory",
                  {{"peak_rss_after_create_bytes", r.after_create.peak_rss_bytes},
                   {"rss_after_create_bytes", r.after_create.rss_bytes},
                   {"peak_rss_first_step_bytes",
                    r.first_step_peak_known ? r.after_first_step.peak_rss_bytes
                                            : int64_t{-1}},
                   {"rss_after_first_step_bytes", r.after_first_step.rss_bytes}}}};
  json memory = json::array();
  for (const BenchReport::GpuMemory& m : r.peak_memory) {
    memory.push_back({{"device", m.device},
                      {"peak_bytes_in_use", m.peak_bytes_in_use},
                      {"limit", m.limit}});
  }
  result["peak_memory"] = memory;
  json links = json::array();
  for (const BenchReport::Link& link : r.links) {
    links.push_back({{"link", link.name}, {"bytes", link.bytes},
                     {"copies", link.copies}, {"seconds", link.seconds},
                     {"bytes_per_s", Rate(link)}});
  }
  result["profile"] = {
      {"step_seconds", r.profiled_step_s},
      {"top_ops", Entries(r.top_ops, r.profiled_node_s, "op", 16, nullptr)},
      {"top_nodes", Entries(r.top_nodes, r.profiled_node_s, "node", 40, nullptr)},
      {"links", links}};
  result["notes"] = r.notes;
  return result;
}

void PrintBenchReport(const BenchReport& r, std::ostream& out) {
  const std::vector<double>& sorted = r.latencies_s;
  const Session::Stats& s = r.session_stats;
  out << "model: " << EscapeForTerminal(r.model_name) << "\n"
      << "session creation: " << Ms(r.session_create_s) << "\n"
      << "first run: " << Ms(r.first_run_s) << "\n"
      << "host memory: peak RSS " << FormatBytes(r.after_create.peak_rss_bytes)
      << " up to the end of session creation ("
      << FormatBytes(r.after_create.rss_bytes) << " resident then)";
  if (r.first_step_peak_known) {
    out << ", peak " << FormatBytes(r.after_first_step.peak_rss_bytes)
        << " during the first step";
  }
  out << "\n"
      << "timed runs: " << sorted.size() << " in "
      << absl::StrFormat("%.2f s", r.timed_s) << "\n"
      << "latency: min " << Ms(sorted.front()) << ", p50 "
      << Ms(Quantile(sorted, 0.5)) << ", p90 " << Ms(Quantile(sorted, 0.9))
      << ", p99 " << Ms(Quantile(sorted, 0.99)) << ", max " << Ms(sorted.back())
      << "\n"
      << "throughput: " << absl::StrFormat("%.1f steps/s", StepsPerSecond(r))
      << "\n";
  if (s.gpu_graph_steps > 0) {
    out << "steps replayed as a CUDA graph: " << s.gpu_graph_steps << " of "
        << sorted.size() + r.warmup + 1 << "\n"
        << "GPU memory of the replayed graph: "
        << FormatBytes(s.plan_cache_bytes)
        << " (the first, kernel-by-kernel step's peak above the weights: "
        << FormatBytes(r.first_step_peak_bytes) << ", and the "
        << FormatBytes(r.cublas_workspace_bytes) << " cuBLAS workspace it uses)\n";
  }
  if (!s.gpu_graph_why_not.empty()) {
    out << "not replayed as a CUDA graph: " << s.gpu_graph_why_not << "\n";
  }
  if (r.gpu_kernel_host_waits_per_step > 0) {
    out << "waits for the GPU inside a step: "
        << absl::StrFormat("%.4g", r.gpu_kernel_host_waits_per_step)
        << " (kernels that read a count or a check back: NonZero, "
           "NonMaxSuppression, computed Gather indices, ...)\n";
  }
  if (s.host_copies_direct + s.host_copies_staged + s.gpu_graph_direct_feeds +
          s.gpu_graph_copied_feeds >
      0) {
    out << "host copies: " << s.host_copies_direct
        << " by one DMA from or into page-locked memory, "
        << s.host_copies_staged << " through staging; "
        << "replayed graphs read " << s.gpu_graph_direct_feeds
        << " feeds in place and copied " << s.gpu_graph_copied_feeds
        << " into their buffers\n";
  }
  if (!r.peak_memory.empty()) {
    out << "peak GPU memory:\n";
    for (const BenchReport::GpuMemory& m : r.peak_memory) {
      out << "  " << m.device << ": peak " << FormatBytes(m.peak_bytes_in_use)
          << " of " << FormatBytes(m.limit) << "\n";
    }
  }
  std::vector<std::string> op_lines, node_lines;
  Entries(r.top_ops, r.profiled_node_s, "op", 16, &op_lines);
  Entries(r.top_nodes, r.profiled_node_s, "node", 40, &node_lines);
  out << "profiled step: " << Ms(r.profiled_step_s)
      << " (kernel by kernel; GPU nodes: time on their stream)\ntop ops:\n";
  for (const std::string& line : op_lines) out << line << "\n";
  out << "top nodes:\n";
  for (const std::string& line : node_lines) out << line << "\n";
  out << "bytes copied per link:";
  if (r.links.empty()) out << " none (no copies between devices)";
  out << "\n";
  for (const BenchReport::Link& link : r.links) {
    out << absl::StrFormat("  %-24s %12s in %d cop%s, %10.3f ms (%s/s)",
                           link.name, FormatBytes(link.bytes), link.copies,
                           link.copies == 1 ? "y" : "ies", link.seconds * 1e3,
                           FormatBytes(static_cast<int64_t>(Rate(link))))
        << "\n";
  }
}

}  // namespace sluice
