// The session on a GPU: placement on /gpu:0 by default, feeds copied in and
// results copied out, memory limits and growth from the config, running out
// of memory and recovering, and falling back to the CPU for a node with no
// GPU kernel. Every test skips, with the reason, where no GPU is usable.
#include <algorithm>
#include <atomic>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_join.h"
#include "device/cpu_memory.h"
#include "device/device.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernels/kernel_registry.h"
#include "tests/executor/gpu_test_util.h"
#include "testing/compare.h"

namespace sluice::gpu_session_test {
namespace {

using ::testing::HasSubstr;

// z = relu(x @ w) + x, with x float32[?,64] and w 64x64.
GraphDef MlpDef() {
  GraphDef def;
  std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 64 } } } }
    node { name: "w" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 dim: 64 } } } } }
    node { name: "mm" op: "MatMul" input: "x" input: "w" }
    node { name: "r" op: "Relu" input: "mm" }
    node { name: "z" op: "Add" input: "r" input: "x" }
    signature { inputs { name: "x" } outputs { name: "z" tensor: "z" } }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  TensorProto* w = def.mutable_node(1)->mutable_attr()->at("value").mutable_tensor();
  for (int i = 0; i < 64 * 64; ++i) {
    w->add_float_val(static_cast<float>((i * 37) % 101) / 101.0f - 0.5f);
  }
  return def;
}

// The same computation in plain loops, for comparison.
std::vector<float> MlpReference(const GraphDef& def, const std::vector<float>& x,
                                int rows) {
  const auto& w = def.node(1).attr().at("value").tensor().float_val();
  std::vector<float> z(rows * 64);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < 64; ++j) {
      double acc = 0;
      for (int k = 0; k < 64; ++k) acc += double(x[r * 64 + k]) * w[k * 64 + j];
      z[r * 64 + j] = static_cast<float>(std::max(acc, 0.0) + x[r * 64 + j]);
    }
  }
  return z;
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(const GraphDef& def,
                                                     const RuntimeConfig& config) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  if (!g.ok()) return g.status();
  return Session::Create(*std::move(g), config);
}

// `config` without the optimizer: for tests about the MLP's nodes as
// written (at level all, elementwise_fusion makes Relu r and Add z one
// FusedElementwise node named z).
RuntimeConfig AsWritten(RuntimeConfig config = {}) {
  config.set_optimization_level(OPTIMIZATION_NONE);
  return config;
}

std::vector<float> Input(int rows, int seed) {
  std::vector<float> x(rows * 64);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 7 + seed * 13) % 29) / 29.0f - 0.4f;
  }
  return x;
}

void ExpectNear(const Tensor& got, const std::vector<float>& want) {
  ASSERT_TRUE(got.on_host());
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size()));
  auto g = got.flat<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], 1e-4f * (1 + std::abs(want[i]))) << "at " << i;
  }
}

Device* Find(const Session& s, const std::string& name) {
  for (Device* d : s.devices()) {
    if (d->name() == name) return d;
  }
  return nullptr;
}

TEST(GpuSessionTest, RunsOnGpuByDefaultAndMatchesReference) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& g = (*s)->graph();
  // The optimizer fuses mm and r into one FusedMatMul named r.
  const Node* product = g.FindNode("r");
  ASSERT_NE(product, nullptr);
  EXPECT_EQ(product->op(), "FusedMatMul");
  ASSERT_NE(g.FindNode("z"), nullptr);
  EXPECT_EQ((*s)->assignment()[product->id()]->name(), "/gpu:0");
  EXPECT_EQ((*s)->assignment()[g.FindNode("z")->id()]->name(), "/gpu:0");
  for (int rows : {1, 5, 33}) {
    std::vector<float> x = Input(rows, rows);
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({rows, 64}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], MlpReference(def, x, rows));
  }
}

TEST(GpuSessionTest, FetchesIntermediateValuesFromTheGpu) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  auto s = MakeSession(def, AsWritten());
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<float> x = Input(3, 1);
  auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({3, 64}))}},
                       {"r", "z"});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> z = MlpReference(def, x, 3);
  auto r = (*out)[0].flat<float>();
  for (int i = 0; i < 3 * 64; ++i) ASSERT_NEAR(r[i], z[i] - x[i], 1e-4f);
}

// Issue 29: a GPU session moves the weights its GPU reads there at
// creation and releases the graph's host copy; a step that fetches one
// copies it back. Optimizer off, so the session's w is the loaded buffer.
TEST(GpuSessionTest, WeightsMoveToTheGpuAtCreationAndTheHostCopyIsReleased) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  auto g = BuildGraph(def);
  ASSERT_TRUE(g.ok()) << g.status();
  std::weak_ptr<Buffer> host_w = (*g)->FindNode("w")->const_value()->buffer();
  auto s = Session::Create(*std::move(g), AsWritten());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(host_w.expired()) << "the host copy of w is still held";
  const Tensor* w = (*s)->graph().FindNode("w")->const_value();
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->on_host());
  EXPECT_EQ((*s)->DeviceOf(*w), "/gpu:0");
  EXPECT_THAT(absl::StrJoin((*s)->log(), "\n"),
              HasSubstr("weights: 1 constants (16.0 KiB) moved to /gpu:0 at "
                        "creation; their host copies released"));
  for (int rows : {3, 5}) {  // a second shape compiles a second plan
    std::vector<float> x = Input(rows, rows);
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({rows, 64}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], MlpReference(def, x, rows));
  }
  auto fetched = (*s)->Run({}, {"w"});
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  ASSERT_TRUE((*fetched)[0].on_host());
  const auto& want = def.node(1).attr().at("value").tensor().float_val();
  auto got = (*fetched)[0].flat<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(want.size()));
  for (int i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
}

