// device/cuda/cublas_api.h: cuBLAS is loaded when asked for, not with the
// process. Needs no GPU: the library loads and resolves without one.
#ifdef SLUICE_WITH_CUDA

#include "device/cuda/cublas_api.h"

#include <dlfcn.h>

#include "gtest/gtest.h"

namespace sluice::cublas_api_test {
namespace {

bool CublasIsMapped() {
  void* lib = dlopen(CublasLibraryName(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return false;
  dlclose(lib);  // drops only the reference RTLD_NOLOAD took
  return true;
}

// Looked at while the process starts (static initialisation, before main
// and any test), so it sees the process as linking left it also where the
// whole binary runs in one process and an earlier test has loaded cuBLAS
// (scripts/gpu_suite.sh; CTest runs each test in a process of its own).
const bool kCublasMappedAtStart = CublasIsMapped();

TEST(CublasApiTest, NotLoadedUntilAskedFor) {
  EXPECT_FALSE(kCublasMappedAtStart)
      << CublasLibraryName() << " is loaded before LoadCublas(): something "
      << "links it, and every process pays ~210 MB for it at start";
}

TEST(CublasApiTest, LoadsOnceAndResolvesEveryEntryPoint) {
  absl::StatusOr<const CublasApi*> api = LoadCublas();
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_TRUE(CublasIsMapped());
  const CublasApi& a = **api;
  for (const void* fn :
       {reinterpret_cast<const void*>(a.Create),
        reinterpret_cast<const void*>(a.Destroy),
        reinterpret_cast<const void*>(a.SetStream),
        reinterpret_cast<const void*>(a.SetWorkspace),
        reinterpret_cast<const void*>(a.SetMathMode),
        reinterpret_cast<const void*>(a.GemmEx),
        reinterpret_cast<const void*>(a.GemmStridedBatchedEx),
        reinterpret_cast<const void*>(a.GetStatusName),
        reinterpret_cast<const void*>(a.GetStatusString)}) {
    EXPECT_NE(fn, nullptr);
  }
  absl::StatusOr<const CublasApi*> again = LoadCublas();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);
}

TEST(CublasApiTest, StatusNamesTheCallAndTheCublasError) {
  EXPECT_TRUE(CublasStatus(CUBLAS_STATUS_SUCCESS, "cublasGemmEx").ok());
  absl::Status s = CublasStatus(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGemmEx");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("cublasGemmEx: CUBLAS_STATUS_NOT_INITIALIZED"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace sluice::cublas_api_test

#endif  // SLUICE_WITH_CUDA
