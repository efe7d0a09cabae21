// SluiceMain: the top-level `sluice` command with its subcommands.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/convert_command.h"
#include "tools/place_command.h"

namespace sluice {

int SluiceMain(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  CLI::App app(
      "sluice runs dataflow graphs (.pb / .pbtxt models) on the CPU and CUDA "
      "GPUs.");
  app.name("sluice");
  app.set_version_flag("--version", "sluice 0.1");
  app.require_subcommand(1);
  app.footer("Run 'sluice COMMAND --help' for a command's options.");

  DevicesOptions devices;
  CLI::App* devices_app = app.add_subcommand(
      "devices", "List the CPU and GPUs, their memory and peer access");
  AddDevicesOptions(devices_app, &devices);

  InspectOptions inspect;
  CLI::App* inspect_app = app.add_subcommand(
      "inspect", "Show a model's signature, ops, parameters and errors");
  AddInspectOptions(inspect_app, &inspect);

  RunOptions run;
  CLI::App* run_app =
      app.add_subcommand("run", "Run one step of a model and save the outputs");
  AddRunOptions(run_app, &run);

  ConvertOptions convert;
  CLI::App* convert_app = app.add_subcommand(
      "convert", "Convert a model (.onnx, .pb, .pbtxt) to a sluice .pb/.pbtxt");
  AddConvertOptions(convert_app, &convert);

  PlaceOptions place;
  CLI::App* place_app = app.add_subcommand(
      "place", "Place a model on devices (real or planned) without running it");
  AddPlaceOptions(place_app, &place);

  BenchOptions bench;
  CLI::App* bench_app = app.add_subcommand(
      "bench", "Time a model: creation, first step, latency percentiles");
  AddBenchOptions(bench_app, &bench);

  if (args.empty()) {
    err << app.help();
    return kExitUsage;
  }
  // CLI11 reads an unknown first word as a stray positional and says "A
  // subcommand is required"; name it and list the commands instead.
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  if ((args[0].empty() || args[0][0] != '-') &&
      std::find(names.begin(), names.end(), args[0]) == names.end()) {
    err << "error: unknown command '" << EscapeForTerminal(args[0], 100)
        << "'; the commands are: " << absl::StrJoin(names, ", ")
        << "\nRun 'sluice --help' for more information.\n";
    return kExitUsage;
  }
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  if (devices_app->parsed()) return RunDevices(devices, out, err);
  if (inspect_app->parsed()) return RunInspect(inspect, out, err);
  if (run_app->parsed()) return RunRun(run, out, err);
  if (convert_app->parsed()) return RunConvert(convert, out, err);
  if (place_app->parsed()) return RunPlace(place, out, err);
  if (bench_app->parsed()) return RunBench(bench, out, err);
  err << "error: no command given\n";
  return kExitUsage;
}

}  // namespace sluice