// Weights stay in host memory where the CPU reads them too (w, read by a
// node the file puts on /cpu:0) or a GPU kernel reads them there (Resize's
// sizes); a Const only the GPU reads (b) moves.
TEST(GpuSessionTest, WeightsTheHostReadsKeepTheirHostCopy) {
  SKIP_WITHOUT_GPU();
  constexpr char kModel[] = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 2 dim: 2 } } } }
    node { name: "w" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 2 dim: 2 }
                                                float_val: 1 float_val: 2
                                                float_val: 3 float_val: 4 } } } }
    node { name: "b" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 2 dim: 2 }
                                                float_val: 10 float_val: 20
                                                float_val: 30 float_val: 40 } } } }
    node { name: "none" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 0 } } } } }
    node { name: "sizes" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_INT64 shape { dim: 4 }
                                                int_val: 1 int_val: 1 int_val: 4
                                                int_val: 4 } } } }
    node { name: "on_gpu" op: "MatMul" input: "x" input: "w" }
    node { name: "on_cpu" op: "MatMul" input: "x" input: "w" device: "/cpu:0" }
    node { name: "sum" op: "Add" input: "on_gpu" input: "b" }
    node { name: "total" op: "Add" input: "sum" input: "on_cpu" }
    node { name: "image" op: "Reshape" input: "total"
           attr { key: "shape" value { list { i: 1 i: 1 i: 2 i: 2 } } } }
    node { name: "big" op: "Resize" input: "image" input: "none" input: "none"
           input: "sizes" attr { key: "mode" value { s: "nearest" } } }
    signature { inputs { name: "x" } outputs { name: "y" tensor: "big" } }
  )pb";
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  auto s = MakeSession(def, AsWritten());
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& g = (*s)->graph();
  ASSERT_EQ((*s)->assignment()[g.FindNode("on_cpu")->id()]->name(), "/cpu:0");
  ASSERT_EQ((*s)->assignment()[g.FindNode("big")->id()]->name(), "/gpu:0");
  EXPECT_TRUE(g.FindNode("w")->const_value()->on_host());
  EXPECT_TRUE(g.FindNode("sizes")->const_value()->on_host());
  EXPECT_FALSE(g.FindNode("b")->const_value()->on_host());
  for (int step = 0; step < 2; ++step) {  // the second may replay
    auto out = (*s)->Run(
        {{"x", Tensor::FromVector<float>({1, 0, 0, 1}, Shape({2, 2}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].NumElements(), 16);
    auto v = (*out)[0].flat<float>();
    // x is the identity: total = 2w + b, each value in a 2 x 2 block.
    EXPECT_THAT(std::vector<float>(v.begin(), v.end()),
                ::testing::ElementsAre(12, 12, 24, 24, 12, 12, 24, 24,
                                       36, 36, 48, 48, 36, 36, 48, 48))
        << "step " << step;
  }
}

TEST(GpuSessionTest, MemoryLimitFromConfigWithAndWithoutGrowth) {
  SKIP_WITHOUT_GPU();
  for (bool growth : {false, true}) {
    RuntimeConfig config;
    config.mutable_gpu_memory_limit()->set_bytes(256 << 20);
    config.set_allow_growth(growth);
    auto s = MakeSession(MlpDef(), config);
    ASSERT_TRUE(s.ok()) << s.status();
    auto* gpu = static_cast<GpuDevice*>(Find(**s, "/gpu:0"));
    ASSERT_NE(gpu, nullptr);
    EXPECT_EQ(gpu->memory_limit(), 256 << 20);
    AllocatorStats before = gpu->allocator_stats();
    if (growth) {
      EXPECT_LT(before.bytes_reserved, 256 << 20) << "growth reserves on demand";
    } else {
      EXPECT_EQ(before.bytes_reserved, 256 << 20) << "no growth reserves it all";
    }
    std::vector<float> x = Input(8, 2);
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({8, 64}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(gpu->allocator_stats().peak_bytes_in_use, 256 << 20);
  }
}

TEST(GpuSessionTest, GrowsByDefaultAndGivesUnusedMemoryBack) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(MlpDef(), {});
  ASSERT_TRUE(s.ok()) << s.status();
  auto* gpu = static_cast<GpuDevice*>(Find(**s, "/gpu:0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(gpu->allow_growth());
  // Nothing but the weights and cuBLAS' workspace until a step runs.
  EXPECT_LT(gpu->allocator_stats().bytes_reserved, int64_t{1} << 30);
  // A large step (256 MiB per activation) grows the arena; once its tensors
  // are gone, the regions can go back to the driver.
  const int rows = 1 << 20;
  std::vector<float> x(static_cast<size_t>(rows) * 64, 0.25f);
  auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({rows, 64}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  out->clear();
  const int64_t grown = gpu->allocator_stats().bytes_reserved;
  EXPECT_GE(grown, int64_t{256} << 20);
  // The count includes the host blocks kept for reuse (device/cpu_memory.h).
  const int64_t host_kept = CachedCpuMemoryStats().bytes_cached;
  const int64_t released = (*s)->ReleaseUnusedMemory();
  EXPECT_GT(released - host_kept, 0);
  EXPECT_EQ(gpu->allocator_stats().bytes_reserved, grown - (released - host_kept));
  EXPECT_EQ(CachedCpuMemoryStats().bytes_cached, 0);
  // The session goes on working.
  std::vector<float> small = Input(4, 3);
  auto again = (*s)->Run({{"x", Tensor::FromVector(small, Shape({4, 64}))}});
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectNear((*again)[0], MlpReference(MlpDef(), small, 4));
}

TEST(GpuSessionTest, SetsUpOnlyTheGpusItPlacesNodesOn) {
  SKIP_WITHOUT_GPU();
  // Two logical GPUs on GPU 0, each with a fixed reservation: the model fits
  // on /gpu:0, so /gpu:1 is never set up and reserves nothing.
  RuntimeConfig config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "visible_gpus: 0 allow_growth: false "
      "gpu { index: 0 logical_devices { memory_limit { bytes: 268435456 } } "
      "logical_devices { memory_limit { bytes: 268435456 } } }",
      &config));
  auto s = MakeSession(MlpDef(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(Find(**s, "/gpu:0"), nullptr);
  EXPECT_EQ(Find(**s, "/gpu:1"), nullptr);
  EXPECT_THAT((*s)->log(), ::testing::Contains(HasSubstr("1 of 2 GPUs set up")));
  std::vector<float> x = Input(2, 5);
  auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({2, 64}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], MlpReference(MlpDef(), x, 2));
}

TEST(GpuSessionTest, RunningOutOfMemoryIsAnErrorAndASmallerInputThenRuns) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig config;
  config.mutable_gpu_memory_limit()->set_bytes(64 << 20);
  config.set_allow_growth(true);
  auto s = MakeSession(MlpDef(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  // 262144 x 64 floats = 64 MiB for the input alone: cannot fit.
  const int big = 262144;
  absl::StatusOr<Tensor> x = Tensor::Zeros(DT_FLOAT, Shape({big, 64}));
  ASSERT_TRUE(x.ok());
  auto out = (*s)->Run({{"x", *x}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("/gpu:0"));
  std::vector<float> small = Input(4, 3);
  out = (*s)->Run({{"x", Tensor::FromVector(small, Shape({4, 64}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], MlpReference(MlpDef(), small, 4));
}

TEST(GpuSessionTest, NodeWithoutGpuKernelFallsBackToCpu) {
  SKIP_WITHOUT_GPU();
  // Transpose has no GPU kernel for int16 (the CPU's moves every dtype);
  // m and s have GPU kernels. d = m^T (a 2-D transpose, which the optimizer
  // cannot drop as it would a 1-D one); s = d + m = 2(a^T + a).
  constexpr char kModel[] = R"pb(
    node { name: "a" op: "Input"
           attr { key: "dtype" value { type: DT_INT16 } }
           attr { key: "shape" value { shape { dim: 2 dim: 2 } } } }
    node { name: "two" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_INT16 shape { dim: 2 dim: 2 } int_val: 2 } } } }
    node { name: "m" op: "Mul" input: "a" input: "two" }
    node { name: "d" op: "Transpose" input: "m" }
    node { name: "s" op: "Add" input: "d" input: "m" }
    signature { inputs { name: "a" } outputs { name: "s" tensor: "s" } }
  )pb";
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& g = (*s)->graph();
  ASSERT_NE(g.FindNode("m"), nullptr);
  ASSERT_NE(g.FindNode("d"), nullptr) << "the optimizer removed the transpose";
  EXPECT_EQ((*s)->assignment()[g.FindNode("m")->id()]->name(), "/gpu:0");
  EXPECT_EQ((*s)->assignment()[g.FindNode("d")->id()]->name(), "/cpu:0");
  auto out = (*s)->Run(
      {{"a", Tensor::FromVector<int16_t>({1, -3, 5, 7}, Shape({2, 2}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  auto v = (*out)[0].flat<int16_t>();
  EXPECT_THAT(std::vector<int16_t>(v.begin(), v.end()),
              ::testing::ElementsAre(4, 4, 4, 28));
}

TEST(GpuSessionTest, ControlFlowWithASubgraphNodeWithoutGpuKernelRunsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  // d = If(yes, m, a): the then branch transposes int16 (no GPU kernel),
  // so d and its subgraphs run on the CPU; m and s stay on the GPU.
  // d = m + a = 3a; s = d + m = 5a.
  constexpr char kModel[] = R"pb(
    node { name: "a" op: "Input"
           attr { key: "dtype" value { type: DT_INT16 } }
           attr { key: "shape" value { shape { dim: 4 } } } }
    node { name: "two" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_INT16 shape { dim: 4 } int_val: 2 } } } }
    node { name: "yes" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_BOOL shape { } int_val: 1 } } } }
    node { name: "m" op: "Mul" input: "a" input: "two" }
    node { name: "d" op: "If" input: "yes" input: "m" input: "a"
      attr { key: "Tin" value { list { type: [DT_INT16, DT_INT16] } } }
      attr { key: "Tout" value { list { type: [DT_INT16] } } }
      attr { key: "then_branch" value { graph {
        node { name: "p" op: "Input"
               attr { key: "dtype" value { type: DT_INT16 } }
               attr { key: "shape" value { shape { dim: 4 } } } }
        node { name: "q" op: "Input"
               attr { key: "dtype" value { type: DT_INT16 } }
               attr { key: "shape" value { shape { dim: 4 } } } }
        node { name: "t" op: "Transpose" input: "p" }
        node { name: "sum" op: "Add" input: "t" input: "q" }
        signature { inputs { name: "p" } inputs { name: "q" }
                    outputs { name: "out" tensor: "sum" } } } } }
      attr { key: "else_branch" value { graph {
        node { name: "p" op: "Input"
               attr { key: "dtype" value { type: DT_INT16 } }
               attr { key: "shape" value { shape { dim: 4 } } } }
        node { name: "q" op: "Input"
               attr { key: "dtype" value { type: DT_INT16 } }
               attr { key: "shape" value { shape { dim: 4 } } } }
        signature { inputs { name: "p" } inputs { name: "q" }
                    outputs { name: "out" tensor: "p" } } } } } }
    node { name: "s" op: "Add" input: "d" input: "m" }
    signature { inputs { name: "a" } outputs { name: "s" tensor: "s" } }
  )pb";
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& g = (*s)->graph();
  const Node* if_node = g.FindNode("d");
  EXPECT_EQ((*s)->assignment()[g.FindNode("m")->id()]->name(), "/gpu:0");
  EXPECT_EQ((*s)->assignment()[if_node->id()]->name(), "/cpu:0");
  absl::Status why = KernelRegistry::Global()->Supports(*if_node, DeviceType::kGpu);
  EXPECT_THAT(why.message(), ::testing::HasSubstr("subgraph node 't' (Transpose)"));
  auto out = (*s)->Run({{"a", Tensor::FromVector<int16_t>({1, -3, 5, 7}, Shape({4}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  auto v = (*out)[0].flat<int16_t>();
  EXPECT_THAT(std::vector<int16_t>(v.begin(), v.end()),
              ::testing::ElementsAre(5, -15, 25, 35));
}

TEST(GpuSessionTest, UseGpuFalseKeepsEverythingOnTheCpu) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  auto s = MakeSession(MlpDef(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  for (Device* d : (*s)->devices()) EXPECT_EQ(d->type(), DeviceType::kCpu);
  std::vector<float> x = Input(2, 5);
  auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({2, 64}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], MlpReference(MlpDef(), x, 2));
}

RuntimeConfig ManualOn(const std::string& device) {
  RuntimeConfig config;
  config.set_placement_strategy(PLACEMENT_MANUAL);
  config.set_default_device(device);
  return config;
}

// `sluice run --device cpu:0` on a GPU machine: every node on the CPU, and
// no GPU set up, so no GPU memory is reserved.
TEST(GpuSessionTest, ManualPlacementOnTheCpuKeepsEveryNodeThereAndSetsUpNoGpu) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(MlpDef(), ManualOn("cpu:0"));
  ASSERT_TRUE(s.ok()) << s.status();
  for (Device* d : (*s)->assignment()) EXPECT_EQ(d->name(), "/cpu:0");
  for (Device* d : (*s)->devices()) EXPECT_EQ(d->type(), DeviceType::kCpu);
  EXPECT_THAT((*s)->log(), ::testing::Contains(HasSubstr("no GPU set up")));
  std::vector<float> x = Input(3, 2);
  auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({3, 64}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], MlpReference(MlpDef(), x, 3));
}

TEST(GpuSessionTest, ManualPlacementOnTheCpuStillGivesARequestedGpuItsNode) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  def.mutable_node(2)->set_device("/gpu:0");  // mm
  auto s = MakeSession(def, AsWritten(ManualOn("/cpu:0")));
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& g = (*s)->graph();
  EXPECT_EQ((*s)->assignment()[g.FindNode("mm")->id()]->name(), "/gpu:0");
  EXPECT_EQ((*s)->assignment()[g.FindNode("r")->id()]->name(), "/cpu:0");
  EXPECT_EQ((*s)->assignment()[g.FindNode("z")->id()]->name(), "/cpu:0");
  std::vector<float> x = Input(3, 4);
  auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({3, 64}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], MlpReference(def, x, 3));
}

// `--device gpu:0` is unchanged: every node with a GPU kernel runs there.
TEST(GpuSessionTest, ManualPlacementOnTheGpuKeepsNodesWithGpuKernelsThere) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(MlpDef(), AsWritten(ManualOn("gpu:0")));
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& g = (*s)->graph();
  for (const char* name : {"mm", "r", "z"}) {
    EXPECT_EQ((*s)->assignment()[g.FindNode(name)->id()]->name(), "/gpu:0")
        << name;
  }
}

}  // namespace
}  // namespace sluice::gpu_session_test

namespace sluice::gpu_session_test {
namespace {

// A profiled step on the GPU: every kernel and transfer has a GPU slice on
// the stream it ran on, inside the step, in dataflow order, with its bytes.
TEST(GpuSessionStatsTest, GpuSlicesAreTimedOnTheirStreamsInDataflowOrder) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  auto s = MakeSession(def, AsWritten());
  ASSERT_TRUE(s.ok()) << s.status();
  constexpr int kRows = 512;
  const Feeds feeds = {{"x", Tensor::FromVector(Input(kRows, 2), Shape({kRows, 64}))}};
  ASSERT_TRUE((*s)->Run(feeds).ok());  // plan compiled, kernels loaded
  StepStats stats;
  auto out = (*s)->RunWithStats(feeds, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], MlpReference(def, Input(kRows, 2), kRows));

  absl::MutexLock lock(&stats.mu);
  const double slack = stats.gpu_alignment_error_seconds + 2e-6;
  EXPECT_LT(stats.gpu_alignment_error_seconds, 1e-3);
  std::map<std::string, const NodeTiming*> by_name;
  for (const NodeTiming& t : stats.nodes) {
    const std::string name = (t.is_copy ? "copy " : "") + t.node->name();
    by_name[name] = &t;
    ASSERT_TRUE(t.gpu_timed) << name;
    EXPECT_EQ(t.gpu->name(), "/gpu:0") << name;
    EXPECT_LE(t.gpu_start_seconds, t.gpu_end_seconds) << name;
    EXPECT_GE(t.gpu_start_seconds, -slack) << name;
    EXPECT_LE(t.gpu_end_seconds, stats.step_seconds + slack) << name;
    EXPECT_EQ(t.bytes, int64_t{kRows} * 64 * 4) << name;
    EXPECT_EQ(t.seconds(), t.gpu_end_seconds - t.gpu_start_seconds);
  }
  ASSERT_EQ(by_name.size(), 5u);  // x in, mm, r, z, z out
  const NodeTiming* in = by_name.at("copy x");
  const NodeTiming* mm = by_name.at("mm");
  const NodeTiming* r = by_name.at("r");
  const NodeTiming* z = by_name.at("z");
  const NodeTiming* back = by_name.at("copy z");
  EXPECT_EQ(in->stream, GpuStream::kHostToDevice);
  EXPECT_EQ(in->copy_source->name(), "/cpu:0");
  EXPECT_EQ(back->stream, GpuStream::kDeviceToHost);
  EXPECT_EQ(back->device->name(), "/cpu:0");
  for (const NodeTiming* k : {mm, r, z}) EXPECT_EQ(k->stream, GpuStream::kCompute);
  EXPECT_EQ(mm->shapes, "float32[512,64], float32[64,64] -> float32[512,64]");
  // Each waits on the GPU for the one before.
  const NodeTiming* order[] = {in, mm, r, z, back};
  for (int i = 0; i + 1 < 5; ++i) {
    EXPECT_LE(order[i]->gpu_end_seconds, order[i + 1]->gpu_start_seconds + 1e-6)
        << "slice " << i;
  }
  EXPECT_GT(mm->seconds(), 0.0);
}

}  // namespace
}  // namespace sluice::gpu_session_test

