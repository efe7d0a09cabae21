// PlanMachineDevices: the one topology builder of sessions and `sluice place`.
#include "placer/machine_topology.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace sluice::machine_topology_test {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMiB = int64_t{1} << 20;

RuntimeConfig Config(const std::string& text) {
  RuntimeConfig c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

// Two 16 GiB GPUs with 15 GiB free; peer access only 0 -> 1.
DeviceInventory TwoGpus(bool peer_both_ways) {
  DeviceInventory inv;
  inv.cpu.cores = 8;
  for (int i = 0; i < 2; ++i) {
    GpuInfo g;
    g.index = i;
    g.name = "Fake GPU";
    g.cc_major = 9;
    g.total_memory = 16 * kGiB;
    g.free_memory = 15 * kGiB;
    inv.gpus.push_back(g);
  }
  inv.peer_access = {{true, true}, {peer_both_ways, true}};
  return inv;
}

TEST(MachineTopologyTest, CpusThenGpusWithLimits) {
  absl::StatusOr<MachineDevices> m = PlanMachineDevices(
      Config("logical_cpus {} logical_cpus { memory_limit { bytes: 1073741824 } }"
             " gpu_memory_limit { bytes: 4294967296 }"),
      TwoGpus(true));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->topology.num_devices(), 4);
  EXPECT_EQ(m->num_cpus, 2);
  EXPECT_EQ(m->topology.devices[0].name, "/cpu:0");
  EXPECT_EQ(m->topology.devices[1].memory_budget, kGiB - 64 * kMiB);
  EXPECT_DOUBLE_EQ(m->topology.devices[0].flops_per_s,
                   8 * kCpuFlopsPerSecondPerCore);
  EXPECT_EQ(m->topology.devices[3].name, "/gpu:1");
  EXPECT_EQ(m->topology.devices[3].memory_limit, 4 * kGiB);
  EXPECT_EQ(m->gpu_device(1), 3);
  ASSERT_EQ(m->gpu_specs.size(), 2u);
  EXPECT_EQ(m->gpu_specs[1].index, 1);
  EXPECT_EQ(m->gpu_specs[1].physical_index, 1);
  EXPECT_EQ(m->topology.link(0, 1).kind, LinkKind::kLocalCopy);
  EXPECT_EQ(m->topology.link(2, 3).kind, LinkKind::kNvlinkPeer);
  EXPECT_EQ(m->topology.link(0, 2).kind, LinkKind::kPcie);
}

TEST(MachineTopologyTest, ReadsThePeerMatrix) {
  absl::StatusOr<MachineDevices> m =
      PlanMachineDevices(RuntimeConfig(), TwoGpus(false));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->topology.link(1, 2).kind, LinkKind::kNvlinkPeer);
  EXPECT_EQ(m->topology.link(2, 1).kind, LinkKind::kHostStaged);
}

TEST(MachineTopologyTest, LogicalGpusShareOnePhysicalGpu) {
  absl::StatusOr<MachineDevices> m = PlanMachineDevices(
      Config("gpu { index: 0 logical_devices { memory_limit { bytes: 1073741824 } }"
             " logical_devices { memory_limit { bytes: 1073741824 } } }"
             " visible_gpus: 0"),
      TwoGpus(true));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->topology.num_devices(), 3);
  EXPECT_EQ(m->topology.link(1, 2).kind, LinkKind::kLocalCopy);
}

TEST(MachineTopologyTest, NoGpuWhenUseGpuIsFalse) {
  absl::StatusOr<MachineDevices> m =
      PlanMachineDevices(Config("use_gpu: false"), TwoGpus(true));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->topology.num_devices(), 1);
  EXPECT_TRUE(m->gpu_specs.empty());
}

TEST(MachineTopologyTest, BadGpuIndexNamesTheField) {
  absl::StatusOr<MachineDevices> m =
      PlanMachineDevices(Config("visible_gpus: 5"), TwoGpus(true));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("visible_gpus[0]"));
}

TEST(MachineTopologyTest, UsedGpusAreThoseWithNodes) {
  absl::StatusOr<MachineDevices> m =
      PlanMachineDevices(RuntimeConfig(), TwoGpus(true));
  ASSERT_TRUE(m.ok()) << m.status();
  Placement p;
  p.device_of_node = {0, 2, 2, 0};
  EXPECT_EQ(m->UsedGpus(p), std::vector<int>({1}));
  p.device_of_node = {0, 0};
  EXPECT_TRUE(m->UsedGpus(p).empty());
}

}  // namespace
}  // namespace sluice::machine_topology_test
