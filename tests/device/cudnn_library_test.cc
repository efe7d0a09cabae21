// Tests for the cuDNN loader (device/cuda/cudnn_library.h). Loading needs
// no GPU: dlopen, dlsym and cudnnGetVersion() run on any machine with
// libcudnn.so.9, so these run on the CPU-only development machines too; they
// skip where the library is not installed.
#include <dlfcn.h>

#include <string>

#include "device/cudnn_info.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifdef SLUICE_WITH_CUDA
#include "device/cuda/cudnn_library.h"
#endif

namespace sluice::cudnn_library_test {
namespace {

using ::testing::HasSubstr;

TEST(CudnnInfoTest, VersionStringSpellsMajorMinorPatch) {
  EXPECT_EQ(CudnnVersionString(91400), "9.14.0");
  EXPECT_EQ(CudnnVersionString(91901), "9.19.1");
  EXPECT_EQ(kMinCudnnVersion, 91400);
}

#ifndef SLUICE_WITH_CUDA
TEST(CudnnLibraryTest, CpuOnlyBuildSaysWhy) {
  CudnnInfo info = GetCudnnInfo();
  EXPECT_FALSE(info.usable);
  EXPECT_THAT(info.reason, HasSubstr("no CUDA support"));
}
#else

// Whether this machine has the library at all (the test's own dlopen).
bool CudnnInstalled() {
  void* h = dlopen(kCudnnLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

TEST(CudnnLibraryTest, ResolvesEveryEntryPointAndReadsTheVersion) {
  if (!CudnnInstalled()) GTEST_SKIP() << kCudnnLibraryName << " is not installed";
  CudnnInfo info;
  absl::StatusOr<std::unique_ptr<CudnnApi>> api =
      LoadCudnn(kCudnnLibraryName, kMinCudnnVersion, &info);
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_TRUE(info.usable);
  EXPECT_TRUE(info.missing_symbols.empty());
  EXPECT_GE((*api)->version, kMinCudnnVersion);
  EXPECT_LT((*api)->version, 100000);  // cuDNN 9.x
  EXPECT_EQ(info.version, (*api)->version);
  EXPECT_THAT(info.library, HasSubstr("libcudnn"));
  // The version the library reports through the resolved pointer.
  EXPECT_EQ(static_cast<int64_t>((*api)->GetVersion()), (*api)->version);
  EXPECT_STREQ((*api)->GetErrorString(CUDNN_STATUS_SUCCESS),
               "CUDNN_STATUS_SUCCESS");
  // Every entry point sluice calls, by name.
  EXPECT_GE(CudnnSymbolNames().size(), 20u);
  EXPECT_THAT(CudnnSymbolNames(),
              ::testing::Contains(std::string("cudnnConvolutionForward")));
  EXPECT_THAT(CudnnSymbolNames(),
              ::testing::Contains(std::string("cudnnConvolutionBackwardData")));
  EXPECT_THAT(CudnnSymbolNames(), ::testing::Contains(std::string(
                                      "cudnnFindConvolutionForwardAlgorithmEx")));
  EXPECT_NE((*api)->ConvolutionForward, nullptr);
  EXPECT_NE((*api)->FindConvolutionBackwardDataAlgorithmEx, nullptr);
}

TEST(CudnnLibraryTest, TheProcessWideLoaderAgrees) {
  if (!CudnnInstalled()) GTEST_SKIP() << kCudnnLibraryName << " is not installed";
  CudnnInfo info = GetCudnnInfo();
  ASSERT_TRUE(info.usable) << info.reason;
  absl::StatusOr<const CudnnApi*> api = GetCudnn();
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ((*api)->version, info.version);
  // Loaded once: the same object every call.
  EXPECT_EQ(*GetCudnn(), *api);
}

TEST(CudnnLibraryTest, AMissingLibraryIsNotFound) {
  CudnnInfo info;
  absl::StatusOr<std::unique_ptr<CudnnApi>> api =
      LoadCudnn("libsluice-no-such-cudnn.so.9", kMinCudnnVersion, &info);
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(absl::IsNotFound(api.status())) << api.status();
  EXPECT_THAT(api.status().message(), HasSubstr("libsluice-no-such-cudnn.so.9"));
  EXPECT_FALSE(info.usable);
  EXPECT_EQ(info.version, 0);
}

TEST(CudnnLibraryTest, ATooOldLibraryIsRefusedWithBothVersions) {
  if (!CudnnInstalled()) GTEST_SKIP() << kCudnnLibraryName << " is not installed";
  CudnnInfo info;
  // Pretend sluice needed cuDNN 9.99.
  absl::StatusOr<std::unique_ptr<CudnnApi>> api =
      LoadCudnn(kCudnnLibraryName, 99900, &info);
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(api.status())) << api.status();
  EXPECT_THAT(api.status().message(), HasSubstr("sluice needs 9.99.0"));
  EXPECT_THAT(api.status().message(),
              HasSubstr(CudnnVersionString(info.version)));
  EXPECT_FALSE(info.usable);
}

TEST(CudnnLibraryTest, ALibraryWithoutTheEntryPointsIsRefusedNamingThem) {
  // libm is everywhere and has none of them.
  CudnnInfo info;
  absl::StatusOr<std::unique_ptr<CudnnApi>> api =
      LoadCudnn("libm.so.6", kMinCudnnVersion, &info);
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(api.status())) << api.status();
  EXPECT_THAT(api.status().message(), HasSubstr("cudnnConvolutionForward"));
  EXPECT_EQ(info.missing_symbols.size(), CudnnSymbolNames().size());
}

#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::cudnn_library_test
