// `sluice devices [--json] [--config CFG]`: what this machine has (the CPU,
// the cuDNN sluice would use, every CUDA GPU, peer access between them)
// and, with --config, the memory
// limits and growth policy a session with that config would use.
#include <unistd.h>

#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "device/cudnn_info.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "device/nccl_communicator.h"
#include "distributed/mpi_process_group.h"
#include "distributed/process_group.h"
#include "distributed/process_group_info.h"
#include "executor/runtime_config.h"
#include "nlohmann/json.hpp"
#include "tools/cli_util.h"
#include "tools/commands.h"

namespace sluice {
namespace {

using nlohmann::json;

// The logical GPUs a session would create, or the error it would report.
absl::StatusOr<std::vector<GpuDeviceSpec>> PlanGpus(
    const RuntimeConfig& config, const DeviceInventory& inv) {
  if (inv.gpus.empty()) return std::vector<GpuDeviceSpec>();
#ifdef SLUICE_WITH_CUDA
  return PlanGpuDevices(config, inv.gpus);
#else
  return std::vector<GpuDeviceSpec>();
#endif
}

std::string GrowthPolicy(const RuntimeConfig& config) {
  return config.allow_growth()
             ? "on demand, up to the limit (allow_growth: true)"
             : "the whole limit reserved at session start (allow_growth: false)";
}

std::string CpuBudget(const LogicalDeviceConfig& cpu) {
  const MemoryLimit& limit = cpu.memory_limit();
  if (limit.has_bytes() && limit.bytes() > 0) return FormatBytes(limit.bytes());
  return "no budget";
}

// --- Text --------------------------------------------------------------------

// "9.14.0 (/usr/lib/x86_64-linux-gnu/libcudnn.so.9)", or "not found (...)"
// / "not used (...)" with the reason.
std::string CudnnLine(const CudnnInfo& cudnn) {
  if (cudnn.usable) {
    return absl::StrCat(
        CudnnVersionString(cudnn.version), " (", cudnn.library, "): ",
        kUseCudnnByDefault
            ? "Conv and ConvTranspose on GPUs use it"
            : "Conv and ConvTranspose on GPUs use it with use_cudnn: true "
              "in the config");
  }
  if (cudnn.version == 0 && cudnn.library.empty()) {
    return absl::StrCat("not found (", cudnn.reason, ")");
  }
  return absl::StrCat("not used (", cudnn.reason, ")");
}

void PrintInventory(const DeviceInventory& inv, std::ostream& out) {
  const CpuInfo& cpu = inv.cpu;
  out << "CPU: " << cpu.model_name << " (" << cpu.cores << " cores, "
      << FormatBytes(cpu.memory_bytes) << " memory";
  if (cpu.available_bytes > 0) {
    out << ", " << FormatBytes(cpu.available_bytes) << " available";
  }
  out << ")\n";
  out << "cuDNN: " << CudnnLine(GetCudnnInfo()) << "\n";
  // What a job of several processes would use (docs/design.md decision 36).
  out << "NCCL: " << NcclDescription() << "\n";
  out << "MPI: " << (BuiltWithMpi() ? MpiLibraryVersion()
                                    : std::string("none (built without MPI)"))
      << "\n";
  if (inv.gpus.empty()) {
    out << "no GPU listed: " << inv.no_gpu_reason << "\n";
    return;
  }
  out << "GPUs: " << inv.gpus.size() << "\n";
  for (const GpuInfo& g : inv.gpus) {
    out << absl::StrFormat(
        "  gpu %d: %s, compute capability %d.%d, %d SMs, %s total, %s free, "
        "PCI %s",
        g.index, g.name, g.cc_major, g.cc_minor, g.sm_count,
        FormatBytes(g.total_memory), FormatBytes(g.free_memory),
        g.pci_bus_id.empty() ? "unknown" : g.pci_bus_id);
    if (!g.usable) out << " [not usable: " << g.unusable_reason << "]";
    out << "\n";
  }
  out << "peer access (row reads column's memory directly):\n      ";
  for (size_t j = 0; j < inv.gpus.size(); ++j) {
    out << std::setw(6) << absl::StrCat("gpu", j);
  }
  out << "\n";
  for (size_t i = 0; i < inv.peer_access.size(); ++i) {
    out << std::setw(6) << absl::StrCat("gpu", i);
    for (size_t j = 0; j < inv.peer_access[i].size(); ++j) {
      out << std::setw(6) << (i == j ? "-" : inv.peer_access[i][j] ? "yes" : "no");
    }
    out << "\n";
  }
  for (const std::string& note : inv.notes) out << "note: " << note << "\n";
}

void PrintConfig(const std::string& path, const RuntimeConfig& config,
                 const std::vector<std::string>& overrides,
                 const std::vector<GpuDeviceSpec>& specs,
                 const DeviceInventory& inv, std::ostream& out) {
  out << "config " << path << ":\n";
  for (const std::string& line : overrides) {
    out << "  environment: " << line << "\n";
  }
  out << "  GPU memory: " << GrowthPolicy(config) << "\n";
  if (inv.gpus.empty()) {
    out << "  no GPU to apply GPU settings to (default limit: "
        << DescribeMemoryLimit(config.gpu_memory_limit()) << ")\n";
  } else if (specs.empty()) {
    out << "  no GPU used (use_gpu: false)\n";
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const GpuInfo& g = inv.gpus[specs[i].physical_index];
    out << absl::StrFormat("  /gpu:%d on gpu %d (%s): limit %s of %s\n",
                           static_cast<int>(i), specs[i].physical_index, g.name,
                           FormatBytes(specs[i].memory_limit),
                           FormatBytes(g.total_memory));
  }
  const int cpus = std::max(1, config.logical_cpus_size());
  for (int i = 0; i < cpus; ++i) {
    out << "  /cpu:" << i << ": "
        << (i < config.logical_cpus_size() ? CpuBudget(config.logical_cpus(i))
                                           : "no budget")
        << "\n";
  }
  out << "  threads: inter-op " << config.inter_op_threads() << ", intra-op "
      << config.intra_op_threads() << " (0: one per core, "
      << inv.cpu.cores << " here)\n";
}

// --- JSON --------------------------------------------------------------------

json InventoryJson(const DeviceInventory& inv) {
  json j;
  j["cpu"] = {{"model_name", inv.cpu.model_name},
              {"cores", inv.cpu.cores},
              {"memory_bytes", inv.cpu.memory_bytes},
              {"available_bytes", inv.cpu.available_bytes}};
  j["gpus"] = json::array();
  for (const GpuInfo& g : inv.gpus) {
    json gpu = {{"index", g.index},
                {"name", g.name},
                {"compute_capability", absl::StrCat(g.cc_major, ".", g.cc_minor)},
                {"total_memory_bytes", g.total_memory},
                {"free_memory_bytes", g.free_memory},
                {"sm_count", g.sm_count},
                {"pci_bus_id", g.pci_bus_id},
                {"usable", g.usable}};
    if (!g.usable) gpu["unusable_reason"] = g.unusable_reason;
    j["gpus"].push_back(gpu);
  }
  j["peer_access"] = inv.peer_access;
  if (inv.gpus.empty()) j["no_gpu_reason"] = inv.no_gpu_reason;
  const CudnnInfo cudnn = GetCudnnInfo();
  j["cudnn"] = {{"usable", cudnn.usable},
                {"version", cudnn.version == 0
                                ? std::string()
                                : CudnnVersionString(cudnn.version)},
                {"library", cudnn.library},
                {"reason", cudnn.reason}};
  j["nccl"] = NcclDescription();
  j["mpi"] = BuiltWithMpi() ? MpiLibraryVersion() : std::string();
  j["notes"] = inv.notes;
  return j;
}

json ConfigJson(const std::string& path, const RuntimeConfig& config,
                const std::vector<std::string>& overrides,
                const std::vector<GpuDeviceSpec>& specs) {
  json j = {{"path", path},
            {"environment_overrides", overrides},
            {"allow_growth", config.allow_growth()},
            {"gpu_memory_limit", DescribeMemoryLimit(config.gpu_memory_limit())},
            {"inter_op_threads", config.inter_op_threads()},
            {"intra_op_threads", config.intra_op_threads()}};
  j["gpu_devices"] = json::array();
  for (size_t i = 0; i < specs.size(); ++i) {
    j["gpu_devices"].push_back(
        {{"name", absl::StrCat("/gpu:", i)},
         {"physical_index", specs[i].physical_index},
         {"memory_limit_bytes", specs[i].memory_limit}});
  }
  j["cpu_devices"] = json::array();
  const int cpus = std::max(1, config.logical_cpus_size());
  for (int i = 0; i < cpus; ++i) {
    int64_t budget = 0;
    if (i < config.logical_cpus_size() &&
        config.logical_cpus(i).memory_limit().has_bytes()) {
      budget = config.logical_cpus(i).memory_limit().bytes();
    }
    j["cpu_devices"].push_back({{"name", absl::StrCat("/cpu:", i)},
                                {"memory_limit_bytes", budget}});
  }
  return j;
}

}  // namespace

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
  const DeviceInventory inv = DiscoverDevices();
  RuntimeConfig config;
  std::vector<std::string> overrides;
  std::vector<GpuDeviceSpec> specs;
  if (!options.config_path.empty()) {
    absl::StatusOr<RuntimeConfig> loaded =
        LoadEffectiveConfig(options.config_path, &overrides);
    if (!loaded.ok()) {
      PrintStatusLines(err, "error", loaded.status());
      return kExitFailure;
    }
    config = *std::move(loaded);
    absl::StatusOr<std::vector<GpuDeviceSpec>> planned = PlanGpus(config, inv);
    if (!planned.ok()) {
      PrintStatusLines(err, absl::StrCat("error: ", options.config_path),
                       planned.status());
      return kExitFailure;
    }
    specs = *std::move(planned);
  }
  // This process's report; under a launcher of several processes, rank 0
  // prints every rank's.
  std::ostringstream mine;
  json j = InventoryJson(inv);
  if (options.json) {
    if (!options.config_path.empty()) {
      j["config"] = ConfigJson(options.config_path, config, overrides, specs);
    }
  } else {
    PrintInventory(inv, mine);
    if (!options.config_path.empty()) {
      PrintConfig(options.config_path, config, overrides, specs, inv, mine);
    }
  }
  absl::StatusOr<ProcessGroupInfo> info = DetectProcessGroup();
  if (!info.ok()) {
    PrintStatusLines(err, "error", info.status());
    return kExitFailure;
  }
  if (info->world_size <= 1) {
    out << (options.json ? DumpJson(j) + "\n" : mine.str());
    return kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> all = GatherFromRanks(
      *info, options.json ? DumpJson(j) : mine.str());
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

std::string DevicesJson() { return DumpJson(InventoryJson(DiscoverDevices())); }

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
