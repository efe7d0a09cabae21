// `sluice place`: placement without running (tools/place_command.h); the
// report itself is reports/placement_report.h.
#include "tools/place_command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/graph.h"
#include "model/model_loader.h"
#include "placer/baechi.h"
#include "reports/placement_report.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

extern char** environ;

namespace sluice {
namespace {

// Runs `dot -Tsvg dot_path -o svg_path` when dot is on the PATH. Returns a
// note for the user.
std::string WriteSvg(const std::string& dot_path) {
  std::string svg = dot_path;
  if (absl::EndsWith(svg, ".dot") || absl::EndsWith(svg, ".gv")) {
    svg = svg.substr(0, svg.rfind('.'));
  }
  svg += ".svg";
  std::vector<std::string> args = {"dot", "-Tsvg", dot_path, "-o", svg};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ) != 0) {
    return "Graphviz 'dot' is not on the PATH; no SVG written";
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::StrCat("dot failed to write ", svg);
  }
  return absl::StrCat("wrote ", svg);
}

// Places and prints; a failed placement is an error status.
absl::Status Place(const PlaceOptions& o, std::ostream& out) {
  std::vector<std::string> notes;
  if (!o.dot_path.empty()) RETURN_IF_ERROR(CheckOutputFile(o.dot_path, "--dot"));
  ASSIGN_OR_RETURN(RuntimeConfig config,
                   LoadEffectiveConfig(o.config.config_path, &notes));
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> loaded,
                   LoadModelGraph(o.model_path));
  // The graph a session would run: after the config's passes, the config
  // as the flags change it.
  RETURN_IF_ERROR(ApplyConfigFlags(o.config, &config));
  PlacementRequest request;
  request.model_name = o.model_path;
  request.devices = o.devices;
  request.batch = o.batch;
  request.explain = o.explain;
  request.record_reasons = !o.dot_path.empty();
  request.pipeline_stages = !o.no_stages;
  if (!o.baseline.empty()) request.baseline = ParseBaechiAlgorithm(o.baseline);
  ASSIGN_OR_RETURN(PlacementReport report,
                   PlaceForReport(request, config, std::move(loaded),
                                  std::move(notes)));
  if (!o.dot_path.empty()) {
    std::ofstream file(o.dot_path);
    file << PlacementDot(report);
    if (!file) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write ", o.dot_path));
    }
    file.close();
    report.notes.push_back(absl::StrCat("wrote ", o.dot_path));
    report.notes.push_back(WriteSvg(o.dot_path));
  }
  if (o.json) {
    out << DumpJson(PlacementReportJson(report)) << "\n";
  } else {
    PrintPlacementReport(report, out);
  }
  return absl::OkStatus();
}

}  // namespace

void AddPlaceOptions(CLI::App* app, PlaceOptions* options) {
  app->description(
      "Place a model on devices without running it: each node's device, "
      "per device weights / peak activations / budget, the estimated step "
      "time and the bytes crossing each link.");
  app->add_option("MODEL", options->model_path, "Model file (.pb, .pbtxt or .onnx)")
      ->required()
      ->check(RegularFile());
  app->add_option("--devices", options->devices,
                  "Plan for these devices instead of this machine's, e.g. "
                  "4xgpu:80GiB or 2xgpu:16GiB,cpu, or a cluster of hosts: "
                  "2x(4xgpu:80GiB)")
      ->check(CLI::Validator(
          [](std::string& spec) -> std::string {
            if (spec.find_first_not_of(" \t") != std::string::npos) return "";
            return "empty; give devices such as 2xgpu:16GiB,cpu, or leave "
                   "the flag out to plan for this machine";
          },
          "SPEC"));
  app->add_flag("--no-stages", options->no_stages,
                "auto: place a model that no single device holds by "
                "earliest finish time (HEFT-style) instead of cutting it "
                "into pipeline stages");
  app->add_option("--baseline", options->baseline,
                  "Place with one of Baechi's algorithms (SoCC 2020) instead "
                  "of sluice's, to compare their transfers and estimated "
                  "step: m-topo (topological order, each device filled in "
                  "turn) or m-etf (earliest start first); sessions never "
                  "use them")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            if (ParseBaechiAlgorithm(name)) return "";
            return "unknown algorithm '" + name +
                   "' (expected m-topo or m-etf)";
          },
          "ALGORITHM"));
  app->add_option("--batch", options->batch,
                  "Value assumed for unknown dimensions (default 1)")
      ->check(IntegerIn(1, 1000000));
  app->add_flag("--explain", options->explain,
                "Print why each node went where, and what the optimisation "
                "passes did to the graph first");
  AddConfigFlags(app, kPlaceConfigFlags, &options->config);
  app->add_option("--dot", options->dot_path,
                  "Write the placed graph as Graphviz (and an SVG beside it "
                  "when dot is installed)")
      ->check(NonEmpty());
  app->add_flag("--json", options->json, "Print JSON instead of text");
}

int RunPlace(const PlaceOptions& options, std::ostream& out,
             std::ostream& err) {
  absl::Status s = Place(options, out);
  if (s.ok()) return kExitOk;
  PrintStatusLines(err, "error", s);
  return kExitFailure;
}

int PlaceMain(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  CLI::App app;
  app.name("sluice place");
  PlaceOptions options;
  AddPlaceOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunPlace(options, out, err);
}

}  // namespace sluice
