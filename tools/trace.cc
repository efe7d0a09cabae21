#include "tools/trace.h"

#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

using nlohmann::json;

constexpr int kHostPid = 1;

json Meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid},
          {"args", {{"name", name}}}};
}

json Slice(const NodeTiming& t, int pid, int tid, double start, double end,
           const json& args) {
  const std::string op = t.is_copy ? "copy" : t.node->op();
  return {{"ph", "X"},
          {"name", t.is_copy ? absl::StrCat("copy ", t.node->name())
                             : t.node->name()},
          {"cat", op}, {"pid", pid}, {"tid", tid},
          {"ts", start * 1e6}, {"dur", (end - start) * 1e6}, {"args", args}};
}

}  // namespace

json ChromeTrace(StepStats& stats) {
  absl::MutexLock lock(&stats.mu);
  json events = json::array();
  // Rows, numbered in order of first appearance.
  std::map<size_t, int> threads;                        // host thread -> tid
  std::map<std::string, int> gpu_pids;                  // GPU -> pid
  std::set<std::pair<std::string, GpuStream>> streams;  // tid: the stream
  for (const NodeTiming& t : stats.nodes) {
    threads.emplace(t.thread, static_cast<int>(threads.size()));
    if (t.gpu_timed) {
      gpu_pids.emplace(t.gpu->name(), 2 + static_cast<int>(gpu_pids.size()));
      streams.emplace(t.gpu->name(), t.stream);
    }
  }
  events.push_back(Meta("process_name", kHostPid, 0, "host"));
  for (const auto& [thread, tid] : threads) {
    events.push_back(Meta("thread_name", kHostPid, tid,
                          absl::StrCat("host thread ", tid)));
  }
  for (const auto& [gpu, pid] : gpu_pids) {
    events.push_back(Meta("process_name", pid, 0, gpu));
  }
  for (const auto& [gpu, stream] : streams) {
    events.push_back(Meta("thread_name", gpu_pids[gpu], static_cast<int>(stream),
                          GpuStreamName(stream)));
  }
  for (const NodeTiming& t : stats.nodes) {
    json args = {{"node", t.node->name()},
                 {"op", t.is_copy ? "copy" : t.node->op()},
                 {"device", t.device->name()},
                 {"shapes", t.shapes},
                 {"bytes", t.bytes}};
    if (t.is_copy) {
      args["from"] = t.copy_source->name();
      args["to"] = t.device->name();
    }
    json host_args = args;
    if (t.gpu_timed) host_args["slice"] = "launch";
    events.push_back(Slice(t, kHostPid, threads[t.thread], t.start_seconds,
                           t.end_seconds, host_args));
    if (t.gpu_timed) {
      args["stream"] = GpuStreamName(t.stream);
      events.push_back(Slice(t, gpu_pids[t.gpu->name()], static_cast<int>(t.stream),
                             t.gpu_start_seconds, t.gpu_end_seconds, args));
    }
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"step_us", stats.step_seconds * 1e6},
            {"gpu_alignment_error_us", stats.gpu_alignment_error_seconds * 1e6}}}};
}

absl::Status WriteChromeTrace(StepStats& stats, const std::string& path) {
  const json trace = ChromeTrace(stats);
  std::ofstream file(path);
  if (!file) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write trace '", path, "'"));
  }
  file << trace.dump();
  file.close();
  return file.good()
             ? absl::OkStatus()
             : absl::DataLossError(absl::StrCat("writing '", path, "' failed"));
}

}  // namespace sluice
