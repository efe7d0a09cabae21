// Device specs: default rates, link model, planning-string parser.
#include "placer/device_spec.h"

#include "core/byte_size.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

absl::string_view AbslView(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Link between two distinct devices.
Link LinkBetween(const DeviceSpec& a, const DeviceSpec& b, bool peer) {
  if (a.host != b.host) {
    return {LinkKind::kNetwork, kNetworkLatencySeconds,
            kNetworkBytesPerSecond};
  }
  bool same_physical = a.type == b.type && a.physical_id >= 0 &&
                       a.physical_id == b.physical_id;
  if (a.type == DeviceType::kCpu && b.type == DeviceType::kCpu) {
    // Logical CPUs share host memory: a memcpy.
    return {LinkKind::kLocalCopy, kLocalCopyLatencySeconds,
            kCpuMemcpyBytesPerSecond};
  }
  if (same_physical) {
    // A copy inside one GPU's memory: half the read+write bandwidth.
    return {LinkKind::kLocalCopy, kLocalCopyLatencySeconds,
            kGpuBytesPerSecond / 2};
  }
  if (a.type == DeviceType::kGpu && b.type == DeviceType::kGpu) {
    if (peer) {
      return {LinkKind::kNvlinkPeer, kNvlinkLatencySeconds,
              kNvlinkBytesPerSecond};
    }
    return {LinkKind::kHostStaged, kHostStagedLatencySeconds,
            kPcieBytesPerSecond};
  }
  return {LinkKind::kPcie, kPcieLatencySeconds, kPcieBytesPerSecond};
}

// Where the next device goes: its host, and the counters that number it
// over the whole spec and on its host.
struct Numbering {
  int host = 0;
  bool cluster = false;
  int next_gpu = 0, next_cpu = 0;              // over all hosts
  int host_gpu = 0, host_cpu = 0;              // on this host
  int total = 0;                               // devices the spec lists
};

// Splits "[Nx]rest" into N (1 when absent) and rest; false when the count
// is not 1 to 64.
bool ConsumeCount(absl::string_view* rest, int* count) {
  *count = 1;
  size_t x = rest->find('x');
  if (x == absl::string_view::npos || x == 0 ||
      !absl::ascii_isdigit(static_cast<unsigned char>((*rest)[0]))) {
    return true;
  }
  if (!absl::SimpleAtoi(rest->substr(0, x), count) || *count < 1 ||
      *count > 64) {
    return false;
  }
  rest->remove_prefix(x + 1);
  return true;
}

// One item of a planning spec: "[Nx]type[:SIZE]".
absl::Status ParseSpecItem(absl::string_view item, DeviceTopology* topo,
                           Numbering* num) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad device spec item '", item, "': ", why,
        " (expected e.g. \"4xgpu:80GiB\", \"2xgpu:16GiB,cpu\", "
        "\"gpu:80GiB,gpu:40GiB\", \"cpu:64GiB\", \"2x(4xgpu:80GiB)\")"));
  };
  std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(item));
  absl::string_view rest = lower;
  if (rest.empty()) return bad("empty item");
  if (rest.find_first_of("()") != absl::string_view::npos) {
    return bad("parentheses group the devices of one host and cannot nest");
  }
  int count = 1;
  if (!ConsumeCount(&rest, &count)) {
    return bad("the count before 'x' must be 1 to 64");
  }
  std::vector<absl::string_view> parts = absl::StrSplit(rest, ':');
  if (parts.size() > 2) return bad("too many ':'");
  DeviceType type;
  if (parts[0] == "gpu") {
    type = DeviceType::kGpu;
  } else if (parts[0] == "cpu") {
    type = DeviceType::kCpu;
  } else {
    return bad("unknown device type (gpu or cpu)");
  }
  int64_t limit = 0;
  if (parts.size() == 2) {
    absl::StatusOr<int64_t> bytes =
        ParseBytes(std::string_view(parts[1].data(), parts[1].size()));
    if (!bytes.ok()) return bad(bytes.status().message());
    if (*bytes <= 0) return bad("the memory size must be positive");
    limit = *bytes;
  } else if (type == DeviceType::kGpu) {
    return bad("a GPU needs a memory size, as in gpu:80GiB");
  }
  for (int i = 0; i < count; ++i) {
    const bool gpu = type == DeviceType::kGpu;
    int index = gpu ? num->next_gpu++ : num->next_cpu++;
    int local = gpu ? num->host_gpu++ : num->host_cpu++;
    DeviceSpec d = MakeDeviceSpec(type, index, limit);
    d.host = num->host;
    if (num->cluster) {
      d.name = absl::StrCat("/job:worker/task:", num->host,
                            DeviceName{type, local}.ToString());
    }
    ++num->total;
    // Past 64 only the count matters (for the error); no huge topologies.
    if (topo->num_devices() <= 64) topo->devices.push_back(std::move(d));
  }
  return absl::OkStatus();
}

