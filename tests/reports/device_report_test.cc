// Tests for reports/device_report.h: the report built from a given
// inventory, as JSON and as text, with and without a config.
#include "reports/device_report.h"

#include <sstream>
#include <string>

#include "executor/runtime_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::device_report_test {
namespace {

using ::testing::HasSubstr;

DeviceInventory NoGpu() {
  DeviceInventory inv;
  inv.cpu.model_name = "Test CPU";
  inv.cpu.cores = 4;
  inv.cpu.memory_bytes = int64_t{8} << 30;
  inv.no_gpu_reason = "no driver here";
  return inv;
}

TEST(DeviceReportTest, JsonAndTextTellTheSameInventory) {
  const DeviceReport report = BuildDeviceReport(NoGpu());
  const nlohmann::json j = DeviceReportJson(report);
  EXPECT_EQ(j["cpu"]["model_name"], "Test CPU");
  EXPECT_EQ(j["cpu"]["cores"], 4);
  EXPECT_TRUE(j["gpus"].empty());
  EXPECT_EQ(j["no_gpu_reason"], "no driver here");
  EXPECT_TRUE(j.contains("cudnn"));
  EXPECT_FALSE(j.contains("config"));
  // What a job of several processes would use: the NCCL found (or why
  // not) and the MPI library, in both forms.
  EXPECT_EQ(j["nccl"], report.nccl);
  EXPECT_FALSE(report.nccl.empty());
  EXPECT_EQ(j["mpi"], report.mpi);
  std::ostringstream text;
  PrintDeviceReport(report, text);
  EXPECT_THAT(text.str(), HasSubstr("CPU: Test CPU (4 cores, 8.0 GiB memory)"));
  EXPECT_THAT(text.str(), HasSubstr("no GPU listed: no driver here"));
  EXPECT_THAT(text.str(), HasSubstr("\nNCCL: " + report.nccl + "\n"));
  EXPECT_THAT(text.str(), HasSubstr("\nMPI: "));
}

TEST(DeviceReportTest, MpiThatDoesNotLoadHereSaysWhyInBothForms) {
  DeviceReport report = BuildDeviceReport(NoGpu());
  report.mpi.clear();
  report.mpi_unavailable = "cannot open /x/libsluice_mpi.so: libmpi.so.40: not found";
  std::ostringstream text;
  PrintDeviceReport(report, text);
  EXPECT_THAT(text.str(), HasSubstr("\nMPI: not available here (needed only for jobs "
                                    "under mpirun): cannot open /x/libsluice_mpi.so"));
  const nlohmann::json j = DeviceReportJson(report);
  EXPECT_EQ(j["mpi"], "");
  EXPECT_EQ(j["mpi_unavailable"], report.mpi_unavailable);
}

TEST(DeviceReportTest, AConfigAddsWhatEachDeviceWouldGet) {
  DeviceReport report = BuildDeviceReport(NoGpu());
  absl::StatusOr<RuntimeConfig> config =
      ParseRuntimeConfig("logical_cpus { memory_limit { bytes: 1024 } } logical_cpus {}");
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(AddConfigToDeviceReport("run.pbtxt", *config, {"an override"}, &report).ok());
  const nlohmann::json j = DeviceReportJson(report)["config"];
  EXPECT_EQ(j["path"], "run.pbtxt");
  EXPECT_EQ(j["environment_overrides"][0], "an override");
  ASSERT_EQ(j["cpu_devices"].size(), 2u);
  EXPECT_EQ(j["cpu_devices"][0]["memory_limit_bytes"], 1024);
  std::ostringstream text;
  PrintDeviceReport(report, text);
  EXPECT_THAT(text.str(), HasSubstr("config run.pbtxt:\n  environment: an override\n"));
  EXPECT_THAT(text.str(), HasSubstr("  /cpu:1: no budget\n"));
}

}  // namespace
}  // namespace sluice::device_report_test
