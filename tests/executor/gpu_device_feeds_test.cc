// Feeds and fetches that stay on a GPU (sluice/session.h): a feed in GPU
// memory is read there with no copy in, a fetch left on a GPU is the GPU
// buffer, external memory (WrapExternalMemory) is used in place and
// released when sluice is done with it, feeds on another GPU or read on
// the CPU are copied, and the plan cache tells the signatures apart.
// Every test skips, with the reason, where no GPU is usable.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/discovery.h"
#include "device/external_memory.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "tests/executor/gpu_test_util.h"

namespace sluice::gpu_device_feeds_test {
namespace {

using ::testing::HasSubstr;

// z = relu(x * c) + x, x: float32[?,64], c: float32[64]; elementwise only,
// so the GPU's result is the reference's to rounding.
[[maybe_unused]] GraphDef ModelDef() {
  GraphDef def;
  std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 64 } } } }
    node { name: "c" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 } } } } }
    node { name: "m" op: "Mul" input: "x" input: "c" }
    node { name: "r" op: "Relu" input: "m" }
    node { name: "z" op: "Add" input: "r" input: "x" }
    signature { inputs { name: "x" } outputs { name: "z" tensor: "z" } }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  TensorProto* c = def.mutable_node(1)->mutable_attr()->at("value").mutable_tensor();
  for (int i = 0; i < 64; ++i) c->add_float_val(0.25f * static_cast<float>(i % 7) - 0.5f);
  return def;
}

[[maybe_unused]] std::vector<float> Reference(const std::vector<float>& x) {
  std::vector<float> z(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float c = 0.25f * static_cast<float>(i % 64 % 7) - 0.5f;
    z[i] = std::max(x[i] * c, 0.0f) + x[i];
  }
  return z;
}

[[maybe_unused]] std::vector<float> Input(int rows) {
  std::vector<float> x(rows * 64);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 7) % 29) / 29.0f - 0.4f;
  }
  return x;
}

[[maybe_unused]] absl::StatusOr<std::unique_ptr<Session>> MakeSession(
    const GraphDef& def, const RuntimeConfig& config = {}) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  if (!g.ok()) return g.status();
  return Session::Create(*std::move(g), config);
}

// `got` (anywhere in the session's memory) against `want`.
[[maybe_unused]] void ExpectValues(Session& s, const Tensor& got,
                                   const std::vector<float>& want) {
  absl::StatusOr<Tensor> host = s.CopyTo(got, "/cpu:0");
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_EQ(host->NumElements(), static_cast<int64_t>(want.size()));
  auto g = host->flat<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], 1e-6f * (1 + std::abs(want[i]))) << "at " << i;
  }
}

// The copies a profiled step made, as "value:src->dst" (the value by its
// producer's name).
[[maybe_unused]] std::vector<std::string> Copies(StepStats& stats) {
  absl::MutexLock lock(&stats.mu);
  std::vector<std::string> out;
  for (const NodeTiming& t : stats.nodes) {
    if (t.is_copy) {
      out.push_back(t.node->name() + ":" + t.copy_source->name() + "->" +
                    t.device->name());
    }
  }
  return out;
}

// The copies of the step's own values (inputs and computed nodes; not the
// model's constants, wherever the placer put them).
[[maybe_unused]] std::vector<std::string> ValueCopies(StepStats& stats) {
  std::vector<std::string> out;
  for (const std::string& c : Copies(stats)) {
    if (c.rfind("c:", 0) != 0) out.push_back(c);
  }
  return out;
}

