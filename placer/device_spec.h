// DeviceSpec and DeviceTopology: what the placer knows about the devices it
// places onto: per device a memory budget and compute / memory rates, and per
// device pair a link (latency + bandwidth). Specs come from this machine
// (placer/machine_topology.h) or from a planning string such as "4xgpu:80GiB" or
// "2xgpu:16GiB,cpu" (ParseDeviceSpecs), so a deployment can be sized before
// it exists. A planning string may describe a cluster of hosts,
// "2x(4xgpu:80GiB)": its devices are named TensorFlow's way,
// "/job:worker/task:H/gpu:M" (host H, the M-th GPU of that host), and the
// link between two hosts is the network (LinkKind::kNetwork).
//
//   ASSIGN_OR_RETURN(DeviceTopology topo, ParseDeviceSpecs("2xgpu:16GiB,cpu"));
//   for (const DeviceSpec& d : topo.devices) std::cout << d.name << "\n";
//   double s = topo.TransferSeconds(/*src=*/0, /*dst=*/1, /*bytes=*/1 << 20);
//
// Value types; thread-compatible. Stateless functions are thread-safe.
#ifndef SLUICE_PLACER_DEVICE_SPEC_H_
#define SLUICE_PLACER_DEVICE_SPEC_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "device/device.h"

namespace sluice {

// A budget with no limit (a CPU without a configured memory limit).
inline constexpr int64_t kUnlimitedBudget = std::numeric_limits<int64_t>::max();

// Default rates. GPU figures are the H200 ceilings in GPU-MACHINE.md
// (measured 2026-11-29); CPU figures are a modest default, not measured: an
// Eigen GEMM reaches roughly 25 GFLOP/s per core and one socket's memory
// about 20 GB/s for a single step's streaming work.
inline constexpr double kGpuFp32FlopsPerSecond = 51e12;
inline constexpr double kGpuHalfFlopsPerSecond = 791e12;  // bf16 tensor core
inline constexpr double kGpuBytesPerSecond = 4.2e12;      // read + write
inline constexpr double kGpuLaunchSeconds = 5e-6;
inline constexpr double kCpuFlopsPerSecondPerCore = 25e9;
inline constexpr double kCpuBytesPerSecond = 20e9;
inline constexpr double kCpuLaunchSeconds = 0.5e-6;
inline constexpr int kDefaultCpuCores = 4;

// Link defaults (GPU-MACHINE.md): NVLink peer copy, pinned host staging.
inline constexpr double kNvlinkBytesPerSecond = 394e9;
inline constexpr double kNvlinkLatencySeconds = 8e-6;
inline constexpr double kPcieBytesPerSecond = 55e9;
inline constexpr double kPcieLatencySeconds = 10e-6;
// Two GPUs without peer access copy through pinned host memory: two PCIe
// hops, pipelined, so the bandwidth of one and the latency of two.
inline constexpr double kHostStagedLatencySeconds = 20e-6;
// Between hosts: assumed defaults, not measured: one 200 Gb/s NIC per host
// (InfiniBand HDR or 200 GbE with GPUDirect RDMA) at about 25 GB/s, and a
// few round trips of latency for a rendezvous send.
inline constexpr double kNetworkBytesPerSecond = 25e9;
inline constexpr double kNetworkLatencySeconds = 25e-6;
// Two logical devices on one physical device copy inside its memory.
inline constexpr double kLocalCopyLatencySeconds = 2e-6;
inline constexpr double kCpuMemcpyBytesPerSecond = 10e9;

// The workspace reserve subtracted from a device's memory limit to get its
// placement budget: kernel scratch (allocate_temp, cuBLAS workspace) and
// arena fragmentation live there. 5% of the limit, at least 64 MiB, but
// never more than a quarter of the limit (so small test budgets stay
// usable). A CPU without a limit has no reserve (its budget is unlimited).
int64_t WorkspaceReserve(int64_t memory_limit);

struct DeviceSpec {
  std::string name;                  // "/gpu:0", "/cpu:0"; in a cluster
                                     // "/job:worker/task:1/gpu:0"
  DeviceType type = DeviceType::kCpu;
  int index = 0;                     // the N in "/gpu:N"; in a cluster,
                                     // counted over all hosts in order
  int host = 0;                      // the host (task) it is on; 0 on one
                                     // machine
  int64_t memory_limit = 0;          // bytes the device may use; 0: unlimited
  int64_t memory_budget = kUnlimitedBudget;  // limit minus the reserve
  double flops_per_s = 0;            // fp32 (and float64, int) arithmetic
  double half_flops_per_s = 0;       // float16 / bfloat16 GEMM and conv
  double bytes_per_s = 0;            // device memory bandwidth
  double launch_seconds = 0;         // per-kernel overhead
  // Devices with the same physical id share one physical device (logical
  // GPUs or CPUs carved out of it). -1: a device of its own.
  int physical_id = -1;
};

// Makes a spec with the default rates for its type. `memory_limit` 0 means
// unlimited; otherwise the budget is the limit minus WorkspaceReserve.
DeviceSpec MakeDeviceSpec(DeviceType type, int index, int64_t memory_limit,
                          int cpu_cores = kDefaultCpuCores);

enum class LinkKind {
  kSame, kLocalCopy, kNvlinkPeer, kHostStaged, kPcie, kNetwork
};
std::string LinkKindName(LinkKind kind);  // "same device", "NVLink peer", ...

struct Link {
  LinkKind kind = LinkKind::kSame;
  double latency_s = 0;
  double bytes_per_s = 0;  // 0 on kSame: transfers are free
};

struct DeviceTopology {
  std::vector<DeviceSpec> devices;
  // links[src * devices.size() + dst]; filled by BuildLinks.
  std::vector<Link> links;
  // Hosts (tasks) the devices are on: 1 on one machine.
  int num_hosts = 1;

