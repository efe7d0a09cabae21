// cuBLASLt loaded at run time, the way cublas_api.h loads cuBLAS: linking
// libcublasLt costs every process about 200 MB of resident memory and its
// start-up relocations, so sluice resolves the few entry points FusedMatMul
// uses (kernels/cuda/cublaslt_matmul.h) from libcublasLt.so.<major> the
// first time a kernel needs them. Only device/cuda and kernels/cuda include
// this.
//
//   ASSIGN_OR_RETURN(const CublasLtApi* lt, LoadCublasLt());
//   cublasLtHandle_t handle;
//   RETURN_IF_ERROR(CublasLtStatus(lt->Create(&handle), "cublasLtCreate"));
//
// LoadCublasLt is thread-safe; the library stays loaded for the process.
#ifndef SLUICE_DEVICE_CUDA_CUBLASLT_API_H_
#define SLUICE_DEVICE_CUDA_CUBLASLT_API_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cublasLt.h"

namespace sluice {

// The cuBLASLt entry points sluice calls, with their exported types.
struct CublasLtApi {
  decltype(&cublasLtCreate) Create = nullptr;
  decltype(&cublasLtDestroy) Destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute =
      nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&cublasLtMatmul) Matmul = nullptr;
  decltype(&cublasLtGetStatusName) GetStatusName = nullptr;
  decltype(&cublasLtGetStatusString) GetStatusString = nullptr;
};

// The library's file name: libcublasLt.so.<the major version built against>.
const char* CublasLtLibraryName();

// Loads the library and resolves every entry point, once per process.
// FAILED_PRECONDITION naming the library and the loader's reason (not
// installed, not on the library path, a symbol missing) when it cannot;
// the same answer on every call.
absl::StatusOr<const CublasLtApi*> LoadCublasLt();

// OK for CUBLAS_STATUS_SUCCESS; otherwise INTERNAL naming `what` and the
// status (its name when the library is loaded). NOT_SUPPORTED, which
// cuBLASLt answers for a problem or epilogue it does not run, becomes
// UNIMPLEMENTED, so callers can tell "use another path" from a failure.
absl::Status CublasLtStatus(cublasStatus_t s, std::string_view what);

}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDA_CUBLASLT_API_H_