TEST(GpuDeviceFeedsTest, AFeedOnTheGpuIsReadThereWithNoCopyIn) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(ModelDef());
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> x = Input(5);
  Tensor x_host = Tensor::FromVector(x, Shape({5, 64}));
  // A host feed is copied in (so the check below can fail)...
  StepStats host_stats;
  auto out = session.RunWithStats({{"x", x_host}}, {}, &host_stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Copies(host_stats), ::testing::Contains("x:/cpu:0->/gpu:0"));
  // ...one already on the GPU is not.
  absl::StatusOr<Tensor> x_gpu = session.CopyTo(x_host, "/gpu:0");
  ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
  EXPECT_FALSE(x_gpu->on_host());
  EXPECT_EQ(session.DeviceOf(*x_gpu), "/gpu:0");
  StepStats gpu_stats;
  out = session.RunWithStats({{"x", *x_gpu}}, {}, &gpu_stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ValueCopies(gpu_stats), ::testing::ElementsAre("z:/gpu:0->/cpu:0"));
  ASSERT_TRUE((*out)[0].on_host());
  ExpectValues(session, (*out)[0], Reference(x));
}

TEST(GpuDeviceFeedsTest, AFetchLeftOnTheGpuIsTheGpuBufferWithNoCopyOut) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig config;  // "m" is fetched: keep the nodes as written
  config.set_optimization_level(OPTIMIZATION_NONE);
  auto s = MakeSession(ModelDef(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> x = Input(3);
  absl::StatusOr<Tensor> x_gpu =
      session.CopyTo(Tensor::FromVector(x, Shape({3, 64})), "/gpu:0");
  ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
  StepStats stats;
  StepOptions options;
  options.fetch_devices = {"/gpu:0"};
  options.stats = &stats;
  auto out = session.Run({{"x", *x_gpu}}, {"z", "m"}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ValueCopies(stats), ::testing::IsEmpty());
  for (const Tensor& t : *out) {
    EXPECT_FALSE(t.on_host());
    EXPECT_EQ(session.DeviceOf(t), "/gpu:0");
  }
  ExpectValues(session, (*out)[0], Reference(x));
  // A fetch on the GPU feeds the next step as it is: z = f(f(x)).
  options.fetch_devices = {"/gpu:0", ""};  // z on the GPU, m on the host
  auto again = session.Run({{"x", (*out)[0]}}, {"z", "m"}, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE((*again)[0].on_host());
  EXPECT_TRUE((*again)[1].on_host());
  ExpectValues(session, (*again)[0], Reference(Reference(x)));
}

TEST(GpuDeviceFeedsTest, ExternalGpuMemoryIsUsedInPlaceAndReleasedAfterwards) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(ModelDef());
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> x = Input(4);
  // GPU memory the caller owns: here a session tensor, which the release
  // callback holds on to as a DLPack owner would.
  absl::StatusOr<Tensor> owner =
      session.CopyTo(Tensor::FromVector(x, Shape({4, 64})), "/gpu:0");
  ASSERT_TRUE(owner.ok()) << owner.status();
  void* data = owner->raw_data();
  bool released = false;
  auto keep = std::make_shared<Tensor>(*std::move(owner));
  absl::StatusOr<Tensor> wrapped = WrapExternalMemory(
      DT_FLOAT, Shape({4, 64}), data, "/gpu:0",
      [keep, &released]() mutable { keep.reset(); released = true; });
  keep.reset();
  ASSERT_TRUE(wrapped.ok()) << wrapped.status();
  EXPECT_EQ(session.DeviceOf(*wrapped), "/gpu:0");
  StepOptions options;
  options.fetch_devices = {"/gpu:0"};
  {
    // Fetching the feed itself hands back the caller's own memory.
    auto out = session.Run({{"x", *wrapped}}, {"z", "x"}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[1].raw_data(), data);
    ExpectValues(session, (*out)[0], Reference(x));
  }
  *wrapped = Tensor();
  EXPECT_TRUE(released);  // nothing in the session holds it any more
}

TEST(GpuDeviceFeedsTest, PlanCacheKeyHasWhereFeedsAreAndWhereFetchesGo) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(ModelDef());
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> x = Input(2);
  Tensor x_host = Tensor::FromVector(x, Shape({2, 64}));
  absl::StatusOr<Tensor> x_gpu = session.CopyTo(x_host, "/gpu:0");
  ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
  StepOptions host, gpu;
  gpu.fetch_devices = {"/gpu:0"};
  for (int round = 0; round < 2; ++round) {
    for (const Tensor* feed : {&x_host, &*x_gpu}) {
      for (const StepOptions* options : {&host, &gpu}) {
        auto out = session.Run({{"x", *feed}}, {"z"}, *options);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ((*out)[0].on_host(), options == &host);
        ExpectValues(session, (*out)[0], Reference(x));
      }
    }
  }
  EXPECT_EQ(session.stats().plans_compiled, 4);
  EXPECT_EQ(session.stats().runs, 8);
}

