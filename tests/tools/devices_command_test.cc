// Tests for `sluice devices`.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/tools_test_util.h"
#include "tools/commands.h"

namespace sluice::devices_command_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(DevicesCommandTest, ListsTheCpuAndGpusOrWhyNone) {
  CommandResult r = RunCommand(DevicesMain, {});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("CPU: "));
  EXPECT_THAT(r.out, HasSubstr("cores"));
  if (r.out.find("GPUs: ") == std::string::npos) {
    EXPECT_THAT(r.out, HasSubstr("no GPU listed: "));
  } else {
    EXPECT_THAT(r.out, HasSubstr("peer access"));
  }
}

TEST(DevicesCommandTest, PrintsJson) {
  CommandResult r = RunCommand(DevicesMain, {"--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["cpu"]["cores"].get<int>(), 0);
  EXPECT_GT(j["cpu"]["memory_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(j["gpus"].is_array());
  if (j["gpus"].empty()) {
    EXPECT_FALSE(j["no_gpu_reason"].get<std::string>().empty());
  }
}

TEST(DevicesCommandTest, ReportsTheCudnnVersionOrWhyNone) {
  CommandResult r = RunCommand(DevicesMain, {});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cuDNN: "));
  r = RunCommand(DevicesMain, {"--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["cudnn"].is_object());
  if (j["cudnn"]["usable"].get<bool>()) {
    EXPECT_THAT(j["cudnn"]["version"].get<std::string>(), HasSubstr("9."));
  } else {
    EXPECT_FALSE(j["cudnn"]["reason"].get<std::string>().empty());
  }
}

TEST(DevicesCommandTest, ShowsWhatAConfigGivesEachDevice) {
  ScratchDir dir;
  const std::string cfg = dir.Write(
      "run.pbtxt",
      "allow_growth: true\n"
      "logical_cpus { memory_limit { bytes: 1048576 } }\n"
      "logical_cpus {}\n"
      "inter_op_threads: 2\n");
  CommandResult r = RunCommand(DevicesMain, {"--config", cfg});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("config " + cfg));
  EXPECT_THAT(r.out, HasSubstr("on demand"));
  EXPECT_THAT(r.out, HasSubstr("/cpu:0: 1.0 MiB"));
  EXPECT_THAT(r.out, HasSubstr("/cpu:1: no budget"));

  r = RunCommand(DevicesMain, {"--config", cfg, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["config"]["allow_growth"].get<bool>());
  EXPECT_EQ(j["config"]["cpu_devices"].size(), 2u);
}

TEST(DevicesCommandTest, ReportsEnvironmentOverrides) {
  ScratchDir dir;
  const std::string cfg = dir.Write("run.pbtxt", "allow_growth: false\n");
  setenv("SLUICE_GPU_ALLOW_GROWTH", "true", 1);
  CommandResult r = RunCommand(DevicesMain, {"--config", cfg});
  unsetenv("SLUICE_GPU_ALLOW_GROWTH");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("environment: SLUICE_GPU_ALLOW_GROWTH sets "
                               "allow_growth to true"));
  EXPECT_THAT(r.out, HasSubstr("on demand"));
}

TEST(DevicesCommandTest, BadConfigFailsWithTheLine) {
  ScratchDir dir;
  const std::string cfg =
      dir.Write("bad.pbtxt", "allow_growth: true\nthreads: 3\n");
  CommandResult r = RunCommand(DevicesMain, {"--config", cfg});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(cfg + ":2:"));
}

TEST(DevicesCommandTest, InvalidConfigNamesTheField) {
  ScratchDir dir;
  const std::string cfg =
      dir.Write("bad.pbtxt", "gpu_memory_limit { fraction: 2 }\n");
  CommandResult r = RunCommand(DevicesMain, {"--config", cfg});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("gpu_memory_limit: fraction must be in (0, 1]"));
}

TEST(DevicesCommandTest, BadEnvironmentNamesTheVariable) {
  ScratchDir dir;
  const std::string cfg = dir.Write("ok.pbtxt", "");
  setenv("SLUICE_GPU_MEMORY_LIMIT", "plenty", 1);
  CommandResult r = RunCommand(DevicesMain, {"--config", cfg});
  unsetenv("SLUICE_GPU_MEMORY_LIMIT");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("SLUICE_GPU_MEMORY_LIMIT='plenty'"));
}

TEST(DevicesCommandTest, ConfigBrokenByTheEnvironmentSaysSo) {
  ScratchDir dir;
  const std::string cfg = dir.Write(
      "split.pbtxt",
      "gpu { index: 0 logical_devices { memory_limit { bytes: 17179869184 } } "
      "}\n");
  setenv("SLUICE_GPU_MEMORY_LIMIT", "8GiB", 1);
  CommandResult r = RunCommand(DevicesMain, {"--config", cfg});
  unsetenv("SLUICE_GPU_MEMORY_LIMIT");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("limits add up to 16.0 GiB, more than GPU 0's "
                               "memory limit of 8.0 GiB"));
  EXPECT_THAT(r.err, HasSubstr("(environment: SLUICE_GPU_MEMORY_LIMIT sets "
                               "gpu_memory_limit to 8.0 GiB"));
}

TEST(DevicesCommandTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand(DevicesMain, {"--no-such-flag"}).code, 2);
  CommandResult r = RunCommand(DevicesMain, {"--config", "/no/such.pbtxt"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("/no/such.pbtxt"));
}

TEST(DevicesCommandTest, HelpExitsZero) {
  CommandResult r = RunCommand(DevicesMain, {"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("--json"));
  EXPECT_THAT(r.out, HasSubstr("--config"));
  EXPECT_THAT(r.err, Not(HasSubstr("error")));
}

}  // namespace
}  // namespace sluice::devices_command_test