namespace sluice::gpu_session_test {
namespace {

// CUDA graph replay (executor/gpu_graph_runner.h): the first step runs
// kernel by kernel, the second records the graph, later ones replay it, and
// every step's result is the step's own, not a stale one.
TEST(GpuGraphTest, StepsReplayOneGraphAndMatchTheReference) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  for (int step = 0; step < 6; ++step) {
    std::vector<float> x = Input(8, 100 + step);
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({8, 64}))}});
    ASSERT_TRUE(out.ok()) << "step " << step << ": " << out.status();
    ExpectNear((*out)[0], MlpReference(def, x, 8));
  }
  Session::Stats st = (*s)->stats();
  EXPECT_EQ(st.gpu_graphs, 1);
  EXPECT_EQ(st.gpu_graph_steps, 5);  // all but the first
  // A second input shape is a second plan with a graph of its own; the
  // first keeps working.
  for (int rows : {3, 8, 3}) {
    std::vector<float> x = Input(rows, rows);
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({rows, 64}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], MlpReference(def, x, rows));
  }
  EXPECT_EQ((*s)->stats().gpu_graphs, 2);
  // A profiled step still times node by node.
  StepStats stats;
  ASSERT_TRUE((*s)->RunWithStats({{"x", Tensor::FromVector(Input(8, 1), Shape({8, 64}))}},
                                 {}, &stats).ok());
  absl::MutexLock lock(&stats.mu);
  // mm, and Relu + Add as one FusedElementwise (elementwise_fusion), with
  // the feed's and the fetch's copies.
  EXPECT_EQ(stats.nodes.size(), 4u);
}