TEST(GpuDeviceFeedsTest, AGpuFeedReadOnTheCpuIsCopiedToTheHost) {
  SKIP_WITHOUT_GPU();
  GraphDef def = ModelDef();
  def.mutable_node(1)->set_device("/gpu:0");  // c and m on the GPU,
  def.mutable_node(2)->set_device("/gpu:0");  // r and z on the CPU
  RuntimeConfig config;
  config.set_placement_strategy(PLACEMENT_MANUAL);
  config.set_default_device("/cpu:0");
  auto s = MakeSession(def, config);
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const Graph& g = session.graph();
  ASSERT_EQ(session.assignment()[g.FindNode("z")->id()]->name(), "/cpu:0");
  const std::vector<float> x = Input(3);
  absl::StatusOr<Tensor> x_gpu =
      session.CopyTo(Tensor::FromVector(x, Shape({3, 64})), "/gpu:0");
  ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
  StepStats stats;
  StepOptions options;
  options.fetch_devices = {"/gpu:0"};  // z is computed on the CPU
  options.stats = &stats;
  auto out = session.Run({{"x", *x_gpu}}, {"z"}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  // x to the host for z, m's result to the host for r, z back to the GPU.
  EXPECT_THAT(Copies(stats), ::testing::UnorderedElementsAre(
                                 "x:/gpu:0->/cpu:0", "m:/gpu:0->/cpu:0",
                                 "z:/cpu:0->/gpu:0"));
  EXPECT_EQ(session.DeviceOf((*out)[0]), "/gpu:0");
  ExpectValues(session, (*out)[0], Reference(x));
}

TEST(GpuDeviceFeedsTest, AFeedOnAnotherGpuIsCopiedDeviceToDevice) {
  SKIP_WITHOUT_GPU();
  // Two logical GPUs on physical GPU 0, 1 GiB each; the model on /gpu:0.
  RuntimeConfig config;
  GpuConfig* gpu = config.add_gpu();
  gpu->set_index(0);
  for (int i = 0; i < 2; ++i) {
    gpu->add_logical_devices()->mutable_memory_limit()->set_bytes(int64_t{1} << 30);
  }
  config.add_visible_gpus(0);
  config.set_placement_strategy(PLACEMENT_MANUAL);
  config.set_default_device("/gpu:0");
  GraphDef def = ModelDef();
  def.mutable_node(3)->set_device("/gpu:1");  // r, so /gpu:1 is set up
  auto s = MakeSession(def, config);
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> x = Input(3);
  absl::StatusOr<Tensor> x_gpu1 =
      session.CopyTo(Tensor::FromVector(x, Shape({3, 64})), "/gpu:1");
  ASSERT_TRUE(x_gpu1.ok()) << x_gpu1.status();
  EXPECT_EQ(session.DeviceOf(*x_gpu1), "/gpu:1");
  StepStats stats;
  StepOptions options;
  options.fetch_devices = {"/gpu:1"};
  options.stats = &stats;
  auto out = session.Run({{"x", *x_gpu1}}, {"z"}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  // x to m and z (one copy), m to r, r's result back to z, z to the caller;
  // nothing through the host.
  EXPECT_THAT(ValueCopies(stats), ::testing::UnorderedElementsAre(
                                 "x:/gpu:1->/gpu:0", "m:/gpu:0->/gpu:1",
                                 "r:/gpu:1->/gpu:0", "z:/gpu:0->/gpu:1"));
  EXPECT_EQ(session.DeviceOf((*out)[0]), "/gpu:1");
  ExpectValues(session, (*out)[0], Reference(x));
}

TEST(GpuDeviceFeedsTest, ExternalMemoryOnAGpuTheSessionDoesNotUseIsAnError) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(ModelDef());
  ASSERT_TRUE(s.ok()) << s.status();
  void* fake = reinterpret_cast<void*>(uintptr_t{0x1000});  // never read
  absl::StatusOr<Tensor> x =
      WrapExternalMemory(DT_FLOAT, Shape({1, 64}), fake, "/gpu:7");
  ASSERT_TRUE(x.ok()) << x.status();
  auto out = (*s)->Run({{"x", *x}}, {"z"});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              HasSubstr("input 'x' is in the memory of /gpu:7, which this "
                        "session does not use; it uses /cpu:0, /gpu:0"));
  StepOptions options;
  options.fetch_devices = {"/gpu:7"};
  out = (*s)->Run({{"x", Tensor::FromVector(Input(1), Shape({1, 64}))}},
                  {"z"}, options);
  EXPECT_THAT(out.status().message(),
              HasSubstr("fetch device '/gpu:7' is not a device of this session"));
}

