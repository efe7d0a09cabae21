// Host RSS from /proc/self/status, getrusage as the fallback.
#include "core/host_memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>

namespace sluice {
namespace {

// The value of a "Key:   123 kB" line in bytes; -1 when absent.
int64_t StatusKiB(const char* text, const char* key) {
  const char* p = std::strstr(text, key);
  if (p == nullptr) return -1;
  long long kib = -1;
  if (std::sscanf(p + std::strlen(key), " %lld", &kib) != 1) return -1;
  return static_cast<int64_t>(kib) * 1024;
}

}  // namespace

HostMemoryUsage ReadHostMemoryUsage() {
  HostMemoryUsage out;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char text[8192];
    const size_t n = std::fread(text, 1, sizeof(text) - 1, f);
    std::fclose(f);
    text[n] = '\0';
    out.rss_bytes = StatusKiB(text, "\nVmRSS:");
    out.peak_rss_bytes = StatusKiB(text, "\nVmHWM:");
  }
  if (out.peak_rss_bytes < 0) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0) {
      out.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
    }
  }
  return out;
}

bool ResetPeakHostMemory() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool wrote = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && wrote;
}

}  // namespace sluice
