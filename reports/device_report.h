// The device report: what this machine offers sluice (the CPU, the cuDNN
// sluice would use, every CUDA GPU and the peer access between them) and,
// for a config, the logical devices, memory limits and growth policy a
// session with that config would get. `sluice devices` prints it; Python's
// sluice.devices() returns it as a dict.
//
//   DeviceReport report = BuildDeviceReport(DiscoverDevices());
//   RETURN_IF_ERROR(AddConfigToDeviceReport("run.pbtxt", config, overrides, &report));
//   PrintDeviceReport(report, std::cout);          // the text
//   nlohmann::json j = DeviceReportJson(report);    // `--json`
//
// Stateless functions over a value; thread-compatible.
#ifndef SLUICE_REPORTS_DEVICE_REPORT_H_
#define SLUICE_REPORTS_DEVICE_REPORT_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "device/cudnn_info.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "nlohmann/json.hpp"
#include "proto/config.pb.h"

namespace sluice {

struct DeviceReport {
  DeviceInventory inventory;
  CudnnInfo cudnn;
  // What a job of several processes would use (docs/design.md decision 41):
  // the NCCL found ("not found (...)" otherwise) and the MPI library
  // (empty when there is none; then `mpi_unavailable` says why, where this
  // build has MPI but cannot load it here).
  std::string nccl;
  std::string mpi;
  std::string mpi_unavailable;
  // What a session with a config would set up (AddConfigToDeviceReport).
  struct ConfigSection {
    std::string path;                    // the config's name in the report
    RuntimeConfig config;                // environment overrides applied
    std::vector<std::string> overrides;  // one line per override
    std::vector<GpuDeviceSpec> gpus;     // the logical GPUs, in order
  };
  std::optional<ConfigSection> config;
};

// The inventory with the cuDNN, NCCL and MPI sluice would load.
DeviceReport BuildDeviceReport(DeviceInventory inventory);

// Adds what a session with `config` (validated, overrides applied, listed in
// `overrides`) would set up on the report's devices. Errors: the GPU plan's
// (a limit or logical GPU on a GPU that is not there).
absl::Status AddConfigToDeviceReport(const std::string& path,
                                     const RuntimeConfig& config,
                                     std::vector<std::string> overrides,
                                     DeviceReport* report);

// {"cpu", "gpus", "peer_access", "no_gpu_reason" (without a GPU), "cudnn",
// "nccl", "mpi", "mpi_unavailable", "notes", "config" (with a config
// section)}.
nlohmann::json DeviceReportJson(const DeviceReport& report);

// The text `sluice devices` prints.
void PrintDeviceReport(const DeviceReport& report, std::ostream& out);

}  // namespace sluice

#endif  // SLUICE_REPORTS_DEVICE_REPORT_H_