// elementwise_fusion on a GPU: a bias, scale and ReLU6 chain of fixed
// shapes becomes one FusedElementwise node (compiled with NVRTC when the
// plan is made), runs on /gpu:0, is recorded into the step's CUDA graph
// and replayed, and gives what the chain gives computed here.
TEST(GpuGraphTest, AFusedElementwiseChainRunsOnTheGpuAndReplays) {
  SKIP_WITHOUT_GPU();
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 8 dim: 64 } } } }
    node { name: "b" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 } } } } }
    node { name: "k" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 3 } } } }
    node { name: "zero" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 0 } } } }
    node { name: "six" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 6 } } } }
    node { name: "a" op: "Add" input: "x" input: "b" }
    node { name: "s" op: "Mul" input: "a" input: "k" }
    node { name: "lo" op: "Maximum" input: "s" input: "zero" }
    node { name: "y" op: "Minimum" input: "lo" input: "six" }
    signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
  )pb", &def));
  std::vector<float> bias(64);
  TensorProto* b = def.mutable_node(1)->mutable_attr()->at("value").mutable_tensor();
  for (int i = 0; i < 64; ++i) {
    bias[i] = static_cast<float>(i % 9) / 4.0f - 1.0f;
    b->add_float_val(bias[i]);
  }
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  const Node* y = (*s)->graph().FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op(), "FusedElementwise");
  for (int step = 0; step < 4; ++step) {
    std::vector<float> x = Input(8, 7 + step);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      want[i] = std::min(6.0f, std::max(0.0f, (x[i] + bias[i % 64]) * 3));
    }
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({8, 64}))}});
    ASSERT_TRUE(out.ok()) << "step " << step << ": " << out.status();
    ExpectNear((*out)[0], want);
  }
  EXPECT_EQ((*s)->stats().gpu_graph_steps, 3);  // all but the first
  StepStats stats;
  ASSERT_TRUE((*s)->RunWithStats({{"x", Tensor::FromVector(Input(8, 1), Shape({8, 64}))}},
                                 {}, &stats).ok());
  absl::MutexLock lock(&stats.mu);
  bool ran_on_gpu = false;
  for (const NodeTiming& t : stats.nodes) {
    if (!t.is_copy && t.node->name() == "y") {
      ran_on_gpu = t.device->type() == DeviceType::kGpu;
    }
  }
  EXPECT_TRUE(ran_on_gpu);
}

