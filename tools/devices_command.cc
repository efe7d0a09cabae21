// `sluice devices [--json] [--config CFG]`: what this machine has (the CPU,
// the cuDNN sluice would use, every CUDA GPU, peer access between them)
// and, with --config, the memory
// limits and growth policy a session with that config would use. The report
// itself is reports/device_report.h.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "device/discovery.h"
#include "reports/device_report.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

namespace sluice {

void AddDevicesOptions(CLI::App* app, DevicesOptions* options) {
  app->description(
      "List the CPU and every CUDA GPU (honouring CUDA_VISIBLE_DEVICES) with "
      "their memory and peer access. With no GPU, says why in one line.");
  app->add_flag("--json", options->json, "Print JSON instead of text");
  app->add_option("--config", options->config_path,
                  "A RuntimeConfig text proto: also show the memory limits "
                  "and growth policy it gives each device")
      ->check(RegularFile());
}

int RunDevices(const DevicesOptions& options, std::ostream& out,
               std::ostream& err) {
  DeviceReport report = BuildDeviceReport(DiscoverDevices());
  if (!options.config_path.empty()) {
    std::vector<std::string> overrides;
    absl::StatusOr<RuntimeConfig> loaded =
        LoadEffectiveConfig(options.config_path, &overrides);
    if (!loaded.ok()) {
      PrintStatusLines(err, "error", loaded.status());
      return kExitFailure;
    }
    absl::Status added = AddConfigToDeviceReport(
        options.config_path, *loaded, std::move(overrides), &report);
    if (!added.ok()) {
      PrintStatusLines(err, absl::StrCat("error: ", options.config_path), added);
      return kExitFailure;
    }
  }
  if (options.json) {
    out << DumpJson(DeviceReportJson(report)) << "\n";
    return kExitOk;
  }
  PrintDeviceReport(report, out);
  return kExitOk;
}

int DevicesMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  CLI::App app;
  app.name("sluice devices");
  DevicesOptions options;
  AddDevicesOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunDevices(options, out, err);
}

}  // namespace sluice
