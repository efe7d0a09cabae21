#include "device/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

#define SLUICE_STR2(x) #x
#define SLUICE_STR(x) SLUICE_STR2(x)

// The spelled-out types must match an overload exactly, or this fails to
// compile (an address of an overload set takes the target's type).
[[maybe_unused]] constexpr CublasGemmExFn kGemmExMatches = &cublasGemmEx;
[[maybe_unused]] constexpr CublasGemmStridedBatchedExFn
    kGemmStridedBatchedExMatches = &cublasGemmStridedBatchedEx;

struct Loaded {
  CublasApi api;
  absl::Status status;
};

template <typename Fn>
absl::Status Resolve(void* lib, const char* symbol, Fn* out) {
  dlerror();
  void* p = dlsym(lib, symbol);
  if (p == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        CublasLibraryName(), " has no ", symbol, " (",
        why != nullptr ? why : "null symbol",
        "): the cuBLAS found is not the one sluice was built against"));
  }
  *out = reinterpret_cast<Fn>(p);
  return absl::OkStatus();
}

Loaded LoadOnce() {
  Loaded loaded;
  void* lib = dlopen(CublasLibraryName(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    loaded.status = absl::FailedPreconditionError(absl::StrCat(
        "cannot load cuBLAS (", CublasLibraryName(), "), which the GPU kernels "
        "need: ", why != nullptr ? why : "unknown reason",
        "; install the CUDA toolkit's cuBLAS or add its folder to "
        "LD_LIBRARY_PATH"));
    return loaded;
  }
  CublasApi& a = loaded.api;
  for (absl::Status s : {
           Resolve(lib, "cublasCreate_v2", &a.Create),
           Resolve(lib, "cublasDestroy_v2", &a.Destroy),
           Resolve(lib, "cublasSetStream_v2", &a.SetStream),
           Resolve(lib, "cublasSetWorkspace_v2", &a.SetWorkspace),
           Resolve(lib, "cublasSetMathMode", &a.SetMathMode),
           Resolve(lib, "cublasGemmEx", &a.GemmEx),
           Resolve(lib, "cublasGemmStridedBatchedEx", &a.GemmStridedBatchedEx),
           Resolve(lib, "cublasGetStatusName", &a.GetStatusName),
           Resolve(lib, "cublasGetStatusString", &a.GetStatusString),
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

const char* CublasLibraryName() {
  return "libcublas.so." SLUICE_STR(CUBLAS_VER_MAJOR);
}

absl::StatusOr<const CublasApi*> LoadCublas() {
  static const Loaded* const loaded = new Loaded(LoadOnce());
  if (!loaded->status.ok()) return loaded->status;
  return &loaded->api;
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
