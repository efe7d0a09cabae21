// The CPU side of feeds and fetches that stay on a GPU (sluice/session.h,
// sluice/external_memory.h): external host memory as a feed, the errors a
// caller gets for GPU memory a session does not use and for fetch devices
// it does not have, and the plan cache keyed by where feeds and fetches
// are. The GPU side is gpu_device_feeds_test.cc.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/external_memory.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"

namespace sluice::device_feeds_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// y = x + x, x: float32[?,2].
constexpr char kDouble[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: -1 dim: 2 } } } }
  node { name: "y" op: "Add" input: "x" input: "x" }
  signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
)pb";

std::unique_ptr<Session> CpuSession() {
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kDouble, &def));
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  RuntimeConfig config;
  config.set_use_gpu(false);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

std::vector<float> Values(const Tensor& t) {
  auto v = t.flat<float>();
  return std::vector<float>(v.begin(), v.end());
}

TEST(ExternalMemoryTest, HostMemoryIsReadInPlaceAndReleasedWithTheLastTensor) {
  std::vector<float> data = {1, 2, 3, 4};
  std::atomic<int> released{0};
  absl::StatusOr<Tensor> t = WrapExternalMemory(
      DT_FLOAT, Shape({2, 2}), data.data(), "/cpu:0", [&] { ++released; });
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->on_host());
  EXPECT_EQ(t->raw_data(), data.data());
  EXPECT_EQ(ExternalMemoryDevice(*t), "/cpu:0");
  EXPECT_THAT(t->allocator()->Name(), HasSubstr("external memory on /cpu:0"));
  Tensor copy = t->Reshaped(Shape({4}));
  *t = Tensor();
  EXPECT_EQ(released.load(), 0);  // `copy` still shares the memory
  copy = Tensor();
  EXPECT_EQ(released.load(), 1);
}

