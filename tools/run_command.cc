// `sluice run MODEL [--input NAME=FILE.npy]... [--random-inputs [--seed N]]
// [--output-dir DIR] [--config CFG] [--device DEV] [--stats] [--trace FILE]
// [--timeout SECONDS]
// [--json]`: runs one step through the Session API, prints each output's
// name, dtype, shape and first values, and writes each output as
// DIR/NAME.npy (DIR defaults to ./sluice_out); with --trace, the step also
// goes to FILE as a Chrome trace (tools/trace.h).
//
// Random inputs: floats uniform in [-1, 1), integers uniform in [0, 10),
// bools fair coin flips, from a seeded generator whose sequence is the same
// on every platform. Unknown dimensions become 1 (with a note).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/npy.h"
#include "core/status_macros.h"
#include "device/gpu_device.h"
#include "executor/runtime_config.h"
#include "executor/session.h"
#include "core/byte_size.h"
#include "executor/step_stats.h"
#include "core/host_memory.h"
#include "nlohmann/json.hpp"
#include "onnx/importer.h"
#include "onnx/tensor_file.h"
#include "tools/cli_util.h"
#include "tools/feeds.h"
#include "tools/first_step_progress.h"
#include "tools/progress_line.h"
#include "tools/trace.h"
#include "tools/commands.h"

namespace sluice {
namespace {

using nlohmann::json;

constexpr int kValuesShown = 8;

template <typename T>
void AppendValues(const Tensor& t, int64_t n, json* values,
                  std::vector<std::string>* parts) {
  const T* data = t.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      values->push_back(data[i]);
      parts->push_back(data[i] ? "true" : "false");
    } else if constexpr (std::is_integral_v<T>) {
      values->push_back(static_cast<int64_t>(data[i]));
      parts->push_back(absl::StrCat(static_cast<int64_t>(data[i])));
    } else {
      const double v = static_cast<double>(data[i]);
      values->push_back(std::isfinite(v) ? json(v) : json(nullptr));
      parts->push_back(absl::StrFormat("%.6g", v));
    }
  }
}

// The first values of a host tensor, as JSON numbers (NaN/inf as null) and
// as text.
void FirstValues(const Tensor& t, json* values, std::string* text) {
  *values = json::array();
  std::vector<std::string> parts;
  const int64_t n = std::min<int64_t>(t.NumElements(), kValuesShown);
  SLUICE_SWITCH_DTYPE(t.dtype(), AppendValues<T>(t, n, values, &parts), {});
  *text = absl::StrCat("[", absl::StrJoin(parts, ", "),
                       t.NumElements() > n ? ", ..." : "", "]");
}

// A file name for an output: characters other than [A-Za-z0-9_.-] become _.
std::string FileNameFor(const std::string& output) {
  std::string name = output;
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!ok) c = '_';
  }
  if (name.empty() || name == "." || name == "..") name = "output";
  return name + ".npy";
}


}  // namespace

void AddRunOptions(CLI::App* app, RunOptions* options) {
  app->description(
      "Run one step of a model on this machine, print each output and "
      "write it as OUTPUT_DIR/NAME.npy.");
  app->add_option("MODEL", options->model_path,
                  "Model file (.pb, .pbtxt or .onnx)")
      ->required()
      ->check(RegularFile());
  app->add_option("--input", options->inputs,
                  "NAME=FILE.npy or NAME=FILE.pb: a value for graph input "
                  "NAME (repeatable); .pb: an ONNX TensorProto, for dtypes "
                  ".npy cannot hold (bfloat16, float8, 4-bit); FILE.npz "
                  "(np.savez): every array, each for the input of its "
                  "name");
  app->add_option("--input-rank", options->input_ranks,
                  "NAME=R: in a job of several processes (config `cluster`), "
                  "input NAME is read on rank R (from its --input) and "
                  "enters the graph there, not through rank 0 (repeatable)");
  CLI::Option* random = app->add_flag(
      "--random-inputs", options->random_inputs,
      "Make random values for every input not given with --input (floats "
      "in [-1,1), ints in [0,10); unknown dimensions become 1)");
  app->add_option("--seed", options->seed, "Seed for --random-inputs")
      ->check(Uint64())
      ->needs(random);
  app->add_option("--output-dir", options->output_dir,
                  "Where to write NAME.npy for each output (and NAME.pb, an "
                  "ONNX TensorProto, for a dtype .npy cannot hold: "
                  "bfloat16, float8, 4-bit)")
      ->capture_default_str()
      ->check(NonEmpty());
  app->add_flag("--stats", options->stats,
                "Print each device's memory statistics after the run, then "
                "give unused GPU memory back and say how much");
  app->add_option("--trace", options->trace_path,
                  "Write the step as a Chrome trace (JSON for chrome://tracing "
                  "or Perfetto); it is the session's first step, so it "
                  "includes one-time costs such as loading GPU kernels")
      ->check(NonEmpty());
  app->add_option("--timeout", options->timeout,
                  "Seconds the step may take (a decimal); past them it stops "
                  "before its next node with DEADLINE_EXCEEDED")
      ->check(FiniteAbove(0, 86400));
  AddDimOption(app, &options->dims);
  AddConfigFlags(app, kRunConfigFlags, &options->config);
  app->add_flag("--json", options->json, "Print JSON instead of text");
}

