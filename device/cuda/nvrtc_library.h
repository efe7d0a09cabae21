// NvrtcApi: the NVRTC (CUDA's run-time compiler) entry points sluice calls,
// resolved from libnvrtc at run time, for the CudaKernel op
// (kernels/cuda/nvrtc_kernel_cache.h). sluice has no link-time dependency
// on NVRTC, as on cuDNN (cudnn_library.h): a binary starts where it is
// missing, and only a CudaKernel node then fails, naming what was looked
// for.
//
//   ASSIGN_OR_RETURN(const NvrtcApi* nvrtc, GetNvrtc());
//   nvrtcProgram prog;
//   RETURN_IF_ERROR(nvrtc->Check(nvrtc->CreateProgram(&prog, src, "k.cu",
//                                                     0, nullptr, nullptr),
//                                "nvrtcCreateProgram"));
//
// Thread-safe: GetNvrtc loads the library once per process (the first call,
// from any thread); the NvrtcApi it returns lives for the whole process.
// NVRTC's own calls are thread-safe on distinct programs.
#ifndef SLUICE_DEVICE_CUDA_NVRTC_LIBRARY_H_
#define SLUICE_DEVICE_CUDA_NVRTC_LIBRARY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nvrtc.h"

namespace sluice {

// The files GetNvrtc tries, in order (the default linker path): the
// toolkit's major version first, then the unversioned development link.
const std::vector<std::string>& NvrtcLibraryNames();

struct NvrtcApi {
  // Set by the loader; never change afterwards.
  int major = 0, minor = 0;  // nvrtcVersion()
  std::string library;       // the file loaded
  void* dl_handle = nullptr;

  decltype(&::nvrtcVersion) Version = nullptr;
  decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&::nvrtcAddNameExpression) AddNameExpression = nullptr;
  decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&::nvrtcGetLoweredName) GetLoweredName = nullptr;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;

  // OK for NVRTC_SUCCESS; otherwise INTERNAL naming `what` and the error
  // (a compilation error is reported by the caller, with the log).
  absl::Status Check(nvrtcResult result, std::string_view what) const;
};

// Opens `path` (a soname or a file) and resolves every entry point.
// NOT_FOUND when it cannot be opened; FAILED_PRECONDITION naming the
// missing symbols. Each call opens the library again: for tests; kernels
// use GetNvrtc().
absl::StatusOr<std::unique_ptr<NvrtcApi>> LoadNvrtc(const std::string& path);

// The process-wide NVRTC: the first of NvrtcLibraryNames() that loads.
// The same error every call when none does: FAILED_PRECONDITION naming
// each file tried and why, and that CudaKernel nodes need NVRTC.
absl::StatusOr<const NvrtcApi*> GetNvrtc();

}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDA_NVRTC_LIBRARY_H_
