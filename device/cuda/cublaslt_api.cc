#include "device/cuda/cublaslt_api.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "device/dynamic_library.h"

namespace sluice {
namespace {

#define SLUICE_LT_STR2(x) #x
#define SLUICE_LT_STR(x) SLUICE_LT_STR2(x)

absl::StatusOr<CublasLtApi> LoadCublasLtOnce() {
  absl::StatusOr<DynamicLibrary> lib =
      DynamicLibrary::Open({CublasLtLibraryName()});
  if (!lib.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot load cuBLASLt (", CublasLtLibraryName(), "), which the fused "
        "MatMul kernel needs: ", lib.status().message(),
        "; install it (pip install sluice[cuda], or nvidia-cublas, in this "
        "Python environment; or the CUDA toolkit's cuBLAS, its folder on "
        "LD_LIBRARY_PATH)"));
  }
  CublasLtApi a;
  lib->Bind("cublasLtCreate", &a.Create)
      .Bind("cublasLtDestroy", &a.Destroy)
      .Bind("cublasLtMatmulDescCreate", &a.MatmulDescCreate)
      .Bind("cublasLtMatmulDescDestroy", &a.MatmulDescDestroy)
      .Bind("cublasLtMatmulDescSetAttribute", &a.MatmulDescSetAttribute)
      .Bind("cublasLtMatrixLayoutCreate", &a.MatrixLayoutCreate)
      .Bind("cublasLtMatrixLayoutDestroy", &a.MatrixLayoutDestroy)
      .Bind("cublasLtMatmulPreferenceCreate", &a.MatmulPreferenceCreate)
      .Bind("cublasLtMatmulPreferenceDestroy", &a.MatmulPreferenceDestroy)
      .Bind("cublasLtMatmulPreferenceSetAttribute",
            &a.MatmulPreferenceSetAttribute)
      .Bind("cublasLtMatmulAlgoGetHeuristic", &a.MatmulAlgoGetHeuristic)
      .Bind("cublasLtMatmul", &a.Matmul)
      .Bind("cublasLtGetStatusName", &a.GetStatusName)
      .Bind("cublasLtGetStatusString", &a.GetStatusString);
  if (absl::Status s = lib->CheckAllBound(); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        s.message(),
        ": the cuBLASLt found is not the one sluice was built against"));
  }
  lib->KeepOpen();  // kernels hold its functions for the process
  return a;
}

}  // namespace

const char* CublasLtLibraryName() {
  return "libcublasLt.so." SLUICE_LT_STR(CUBLAS_VER_MAJOR);
}

absl::StatusOr<const CublasLtApi*> LoadCublasLt() {
  static const absl::StatusOr<CublasLtApi>* const loaded =
      new absl::StatusOr<CublasLtApi>(LoadCublasLtOnce());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

absl::Status CublasLtStatus(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string name = absl::StrCat("cuBLASLt status ", static_cast<int>(s));
  if (absl::StatusOr<const CublasLtApi*> api = LoadCublasLt(); api.ok()) {
    name = absl::StrCat((*api)->GetStatusName(s), " (",
                        (*api)->GetStatusString(s), ")");
  }
  const std::string message =
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ", name);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) return absl::UnimplementedError(message);
  return absl::InternalError(message);
}

}  // namespace sluice