namespace {

// --input-rank NAME=R values, checked against the job's size.
absl::StatusOr<std::vector<std::pair<std::string, int>>> ParseInputRanks(
    const std::vector<std::string>& specs, int world_size) {
  std::vector<std::pair<std::string, int>> out;
  for (const std::string& spec : specs) {
    std::vector<std::string> parts = absl::StrSplit(spec, '=');
    int rank = 0;
    if (parts.size() != 2 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &rank) || rank < 1 ||
        rank >= world_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-rank '", spec, "': expected NAME=R with R a rank from 1 "
          "to ", world_size - 1, " of this job of ", world_size,
          " processes"));
    }
    out.emplace_back(parts[0], rank);
  }
  return out;
}

// The --input specs rank `rank` reads: NAME=FILE for the names `on_ranks`
// gives it (rank 0: every other, FILE.npz included).
std::vector<std::string> InputsOfRank(
    const std::vector<std::string>& specs,
    const std::vector<std::pair<std::string, int>>& on_ranks, int rank) {
  std::vector<std::string> out;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    int at = 0;
    for (const auto& [n, r] : on_ranks) {
      if (n == name) at = r;
    }
    if (at == rank) out.push_back(spec);
  }
  return out;
}

// "in use ..., peak ..." per GPU (CPU devices have no arena).
std::vector<std::string> DeviceStats(const Session& session, json* out) {
  std::vector<std::string> lines;
  *out = json::array();
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    AllocatorStats st = static_cast<GpuDevice*>(d)->allocator_stats();
    lines.push_back(absl::StrCat(d->name(), ": ", st.DebugString()));
    out->push_back({{"device", d->name()},
                    {"limit", st.limit},
                    {"bytes_in_use", st.bytes_in_use},
                    {"peak_bytes_in_use", st.peak_bytes_in_use},
                    {"bytes_reserved", st.bytes_reserved},
                    {"largest_free_block", st.largest_free_block}});
  }
  if (lines.empty()) lines.push_back("no GPU in this session: nothing to report");
  return lines;
}

}  // namespace

