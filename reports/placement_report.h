// The placement report: a model placed without running it, as a session
// would place it (after the optimisation passes of the config's level), with
// each node's device and why, per device the weights, peak activations and
// budget, the estimated step time, the bytes crossing each link and each
// transfer. `sluice place` prints it; Python's Session.placement() and
// sluice.place() return it as a dict.
//
//   PlacementRequest request;
//   request.model_name = "model.onnx";
//   request.devices = "4xgpu:80GiB";      // "" = this machine's devices
//   ASSIGN_OR_RETURN(PlacementReport report,
//                    PlaceForReport(request, config, std::move(graph)));
//   PrintPlacementReport(report, std::cout);            // the text
//   nlohmann::json j = PlacementReportJson(report);     // `--json`
//   std::string dot = PlacementDot(report);              // Graphviz
//
// Stateless functions; a report is a value (thread-compatible).
#ifndef SLUICE_REPORTS_PLACEMENT_REPORT_H_
#define SLUICE_REPORTS_PLACEMENT_REPORT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "nlohmann/json.hpp"
#include "optimizer/pipeline.h"
#include "placer/baechi.h"
#include "placer/device_spec.h"
#include "placer/partition.h"
#include "placer/placer.h"
#include "proto/config.pb.h"

namespace sluice {

struct PlacementRequest {
  std::string model_name;  // the model's name in the report
  // Devices to plan for, which need not exist ("4xgpu:80GiB",
  // "2xgpu:16GiB,cpu", "2x(4xgpu:80GiB)"); "" = this machine's devices as a
  // session with the config would set them up.
  std::string devices;
  int64_t batch = 1;              // the value of unknown dimensions
  bool explain = false;           // reasons per node, the passes' changes
  bool record_reasons = false;    // reasons without `explain` (for DOT)
  bool pipeline_stages = true;    // PlacerOptions::pipeline_stages
  // Place with one of Baechi's algorithms (placer/baechi.h) instead of
  // PlaceGraph, for comparison; sessions never do.
  std::optional<BaechiAlgorithm> baseline;
};

struct PlacementReport {
  std::string model_name;
  std::optional<BaechiAlgorithm> baseline;  // as requested
  int64_t batch = 1;
  bool explain = false;
  OptimizedGraph optimized;  // the graph placed: after the config's passes
  DeviceTopology topology;
  Placement placement;
  // The step `sluice run` takes (every input fed, every output fetched),
  // split as the session splits it.
  Partitioning partitioning;
  // Notes before the placement's own (the optimisation, planning
  // assumptions; the caller may add its own).
  std::vector<std::string> notes;
  // What each pass did (at most 50 changes), when any pass ran.
  std::vector<std::string> optimization;

  const Graph& graph() const { return *optimized.graph; }
};

// Optimises `graph` (as loaded) with `config` (validated, environment
// overrides applied), places it and partitions the step. `notes` start the
// report's notes. Errors: the devices spec's, the passes', and a model that
// fits nowhere (RESOURCE_EXHAUSTED with the numbers).
absl::StatusOr<PlacementReport> PlaceForReport(
    const PlacementRequest& request, const RuntimeConfig& config,
    std::unique_ptr<const Graph> graph, std::vector<std::string> notes = {});

// {"model", "strategy", "algorithm" ("sluice", or the baseline's: "m-TOPO",
// "m-ETF"), "batch", "devices", "nodes" (with "reason" when explained),
// "estimated_step_seconds", "links", "host_links", "num_hosts",
// "transfers", "notes", "optimization"}.
nlohmann::json PlacementReportJson(const PlacementReport& report);

// The text `sluice place` prints (reasons and transfers when explained).
void PrintPlacementReport(const PlacementReport& report, std::ostream& out);

// The placed graph as Graphviz: one colour per device, transfers as their
// own nodes.
std::string PlacementDot(const PlacementReport& report);

}  // namespace sluice

#endif  // SLUICE_REPORTS_PLACEMENT_REPORT_H_