// Splits `spec` at the commas outside parentheses.
absl::StatusOr<std::vector<absl::string_view>> SplitTopLevel(
    absl::string_view spec) {
  std::vector<absl::string_view> items;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '(' && ++depth > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad device spec '", spec, "': hosts cannot nest: '(' at offset ",
          i, " is inside another host's parentheses"));
    }
    if (spec[i] == ')' && --depth < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad device spec '", spec, "': ')' at offset ", i,
          " closes no '('"));
    }
    if (spec[i] == ',' && depth == 0) {
      items.push_back(spec.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  if (depth != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad device spec '", spec, "': a '(' is never closed"));
  }
  items.push_back(spec.substr(begin));
  return items;
}

// One host group of a cluster spec: "[Nx](ITEMS)".
absl::Status ParseHostGroup(absl::string_view group, DeviceTopology* topo,
                            Numbering* num) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad host '", group, "' in a cluster device spec: ", why,
        " (expected e.g. \"2x(4xgpu:80GiB)\" or "
        "\"(8xgpu:80GiB,cpu),(4xgpu:40GiB)\")"));
  };
  absl::string_view rest = absl::StripAsciiWhitespace(group);
  int count = 1;
  if (!ConsumeCount(&rest, &count)) {
    return bad("the count of hosts before 'x' must be 1 to 64");
  }
  rest = absl::StripAsciiWhitespace(rest);
  if (rest.empty() || rest.front() != '(') {
    return bad(
        "once one host is in parentheses every device must be in a host");
  }
  if (rest.back() != ')') return bad("text after the closing ')'");
  absl::string_view inner = rest.substr(1, rest.size() - 2);
  if (absl::StripAsciiWhitespace(inner).empty()) return bad("a host with no devices");
  for (int h = 0; h < count; ++h) {
    num->host_gpu = num->host_cpu = 0;
    for (absl::string_view item : absl::StrSplit(inner, ',')) {
      RETURN_IF_ERROR(ParseSpecItem(item, topo, num));
    }
    ++num->host;
  }
  return absl::OkStatus();
}

}  // namespace

int64_t WorkspaceReserve(int64_t memory_limit) {
  if (memory_limit <= 0) return 0;
  int64_t reserve = std::max<int64_t>(memory_limit / 20, 64 * kMiB);
  return std::min(reserve, memory_limit / 4);
}

DeviceSpec MakeDeviceSpec(DeviceType type, int index, int64_t memory_limit,
                          int cpu_cores) {
  DeviceSpec d;
  d.type = type;
  d.index = index;
  d.name = DeviceName{type, index}.ToString();
  d.memory_limit = memory_limit;
  d.memory_budget = memory_limit > 0
                        ? memory_limit - WorkspaceReserve(memory_limit)
                        : kUnlimitedBudget;
  if (type == DeviceType::kGpu) {
    d.flops_per_s = kGpuFp32FlopsPerSecond;
    d.half_flops_per_s = kGpuHalfFlopsPerSecond;
    d.bytes_per_s = kGpuBytesPerSecond;
    d.launch_seconds = kGpuLaunchSeconds;
  } else {
    int cores = cpu_cores > 0 ? cpu_cores : kDefaultCpuCores;
    d.flops_per_s = kCpuFlopsPerSecondPerCore * cores;
    d.half_flops_per_s = d.flops_per_s / 2;  // converted to fp32 and back
    d.bytes_per_s = kCpuBytesPerSecond;
    d.launch_seconds = kCpuLaunchSeconds;
  }
  return d;
}

