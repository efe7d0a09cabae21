// Page-locked host memory (device/pinned_memory.h) and the GPU's copies
// from and into it (device/gpu_device.h): one DMA, no staging, the same
// bytes as the staged copies of pageable memory. The GPU cases skip, with
// the reason, where no GPU is usable.
#include "device/pinned_memory.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "device/discovery.h"
#include "device/external_memory.h"
#include "device/gpu_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"
#include "testing/gpu_required.h"

namespace sluice::pinned_memory_test {
namespace {

using ::testing::HasSubstr;

[[maybe_unused]] bool GpuUsable(std::string* why) {
  DeviceInventory inv = DiscoverDevices();
  for (const GpuInfo& g : inv.gpus) {
    if (g.usable) return true;
  }
  *why = inv.no_gpu_reason;
  return false;
}

#define SKIP_WITHOUT_GPU()                                \
  do {                                                    \
    std::string why;                                      \
    if (!GpuUsable(&why)) SLUICE_GPU_UNAVAILABLE("no usable GPU: " + why); \
  } while (0)

// A byte pattern that differs from position to position and from seed to
// seed, so a copy of the wrong bytes (or none) shows.
[[maybe_unused]] void Fill(Tensor& t, uint8_t seed) {
  auto* p = t.data<uint8_t>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    p[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
  }
}

TEST(PinnedMemoryTest, PageableEmptyAndInvalidTensorsAreNotPageLocked) {
  Tensor pageable = *Tensor::Create(DT_FLOAT, Shape({1024}));
  EXPECT_FALSE(IsPageLocked(pageable));
  EXPECT_FALSE(IsPageLocked(*Tensor::Create(DT_FLOAT, Shape({0}))));
  EXPECT_FALSE(IsPageLocked(Tensor()));
  std::vector<float> mine(16, 1.0f);
  EXPECT_FALSE(IsPageLockedRange(mine.data(), mine.size() * sizeof(float)));
  EXPECT_FALSE(IsPageLockedRange(nullptr, 16));
}

#ifdef SLUICE_WITH_CUDA
TEST(PinnedMemoryTest, WithoutAUsableGpuPinnedAllocationFailsWithAReason) {
  std::string why;
  if (GpuUsable(&why)) GTEST_SKIP() << "a GPU is usable here";
  absl::StatusOr<void*> p = PinnedHostAllocator()->Allocate(4096);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("page-locked"));
  EXPECT_TRUE(PinnedHostAllocator()->host_accessible());
}

std::unique_ptr<GpuDevice> OneGpu() {
  RuntimeConfig config;
  config.mutable_gpu_memory_limit()->set_bytes(int64_t{1} << 30);
  auto gpus = CreateGpuDevices(config);
  EXPECT_TRUE(gpus.ok()) << gpus.status();
  if (!gpus.ok() || gpus->empty()) return nullptr;
  return std::move((*gpus)[0]);
}

TEST(PinnedMemoryTest, PinnedAllocationsAndCallersPinnedMemoryAreDetected) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<GpuDevice> gpu = OneGpu();
  ASSERT_NE(gpu, nullptr);
  absl::StatusOr<Tensor> pinned =
      Tensor::Create(DT_FLOAT, Shape({1000}), PinnedHostAllocator());
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_TRUE(pinned->on_host());
  EXPECT_TRUE(IsPageLocked(*pinned));
  // The caller's own pinned memory (as torch's pin_memory()), seen through
  // WrapExternalMemory: found by asking CUDA, not by the allocator.
  std::atomic<int> released{0};
  absl::StatusOr<Tensor> theirs = WrapExternalMemory(
      DT_FLOAT, Shape({10, 100}), pinned->raw_data(), "/cpu:0",
      [&] { ++released; });
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_NE(theirs->allocator(), PinnedHostAllocator());
  EXPECT_TRUE(IsPageLocked(*theirs));
  EXPECT_FALSE(IsPageLocked(*Tensor::Create(DT_FLOAT, Shape({1000}))));
  absl::StatusOr<Tensor> on_gpu =
      Tensor::Create(DT_FLOAT, Shape({1000}), gpu->allocator());
  ASSERT_TRUE(on_gpu.ok());
  EXPECT_FALSE(IsPageLocked(*on_gpu));  // device memory is not host memory
  *theirs = Tensor();
  EXPECT_EQ(released.load(), 1);
}

