// Device specs: the planning-string parser, reserves, links, real devices.
#include "placer/device_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::device_spec_test {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMiB = int64_t{1} << 20;

TEST(DeviceSpecTest, ParsesCountedGpus) {
  absl::StatusOr<DeviceTopology> t = ParseDeviceSpecs("4xgpu:80GiB");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->num_devices(), 4);
  EXPECT_EQ(t->devices[3].name, "/gpu:3");
  EXPECT_EQ(t->devices[0].memory_limit, 80 * kGiB);
  EXPECT_EQ(t->devices[0].memory_budget, 80 * kGiB - 4 * kGiB);  // 5% reserve
  EXPECT_DOUBLE_EQ(t->devices[0].flops_per_s, kGpuFp32FlopsPerSecond);
  EXPECT_EQ(t->link(0, 1).kind, LinkKind::kNvlinkPeer);
  EXPECT_EQ(t->link(2, 2).kind, LinkKind::kSame);
  EXPECT_EQ(t->TransferSeconds(1, 1, kGiB), 0);
  EXPECT_NEAR(t->TransferSeconds(0, 1, 394'000'000), 1e-3 + 8e-6, 1e-9);
}

TEST(DeviceSpecTest, ParsesGpusAndUnlimitedCpu) {
  absl::StatusOr<DeviceTopology> t = ParseDeviceSpecs("2xgpu:16GiB, cpu");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->num_devices(), 3);
  EXPECT_EQ(t->devices[2].name, "/cpu:0");
  EXPECT_EQ(t->devices[2].memory_budget, kUnlimitedBudget);
  EXPECT_EQ(t->link(0, 2).kind, LinkKind::kPcie);
  EXPECT_EQ(t->link(2, 1).bytes_per_s, kPcieBytesPerSecond);
}

TEST(DeviceSpecTest, ParsesMixedSizesAndUnits) {
  absl::StatusOr<DeviceTopology> t =
      ParseDeviceSpecs("gpu:80GiB,gpu:40G,cpu:512MiB");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->devices[1].memory_limit, 40 * kGiB);
  EXPECT_EQ(t->devices[2].memory_limit, 512 * kMiB);
  EXPECT_EQ(t->devices[2].memory_budget, 512 * kMiB - 64 * kMiB);
  EXPECT_EQ(*ParseBytes("1.5TB"), 1'500'000'000'000);
  EXPECT_EQ(*ParseBytes("4096"), 4096);
}

TEST(DeviceSpecTest, NoPeerAccessGoesThroughHost) {
  absl::StatusOr<DeviceTopology> t =
      ParseDeviceSpecs("2xgpu:1GiB", /*gpu_peer_access=*/false);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->link(0, 1).kind, LinkKind::kHostStaged);
}

TEST(DeviceSpecTest, BadSpecsNameTheItem) {
  struct Case {
    const char* spec;
    const char* message;
  } cases[] = {
      {"gpu", "a GPU needs a memory size"},
      {"2xtpu:1GiB", "unknown device type"},
      {"gpu:lots", "no number"},
      {"gpu:1XB", "unknown unit"},
      {"0xgpu:1GiB", "count before 'x'"},
      {"gpu:1GiB,,cpu", "empty item"},
      {"", "empty device spec"},
      {"gpu:1:2", "too many ':'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<DeviceTopology> t = ParseDeviceSpecs(c.spec);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_THAT(t.status().message(), HasSubstr(c.message)) << c.spec;
  }
}

TEST(DeviceSpecTest, ReserveIsFivePercentAtLeast64MiBAtMostAQuarter) {
  EXPECT_EQ(WorkspaceReserve(0), 0);
  EXPECT_EQ(WorkspaceReserve(80 * kGiB), 4 * kGiB);
  EXPECT_EQ(WorkspaceReserve(kGiB), 64 * kMiB);
  EXPECT_EQ(WorkspaceReserve(100 * kMiB), 25 * kMiB);
}

TEST(DeviceSpecTest, HumanUnits) {
  EXPECT_EQ(HumanBytes(3 * kGiB + 900 * kMiB), "3.9 GiB");
  EXPECT_EQ(HumanBytes(100), "100 B");
  EXPECT_EQ(HumanSeconds(1.2e-3), "1.20 ms");
  EXPECT_EQ(HumanSeconds(35e-6), "35.0 us");
}

}  // namespace
}  // namespace sluice::device_spec_test
