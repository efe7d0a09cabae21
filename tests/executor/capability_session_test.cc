// Sessions place with the kernels' capability checks
// (KernelCapabilityQuery): a node the GPU kernel cannot run for its shapes
// (a rank-9 Transpose: CUDA kernels index at most 8 dimensions) runs on the
// CPU, says why in the placement log, and gives the right values; the rest
// stays on the GPU. The CPU-only test runs everywhere; the GPU test skips
// where no GPU is usable.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "device/discovery.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "testing/gpu_required.h"

namespace sluice::capability_session_test {
namespace {

using ::testing::HasSubstr;

// t2 = Transpose(Transpose(x)) == x, x float32 of rank 9 (2 in every
// dimension); r = Relu(y), y float32[4, 4].
GraphDef DeepTransposeDef() {
  GraphDef def;
  const std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 2 dim: 2 dim: 2 dim: 2 dim: 2
                                               dim: 2 dim: 2 dim: 2 dim: 3 } } } }
    node { name: "t1" op: "Transpose" input: "x" }
    node { name: "t2" op: "Transpose" input: "t1" }
    node { name: "y" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 4 dim: 4 } } } }
    node { name: "r" op: "Relu" input: "y" }
    signature { inputs { name: "x" } inputs { name: "y" }
                outputs { name: "t2" tensor: "t2" } outputs { name: "r" tensor: "r" } }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  return def;
}

struct Feeds {
  Tensor x;
  Tensor y;
  std::vector<float> xv;
  std::vector<float> yv;
};

Feeds MakeFeeds() {
  Feeds f;
  for (int i = 0; i < 768; ++i) f.xv.push_back(static_cast<float>(i % 97) - 40);
  for (int i = 0; i < 16; ++i) f.yv.push_back(static_cast<float>(i) - 8);
  f.x = Tensor::FromVector<float>(f.xv, Shape({2, 2, 2, 2, 2, 2, 2, 2, 3}));
  f.y = Tensor::FromVector<float>(f.yv, Shape({4, 4}));
  return f;
}

void ExpectResults(const Feeds& f, const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].NumElements(), 768);
  for (int i = 0; i < 768; ++i) {
    ASSERT_EQ(out[0].data<float>()[i], f.xv[i]) << i;
  }
  ASSERT_EQ(out[1].NumElements(), 16);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[1].data<float>()[i], std::max(f.yv[i], 0.0f)) << i;
  }
}

std::string PlacementLine(const Session& s, const std::string& node) {
  for (const std::string& line : s.log()) {
    if (line.find(absl::StrCat("placement: ", node, " -> ")) == 0) return line;
  }
  return "";
}

TEST(CapabilitySessionTest, CpuSessionPlacesWithTheKernelQueryAndRuns) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(DeepTransposeDef());
  ASSERT_TRUE(g.ok()) << g.status();
  RuntimeConfig config;
  // t1 and t2 undo each other: the optimiser would remove both, and this
  // test is about where t1 is placed.
  config.set_optimization_level(OPTIMIZATION_NONE);
  config.add_logical_cpus();
  config.add_logical_cpus();
  config.set_log_placement(true);
  config.set_default_device("/cpu:0");
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(g), config);
  ASSERT_TRUE(s.ok()) << s.status();
  Feeds f = MakeFeeds();
  absl::StatusOr<std::vector<Tensor>> out =
      (*s)->Run({{"x", f.x}, {"y", f.y}}, {"t2", "r"});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectResults(f, *out);
  EXPECT_THAT(PlacementLine(**s, "t1"), HasSubstr("/cpu:"));
}

TEST(CapabilitySessionTest, NodeTheGpuKernelCannotRunRunsOnTheCpuAndSaysWhy) {
  const std::string no_gpu = ::sluice::testing::NoUsableGpuReason();
  if (!no_gpu.empty()) SLUICE_GPU_UNAVAILABLE(no_gpu);
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(DeepTransposeDef());
  ASSERT_TRUE(g.ok()) << g.status();
  RuntimeConfig config;
  // t1 and t2 undo each other: the optimiser would remove both, and this
  // test is about where t1 is placed.
  config.set_optimization_level(OPTIMIZATION_NONE);
  config.set_log_placement(true);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(g), config);
  ASSERT_TRUE(s.ok()) << s.status();
  for (const char* node : {"t1", "t2"}) {
    const std::string line = PlacementLine(**s, node);
    EXPECT_THAT(line, HasSubstr("-> /cpu:0")) << line;
    EXPECT_THAT(line, HasSubstr("rank 9 > 8")) << line;
  }
  EXPECT_THAT(PlacementLine(**s, "r"), HasSubstr("-> /gpu:0"));
  Feeds f = MakeFeeds();
  for (int step = 0; step < 3; ++step) {  // the second step may record a graph
    absl::StatusOr<std::vector<Tensor>> out =
        (*s)->Run({{"x", f.x}, {"y", f.y}}, {"t2", "r"});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectResults(f, *out);
  }
}

}  // namespace
}  // namespace sluice::capability_session_test
