// Helpers for driving `sluice` commands in tests: run a command on a vector
// of arguments and capture its exit code, stdout and stderr; write scratch
// files into a per-test temporary folder.
#ifndef SLUICE_TESTS_TOOLS_TOOLS_TEST_UTIL_H_
#define SLUICE_TESTS_TOOLS_TOOLS_TEST_UTIL_H_

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_data.h"

namespace sluice {

struct CommandResult {
  int code = -1;
  std::string out;
  std::string err;
};

using CommandFn = std::function<int(const std::vector<std::string>&,
                                    std::ostream&, std::ostream&)>;

inline CommandResult RunCommand(const CommandFn& fn,
                                const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CommandResult r;
  r.code = fn(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::string ExampleFile(const std::string& name) {
  return TestDataPath("examples/" + name);
}

// A fresh folder under the system temp dir, removed by the destructor.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("sluice_") + info->test_suite_name() + "_" +
             info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }

  std::string Path(const std::string& name) const {
    return (path_ / name).string();
  }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::ofstream(Path(name), std::ios::binary) << contents;
    return Path(name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace sluice

#endif  // SLUICE_TESTS_TOOLS_TOOLS_TEST_UTIL_H_
