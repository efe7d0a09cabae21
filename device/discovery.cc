// Device discovery: the CPU from /proc, the GPUs through device/cuda/.
#include "device/discovery.h"

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"

namespace sluice {
namespace {

std::string ReadWholeFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "key<TAB>: value" or "Key:   value" -> key and value, trimmed.
bool SplitKeyValue(absl::string_view line, absl::string_view* key,
                   absl::string_view* value) {
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return false;
  *key = absl::StripAsciiWhitespace(line.substr(0, colon));
  *value = absl::StripAsciiWhitespace(line.substr(colon + 1));
  return true;
}

// "16318724 kB" -> bytes; 0 when unparseable.
int64_t ParseKilobytes(absl::string_view value) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(value, ' ', absl::SkipEmpty());
  int64_t kb = 0;
  if (parts.empty() || !absl::SimpleAtoi(parts[0], &kb) || kb < 0 ||
      kb > (int64_t{1} << 52)) {
    return 0;
  }
  return kb * 1024;
}

}  // namespace

CpuInfo ParseCpuInfo(std::string_view cpuinfo_std, std::string_view meminfo_std,
                     int hardware_threads) {
  const absl::string_view cpuinfo(cpuinfo_std.data(), cpuinfo_std.size());
  const absl::string_view meminfo(meminfo_std.data(), meminfo_std.size());
  CpuInfo cpu;
  int processors = 0;
  std::string fallback_name;  // other architectures name the CPU differently
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    absl::string_view key, value;
    if (!SplitKeyValue(line, &key, &value)) continue;
    if (key == "processor") ++processors;
    if (key == "model name" && cpu.model_name.empty() && !value.empty()) {
      cpu.model_name = std::string(value);
    } else if ((key == "Hardware" || key == "cpu model" || key == "cpu") &&
               fallback_name.empty() && !value.empty()) {
      fallback_name = std::string(value);
    }
  }
  if (cpu.model_name.empty()) cpu.model_name = fallback_name;
  if (cpu.model_name.empty()) cpu.model_name = "unknown CPU";
  cpu.cores = hardware_threads > 0 ? hardware_threads : processors;
  if (cpu.cores <= 0) cpu.cores = 1;
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    absl::string_view key, value;
    if (!SplitKeyValue(line, &key, &value)) continue;
    if (key == "MemTotal") cpu.memory_bytes = ParseKilobytes(value);
    if (key == "MemAvailable") cpu.available_bytes = ParseKilobytes(value);
  }
  return cpu;
}

CpuInfo DiscoverCpu() {
  return ParseCpuInfo(ReadWholeFile("/proc/cpuinfo"),
                      ReadWholeFile("/proc/meminfo"),
                      static_cast<int>(std::thread::hardware_concurrency()));
}

bool IsSupportedComputeCapability(int major, int minor, std::string* reason) {
  if (major > kMinComputeCapabilityMajor ||
      (major == kMinComputeCapabilityMajor &&
       minor >= kMinComputeCapabilityMinor)) {
    return true;
  }
  if (reason != nullptr) {
    *reason = absl::StrCat("compute capability ", major, ".", minor,
                           " is below the ", kMinComputeCapabilityMajor, ".",
                           kMinComputeCapabilityMinor,
                           " that sluice's kernels need");
  }
  return false;
}

std::string DescribeCudaArchitectures(std::string_view cmake_list) {
  std::vector<std::string> sass;
  std::vector<std::string> ptx;
  for (absl::string_view entry :
       absl::StrSplit(absl::string_view(cmake_list.data(), cmake_list.size()),
                      ',', absl::SkipEmpty())) {
    absl::string_view arch = entry;
    bool has_sass = true;
    bool has_ptx = true;
    if (absl::ConsumeSuffix(&arch, "-real")) has_ptx = false;
    if (absl::ConsumeSuffix(&arch, "-virtual")) has_sass = false;
    int number = 0;
    if (!absl::SimpleAtoi(arch, &number) || number < 10) {
      return std::string(cmake_list);  // "all", "native", ...
    }
    const std::string cc = absl::StrCat(number / 10, ".", number % 10);
    if (has_sass) sass.push_back(cc);
    if (has_ptx) ptx.push_back(cc);
  }
  if (sass.empty() && ptx.empty()) return "none";
  std::string text = absl::StrJoin(sass, ", ");
  if (!ptx.empty()) {
    absl::StrAppend(&text, sass.empty() ? "" : " and ", "PTX ",
                    absl::StrJoin(ptx, ", "));
  }
  return text;
}

std::string CudaBuildArchitectures() {
#ifdef SLUICE_CUDA_ARCHITECTURES
  return DescribeCudaArchitectures(SLUICE_CUDA_ARCHITECTURES);
#else
  return "none";
#endif
}

std::string NotCoveredByBuildReason(const GpuInfo& gpu, bool driver_too_old,
                                    std::string_view error) {
  const std::string what =
      absl::StrCat("GPU ", gpu.index, " (", gpu.name, ", compute capability ",
                   gpu.cc_major, ".", gpu.cc_minor, ")");
  const std::string rebuild = absl::StrCat(
      "rebuild with -DCMAKE_CUDA_ARCHITECTURES=", gpu.cc_major, gpu.cc_minor);
  const std::string built_for =
      absl::StrCat("built for ", CudaBuildArchitectures());
  const absl::string_view err(error.data(), error.size());
  if (driver_too_old) {
    return absl::StrCat(what, ": its driver is too old for the PTX in this ",
                        "build of sluice (", built_for, ", ", err,
                        "); update the driver or ", rebuild);
  }
  return absl::StrCat(what, " is not covered by this build of sluice (",
                      built_for, ", ", err, "); ", rebuild);
}

DeviceInventory DiscoverDevices() {
  DeviceInventory inv;
  inv.cpu = DiscoverCpu();
#ifdef SLUICE_WITH_CUDA
  internal::DiscoverCudaGpus(&inv);
#else
  inv.no_gpu_reason = "this build of sluice has no CUDA support";
#endif
  if (inv.gpus.empty() && inv.no_gpu_reason.empty()) {
    inv.no_gpu_reason = "no CUDA GPU found";
  }
  return inv;
}

}  // namespace sluice
