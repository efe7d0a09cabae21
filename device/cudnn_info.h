// CudnnInfo: whether this process can use cuDNN, and which one. sluice does
// not link cuDNN: device/cuda/cudnn_library.h opens libcudnn.so.9 at run
// time, once per process, and the GPU Conv kernels use it only when it is
// there and new enough (kMinCudnnVersion); otherwise they run sluice's own
// CUDA kernels. This header is CUDA-free, for `sluice devices` and tests.
//
//   CudnnInfo cudnn = GetCudnnInfo();
//   std::cout << (cudnn.usable ? CudnnVersionString(cudnn.version)
//                              : "not used: " + cudnn.reason);
//
// Thread-safe: the library is loaded by the first call, from any thread.
#ifndef SLUICE_DEVICE_CUDNN_INFO_H_
#define SLUICE_DEVICE_CUDNN_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice {

// The oldest cuDNN sluice uses: 9.14.0 (the GPU test machine's), as
// cudnnGetVersion() spells it (major * 10000 + minor * 100 + patch). The
// build reads newer headers; nothing newer than 9.14 offers is called.
inline constexpr int64_t kMinCudnnVersion = 91400;

struct CudnnInfo {
  // Loaded, new enough, and every entry point sluice calls resolved.
  bool usable = false;
  // cudnnGetVersion() of the library loaded; 0 when none was loaded.
  int64_t version = 0;
  // The file dlopen found ("libcudnn.so.9" resolved to a path when it can
  // be), empty when none.
  std::string library;
  // Why it is not usable (library missing, too old, a symbol missing); empty
  // when usable.
  std::string reason;
  // Entry points the library lacks (empty when all resolved).
  std::vector<std::string> missing_symbols;
};

// "9.14.0" for 91400.
inline std::string CudnnVersionString(int64_t version) {
  return absl::StrCat(version / 10000, ".", (version / 100) % 100, ".",
                      version % 100);
}

#ifdef SLUICE_WITH_CUDA
// What the process-wide loader found (device/cuda/cudnn_library.h); loads
// the library on the first call.
CudnnInfo GetCudnnInfo();
#else
inline CudnnInfo GetCudnnInfo() {
  CudnnInfo info;
  info.reason = "this build of sluice has no CUDA support";
  return info;
}
#endif  // SLUICE_WITH_CUDA

}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDNN_INFO_H_
