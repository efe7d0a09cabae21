// device/dynamic_library.h on the C library's own shared objects (libm),
// which every Linux machine has: no CUDA needed.
#include "device/dynamic_library.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::dynamic_library_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kLibm[] = "libm.so.6";
constexpr char kMissing[] = "libsluice-no-such-library.so.1";

TEST(DynamicLibraryTest, OpensLibmAndBindsAFunctionThatWorks) {
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::Open({kLibm});
  ASSERT_TRUE(lib.ok()) << lib.status();
  EXPECT_EQ(lib->name(), kLibm);
  EXPECT_THAT(lib->path(), HasSubstr("libm"));
  double (*cosine)(double) = nullptr;
  lib->Bind("cos", &cosine);
  ASSERT_TRUE(lib->CheckAllBound().ok()) << lib->CheckAllBound();
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  EXPECT_DOUBLE_EQ(cosine(1.0), std::cos(1.0));
}

TEST(DynamicLibraryTest, TakesTheFirstNameThatLoads) {
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::Open({kMissing, kLibm});
  ASSERT_TRUE(lib.ok()) << lib.status();
  EXPECT_EQ(lib->name(), kLibm);
}

TEST(DynamicLibraryTest, AMissingLibraryIsNotFoundNamingEveryNameTried) {
  absl::StatusOr<DynamicLibrary> one = DynamicLibrary::Open({kMissing});
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(one.status().message(), HasSubstr(kMissing));

  absl::StatusOr<DynamicLibrary> two =
      DynamicLibrary::Open({kMissing, "libsluice-also-missing.so"});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(two.status().message(), HasSubstr(kMissing));
  EXPECT_THAT(two.status().message(), HasSubstr("libsluice-also-missing.so"));
}

TEST(DynamicLibraryTest, MissingSymbolsAreNamedWithTheLibrary) {
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::Open({kLibm});
  ASSERT_TRUE(lib.ok()) << lib.status();
  double (*cosine)(double) = nullptr;
  void (*absent)() = +[] {};  // not null before
  void (*also_absent)() = nullptr;
  lib->Bind("sluice_no_such_symbol", &absent)
      .Bind("cos", &cosine)
      .Bind("sluice_nor_this", &also_absent);
  EXPECT_EQ(absent, nullptr);  // a miss clears the slot
  EXPECT_NE(cosine, nullptr);
  EXPECT_THAT(lib->missing_symbols(),
              ElementsAre("sluice_no_such_symbol", "sluice_nor_this"));
  absl::Status s = lib->CheckAllBound();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("libm"));
  EXPECT_THAT(s.message(), HasSubstr("lacks sluice_no_such_symbol, sluice_nor_this"));

  absl::StatusOr<void*> one = lib->Symbol("sluice_no_such_symbol");
  EXPECT_EQ(one.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(one.status().message(), HasSubstr("sluice_no_such_symbol"));
}

TEST(DynamicLibraryTest, AMovedLibraryKeepsItsHandleAndTheOldOneHasNone) {
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::Open({kLibm});
  ASSERT_TRUE(lib.ok()) << lib.status();
  DynamicLibrary moved = *std::move(lib);
  EXPECT_TRUE(moved.Symbol("cos").ok());
  EXPECT_EQ(lib->Symbol("cos").status().code(),  // NOLINT: moved-from on purpose
            absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(moved.KeepOpen(), nullptr);
}

// Package roots laid out as pip installs NVIDIA's packages
// (root/nvidia/<package>/lib/), in a scratch folder of this test's own; the
// roots are cleared again afterwards.
class PackageRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = std::filesystem::path(::testing::TempDir()) /
               absl::StrCat("sluice_package_roots_", getpid());
    std::filesystem::remove_all(scratch_);
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override {
    DynamicLibrary::SetPackageRoots({});
    std::filesystem::remove_all(scratch_);
  }
  // Makes root/nvidia/<package>/lib and returns it.
  std::filesystem::path PackageLib(const std::string& root, const std::string& package) {
    std::filesystem::path lib = scratch_ / root / "nvidia" / package / "lib";
    std::filesystem::create_directories(lib);
    return lib;
  }
  // A copy of the C library's libm, a real library to load, at `path`.
  static void CopyLibm(const std::filesystem::path& path) {
    absl::StatusOr<DynamicLibrary> libm = DynamicLibrary::Open({kLibm});
    ASSERT_TRUE(libm.ok()) << libm.status();
    std::filesystem::copy_file(libm->path(), path);
  }
  std::string Root(const std::string& name) const { return (scratch_ / name).string(); }

  std::filesystem::path scratch_;
};

