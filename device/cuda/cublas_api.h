// cuBLAS loaded when a GPU is first set up, not when the process starts.
// Linking libcublas costs every process about 210 MB of resident memory and
// 0.2 s before main (libcublasLt's relocations), `sluice --help` included;
// sluice resolves the few entry points it uses from libcublas.so.<major>
// the first time a GpuDevice needs them. Only device/cuda and kernels/cuda
// include this.
//
//   ASSIGN_OR_RETURN(const CublasApi* cublas, LoadCublas());
//   cublas->GemmEx(handle, ...);
//
// LoadCublas is thread-safe; the library stays loaded for the process.
#ifndef SLUICE_DEVICE_CUDA_CUBLAS_API_H_
#define SLUICE_DEVICE_CUDA_CUBLAS_API_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cublas_v2.h"

namespace sluice {

// cublasGemmEx and cublasGemmStridedBatchedEx are overloaded in C++ (an
// int64_t form that calls the _64 entry points): the int forms, spelled out.
using CublasGemmExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void*, const void*, cudaDataType, int, const void*, cudaDataType,
    int, const void*, void*, cudaDataType, int, cublasComputeType_t,
    cublasGemmAlgo_t);
using CublasGemmStridedBatchedExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void*, const void*, cudaDataType, int, long long, const void*,
    cudaDataType, int, long long, const void*, void*, cudaDataType, int,
    long long, int, cublasComputeType_t, cublasGemmAlgo_t);

// The cuBLAS entry points sluice calls, with the exported names' types
// (cublas_v2.h maps cublasCreate to cublasCreate_v2 and so on).
struct CublasApi {
  decltype(&cublasCreate_v2) Create = nullptr;
  decltype(&cublasDestroy_v2) Destroy = nullptr;
  decltype(&cublasSetStream_v2) SetStream = nullptr;
  decltype(&cublasSetWorkspace_v2) SetWorkspace = nullptr;
  decltype(&cublasSetMathMode) SetMathMode = nullptr;
  CublasGemmExFn GemmEx = nullptr;
  CublasGemmStridedBatchedExFn GemmStridedBatchedEx = nullptr;
  decltype(&cublasGetStatusName) GetStatusName = nullptr;
  decltype(&cublasGetStatusString) GetStatusString = nullptr;
};

// The library's file name: libcublas.so.<the major version built against>.
const char* CublasLibraryName();

// Loads the library and resolves every entry point, once per process.
// FAILED_PRECONDITION naming the library and the loader's reason (not
// installed, not on the library path, a symbol missing) when it cannot;
// the same answer on every call.
absl::StatusOr<const CublasApi*> LoadCublas();

// OK for CUBLAS_STATUS_SUCCESS; otherwise INTERNAL naming `what` and the
// cuBLAS status. Needs LoadCublas() to have succeeded for the status's name.
absl::Status CublasStatus(cublasStatus_t s, std::string_view what);

}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDA_CUBLAS_API_H_
