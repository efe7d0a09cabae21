// SLUICE_SKIP_WITHOUT_NVRTC(): skips the test where NVRTC (the runtime
// compiler, loaded on first use) cannot be loaded; in a CUDA build only.
//
//   TEST(NvrtcTest, Compiles) {
//     SLUICE_SKIP_WITHOUT_NVRTC();
//     ...
//   }
#ifndef SLUICE_TESTS_KERNELS_NVRTC_REQUIRED_H_
#define SLUICE_TESTS_KERNELS_NVRTC_REQUIRED_H_

#include "absl/status/statusor.h"
#include "device/cuda/nvrtc_library.h"
#include "gtest/gtest.h"

#define SLUICE_SKIP_WITHOUT_NVRTC()                                       \
  do {                                                                    \
    absl::StatusOr<const ::sluice::NvrtcApi*> nvrtc = ::sluice::GetNvrtc(); \
    if (!nvrtc.ok()) GTEST_SKIP() << nvrtc.status().message();            \
  } while (0)

#endif  // SLUICE_TESTS_KERNELS_NVRTC_REQUIRED_H_
