// `sluice devices [--json] [--config CFG]`: what this machine has (the CPU,
// the cuDNN sluice would use, every CUDA GPU, peer access between them)
// and, with --config, the memory
// limits and growth policy a session with that config would use. The report
// itself is reports/device_report.h. Under a launcher of several processes
// (mpirun, or SLUICE_RANK/SLUICE_WORLD_SIZE), rank 0 prints every rank's.
#include <unistd.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/discovery.h"
#include "distributed/process_group.h"
#include "distributed/process_group_info.h"
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

namespace {

using nlohmann::json;

// Every rank's (hostname, report), flattened: [host0, report0, host1, ...].
absl::StatusOr<std::vector<std::string>> GatherFromRanks(
    const ProcessGroupInfo& info, const std::string& report) {
  ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> group,
                   ConnectProcessGroup(info, {FingerprintPart{"command",
                                                              "devices"}}));
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  ASSIGN_OR_RETURN(std::vector<std::string> hosts,
                   group->AllGather(host, absl::Minutes(1)));
  ASSIGN_OR_RETURN(std::vector<std::string> reports,
                   group->AllGather(report, absl::Minutes(1)));
  std::vector<std::string> out;
  for (size_t r = 0; r < reports.size(); ++r) {
    out.push_back(hosts[r]);
    out.push_back(reports[r]);
  }
  return out;
}

}  // namespace

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
  // This process's report; under a launcher of several processes, rank 0
  // prints every rank's.
  std::string mine;
  if (options.json) {
    mine = DumpJson(DeviceReportJson(report));
  } else {
    std::ostringstream text;
    PrintDeviceReport(report, text);
    mine = text.str();
  }
  absl::StatusOr<ProcessGroupInfo> info = DetectProcessGroup();
  if (!info.ok()) {
    PrintStatusLines(err, "error", info.status());
    return kExitFailure;
  }
  if (info->world_size <= 1) {
    out << mine << (options.json ? "\n" : "");
    return kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> all = GatherFromRanks(*info, mine);
  if (!all.ok()) {
    PrintStatusLines(err, "error", all.status());
    return kExitFailure;
  }
  if (info->rank != 0) return kExitOk;
  if (options.json) {
    json ranks = json::array();
    for (size_t r = 0; r < all->size(); r += 2) {
      json one = json::parse((*all)[r + 1], nullptr, /*allow_exceptions=*/false);
      one["rank"] = static_cast<int>(r / 2);
      one["host"] = (*all)[r];
      ranks.push_back(std::move(one));
    }
    out << DumpJson({{"world_size", info->world_size}, {"ranks", ranks}})
        << "\n";
    return kExitOk;
  }
  for (size_t r = 0; r < all->size(); r += 2) {
    out << "rank " << r / 2 << " of " << info->world_size << " ("
        << (*all)[r] << "):\n"
        << (*all)[r + 1];
  }
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
