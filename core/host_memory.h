// Host memory of this process: resident set size now and its peak (Linux
// VmRSS and VmHWM, /proc/self/status), and resetting the peak so that one
// phase (session creation, the first step) can be measured on its own.
//
//   ResetPeakHostMemory();                 // false where the kernel refuses
//   ... create a session ...
//   HostMemoryUsage m = ReadHostMemoryUsage();
//   std::cout << FormatBytes(m.peak_rss_bytes);
//
// Thread-safe; the figures are the whole process's, whichever thread asks.
#ifndef SLUICE_CORE_HOST_MEMORY_H_
#define SLUICE_CORE_HOST_MEMORY_H_

#include <cstdint>

namespace sluice {

struct HostMemoryUsage {
  int64_t rss_bytes = -1;       // resident now; -1 when unknown
  int64_t peak_rss_bytes = -1;  // the most resident since start or the last
                                // ResetPeakHostMemory; -1 when unknown
};

// VmRSS and VmHWM from /proc/self/status; where that cannot be read, the
// peak is getrusage's ru_maxrss (which no reset lowers) and rss unknown.
HostMemoryUsage ReadHostMemoryUsage();

// Lowers the peak (VmHWM) to the current RSS (writes "5" to
// /proc/self/clear_refs, Linux 4.0 and later). False when that fails: the
// peak then keeps counting from the process's start.
bool ResetPeakHostMemory();

}  // namespace sluice

#endif  // SLUICE_CORE_HOST_MEMORY_H_