// Issue 14's case: a 1 GiB input that lives on the GPU crosses no link.
TEST(GpuDeviceFeedsTest, AOneGibGpuFeedAndGpuFetchMakeNoTransfer) {
  SKIP_WITHOUT_GPU();
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 } } } }
    node { name: "y" op: "Neg" input: "x" }
    signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
  )pb", &def));
  auto s = MakeSession(def);
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const int64_t n = (int64_t{1} << 30) / 4;
  absl::StatusOr<Tensor> host = Tensor::Create(DT_FLOAT, Shape({n}));
  ASSERT_TRUE(host.ok()) << host.status();
  auto h = host->flat<float>();
  for (int64_t i = 0; i < n; ++i) h[i] = static_cast<float>(i % 1000);
  absl::StatusOr<Tensor> x_gpu = session.CopyTo(*host, "/gpu:0");
  ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
  StepStats stats;
  StepOptions options;
  options.fetch_devices = {"/gpu:0"};
  options.stats = &stats;
  auto out = session.Run({{"x", *x_gpu}}, {"y"}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(Copies(stats).empty());
  absl::StatusOr<Tensor> y = session.CopyTo((*out)[0], "/cpu:0");
  ASSERT_TRUE(y.ok()) << y.status();
  auto v = y->flat<float>();
  for (int64_t i : {int64_t{0}, int64_t{999}, n / 2, n - 1}) {
    ASSERT_EQ(v[i], -static_cast<float>(i % 1000)) << "at " << i;
  }
}

// Steps with GPU feeds and GPU fetches replay a CUDA graph: each feed is
// copied into the graph's buffer before the launch and each result out of
// the graph's buffer after, so a result stays right when later steps run.
TEST(GpuDeviceFeedsTest, GpuFeedsAndFetchesReplayAndResultsStayTheirOwn) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(ModelDef());
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  StepOptions options;
  options.fetch_devices = {"/gpu:0"};
  std::vector<Tensor> results;
  std::vector<std::vector<float>> inputs;
  for (int step = 0; step < 6; ++step) {
    std::vector<float> x = Input(8);
    for (float& v : x) v += 0.1f * static_cast<float>(step);
    absl::StatusOr<Tensor> x_gpu =
        session.CopyTo(Tensor::FromVector(x, Shape({8, 64})), "/gpu:0");
    ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
    auto out = session.Run({{"x", *x_gpu}}, {"z"}, options);
    ASSERT_TRUE(out.ok()) << "step " << step << ": " << out.status();
    EXPECT_FALSE((*out)[0].on_host());
    results.push_back((*out)[0]);
    inputs.push_back(x);
  }
  EXPECT_EQ(session.stats().gpu_graphs, 1);
  EXPECT_EQ(session.stats().gpu_graph_steps, 5);  // all but the first
  for (size_t i = 0; i < results.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectValues(session, results[i], Reference(inputs[i]));
  }
}

}  // namespace
}  // namespace sluice::gpu_device_feeds_test
