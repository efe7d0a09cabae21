// `sluice place MODEL [--config CFG] [--devices SPEC] [--strategy S]
// [--batch N] [--explain] [--dot FILE] [--json] [--baseline ALGORITHM]`: places
// a model without running it and prints each node's device (with --explain,
// why), per device the weights, peak activations and budget, the estimated step
// time and the bytes crossing each link. --devices plans for devices that need
// not exist ("4xgpu:80GiB", "2xgpu:16GiB,cpu"); without it the devices are
// this machine's, as a session with --config would set them up. --dot
// writes Graphviz (one colour per device, transfers as their own nodes) and
// an SVG beside it when `dot` is on the PATH. The graph placed is the one
// a session runs: after the optimisation passes of the config's level (or
// --optimization-level), said in a note; --explain also lists what each
// pass did. --baseline places with one of Baechi's algorithms instead
// (placer/baechi.h), for comparison.
//
//   std::ostringstream out, err;
//   int code = PlaceMain({"examples/mlp.pbtxt", "--devices", "2xgpu:1GiB",
//                         "--explain"}, out, err);
//
// Exit codes as for the other subcommands (tools/commands.h): 0 placed,
// 1 the model is invalid or does not fit, 2 usage error. Thread-compatible:
// reads the environment and may write files.
#ifndef SLUICE_TOOLS_PLACE_COMMAND_H_
#define SLUICE_TOOLS_PLACE_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "tools/config_flags.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sluice {

struct PlaceOptions {
  std::string model_path;
  // --config, --strategy, --optimization-level, --precision, --conv-layout
  // (kPlaceConfigFlags): the config placed with; a flag left out keeps the
  // config's value.
  ConfigFlagValues config;
  std::string devices;   // planning spec; "" = this machine's devices
  int64_t batch = 1;     // value of unknown dimensions
  bool explain = false;
  std::string dot_path;
  bool json = false;
  bool no_stages = false;  // PlacerOptions::pipeline_stages off
  std::string baseline;    // "m-topo", "m-etf": PlacementRequest::baseline
};
inline constexpr ConfigFlagSet kPlaceConfigFlags =
    kConfigFileFlag | kStrategyFlag | kOptimizationLevelFlag | kPrecisionFlag |
    kConvLayoutFlag | kCpuConvolutionsFlag;
void AddPlaceOptions(CLI::App* app, PlaceOptions* options);
int RunPlace(const PlaceOptions& options, std::ostream& out,
             std::ostream& err);
int PlaceMain(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_TOOLS_PLACE_COMMAND_H_