TEST(PinnedMemoryTest, PinnedCopiesGoByOneDmaAndCarryTheSameBytes) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<GpuDevice> gpu = OneGpu();
  ASSERT_NE(gpu, nullptr);
  // One byte, an odd size, and more than a staging chunk (64 MiB).
  for (int64_t n : {int64_t{1}, int64_t{4097}, (int64_t{64} << 20) + 3}) {
    SCOPED_TRACE(n);
    Tensor src = *Tensor::Create(DT_UINT8, Shape({n}), PinnedHostAllocator());
    Fill(src, static_cast<uint8_t>(n & 0xff));
    const GpuDevice::HostCopyStats before = gpu->host_copy_stats();
    absl::StatusOr<Tensor> dev = gpu->CopyToDevice(src);
    ASSERT_TRUE(dev.ok()) << dev.status();
    Tensor back = *Tensor::Create(DT_UINT8, Shape({n}), PinnedHostAllocator());
    std::memset(back.raw_data(), 0, n);
    ASSERT_TRUE(gpu->CopyDeviceToHost(*dev, &back).ok());
    GpuDevice::HostCopyStats after = gpu->host_copy_stats();
    EXPECT_EQ(after.to_device_direct - before.to_device_direct, 1);
    EXPECT_EQ(after.to_host_direct - before.to_host_direct, 1);
    EXPECT_EQ(after.to_device_staged, before.to_device_staged);
    EXPECT_EQ(after.to_host_staged, before.to_host_staged);
    EXPECT_EQ(std::memcmp(back.raw_data(), src.raw_data(), n), 0);
    // The staged path of pageable memory gives the same bytes, and says so.
    Tensor pageable = *Tensor::Create(DT_UINT8, Shape({n}));
    ASSERT_TRUE(gpu->CopyDeviceToHost(*dev, &pageable).ok());
    EXPECT_EQ(std::memcmp(pageable.raw_data(), src.raw_data(), n), 0);
    Fill(pageable, 3);
    ASSERT_TRUE(gpu->CopyHostToDevice(pageable, &*dev).ok());
    ASSERT_TRUE(gpu->CopyDeviceToHost(*dev, &back).ok());
    EXPECT_EQ(std::memcmp(back.raw_data(), pageable.raw_data(), n), 0);
    after = gpu->host_copy_stats();
    EXPECT_EQ(after.to_device_staged - before.to_device_staged, 1);
    EXPECT_EQ(after.to_host_staged - before.to_host_staged, 1);
  }
}

TEST(PinnedMemoryTest, ASourceDroppedAtOnceIsKeptUntilItsDmaIsDone) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<GpuDevice> gpu = OneGpu();
  ASSERT_NE(gpu, nullptr);
  const int64_t n = int64_t{32} << 20;
  Tensor owner = *Tensor::Create(DT_UINT8, Shape({n}), PinnedHostAllocator());
  Fill(owner, 5);
  Tensor expected = *Tensor::Create(DT_UINT8, Shape({n}));
  std::memcpy(expected.raw_data(), owner.raw_data(), n);
  std::atomic<int> released{0};
  Tensor dev = *Tensor::Create(DT_UINT8, Shape({n}), gpu->allocator());
  {
    absl::StatusOr<Tensor> src = WrapExternalMemory(
        DT_UINT8, Shape({n}), owner.raw_data(), "/cpu:0", [&] { ++released; });
    ASSERT_TRUE(src.ok());
    ASSERT_TRUE(gpu->CopyHostToDevice(*src, &dev).ok());
  }  // the caller's last reference goes here; the device holds another
  ASSERT_TRUE(gpu->Synchronize().ok());
  EXPECT_EQ(released.load(), 1);  // let go once the DMA is done
  EXPECT_EQ(gpu->host_copy_stats().to_device_direct, 1);
  Tensor back = *Tensor::Create(DT_UINT8, Shape({n}));
  ASSERT_TRUE(gpu->CopyDeviceToHost(dev, &back).ok());
  EXPECT_TRUE(TensorsEqual(back, expected));
}

TEST(PinnedMemoryTest, PinnedTensorsOutliveTheDevices) {
  SKIP_WITHOUT_GPU();
  Tensor kept;
  {
    std::unique_ptr<GpuDevice> gpu = OneGpu();
    ASSERT_NE(gpu, nullptr);
    kept = *Tensor::Create(DT_UINT8, Shape({4096}), PinnedHostAllocator());
    Fill(kept, 9);
    absl::StatusOr<Tensor> dev = gpu->CopyToDevice(kept);
    ASSERT_TRUE(dev.ok());
    ASSERT_TRUE(gpu->Synchronize().ok());
  }
  EXPECT_TRUE(IsPageLocked(kept));
  Fill(kept, 10);  // still ours to write; freed with `kept`
  EXPECT_EQ(kept.data<uint8_t>()[1], static_cast<uint8_t>((131 + 70) & 0xff));
}
#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::pinned_memory_test
