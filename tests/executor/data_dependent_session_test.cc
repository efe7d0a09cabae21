// A session runs nodes whose output size depends on the values (issue 31):
// the plan holds no sizes, each output is allocated when its kernel knows
// it, and a device's memory limit is enforced at that allocation with the
// error naming the node; the session stays usable after it.
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "testing/gpu_required.h"

namespace sluice::data_dependent_session_test {
namespace {

using ::testing::HasSubstr;

// x [2, 2, 16384] float (256 KiB) -> NonZero 'nz' -> indices [3, K] int64
// -> Neg 'neg'.
constexpr int64_t kSize = 65536;
constexpr char kNonZeroModel[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 2 dim: 2 dim: 16384 } } } }
  node { name: "nz" op: "NonZero" input: "x" }
  node { name: "neg" op: "Neg" input: "nz" }
  signature { inputs { name: "x" } outputs { name: "y" tensor: "neg" } }
)pb";

// On the CPU, or every node on /gpu:0 (`gpu`).
std::unique_ptr<Session> MakeSession(RuntimeConfig config, bool gpu = false) {
  if (gpu) {
    config.set_default_device("gpu:0");
    config.set_placement_strategy(PLACEMENT_MANUAL);
  } else {
    config.set_use_gpu(false);
  }
  config.set_optimization_level(OPTIMIZATION_NONE);
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kNonZeroModel,
                                                            &def));
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  // Load-time inference leaves the count unknown.
  const Node* nz = (*graph)->FindNode("nz");
  EXPECT_TRUE(nz != nullptr &&
              nz->output_shape(0) == Shape({3, kUnknownDim}));
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// x with `count` ones, at flat positions 0, 1, ..., count - 1.
Tensor WithNonZeros(int64_t count) {
  Tensor x = *Tensor::Zeros(DT_FLOAT, Shape({2, 2, 16384}));
  for (int64_t i = 0; i < count; ++i) x.data<float>()[i] = 1.0f;
  return x;
}

TEST(DataDependentSessionTest, OutputSizeFollowsTheValuesStepByStep) {
  std::unique_ptr<Session> s = MakeSession({});
  ASSERT_NE(s, nullptr);
  for (int64_t count : {5, 0, 20000, 5}) {
    SCOPED_TRACE(count);
    absl::StatusOr<std::vector<Tensor>> out =
        s->Run({{"x", WithNonZeros(count)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), Shape({3, count}));
    // Row 2 holds the last coordinate: i for i < 16384, then i - 16384.
    const int64_t* last = (*out)[0].data<int64_t>() + 2 * count;
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(last[i], -(i % 16384));
  }
  // One input shape, one plan, whatever the counts were.
  EXPECT_EQ(s->stats().plans_compiled, 1);
}

TEST(DataDependentSessionTest, LimitIsEnforcedWhenTheSizeIsKnownNamingTheNode) {
  RuntimeConfig config;
  // 1 MiB on the CPU: the placer, not knowing K, takes the model; 65,536
  // indices of 3 coordinates (1.5 MiB) do not fit when NonZero knows K.
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  std::unique_ptr<Session> s = MakeSession(config);
  ASSERT_NE(s, nullptr);
  absl::StatusOr<std::vector<Tensor>> out =
      s->Run({{"x", WithNonZeros(kSize)}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("node 'nz' (NonZero)"));
  EXPECT_THAT(out.status().message(), HasSubstr("1572864 bytes"));
  // Fewer values then fit, in the same session.
  out = s->Run({{"x", WithNonZeros(1000)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 1000}));
}

// NonZero's GPU kernel: the positions are selected on the GPU and only the
// count comes back (one wait for the GPU a step, counted in the stats), and
// the plan says why it is not replayed as a CUDA graph.
TEST(DataDependentSessionTest, OnTheGpuTheCountIsReadBackAndTheStepNotReplayed) {
  const std::string no_gpu = ::sluice::testing::NoUsableGpuReason();
  if (!no_gpu.empty()) SLUICE_GPU_UNAVAILABLE(no_gpu);
  std::unique_ptr<Session> s = MakeSession({}, /*gpu=*/true);
  ASSERT_NE(s, nullptr);
  for (const Node& n : s->graph().nodes()) {
    if (n.name() != "nz") continue;
    ASSERT_NE(s->assignment()[n.id()], nullptr);
    EXPECT_EQ(s->assignment()[n.id()]->type(), DeviceType::kGpu);
  }
  const int64_t waits_before = s->stats().gpu_kernel_host_waits;
  const std::vector<int64_t> counts = {5, 0, 20000, kSize, 5};
  for (int64_t count : counts) {
    SCOPED_TRACE(count);
    absl::StatusOr<std::vector<Tensor>> out =
        s->Run({{"x", WithNonZeros(count)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), Shape({3, count}));
    const int64_t* rows = (*out)[0].data<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(rows[i], -(i / (2 * 16384))) << i;
      ASSERT_EQ(rows[count + i], -((i / 16384) % 2)) << i;
      ASSERT_EQ(rows[2 * count + i], -(i % 16384)) << i;
    }
  }
  const Session::Stats st = s->stats();
  EXPECT_EQ(st.gpu_kernel_host_waits - waits_before,
            static_cast<int64_t>(counts.size()));
  EXPECT_EQ(st.gpu_graph_steps, 0);
  EXPECT_THAT(st.gpu_graph_why_not,
              HasSubstr("nz (NonZero) sizes its output from values on the GPU"));
}

}  // namespace
}  // namespace sluice::data_dependent_session_test
