// GpuTimeline: marks on a GPU's streams read back on the host's clock. The
// GPU cases skip, with the reason, where no GPU is usable.
#include "device/gpu_timeline.h"

#include <chrono>

#include "core/tensor.h"
#include "device/discovery.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"
#include "testing/gpu_required.h"

namespace sluice::gpu_timeline_test {
namespace {

#ifdef SLUICE_WITH_CUDA
double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

TEST(GpuTimelineTest, MarksAroundATransferBracketItOnTheHostClock) {
  DeviceInventory inv = DiscoverDevices();
  bool usable = false;
  for (const GpuInfo& g : inv.gpus) usable = usable || g.usable;
  if (!usable) SLUICE_GPU_UNAVAILABLE("no usable GPU: " + inv.no_gpu_reason);
  RuntimeConfig config;
  config.mutable_gpu_memory_limit()->set_bytes(int64_t{1} << 30);
  auto gpus = CreateGpuDevices(config);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  GpuDevice* gpu = (*gpus)[0].get();

  auto timeline = StartGpuTimeline(gpu);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  GpuTimeline& tl = **timeline;
  EXPECT_GE(tl.alignment_error_seconds(), 0.0);
  EXPECT_LT(tl.alignment_error_seconds(), 1e-3);

  ASSERT_TRUE(tl.Reserve(2).ok());  // the third mark makes its own event
  // 64 MiB host -> GPU: milliseconds on the host-to-device stream.
  Tensor host = *Tensor::Create(DT_FLOAT, Shape({16 << 20}));
  std::fill_n(host.data<float>(), host.NumElements(), 1.0f);
  const double before_host = SecondsSince(tl.start_time());
  auto begin = tl.Mark(GpuStream::kHostToDevice);
  ASSERT_TRUE(begin.ok()) << begin.status();
  auto dev = gpu->CopyToDevice(host);
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto end = tl.Mark(GpuStream::kHostToDevice);
  ASSERT_TRUE(end.ok());
  auto compute = tl.Mark(GpuStream::kCompute);  // ordered after the copy
  ASSERT_TRUE(compute.ok());
  ASSERT_TRUE(gpu->Synchronize().ok());
  const double after_host = SecondsSince(tl.start_time());

  auto at = tl.Resolve();
  ASSERT_TRUE(at.ok()) << at.status();
  ASSERT_EQ(at->size(), 3u);
  EXPECT_EQ(*begin, 0);
  EXPECT_EQ(*end, 1);
  const double slack = tl.alignment_error_seconds() + 2e-6;
  EXPECT_GE((*at)[0], before_host - slack);
  EXPECT_GT((*at)[1] - (*at)[0], 1e-5);  // 64 MiB takes well over 10 us
  EXPECT_LE((*at)[1], after_host + slack);
  EXPECT_GE((*at)[2], (*at)[1] - 1e-6);
}
#else
TEST(GpuTimelineTest, CpuOnlyBuildSaysSo) {
  auto timeline = StartGpuTimeline(nullptr);
  ASSERT_FALSE(timeline.ok());
  EXPECT_EQ(timeline.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(timeline.status().message(), ::testing::HasSubstr("no CUDA"));
}
#endif

}  // namespace
}  // namespace sluice::gpu_timeline_test
