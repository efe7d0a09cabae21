// SKIP_WITHOUT_GPU(): ends the calling test where this machine has no
// usable GPU (device/discovery.h): a skip, with the reason, where it has no
// GPU at all, a failure where it has one sluice cannot use
// (testing/gpu_required.h). For the executor's GPU tests, which make
// sessions and so need the whole machine's view.
#ifndef SLUICE_TESTS_EXECUTOR_GPU_TEST_UTIL_H_
#define SLUICE_TESTS_EXECUTOR_GPU_TEST_UTIL_H_

#include "device/discovery.h"
#include "gtest/gtest.h"
#include "testing/gpu_required.h"

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    ::sluice::DeviceInventory inv = ::sluice::DiscoverDevices();        \
    bool usable = false;                                                \
    for (const ::sluice::GpuInfo& g : inv.gpus) usable = usable || g.usable; \
    if (!usable) SLUICE_GPU_UNAVAILABLE("no usable GPU: " + inv.no_gpu_reason); \
  } while (0)

#endif  // SLUICE_TESTS_EXECUTOR_GPU_TEST_UTIL_H_
