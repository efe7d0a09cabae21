// The device report (see device_report.h).
#include "reports/device_report.h"

#include <algorithm>
#include <iomanip>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/byte_size.h"
#include "device/nccl_communicator.h"
#include "distributed/mpi_process_group.h"
#include "executor/runtime_config.h"

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

void PrintInventory(const DeviceReport& report, std::ostream& out) {
  const DeviceInventory& inv = report.inventory;
  const CpuInfo& cpu = inv.cpu;
  out << "CPU: " << cpu.model_name << " (" << cpu.cores << " cores, "
      << FormatBytes(cpu.memory_bytes) << " memory";
  if (cpu.available_bytes > 0) {
    out << ", " << FormatBytes(cpu.available_bytes) << " available";
  }
  out << ")\n";
  out << "cuDNN: " << CudnnLine(report.cudnn) << "\n";
  out << "NCCL: " << report.nccl << "\n";
  out << "MPI: ";
  if (!report.mpi.empty()) {
    out << report.mpi;
  } else if (!report.mpi_unavailable.empty()) {
    out << "not available here (needed only for jobs under mpirun): "
        << report.mpi_unavailable;
  } else {
    out << "none (built without MPI)";
  }
  out << "\n";
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

json InventoryJson(const DeviceReport& report) {
  const DeviceInventory& inv = report.inventory;
  const CudnnInfo& cudnn = report.cudnn;
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
  j["cudnn"] = {{"usable", cudnn.usable},
                {"version", cudnn.version == 0
                                ? std::string()
                                : CudnnVersionString(cudnn.version)},
                {"library", cudnn.library},
                {"reason", cudnn.reason}};
  j["nccl"] = report.nccl;
  j["mpi"] = report.mpi;
  j["mpi_unavailable"] = report.mpi_unavailable;
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

DeviceReport BuildDeviceReport(DeviceInventory inventory) {
  DeviceReport report;
  report.inventory = std::move(inventory);
  report.cudnn = GetCudnnInfo();
  report.nccl = NcclDescription();
  if (BuiltWithMpi()) {
    absl::StatusOr<std::string> mpi = MpiLibraryVersion();
    if (mpi.ok()) {
      report.mpi = *mpi;
    } else {
      report.mpi_unavailable = std::string(mpi.status().message());
    }
  }
  return report;
}

absl::Status AddConfigToDeviceReport(const std::string& path,
                                     const RuntimeConfig& config,
                                     std::vector<std::string> overrides,
                                     DeviceReport* report) {
  absl::StatusOr<std::vector<GpuDeviceSpec>> planned =
      PlanGpus(config, report->inventory);
  if (!planned.ok()) return planned.status();
  report->config = DeviceReport::ConfigSection{path, config, std::move(overrides),
                                               *std::move(planned)};
  return absl::OkStatus();
}

json DeviceReportJson(const DeviceReport& report) {
  json j = InventoryJson(report);
  if (report.config.has_value()) {
    const DeviceReport::ConfigSection& c = *report.config;
    j["config"] = ConfigJson(c.path, c.config, c.overrides, c.gpus);
  }
  return j;
}

void PrintDeviceReport(const DeviceReport& report, std::ostream& out) {
  PrintInventory(report, out);
  if (report.config.has_value()) {
    const DeviceReport::ConfigSection& c = *report.config;
    PrintConfig(c.path, c.config, c.overrides, c.gpus, report.inventory, out);
  }
}

}  // namespace sluice