TEST(ExternalMemoryTest, GpuMemoryIsNotHostAccessible) {
  // Never dereferenced: a GPU address is only carried.
  float* fake = reinterpret_cast<float*>(uintptr_t{0x1000});
  absl::StatusOr<Tensor> t =
      WrapExternalMemory(DT_FLOAT, Shape({4}), fake, "gpu:1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->on_host());
  EXPECT_EQ(ExternalMemoryDevice(*t), "/gpu:1");
  EXPECT_EQ(ExternalMemoryDevice(Tensor::Scalar<float>(1)), "");
}

TEST(ExternalMemoryTest, BadArgumentsAreErrorsAndReleaseNothing) {
  float x = 0;
  int released = 0;
  auto count = [&] { ++released; };
  auto bad_device = WrapExternalMemory(DT_FLOAT, Shape({1}), &x, "/tpu:0", count);
  EXPECT_EQ(bad_device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_device.status().message(), HasSubstr("external memory"));
  auto any_gpu = WrapExternalMemory(DT_FLOAT, Shape({1}), &x, "/gpu:*", count);
  EXPECT_THAT(any_gpu.status().message(), HasSubstr("not a single device"));
  auto unknown = WrapExternalMemory(DT_FLOAT, Shape({-1}), &x, "/cpu:0", count);
  EXPECT_THAT(unknown.status().message(), HasSubstr("not fully defined"));
  auto null = WrapExternalMemory(DT_FLOAT, Shape({2}), nullptr, "/gpu:0", count);
  EXPECT_THAT(null.status().message(), HasSubstr("null data"));
  auto dtype = WrapExternalMemory(DT_INVALID, Shape({1}), &x, "/cpu:0", count);
  EXPECT_THAT(dtype.status().message(), HasSubstr("invalid dtype"));
  EXPECT_EQ(released, 0);
  // No elements: a null pointer is fine.
  EXPECT_TRUE(WrapExternalMemory(DT_FLOAT, Shape({0}), nullptr, "/gpu:0").ok());
}

TEST(DeviceFeedsTest, ExternalHostMemoryIsAFeedLikeAnyHostTensor) {
  auto s = CpuSession();
  ASSERT_NE(s, nullptr);
  std::vector<float> data = {1, 2, 3, 4};
  bool released = false;
  {
    absl::StatusOr<Tensor> x = WrapExternalMemory(
        DT_FLOAT, Shape({2, 2}), data.data(), "/cpu:0",
        [&] { released = true; });
    ASSERT_TRUE(x.ok()) << x.status();
    EXPECT_EQ(s->DeviceOf(*x), "/cpu:0");
    auto out = s->Run({{"x", *x}}, {"y"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values((*out)[0]), ElementsAre(2, 4, 6, 8));
  }
  EXPECT_TRUE(released);  // the session kept nothing of it
}

TEST(DeviceFeedsTest, GpuFeedToACpuOnlySessionNamesTheDeviceAndTheSessions) {
  auto s = CpuSession();
  ASSERT_NE(s, nullptr);
  float* fake = reinterpret_cast<float*>(uintptr_t{0x1000});  // never read
  absl::StatusOr<Tensor> x =
      WrapExternalMemory(DT_FLOAT, Shape({1, 2}), fake, "/gpu:0");
  ASSERT_TRUE(x.ok()) << x.status();
  auto out = s->Run({{"x", *x}}, {"y"});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              HasSubstr("input 'x' is in the memory of /gpu:0, which this "
                        "session does not use; it uses /cpu:0 (no GPU: it "
                        "runs on the CPU only)"));
  EXPECT_EQ(s->DeviceOf(*x), "");
  // The session stays usable.
  auto ok = s->Run({{"x", Tensor::FromVector<float>({1, 2}, Shape({1, 2}))}});
  ASSERT_TRUE(ok.ok()) << ok.status();
}

TEST(DeviceFeedsTest, WrongDtypeAndShapeOfAGpuFeedAreCheckedBeforeItsDevice) {
  auto s = CpuSession();
  ASSERT_NE(s, nullptr);
  void* fake = reinterpret_cast<void*>(uintptr_t{0x1000});  // never read
  auto ints = WrapExternalMemory(DT_INT32, Shape({1, 2}), fake, "/gpu:0");
  ASSERT_TRUE(ints.ok());
  auto out = s->Run({{"x", *ints}}, {"y"});
  EXPECT_THAT(out.status().message(), HasSubstr("has dtype int32"));
  auto wide = WrapExternalMemory(DT_FLOAT, Shape({1, 3}), fake, "/gpu:0");
  ASSERT_TRUE(wide.ok());
  out = s->Run({{"x", *wide}}, {"y"});
  EXPECT_THAT(out.status().message(), HasSubstr("has shape [1,3]"));
}

TEST(DeviceFeedsTest, FetchDevicesMustBeTheSessionsOwn) {
  auto s = CpuSession();
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({1, 2}));
  StepOptions gpu;
  gpu.fetch_devices = {"/gpu:0"};
  auto out = s->Run({{"x", x}}, {"y"}, gpu);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              HasSubstr("fetch device '/gpu:0' is not a device of this "
                        "session; it uses /cpu:0"));
  StepOptions bad;
  bad.fetch_devices = {"/tpu:0"};
  out = s->Run({{"x", x}}, {"y"}, bad);
  EXPECT_THAT(out.status().message(), HasSubstr("fetch device '/tpu:0'"));
  StepOptions three;
  three.fetch_devices = {"", "", ""};
  out = s->Run({{"x", x}}, {"y", "x"}, three);
  EXPECT_THAT(out.status().message(),
              HasSubstr("fetch_devices has 3 names for 2 fetches"));
}

TEST(DeviceFeedsTest, HostFetchDevicesReturnHostTensorsWithTheSamePlan) {
  auto s = CpuSession();
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({1, 2}));
  ASSERT_TRUE(s->Run({{"x", x}}, {"y"}).ok());
  for (const char* host : {"/cpu:0", "cpu:0", ""}) {
    StepOptions options;
    options.fetch_devices = {host};
    auto out = s->Run({{"x", x}}, {"y"}, options);
    ASSERT_TRUE(out.ok()) << host << ": " << out.status();
    EXPECT_TRUE((*out)[0].on_host());
    EXPECT_THAT(Values((*out)[0]), ElementsAre(2, 4));
  }
  // The host under any name is one signature: one plan.
  EXPECT_EQ(s->stats().plans_compiled, 1);
}

TEST(DeviceFeedsTest, CopyToTheHostWorksAndToAGpuItDoesNotHaveIsAnError) {
  auto s = CpuSession();
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({1, 2}));
  auto host = s->CopyTo(x, "/cpu:0");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_NE(host->raw_data(), x.raw_data());
  EXPECT_THAT(Values(*host), ElementsAre(1, 2));
  auto gpu = s->CopyTo(x, "/gpu:0");
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(gpu.status().message(),
              HasSubstr("CopyTo: device '/gpu:0' is not a device of this "
                        "session"));
  EXPECT_THAT(s->CopyTo(Tensor(), "/cpu:0").status().message(),
              HasSubstr("empty tensor"));
}

}  // namespace
}  // namespace sluice::device_feeds_test