TEST(GpuGraphTest, ConfigTurnsItOff) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig config;
  config.set_gpu_graphs(false);
  auto s = MakeSession(MlpDef(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int step = 0; step < 3; ++step) {
    std::vector<float> x = Input(2, step);
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({2, 64}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], MlpReference(MlpDef(), x, 2));
  }
  EXPECT_EQ((*s)->stats().gpu_graph_steps, 0);
}

// A replayed plan keeps its graph's memory; the plan cache counts it, and a
// byte bound evicts the least recently used plan (never the one in use).
TEST(GpuGraphTest, PlanCacheCountsGraphMemoryAndEvictsByBytes) {
  SKIP_WITHOUT_GPU();
  auto steps = [](Session& s, int rows, int n) {
    for (int step = 0; step < n; ++step) {
      std::vector<float> x = Input(rows, step);
      auto out = s.Run({{"x", Tensor::FromVector(x, Shape({rows, 64}))}});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectNear((*out)[0], MlpReference(MlpDef(), x, rows));
    }
  };
  {
    auto s = MakeSession(MlpDef(), {});
    ASSERT_TRUE(s.ok()) << s.status();
    steps(**s, 4, 3);  // warm-up, record, replay
    Session::Stats st = (*s)->stats();
    EXPECT_EQ(st.gpu_graphs, 1);
    // At least x, mm, r and z (4 x 64 floats each) and the graph's own
    // cuBLAS workspace.
    EXPECT_GT(st.plan_cache_bytes, 4 * 4 * 64 * 4);
  }
  RuntimeConfig config;
  config.set_plan_cache_max_bytes(1);  // any recorded graph is too big
  auto s = MakeSession(MlpDef(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  steps(**s, 4, 3);
  EXPECT_EQ((*s)->stats().plans_evicted, 0) << "the plan in use stays";
  steps(**s, 8, 3);  // a second plan: recording it evicts the first
  Session::Stats st = (*s)->stats();
  EXPECT_EQ(st.plans_cached, 1);
  EXPECT_EQ(st.plans_evicted, 1);
  steps(**s, 4, 1);  // compiled again, and still right
  EXPECT_EQ((*s)->stats().plans_compiled, 3);
}

TEST(GpuGraphTest, ConcurrentStepsGetTheirOwnResults) {
  SKIP_WITHOUT_GPU();
  GraphDef def = MlpDef();
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::vector<float> x = Input(16, t * 100 + i);
        auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({16, 64}))}});
        if (!out.ok()) { ++bad; continue; }
        std::vector<float> want = MlpReference(def, x, 16);
        auto got = (*out)[0].flat<float>();
        for (size_t k = 0; k < want.size(); ++k) {
          if (!testing::Mismatch<float>(got[k], want[k], testing::RelativeAndAbsolute(1e-4))
                   .empty()) {  // the tests' one comparator: NaN fails
            ++bad;
            break;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT((*s)->stats().gpu_graph_steps, 0);
}

// GatherElements copies the offsets it computes on the host to the GPU
// inside the kernel: that copy cannot be replayed, so the recording fails
// and the plan runs kernel by kernel, with correct results, from then on.
TEST(GpuGraphTest, AKernelThatCopiesFallsBackToOrdinarySteps) {
  SKIP_WITHOUT_GPU();
  constexpr char kModel[] = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 4 dim: 2 } } } }
    node { name: "idx" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_INT64 shape { dim: 1 dim: 2 }
                                                int_val: 3 int_val: 0 } } } }
    node { name: "n" op: "Neg" input: "x" }
    node { name: "g" op: "GatherElements" input: "n" input: "idx"
           attr { key: "axis" value { i: 0 } } }
    signature { inputs { name: "x" } outputs { name: "g" tensor: "g" } }
  )pb";
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  for (int step = 0; step < 4; ++step) {
    const float b = static_cast<float>(step);
    auto out = (*s)->Run({{"x", Tensor::FromVector<float>(
                                    {b, 1, 2, 3, 4, 5, 6, b + 7}, Shape({4, 2}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    auto v = (*out)[0].flat<float>();
    EXPECT_THAT(std::vector<float>(v.begin(), v.end()),
                ::testing::ElementsAre(-6, -1));
  }
  EXPECT_EQ((*s)->stats().gpu_graphs, 0);
  EXPECT_EQ((*s)->stats().gpu_graph_steps, 0);
}

// Gather reads constant indices in host memory; a recorded step reads its
// own GPU copy of them, made once, and replays.
TEST(GpuGraphTest, GatherOfConstantIndicesReplays) {
  SKIP_WITHOUT_GPU();
  constexpr char kModel[] = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 4 dim: 2 } } } }
    node { name: "idx" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_INT64 shape { dim: 3 }
                                                int_val: 3 int_val: 0 int_val: -1 } } } }
    node { name: "n" op: "Neg" input: "x" }
    node { name: "g" op: "Gather" input: "n" input: "idx" attr { key: "axis" value { i: 0 } } }
    signature { inputs { name: "x" } outputs { name: "g" tensor: "g" } }
  )pb";
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  for (int step = 0; step < 4; ++step) {
    const float b = static_cast<float>(step);
    auto out = (*s)->Run({{"x", Tensor::FromVector<float>(
                                    {b, 1, 2, 3, 4, 5, 6, b + 7}, Shape({4, 2}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    auto v = (*out)[0].flat<float>();
    EXPECT_THAT(std::vector<float>(v.begin(), v.end()),
                ::testing::ElementsAre(-6, -(b + 7), -b, -1, -6, -(b + 7)));
  }
  EXPECT_EQ((*s)->stats().gpu_graphs, 1);
  EXPECT_EQ((*s)->stats().gpu_graph_steps, 3);
}

// Resize reads its sizes in host memory. The constant lives on the GPU
// with Neg; the plan gives Resize a host constant, not a copy to the host
// every step, so the steps replay (DeepLabV3's decoder: 0 of 104 steps
// replayed on an H100 before, 2026-12-06).
TEST(GpuGraphTest, ResizeToConstantSizesReplays) {
  SKIP_WITHOUT_GPU();
  constexpr char kModel[] = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 1 dim: 1 dim: 2 dim: 2 } } } }
    node { name: "none" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 0 } } } } }
    node { name: "sizes" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_INT64 shape { dim: 4 }
                                                int_val: 1 int_val: 1 int_val: 4
                                                int_val: 4 } } } }
    node { name: "n" op: "Neg" input: "x" }
    node { name: "r" op: "Resize" input: "n" input: "none" input: "none"
           input: "sizes" attr { key: "mode" value { s: "nearest" } } }
    signature { inputs { name: "x" } outputs { name: "r" tensor: "r" } }
  )pb";
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  auto s = MakeSession(def, {});
  ASSERT_TRUE(s.ok()) << s.status();
  for (int step = 0; step < 4; ++step) {
    const float b = static_cast<float>(step);
    auto out = (*s)->Run({{"x", Tensor::FromVector<float>({b, 1, 2, 3},
                                                          Shape({1, 1, 2, 2}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].NumElements(), 16);
    auto v = (*out)[0].flat<float>();
    // Nearest, twice as large: each value in a 2x2 block.
    const float want[4] = {-b, -1, -2, -3};
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(v[i * 4 + j], want[(i / 2) * 2 + j / 2])
            << "step " << step << " at " << i << "," << j;
      }
    }
  }
  EXPECT_EQ((*s)->stats().gpu_graph_why_not, "");
  EXPECT_EQ((*s)->stats().gpu_graph_steps, 3);
}

