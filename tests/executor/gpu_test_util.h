// SKIP_WITHOUT_GPU(): skips the calling test, with the reason, where this
// machine has no usable GPU (device/discovery.h). For the executor's GPU
// tests, which make sessions and so need the whole machine's view.
#ifndef SLUICE_TESTS_EXECUTOR_GPU_TEST_UTIL_H_
#define SLUICE_TESTS_EXECUTOR_GPU_TEST_UTIL_H_

#include "device/discovery.h"
#include "gtest/gtest.h"

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    ::sluice::DeviceInventory inv = ::sluice::DiscoverDevices();        \
    bool usable = false;                                                \
    for (const ::sluice::GpuInfo& g : inv.gpus) usable = usable || g.usable; \
    if (!usable) GTEST_SKIP() << "no usable GPU: " << inv.no_gpu_reason; \
  } while (0)

#endif  // SLUICE_TESTS_EXECUTOR_GPU_TEST_UTIL_H_
