// device/dynamic_library.h on the C library's own shared objects (libm),
// which every Linux machine has: no CUDA needed.
#include "device/dynamic_library.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

}  // namespace
}  // namespace sluice