// y = -emb[ids]: token ids fed in host memory, as exported transformers
// take them.
GraphDef EmbeddingDef() {
  GraphDef def;
  std::string text = R"pb(
    node { name: "ids" op: "Input"
           attr { key: "dtype" value { type: DT_INT64 } }
           attr { key: "shape" value { shape { dim: -1 dim: 8 } } } }
    node { name: "emb" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 50 dim: 16 } } } } }
    node { name: "g" op: "Gather" input: "emb" input: "ids" attr { key: "axis" value { i: 0 } } }
    node { name: "y" op: "Neg" input: "g" }
    signature { inputs { name: "ids" } outputs { name: "y" tensor: "y" } }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  TensorProto* emb = def.mutable_node(1)->mutable_attr()->at("value").mutable_tensor();
  for (int i = 0; i < 50 * 16; ++i) emb->add_float_val(0.5f * i - 3.0f);
  return def;
}

std::vector<int64_t> Ids(int rows, int seed) {
  std::vector<int64_t> ids(rows * 8);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int64_t>((i * 11 + seed * 7) % 50);
  }
  if (seed % 2 == 1) ids[1] = -1;  // counts from the end, as in an ordinary step
  return ids;
}

void ExpectEmbedding(const Tensor& got, const std::vector<int64_t>& ids) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(ids.size()) * 16);
  auto g = got.flat<float>();
  for (size_t t = 0; t < ids.size(); ++t) {
    const int64_t row = ids[t] < 0 ? ids[t] + 50 : ids[t];
    for (int j = 0; j < 16; ++j) {
      ASSERT_EQ(g[t * 16 + j], -(0.5f * (row * 16 + j) - 3.0f))
          << "token " << t << " element " << j;
    }
  }
}