int RunRun(const RunOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> notes;
  absl::StatusOr<std::unique_ptr<Session>> session;
  {
    // On a terminal, where creation is (tools/progress_line.h).
    ProgressLine line = ProgressLine::ForStderr(!options.json);
    CreateOptions create;
    create.progress = line.CreationCallback();
    session = OpenSession(options.model_path, options.config, options.dims,
                          &notes, create);
  }
  if (!session.ok()) return FailCommand(session.status(), options.json, out, err);
  const Graph& graph = (*session)->graph();
  absl::StatusOr<std::vector<std::pair<std::string, int>>> on_ranks =
      ParseInputRanks(options.input_ranks, (*session)->world_size());
  if (!on_ranks.ok()) {
    return FailCommand(on_ranks.status(), options.json, out, err);
  }
  // A job of several processes (config `cluster`): the ranks other than 0
  // run their part of rank 0's step with the inputs --input-rank gives
  // them, and print nothing.
  const int rank = (*session)->rank();
  if (rank != 0) {
    Feeds mine;
    absl::Status s =
        MakeFeeds(graph, InputsOfRank(options.inputs, *on_ranks, rank),
                  /*random_inputs=*/false, 0, &mine, &notes,
                  EffectiveResourceLimits((*session)->config()));
    if (!s.ok()) return FailCommand(s, options.json, out, err);
    absl::Status served = (*session)->Serve(mine);
    if (!served.ok()) return FailCommand(served, options.json, out, err);
    return 0;
  }

  Feeds feeds;
  absl::Status s = MakeFeeds(graph, InputsOfRank(options.inputs, *on_ranks, 0),
                             options.random_inputs, options.seed, &feeds,
                             &notes,
                             EffectiveResourceLimits((*session)->config()));
  if (!s.ok()) return FailCommand(s, options.json, out, err);
  // Random values are not made here for inputs other ranks give.
  feeds.erase(std::remove_if(feeds.begin(), feeds.end(),
                             [&](const auto& feed) {
                               for (const auto& [n, r] : *on_ranks) {
                                 if (n == feed.first) return true;
                               }
                               return false;
                             }),
              feeds.end());

  const std::vector<std::string> names = (*session)->DefaultFetchNames();
  // Each output's file, checked before the step: two outputs whose names
  // map to one file name ("a/b" and "a_b") are an error naming both.
  std::vector<std::string> paths;
  std::map<std::string, std::string> output_of_file;
  for (const std::string& name : names) {
    const std::string file = FileNameFor(name);
    const std::string path =
        (std::filesystem::path(options.output_dir) / file).string();
    auto [it, inserted] = output_of_file.emplace(file, name);
    if (!inserted) {
      return FailCommand(
          absl::InvalidArgumentError(absl::StrCat(
              "outputs '", it->second, "' and '", name,
              "' would both be written to ", path,
              " (characters other than letters, digits, '_', '-' and '.' "
              "become '_'); rename one of them")),
          options.json, out, err);
    }
    if (absl::Status c = CheckOutputFile(path, "--output-dir"); !c.ok()) {
      return FailCommand(c, options.json, out, err);
    }
    paths.push_back(path);
  }
  if (!options.trace_path.empty()) {
    if (absl::Status c = CheckOutputFile(options.trace_path, "--trace");
        !c.ok()) {
      return FailCommand(c, options.json, out, err);
    }
  }
  // Host memory (--stats): the peak RSS up to here is session creation's
  // (and the feeds'); the first step's is measured from a reset peak.
  const HostMemoryUsage created = ReadHostMemoryUsage();
  const bool peak_reset = options.stats && ResetPeakHostMemory();
  StepStats step_stats;
  StepOptions step;
  step.feeds_on_ranks = *on_ranks;
  if (!options.trace_path.empty()) step.stats = &step_stats;
  if (options.timeout > 0) {
    step.deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(options.timeout));
  }
  absl::StatusOr<std::vector<Tensor>> outputs;
  {
    ProgressLine line = ProgressLine::ForStderr(!options.json);
    FirstStepProgress progress(&line);  // cuDNN's algorithm search, say
    outputs = (*session)->Run(feeds, names, step);
  }
  if (!outputs.ok()) {
    absl::Status status =
        WithFeedHint(outputs.status(), graph, feeds, options.random_inputs);
    return FailCommand(status, options.json, out, err);
  }

  std::error_code ec;
  std::filesystem::create_directories(options.output_dir, ec);
  if (ec) {
    return FailCommand(absl::PermissionDeniedError(
                    absl::StrCat("cannot create output directory '",
                                 options.output_dir, "': ", ec.message())),
                options.json, out, err);
  }
  json result = {{"ok", true}, {"model", options.model_path}};
  result["outputs"] = json::array();
  std::vector<std::string> lines;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const Tensor& t = (*outputs)[i];
    const std::string& path = paths[i];
    if (absl::Status w = WriteNpy(t, path); !w.ok()) {
      return FailCommand(w, options.json, out, err);
    }
    if (NpyWrittenType(t.dtype()) != t.dtype()) {
      // .npy widened it; NAME.pb beside it keeps the dtype, where this
      // build reads ONNX.
      std::string exact = path.substr(0, path.size() - 4) + ".pb";
      const bool wrote = OnnxImportAvailable();
      if (wrote) {
        if (absl::Status w = WriteOnnxTensorFile(t, names[i], exact); !w.ok()) {
          return FailCommand(w, options.json, out, err);
        }
      }
      notes.push_back(absl::StrCat(
          "output '", names[i], "' is ", DataTypeName(t.dtype()),
          ": written as ", DataTypeName(NpyWrittenType(t.dtype())),
          wrote ? absl::StrCat(", and exactly to ", exact) : ""));
    }
    json values;
    std::string text;
    FirstValues(t, &values, &text);
    result["outputs"].push_back({{"name", names[i]},
                                 {"dtype", DataTypeName(t.dtype())},
                                 {"shape", ShapeToJson(t.shape())},
                                 {"first_values", values},
                                 {"file", path}});
    lines.push_back(absl::StrCat(EscapeForTerminal(names[i]), ": ",
                                 DataTypeName(t.dtype()),
                                 t.shape().DebugString(), " ", text, "\n  -> ",
                                 EscapeForTerminal(path)));
  }
  if (!options.trace_path.empty()) {
    if (absl::Status t = WriteChromeTrace(step_stats, options.trace_path);
        !t.ok()) {
      return FailCommand(t, options.json, out, err);
    }
    result["trace"] = options.trace_path;
    lines.push_back(absl::StrCat("trace: ", options.trace_path, " (",
                                 absl::StrFormat("%.3f ms", step_stats.step_seconds * 1e3),
                                 " step; open in chrome://tracing or Perfetto)"));
  }
  if (options.stats && (*session)->world_size() > 1) {
    // Which rank ran how many nodes (the session's "cluster:" notes).
    result["cluster"] = json::array();
    for (const std::string& line : (*session)->log()) {
      if (line.rfind("cluster: ", 0) != 0) continue;
      result["cluster"].push_back(line);
      lines.push_back(line);
    }
  }
  if (options.stats) {
    const HostMemoryUsage stepped = ReadHostMemoryUsage();
    result["host_memory"] = {
        {"peak_rss_after_create_bytes", created.peak_rss_bytes},
        {"rss_after_create_bytes", created.rss_bytes},
        {"peak_rss_first_step_bytes",
         peak_reset ? stepped.peak_rss_bytes : int64_t{-1}},
        {"rss_after_first_step_bytes", stepped.rss_bytes}};
    std::string host = absl::StrCat(
        "host memory: peak RSS ", FormatBytes(created.peak_rss_bytes),
        " up to the end of session creation (",
        FormatBytes(created.rss_bytes), " resident then)");
    if (peak_reset) {
      absl::StrAppend(&host, ", peak ", FormatBytes(stepped.peak_rss_bytes),
                      " during the step");
    }
    lines.push_back(std::move(host));
    json stats;
    for (std::string& line : DeviceStats(**session, &stats)) {
      lines.push_back(absl::StrCat("memory ", line));
    }
    result["memory"] = stats;
    // Memory growth keeps what a step reserved; the session gives back what
    // holds no tensor once asked (Session::ReleaseUnusedMemory).
    const int64_t released = (*session)->ReleaseUnusedMemory();
    result["memory_released_bytes"] = released;
    json after;
    std::vector<std::string> after_lines = DeviceStats(**session, &after);
    result["memory_after_release"] = after;
    lines.push_back(absl::StrCat("memory released after the step: ",
                                 FormatBytes(released)));
    if (released > 0) {
      for (std::string& line : after_lines) {
        lines.push_back(absl::StrCat("memory ", line));
      }
    }
  }
  result["notes"] = notes;
  if (options.json) {
    out << DumpJson(result) << "\n";
    return kExitOk;
  }
  for (const std::string& note : notes) {
    err << "note: " << EscapeForTerminal(note) << "\n";
  }
  for (const std::string& line : lines) out << line << "\n";
  return kExitOk;
}

int RunMain(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  CLI::App app;
  app.name("sluice run");
  RunOptions options;
  AddRunOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunRun(options, out, err);
}

}  // namespace sluice