std::string LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kSame: return "same device";
    case LinkKind::kLocalCopy: return "local copy";
    case LinkKind::kNvlinkPeer: return "NVLink peer";
    case LinkKind::kHostStaged: return "through pinned host memory";
    case LinkKind::kPcie: return "PCIe";
    case LinkKind::kNetwork: return "network";
  }
  return "unknown";
}

int DeviceTopology::Find(std::string_view name) const {
  const std::string lower =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(AbslView(name)));
  for (int i = 0; i < num_devices(); ++i) {
    if (absl::AsciiStrToLower(devices[i].name) == lower) return i;
  }
  absl::StatusOr<DeviceName> parsed = ParseDeviceName(name);
  if (!parsed.ok() || parsed->index < 0) return -1;
  for (int i = 0; i < num_devices(); ++i) {
    if (devices[i].type == parsed->type && devices[i].index == parsed->index) {
      return i;
    }
  }
  return -1;
}

void BuildLinks(DeviceTopology* topo,
                const std::vector<std::vector<bool>>& gpu_peer_access) {
  const int n = topo->num_devices();
  topo->links.assign(static_cast<size_t>(n) * n, Link{});
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      bool peer = true;
      if (!gpu_peer_access.empty()) {
        peer = a < static_cast<int>(gpu_peer_access.size()) &&
               b < static_cast<int>(gpu_peer_access[a].size()) &&
               gpu_peer_access[a][b];
      }
      topo->links[static_cast<size_t>(a) * n + b] =
          LinkBetween(topo->devices[a], topo->devices[b], peer);
    }
  }
}

absl::StatusOr<DeviceTopology> ParseDeviceSpecs(std::string_view spec,
                                                bool gpu_peer_access) {
  DeviceTopology topo;
  Numbering num;
  if (absl::StripAsciiWhitespace(AbslView(spec)).empty()) {
    return absl::InvalidArgumentError(
        "empty device spec (expected e.g. \"4xgpu:80GiB\" or "
        "\"2xgpu:16GiB,cpu\")");
  }
  num.cluster = AbslView(spec).find_first_of("()") != absl::string_view::npos;
  ASSIGN_OR_RETURN(std::vector<absl::string_view> items,
                   SplitTopLevel(AbslView(spec)));
  for (absl::string_view item : items) {
    if (num.cluster) {
      RETURN_IF_ERROR(ParseHostGroup(item, &topo, &num));
    } else {
      RETURN_IF_ERROR(ParseSpecItem(item, &topo, &num));
    }
  }
  topo.num_hosts = num.cluster ? num.host : 1;
  if (num.total > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device spec '", AbslView(spec), "' lists ", num.total,
        " devices; at most 64 are supported"));
  }
  std::vector<std::vector<bool>> peers;
  if (!gpu_peer_access) {
    peers.assign(topo.num_devices(),
                 std::vector<bool>(topo.num_devices(), false));
  }
  BuildLinks(&topo, peers);
  return topo;
}

absl::StatusOr<int64_t> ParseBytes(std::string_view text) {
  return ParseByteSize(absl::string_view(text.data(), text.size()));
}

std::string HumanBytes(int64_t bytes) {
  if (bytes == kUnlimitedBudget) return "unlimited";
  return FormatBytes(bytes);
}

std::string HumanSeconds(double seconds) {
  if (seconds >= 1) return absl::StrFormat("%.2f s", seconds);
  if (seconds >= 1e-3) return absl::StrFormat("%.2f ms", seconds * 1e3);
  return absl::StrFormat("%.1f us", seconds * 1e6);
}

}  // namespace sluice
