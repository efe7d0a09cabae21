// Where tests find their data (examples/, tests/*/testdata/) and put scratch
// files, at run time, so a build folder can be moved and run elsewhere (the
// GPU machine runs test binaries copied into .gpu/bin of a checkout).
//
//   std::string model = TestDataPath("examples/mlp.pbtxt");
//   std::filesystem::path dir = TestScratchDir() / "tensor_proto";
//
// The data root is, in order: $SLUICE_TEST_DATA_DIR (CTest sets it to the
// source tree), the nearest folder above the test binary that holds
// examples/mlp.pbtxt, then the same above the current directory. When none
// is found, the failure says so and how to fix it. Scratch space is
// $SLUICE_TEST_SCRATCH_DIR, else test_scratch/ beside the test binary (in the
// build tree), else the system temp folder. Thread-safe.
#ifndef SLUICE_TESTS_TEST_DATA_H_
#define SLUICE_TESTS_TEST_DATA_H_

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace sluice {
namespace test_data_internal {

inline constexpr char kMarker[] = "examples/mlp.pbtxt";

// The nearest of `start` and its parents that holds kMarker; "" if none.
inline std::string FindUpFrom(std::filesystem::path start) {
  std::error_code ec;
  for (std::filesystem::path p = start; !p.empty(); p = p.parent_path()) {
    if (std::filesystem::exists(p / kMarker, ec)) return p.string();
    if (p == p.root_path()) break;
  }
  return "";
}

inline std::string FindDataDir(std::string* looked) {
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) {
    // Set but wrong is an error, not a reason to guess.
    if (std::filesystem::exists(std::filesystem::path(env) / kMarker)) {
      return env;
    }
    *looked = std::string("SLUICE_TEST_DATA_DIR=") + env + " (no " + kMarker +
              " there)";
    return "";
  }
  std::error_code ec;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string dir = FindUpFrom(exe.parent_path());
    if (!dir.empty()) return dir;
  }
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (!ec) {
    std::string dir = FindUpFrom(cwd);
    if (!dir.empty()) return dir;
  }
  *looked = "above the test binary (" + exe.string() +
            ") and above the current directory (" + cwd.string() + ")";
  return "";
}

}  // namespace test_data_internal

// The folder holding examples/ and tests/ (the source tree, or a checkout).
inline const std::string& TestDataDir() {
  static const std::string* const dir = [] {
    std::string looked;
    std::string found = test_data_internal::FindDataDir(&looked);
    if (found.empty()) {
      std::fprintf(stderr,
                   "sluice tests: cannot find the test data (%s) %s; set "
                   "SLUICE_TEST_DATA_DIR to the sluice source tree\n",
                   test_data_internal::kMarker, looked.c_str());
      found = "<test data not found: set SLUICE_TEST_DATA_DIR>";
    }
    return new std::string(found);
  }();
  return *dir;
}

// TestDataDir()/`relative`. Inside a test, a missing data folder also fails
// the test with the message above.
inline std::string TestDataPath(const std::string& relative) {
  const std::string& dir = TestDataDir();
  if (dir.front() == '<' &&
      ::testing::UnitTest::GetInstance()->current_test_info() != nullptr) {
    ADD_FAILURE() << "cannot find the test data for " << relative
                  << ": set SLUICE_TEST_DATA_DIR to the sluice source tree";
  }
  return dir + "/" + relative;
}

// A folder for files tests write (created if missing).
inline std::filesystem::path TestScratchDir() {
  std::error_code ec;
  if (const char* env = std::getenv("SLUICE_TEST_SCRATCH_DIR")) {
    std::filesystem::create_directories(env, ec);
    return env;
  }
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path dir = exe.parent_path() / "test_scratch";
    if (std::filesystem::create_directories(dir, ec) || !ec) return dir;
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "sluice_test_scratch";
  std::filesystem::create_directories(dir, ec);
  return dir;
}

}  // namespace sluice

#endif  // SLUICE_TESTS_TEST_DATA_H_
