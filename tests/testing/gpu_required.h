// When a GPU test may skip: only on a machine with no GPU at all (a build
// without CUDA, no driver, or the CUDA runtime lists none). On a machine that
// has one, a test that cannot create or use its GPU device fails: an error in
// device creation must not turn most of the GPU checks into skips.
//
//   const Gpus& gpus = GetGpus();
//   if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
//   const std::string why = ::sluice::testing::NoUsableGpuReason();
//   if (!why.empty()) SLUICE_GPU_UNAVAILABLE(why);
//
// MachineHasGpu reads the device inventory once per process (thread-safe).
#ifndef SLUICE_TESTS_TESTING_GPU_REQUIRED_H_
#define SLUICE_TESTS_TESTING_GPU_REQUIRED_H_

#include <string>

#include "device/discovery.h"
#include "gtest/gtest.h"

namespace sluice::testing {

// Whether the CUDA runtime lists at least one GPU (usable or not).
inline bool MachineHasGpu() {
  static const bool has = !DiscoverDevices().gpus.empty();
  return has;
}

// Empty when some GPU of the machine is usable; otherwise "no usable GPU: "
// and the inventory's reason, for SLUICE_GPU_UNAVAILABLE.
inline std::string NoUsableGpuReason() {
  const DeviceInventory inv = DiscoverDevices();
  for (const GpuInfo& gpu : inv.gpus) {
    if (gpu.usable) return "";
  }
  return "no usable GPU: " + inv.no_gpu_reason;
}

}  // namespace sluice::testing

// Ends the test: a skip where the machine has no GPU, else a failure that
// says why the GPU could not be used. `reason` is anything streamable.
#define SLUICE_GPU_UNAVAILABLE(reason)                                     \
  do {                                                                     \
    if (::sluice::testing::MachineHasGpu()) {                              \
      FAIL() << "this machine has a GPU, but the test cannot use it: "     \
             << (reason);                                                  \
    } else {                                                               \
      GTEST_SKIP() << (reason);                                            \
    }                                                                      \
  } while (0)

#endif  // SLUICE_TESTS_TESTING_GPU_REQUIRED_H_
