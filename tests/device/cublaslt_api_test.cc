// device/cuda/cublaslt_api.h: cuBLASLt is loaded when asked for, with every
// entry point FusedMatMul calls. Needs no GPU: the library loads and
// resolves without one. (That nothing links it is CublasApiTest's
// NotLoadedUntilAskedFor: libcublas is what would pull libcublasLt in.)
#ifdef SLUICE_WITH_CUDA

#include "device/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include "gtest/gtest.h"

namespace sluice::cublaslt_api_test {
namespace {

TEST(CublasLtApiTest, LoadsOnceAndResolvesEveryEntryPoint) {
  absl::StatusOr<const CublasLtApi*> api = LoadCublasLt();
  ASSERT_TRUE(api.ok()) << api.status();
  void* lib = dlopen(CublasLtLibraryName(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr) << CublasLtLibraryName() << " is not mapped";
  if (lib != nullptr) dlclose(lib);
  const CublasLtApi& a = **api;
  for (const void* fn :
       {reinterpret_cast<const void*>(a.Create),
        reinterpret_cast<const void*>(a.Destroy),
        reinterpret_cast<const void*>(a.MatmulDescCreate),
        reinterpret_cast<const void*>(a.MatmulDescDestroy),
        reinterpret_cast<const void*>(a.MatmulDescSetAttribute),
        reinterpret_cast<const void*>(a.MatrixLayoutCreate),
        reinterpret_cast<const void*>(a.MatrixLayoutDestroy),
        reinterpret_cast<const void*>(a.MatmulPreferenceCreate),
        reinterpret_cast<const void*>(a.MatmulPreferenceDestroy),
        reinterpret_cast<const void*>(a.MatmulPreferenceSetAttribute),
        reinterpret_cast<const void*>(a.MatmulAlgoGetHeuristic),
        reinterpret_cast<const void*>(a.Matmul),
        reinterpret_cast<const void*>(a.GetStatusName),
        reinterpret_cast<const void*>(a.GetStatusString)}) {
    EXPECT_NE(fn, nullptr);
  }
  absl::StatusOr<const CublasLtApi*> again = LoadCublasLt();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);
}

TEST(CublasLtApiTest, StatusNamesTheCallAndNotSupportedIsUnimplemented) {
  EXPECT_TRUE(CublasLtStatus(CUBLAS_STATUS_SUCCESS, "cublasLtMatmul").ok());
  absl::Status s = CublasLtStatus(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("cublasLtMatmul: CUBLAS_STATUS_INVALID_VALUE"),
            std::string::npos)
      << s;
  absl::Status refused =
      CublasLtStatus(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul");
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented) << refused;
}

}  // namespace
}  // namespace sluice::cublaslt_api_test

#endif  // SLUICE_WITH_CUDA