  int num_devices() const { return static_cast<int>(devices.size()); }
  const Link& link(int src, int dst) const {
    return links[static_cast<size_t>(src) * devices.size() + dst];
  }
  // Latency plus bytes over bandwidth; 0 on one device.
  double TransferSeconds(int src, int dst, int64_t bytes) const {
    const Link& l = link(src, dst);
    if (l.kind == LinkKind::kSame) return 0;
    return l.latency_s + static_cast<double>(bytes) / l.bytes_per_s;
  }
  // Index of the device with that name ("/gpu:1", "gpu:1", or in a
  // cluster its full name "/job:worker/task:1/gpu:0"; "/gpu:5" there is the
  // sixth GPU over all hosts), or -1.
  int Find(std::string_view name) const;
};

// Fills topo->links from the devices' hosts, types and physical ids.
// Devices on different hosts use the network. GPU pairs on
// different physical GPUs use NVLink when gpu_peer_access says so (indexed
// by device position; empty: every GPU pair has peer access), the pinned
// host path otherwise.
void BuildLinks(DeviceTopology* topo,
                const std::vector<std::vector<bool>>& gpu_peer_access = {});

// Parses a planning spec: comma-separated items, each "[Nx]gpu:SIZE",
// "[Nx]cpu" or "[Nx]cpu:SIZE", SIZE like "80GiB", "16G", "512MiB", "1.5TB".
// GPUs are numbered /gpu:0.. and CPUs /cpu:0.. in order of appearance; GPUs
// have peer access to each other unless `gpu_peer_access` is false. A GPU
// needs a size; a CPU without one is unlimited.
// A cluster: comma-separated hosts, each "[Nx](ITEMS)" with the items of one
// host inside the parentheses, e.g. "2x(4xgpu:80GiB)" (two hosts of four
// GPUs) or "(8xgpu:80GiB,cpu),(4xgpu:40GiB)". Hosts are numbered in order
// (task:0..); a device is "/job:worker/task:H/gpu:M" with M counted on its
// host; every device must be inside a host once one is; no nesting.
// Errors are INVALID_ARGUMENT naming the item and what was expected.
absl::StatusOr<DeviceTopology> ParseDeviceSpecs(std::string_view spec,
                                                bool gpu_peer_access = true);

// ParseByteSize (core/byte_size.h) for std::string_view callers.
absl::StatusOr<int64_t> ParseBytes(std::string_view text);
// "3.9 GiB", "512.0 MiB", "100 B"; "unlimited" for kUnlimitedBudget.
std::string HumanBytes(int64_t bytes);
// "1.20 ms", "35.0 us", "2.10 s".
std::string HumanSeconds(double seconds);

}  // namespace sluice

#endif  // SLUICE_PLACER_DEVICE_SPEC_H_
