#include "device/cuda/cublas_api.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "device/dynamic_library.h"

namespace sluice {
namespace {

#define SLUICE_STR2(x) #x
#define SLUICE_STR(x) SLUICE_STR2(x)

// The spelled-out types must match an overload exactly, or this fails to
// compile (an address of an overload set takes the target's type).
[[maybe_unused]] constexpr CublasGemmExFn kGemmExMatches = &cublasGemmEx;
[[maybe_unused]] constexpr CublasGemmStridedBatchedExFn
    kGemmStridedBatchedExMatches = &cublasGemmStridedBatchedEx;

absl::StatusOr<CublasApi> LoadOnce() {
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::Open({CublasLibraryName()});
  if (!lib.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot load cuBLAS (", CublasLibraryName(), "), which the GPU kernels "
        "need: ", lib.status().message(),
        "; install it (pip install sluice[cuda], or nvidia-cublas, in this "
        "Python environment; or the CUDA toolkit's cuBLAS, its folder on "
        "LD_LIBRARY_PATH)"));
  }
  CublasApi a;
  lib->Bind("cublasCreate_v2", &a.Create)
      .Bind("cublasDestroy_v2", &a.Destroy)
      .Bind("cublasSetStream_v2", &a.SetStream)
      .Bind("cublasSetWorkspace_v2", &a.SetWorkspace)
      .Bind("cublasSetMathMode", &a.SetMathMode)
      .Bind("cublasGemmEx", &a.GemmEx)
      .Bind("cublasGemmStridedBatchedEx", &a.GemmStridedBatchedEx)
      .Bind("cublasGetStatusName", &a.GetStatusName)
      .Bind("cublasGetStatusString", &a.GetStatusString);
  if (absl::Status s = lib->CheckAllBound(); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        s.message(), ": the cuBLAS found is not the one sluice was built against"));
  }
  lib->KeepOpen();  // kernels hold its functions for the process
  return a;
}

}  // namespace

const char* CublasLibraryName() {
  return "libcublas.so." SLUICE_STR(CUBLAS_VER_MAJOR);
}

absl::StatusOr<const CublasApi*> LoadCublas() {
  static const absl::StatusOr<CublasApi>* const loaded =
      new absl::StatusOr<CublasApi>(LoadOnce());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

absl::Status CublasStatus(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string name = absl::StrCat("cuBLAS status ", static_cast<int>(s));
  if (absl::StatusOr<const CublasApi*> api = LoadCublas(); api.ok()) {
    name = absl::StrCat((*api)->GetStatusName(s), " (",
                        (*api)->GetStatusString(s), ")");
  }
  return absl::InternalError(
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ", name));
}

}  // namespace sluice