TEST_F(PackageRootsTest, ListsEachRootsPackageLibFoldersInRootOrderThenByName) {
  const std::filesystem::path b_cudnn = PackageLib("b", "cudnn");
  const std::filesystem::path b_cu13 = PackageLib("b", "cu13");
  const std::filesystem::path a_nccl = PackageLib("a", "nccl");
  std::filesystem::create_directories(scratch_ / "a" / "nvidia" / "no_lib_folder");
  std::filesystem::create_directories(scratch_ / "no_nvidia");
  DynamicLibrary::SetPackageRoots({Root("b"), Root("no_nvidia"), Root("a"), Root("absent")});
  EXPECT_THAT(DynamicLibrary::PackageLibraryDirs(),
              ElementsAre(b_cu13.string(), b_cudnn.string(), a_nccl.string()));
  DynamicLibrary::SetPackageRoots({});
  EXPECT_THAT(DynamicLibrary::PackageLibraryDirs(), IsEmpty());
}

TEST_F(PackageRootsTest, AnInstalledPackagesCopyWinsOverTheLoadersOwn) {
  const std::filesystem::path lib = PackageLib("site", "cu13");
  CopyLibm(lib / kLibm);
  DynamicLibrary::SetPackageRoots({Root("site")});
  absl::StatusOr<DynamicLibrary> opened = DynamicLibrary::Open({kLibm});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->name(), kLibm);
  EXPECT_THAT(opened->path(), StartsWith(lib.string()));
  double (*cosine)(double) = nullptr;
  opened->Bind("cos", &cosine);
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
}

TEST_F(PackageRootsTest, ANameNoPackageHasComesFromTheLoader) {
  PackageLib("site", "cu13");
  DynamicLibrary::SetPackageRoots({Root("site")});
  absl::StatusOr<DynamicLibrary> opened = DynamicLibrary::Open({kLibm});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_THAT(opened->path(), Not(StartsWith(scratch_.string())));
}

TEST_F(PackageRootsTest, EveryBareNameIsLookedForInThePackagesBeforeAnyInTheLoader) {
  // The first name loads through the loader, the second only from the
  // package: the package's copy is taken.
  const std::filesystem::path lib = PackageLib("site", "cudnn");
  CopyLibm(lib / "libsluice-packaged-only.so.9");
  DynamicLibrary::SetPackageRoots({Root("site")});
  absl::StatusOr<DynamicLibrary> opened =
      DynamicLibrary::Open({kLibm, "libsluice-packaged-only.so.9"});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->name(), "libsluice-packaged-only.so.9");
}

TEST_F(PackageRootsTest, NotFoundNamesTheFoldersSearchedAndACopyThatDidNotLoad) {
  const std::filesystem::path lib = PackageLib("site", "cu13");
  {
    std::FILE* f = std::fopen((lib / "libsluice-broken.so.1").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not an ELF file", f);
    std::fclose(f);
  }
  DynamicLibrary::SetPackageRoots({Root("site")});
  absl::StatusOr<DynamicLibrary> opened = DynamicLibrary::Open({"libsluice-broken.so.1"});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(opened.status().message(), HasSubstr("searched first in " + lib.string()));
  EXPECT_THAT(opened.status().message(),
              HasSubstr("passed over: " + (lib / "libsluice-broken.so.1").string()));
}

}  // namespace
}  // namespace sluice::dynamic_library_test
