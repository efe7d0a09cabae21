// `sluice bench MODEL [--input NAME=FILE.npy]... [--random-inputs [--seed N]]
// [--warmup N] [--runs N | --seconds S] [--timeout S] [--config CFG] [--device DEV]
// [--top N] [--trace FILE.json] [--json]`: times session creation, the first
// step, and then repeated steps, reporting latency min / p50 / p90 / p99 /
// max, throughput and each GPU's peak memory; then one profiled step gives
// the top ops and nodes by time (GPU nodes by their time on the stream) and
// the bytes copied per link, and with --trace is written as a Chrome trace
// (tools/trace.h). A progress line (creation's stages, then the runs) shows
// on a terminal and stays out of pipes and --json.
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/runtime_config.h"
#include "executor/session.h"
#include "reports/bench_report.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/feeds.h"
#include "tools/first_step_progress.h"
#include "tools/progress_line.h"
#include "tools/trace.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;


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
                  "NAME=FILE.npy or NAME=FILE.pb: a value for graph input "
                  "NAME (repeatable); .pb: an ONNX TensorProto, for dtypes "
                  ".npy cannot hold (bfloat16, float8, 4-bit); FILE.npz "
                  "(np.savez): every array, each for the input of its "
                  "name");
  CLI::Option* random = app->add_flag(
      "--random-inputs", options->random_inputs,
      "Random values for every input not given with --input");
  app->add_option("--seed", options->seed, "Seed for --random-inputs")
      ->check(Uint64())
      ->needs(random);
  app->add_option("--warmup", options->warmup, "Untimed steps after the first")
      ->check(IntegerIn(0, kMaxBenchRuns))
      ->capture_default_str();
  CLI::Option* runs = app->add_option(
      "--runs", options->runs, "Timed steps (default: as many as --seconds allows)");
  runs->check(IntegerIn(1, kMaxBenchRuns));
  app->add_option("--seconds", options->seconds,
                  "Time budget for the timed steps when --runs is not given "
                  "(at most a day, and at most 1,000,000 steps)")
      ->check(FiniteAbove(0, kMaxBenchSeconds))
      ->excludes(runs)
      ->capture_default_str();
  app->add_option("--timeout", options->timeout,
                  "Seconds each step may take (a decimal); a step past them "
                  "stops before its next node and bench fails with "
                  "DEADLINE_EXCEEDED")
      ->check(FiniteAbove(0, kMaxBenchSeconds));
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

namespace {

// BenchSession with `options`' settings: checks trace_path first and writes
// the trace after; a failed first step's error says to give the inputs when
// some were left out.
absl::StatusOr<BenchReport> BenchCommandSession(Session& session,
                                                const Feeds& feeds,
                                                const BenchOptions& options,
                                                double create_s,
                                                std::vector<std::string> notes) {
  if (!options.trace_path.empty()) {
    RETURN_IF_ERROR(CheckOutputFile(options.trace_path, "--trace"));
  }
  ProgressLine progress =
      ProgressLine::ForStderr(options.progress && !options.json);
  BenchSettings settings;
  settings.model_name = options.model_path;
  settings.warmup = options.warmup;
  settings.runs = options.runs;
  settings.seconds = options.seconds;
  settings.top = options.top;
  settings.io_device = options.io_device;
  settings.pinned = options.pinned;
  settings.step_timeout_s = options.timeout;
  settings.progress = [&progress](double done) { progress.Fraction(done); };
  std::unique_ptr<FirstStepProgress> first_step;
  settings.first_step_running = [&](bool running) {
    if (running) {
      first_step = std::make_unique<FirstStepProgress>(&progress);
    } else {
      first_step.reset();
    }
  };
  settings.first_step_error = [&](const absl::Status& status) {
    return WithFeedHint(status, session.graph(), feeds, options.random_inputs);
  };
  ASSIGN_OR_RETURN(BenchReport report, BenchSession(session, feeds, settings,
                                                    create_s, std::move(notes)));
  if (!options.trace_path.empty()) {
    RETURN_IF_ERROR(WriteChromeTrace(*report.profiled_step, options.trace_path));
  }
  return report;
}

}  // namespace

int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> notes;
  const Clock::time_point t0 = Clock::now();
  // Created with a progress line on a terminal: a large model's import
  // and passes take seconds.
  absl::StatusOr<std::unique_ptr<Session>> session;
  {
    ProgressLine line = ProgressLine::ForStderr(options.progress && !options.json);
    CreateOptions create;
    create.progress = line.CreationCallback();
    session = OpenSession(options.model_path, options.config, options.dims,
                          &notes, create);
  }
  if (!session.ok()) return FailCommand(session.status(), options.json, out, err);
  const double create_s =
      std::chrono::duration<double>(Clock::now() - t0).count();
  // A job of several processes (config `cluster`): rank 0 measures, the
  // others run their part of its steps.
  if ((*session)->rank() != 0) {
    absl::Status served = (*session)->Serve();
    if (!served.ok()) return FailCommand(served, options.json, out, err);
    return kExitOk;
  }

  Feeds feeds;
  absl::Status s = MakeFeeds((*session)->graph(), options.inputs,
                             options.random_inputs, options.seed, &feeds, &notes,
                             EffectiveResourceLimits((*session)->config()));
  if (!s.ok()) return FailCommand(s, options.json, out, err);
  absl::StatusOr<BenchReport> report =
      BenchCommandSession(**session, feeds, options, create_s, std::move(notes));
  if (!report.ok()) return FailCommand(report.status(), options.json, out, err);
  if (options.json) {
    out << DumpJson(BenchReportJson(*report)) << "\n";
    return kExitOk;
  }
  for (const std::string& note : report->notes) {
    err << "note: " << EscapeForTerminal(note) << "\n";
  }
  PrintBenchReport(*report, out);
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