// Token ids fed in host memory: the replayed graph reads them from a GPU
// buffer of its own, copied in before each launch, so every step replays
// and gets its own ids' rows.
TEST(GpuGraphTest, TokenIdsFedInHostMemoryReplay) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(EmbeddingDef(), {});
  ASSERT_TRUE(s.ok()) << s.status();
  for (int step = 0; step < 6; ++step) {
    std::vector<int64_t> ids = Ids(2, step);
    auto out = (*s)->Run({{"ids", Tensor::FromVector(ids, Shape({2, 8}))}});
    ASSERT_TRUE(out.ok()) << "step " << step << ": " << out.status();
    ExpectEmbedding((*out)[0], ids);
  }
  Session::Stats st = (*s)->stats();
  EXPECT_EQ(st.gpu_graphs, 1);
  EXPECT_EQ(st.gpu_graph_steps, 5);  // all but the first
}

// Token ids the caller keeps on the GPU (--io-device): the plan copies them
// to the host for Gather, but the replayed graph reads its own GPU buffer of
// them, refilled before each launch, so every step replays with its own ids
// and no copy to the host; an id out of range is still the ordinary error.
TEST(GpuGraphTest, TokenIdsFedOnTheGpuReplay) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(EmbeddingDef(), {});
  ASSERT_TRUE(s.ok()) << s.status();
  StepOptions options;
  options.fetch_devices = {"/cpu:0"};
  auto run = [&](const std::vector<int64_t>& ids) {
    absl::StatusOr<Tensor> on_gpu = (*s)->CopyTo(
        Tensor::FromVector(ids, Shape({2, 8})), "/gpu:0");
    EXPECT_TRUE(on_gpu.ok()) << on_gpu.status();
    return (*s)->Run({{"ids", *on_gpu}}, {"y"}, options);
  };
  for (int step = 0; step < 6; ++step) {
    std::vector<int64_t> ids = Ids(2, step);
    auto out = run(ids);
    ASSERT_TRUE(out.ok()) << "step " << step << ": " << out.status();
    ASSERT_TRUE((*out)[0].on_host());
    ExpectEmbedding((*out)[0], ids);
  }
  Session::Stats st = (*s)->stats();
  EXPECT_EQ(st.gpu_graphs, 1);
  EXPECT_EQ(st.gpu_graph_steps, 5);  // all but the first
  std::vector<int64_t> bad = Ids(2, 0);
  bad[5] = 50;
  auto out = run(bad);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("Gather index 50 at position 5 is out of range"));
  std::vector<int64_t> ids = Ids(2, 3);
  auto again = run(ids);
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectEmbedding((*again)[0], ids);
  // The failed replay is not counted; the next step replays again.
  EXPECT_EQ((*s)->stats().gpu_graph_steps, st.gpu_graph_steps + 1);
}

