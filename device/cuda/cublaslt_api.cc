#include "device/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

#define SLUICE_LT_STR2(x) #x
#define SLUICE_LT_STR(x) SLUICE_LT_STR2(x)

struct Loaded {
  CublasLtApi api;
  absl::Status status;
};

template <typename Fn>
absl::Status Resolve(void* lib, const char* symbol, Fn* out) {
  dlerror();
  void* p = dlsym(lib, symbol);
  if (p == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        CublasLtLibraryName(), " has no ", symbol, " (",
        why != nullptr ? why : "null symbol",
        "): the cuBLASLt found is not the one sluice was built against"));
  }
  *out = reinterpret_cast<Fn>(p);
  return absl::OkStatus();
}

Loaded LoadOnce() {
  Loaded loaded;
  void* lib = dlopen(CublasLtLibraryName(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    loaded.status = absl::FailedPreconditionError(absl::StrCat(
        "cannot load cuBLASLt (", CublasLtLibraryName(), "), which the fused "
        "MatMul kernel needs: ", why != nullptr ? why : "unknown reason",
        "; install the CUDA toolkit's cuBLAS or add its folder to "
        "LD_LIBRARY_PATH"));
    return loaded;
  }
  CublasLtApi& a = loaded.api;
  for (absl::Status s : {
           Resolve(lib, "cublasLtCreate", &a.Create),
           Resolve(lib, "cublasLtDestroy", &a.Destroy),
           Resolve(lib, "cublasLtMatmulDescCreate", &a.MatmulDescCreate),
           Resolve(lib, "cublasLtMatmulDescDestroy", &a.MatmulDescDestroy),
           Resolve(lib, "cublasLtMatmulDescSetAttribute",
                   &a.MatmulDescSetAttribute),
           Resolve(lib, "cublasLtMatrixLayoutCreate", &a.MatrixLayoutCreate),
           Resolve(lib, "cublasLtMatrixLayoutDestroy", &a.MatrixLayoutDestroy),
           Resolve(lib, "cublasLtMatmulPreferenceCreate",
                   &a.MatmulPreferenceCreate),
           Resolve(lib, "cublasLtMatmulPreferenceDestroy",
                   &a.MatmulPreferenceDestroy),
           Resolve(lib, "cublasLtMatmulPreferenceSetAttribute",
                   &a.MatmulPreferenceSetAttribute),
           Resolve(lib, "cublasLtMatmulAlgoGetHeuristic",
                   &a.MatmulAlgoGetHeuristic),
           Resolve(lib, "cublasLtMatmul", &a.Matmul),
           Resolve(lib, "cublasLtGetStatusName", &a.GetStatusName),
           Resolve(lib, "cublasLtGetStatusString", &a.GetStatusString),
       }) {
    if (!s.ok()) {
      loaded.status = s;
      return loaded;
    }
  }
  // The handle stays open for the process: kernels hold its functions.
  return loaded;
}

}  // namespace

const char* CublasLtLibraryName() {
  return "libcublasLt.so." SLUICE_LT_STR(CUBLAS_VER_MAJOR);
}

absl::StatusOr<const CublasLtApi*> LoadCublasLt() {
  static const Loaded* const loaded = new Loaded(LoadOnce());
  if (!loaded->status.ok()) return loaded->status;
  return &loaded->api;
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
