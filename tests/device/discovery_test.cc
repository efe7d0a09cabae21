// Tests for device/discovery.h: parsing /proc text, and discovery on the
// machine the tests run on (with or without a GPU).
#include "device/discovery.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::discovery_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::IsEmpty;

constexpr char kX86CpuInfo[] =
    "processor\t: 0\n"
    "vendor_id\t: GenuineIntel\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    "\n"
    "processor\t: 1\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480+\n";

constexpr char kMemInfo[] =
    "MemTotal:       16318724 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:    8000000 kB\n";

TEST(ParseCpuInfoTest, ReadsModelCoresAndMemory) {
  CpuInfo cpu = ParseCpuInfo(kX86CpuInfo, kMemInfo, /*hardware_threads=*/8);
  EXPECT_EQ(cpu.model_name, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(cpu.cores, 8);
  EXPECT_EQ(cpu.memory_bytes, int64_t{16318724} * 1024);
  EXPECT_EQ(cpu.available_bytes, int64_t{8000000} * 1024);
}

TEST(ParseCpuInfoTest, CountsProcessorsWhenThreadsUnknown) {
  CpuInfo cpu = ParseCpuInfo(kX86CpuInfo, kMemInfo, /*hardware_threads=*/0);
  EXPECT_EQ(cpu.cores, 2);
}

TEST(ParseCpuInfoTest, FallsBackForOtherArchitectures) {
  CpuInfo arm = ParseCpuInfo("processor : 0\nHardware : BCM2835\n", "", 4);
  EXPECT_EQ(arm.model_name, "BCM2835");
  CpuInfo none = ParseCpuInfo("", "", 0);
  EXPECT_EQ(none.model_name, "unknown CPU");
  EXPECT_EQ(none.cores, 1);
  EXPECT_EQ(none.memory_bytes, 0);
}

TEST(ParseCpuInfoTest, IgnoresGarbageMemInfo) {
  CpuInfo cpu = ParseCpuInfo(kX86CpuInfo, "MemTotal: lots\nMemAvailable:\n", 1);
  EXPECT_EQ(cpu.memory_bytes, 0);
  EXPECT_EQ(cpu.available_bytes, 0);
}

TEST(ComputeCapabilityTest, SevenZeroIsTheMinimum) {
  std::string reason;
  EXPECT_TRUE(IsSupportedComputeCapability(9, 0, &reason));
  EXPECT_TRUE(IsSupportedComputeCapability(7, 0, &reason));
  EXPECT_FALSE(IsSupportedComputeCapability(6, 1, &reason));
  EXPECT_THAT(reason, HasSubstr("compute capability 6.1 is below the 7.0"));
}

TEST(CudaArchitecturesTest, NamesMachineCodeAndPtx) {
  EXPECT_EQ(DescribeCudaArchitectures("75-real,80-real,86-real,89-real,90"),
            "7.5, 8.0, 8.6, 8.9, 9.0 and PTX 9.0");
  EXPECT_EQ(DescribeCudaArchitectures("90"), "9.0 and PTX 9.0");
  EXPECT_EQ(DescribeCudaArchitectures("90-real"), "9.0");
  EXPECT_EQ(DescribeCudaArchitectures("80-virtual"), "PTX 8.0");
  EXPECT_EQ(DescribeCudaArchitectures("all-major"), "all-major");
  EXPECT_EQ(DescribeCudaArchitectures(""), "none");
}

TEST(CudaArchitecturesTest, UncoveredGpuSaysHowToRebuild) {
  GpuInfo gpu;
  gpu.index = 0;
  gpu.name = "NVIDIA Old";
  gpu.cc_major = 6;
  gpu.cc_minor = 1;
  const std::string reason =
      NotCoveredByBuildReason(gpu, false, "cudaErrorNoKernelImageForDevice");
  EXPECT_THAT(reason, HasSubstr("GPU 0 (NVIDIA Old, compute capability 6.1) "
                                "is not covered by this build of sluice "
                                "(built for "));
  EXPECT_THAT(reason, HasSubstr(CudaBuildArchitectures()));
  EXPECT_THAT(reason, HasSubstr("rebuild with -DCMAKE_CUDA_ARCHITECTURES=61"));
  EXPECT_THAT(NotCoveredByBuildReason(gpu, true, "cudaErrorUnsupportedPtxVersion"),
              HasSubstr("its driver is too old for the PTX"));
#ifndef SLUICE_WITH_CUDA
  EXPECT_EQ(CudaBuildArchitectures(), "none");
#endif
}

TEST(DiscoverDevicesTest, FindsThisMachinesCpu) {
  DeviceInventory inv = DiscoverDevices();
  EXPECT_THAT(inv.cpu.model_name, Not(IsEmpty()));
  EXPECT_GT(inv.cpu.cores, 0);
  EXPECT_GT(inv.cpu.memory_bytes, 0);
}

TEST(DiscoverDevicesTest, ListsGpusOrSaysWhyNot) {
  DeviceInventory inv = DiscoverDevices();
  if (inv.gpus.empty()) {
    EXPECT_THAT(inv.no_gpu_reason, Not(IsEmpty()));
    EXPECT_EQ(inv.no_gpu_reason.find('\n'), std::string::npos);
    EXPECT_THAT(inv.peer_access, IsEmpty());
#ifndef SLUICE_WITH_CUDA
    EXPECT_EQ(inv.no_gpu_reason, "this build of sluice has no CUDA support");
#endif
    return;
  }
  ASSERT_EQ(inv.peer_access.size(), inv.gpus.size());
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    const GpuInfo& g = inv.gpus[i];
    EXPECT_EQ(g.index, static_cast<int>(i));
    EXPECT_THAT(g.name, Not(IsEmpty()));
    EXPECT_GT(g.total_memory, 0);
    EXPECT_LE(g.free_memory, g.total_memory);
    EXPECT_GT(g.sm_count, 0);
    EXPECT_THAT(g.pci_bus_id, Not(IsEmpty()));
    EXPECT_EQ(g.usable, g.unusable_reason.empty()) << g.unusable_reason;
    ASSERT_EQ(inv.peer_access[i].size(), inv.gpus.size());
    EXPECT_TRUE(inv.peer_access[i][i]);
  }
}

}  // namespace
}  // namespace sluice::discovery_test