// An id out of range in a replayed step is the error an ordinary step
// gives (checked on the GPU, reported after the launch), and the next step
// replays again.
TEST(GpuGraphTest, AnIdOutOfRangeInAReplayedStepIsTheOrdinaryError) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(EmbeddingDef(), {});
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<int64_t> bad = Ids(2, 0);
  bad[5] = 50;
  auto first = (*s)->Run({{"ids", Tensor::FromVector(bad, Shape({2, 8}))}});
  ASSERT_FALSE(first.ok());  // an ordinary step: checked on the host
  const std::string ordinary(first.status().message());
  for (int step = 0; step < 3; ++step) {  // warm up and record
    std::vector<int64_t> ids = Ids(2, step);
    auto out = (*s)->Run({{"ids", Tensor::FromVector(ids, Shape({2, 8}))}});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  ASSERT_EQ((*s)->stats().gpu_graphs, 1);
  const int64_t replayed = (*s)->stats().gpu_graph_steps;
  auto out = (*s)->Run({{"ids", Tensor::FromVector(bad, Shape({2, 8}))}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              HasSubstr("Gather index 50 at position 5 is out of range for an "
                        "axis of size 50"));
  EXPECT_THAT(out.status().message(), HasSubstr("g"));
  EXPECT_THAT(ordinary, HasSubstr("Gather index 50 at position 5"));
  std::vector<int64_t> ids = Ids(2, 9);
  auto again = (*s)->Run({{"ids", Tensor::FromVector(ids, Shape({2, 8}))}});
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectEmbedding((*again)[0], ids);
  EXPECT_GT((*s)->stats().gpu_graph_steps, replayed);
}

// A replayed step's values share memory by lifetime (a pool of the arena's,
// freed after each value's last reader while recording), so the graph holds
// about the live set of an ordinary step, not the sum of its intermediates.
TEST(GpuGraphTest, ReplayedStepHoldsAboutTheLiveSet) {
  SKIP_WITHOUT_GPU();
  // x -> 24 elementwise ops in a chain, each output 4 MiB.
  GraphDef def;
  std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 1024 dim: 1024 } } } }
    signature { inputs { name: "x" } outputs { name: "y" tensor: "n23" } }
  )pb";
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  for (int i = 0; i < 24; ++i) {
    NodeDef* n = def.add_node();
    n->set_name("n" + std::to_string(i));
    n->set_op(i % 2 == 0 ? "Neg" : "Relu");
    n->add_input(i == 0 ? "x" : "n" + std::to_string(i - 1));
  }
  RuntimeConfig config;
  config.set_optimization_level(OPTIMIZATION_NONE);
  auto s = MakeSession(def, config);
  ASSERT_TRUE(s.ok()) << s.status();
  auto* gpu = dynamic_cast<GpuDevice*>(Find(**s, "/gpu:0"));
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(gpu->arena(), nullptr);
  std::vector<float> x(1024 * 1024, 0.25f);
  auto step = [&] {
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({1024, 1024}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_FLOAT_EQ((*out)[0].flat<float>()[7], 0.0f);  // relu(-0.25)
  };
  const int64_t before = gpu->allocator_stats().bytes_in_use;
  gpu->arena()->ResetPeak();
  step();  // kernel by kernel
  const int64_t ordinary = gpu->allocator_stats().peak_bytes_in_use - before;
  step();  // recorded
  step();  // replayed
  ASSERT_EQ((*s)->stats().gpu_graph_steps, 2);
  const int64_t held = (*s)->stats().plan_cache_bytes;
  // The graph's own cuBLAS workspace is in what it holds; an ordinary step
  // uses the device's.
  const int64_t values = held - static_cast<int64_t>(std::max<size_t>(
                                    gpu->cublas_workspace_bytes(), 256));
  std::printf("ordinary step peak %lld bytes; replayed graph holds %lld "
              "(%lld without its cuBLAS workspace); sum of the values %lld\n",
              static_cast<long long>(ordinary), static_cast<long long>(held),
              static_cast<long long>(values), 25LL * 4 * 1024 * 1024);
  EXPECT_GT(ordinary, 0);
  EXPECT_LE(values, ordinary * 12 / 10);
  EXPECT_LT(values, 25LL * 4 * 1024 * 1024 / 3);
}

}  // namespace
}  // namespace sluice::gpu_session_test
