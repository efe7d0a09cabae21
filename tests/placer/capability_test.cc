// Rule 1 with kernel capability: a node whose GPU kernel cannot run it for
// its shapes goes to a device that can, and its reason says why; a node no
// device can run, or a request no kernel there can honour with soft
// placement off, is an INVALID_ARGUMENT error naming the node. Fake devices
// and fake kernel queries (placer_test_util.h): the placer links no kernels.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/placer.h"
#include "placer_test_util.h"

namespace sluice::capability_test {
namespace {

using ::testing::HasSubstr;
using testing_util::Cpu;
using testing_util::DefWriter;
using testing_util::FakeTopology;
using testing_util::Gpu;
using testing_util::GpuRankAtMost;

constexpr int64_t kMiB = int64_t{1} << 20;

// x[2,3,4,5,6] -> relu5 (rank 5); y[8,8] -> relu2 (rank 2).
DefWriter TwoRanks() {
  DefWriter w;
  std::string x = w.Input("x", {2, 3, 4, 5, 6});
  w.Op("Relu", "relu5", {x});
  std::string y = w.Input("y", {8, 8});
  w.Op("Relu", "relu2", {y});
  return w;
}

int DeviceOf(const Graph& g, const Placement& p, const std::string& name) {
  return p.device_of_node[g.FindNode(name)->id()];
}

PlacerOptions RankFour() {
  PlacerOptions o;
  o.gpu_first = true;  // as sessions place
  o.has_kernel = GpuRankAtMost(4);
  return o;
}

TEST(PlacerCapabilityTest, NodeTheGpuKernelCannotRunGoesToTheCpuAndSaysWhy) {
  auto g = TwoRanks().Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  for (PlacementStrategy s : {PLACEMENT_AUTO, PLACEMENT_SINGLE, PLACEMENT_MANUAL}) {
    PlacerOptions o = RankFour();
    o.strategy = s;
    absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
    ASSERT_TRUE(p.ok()) << StrategyName(s) << ": " << p.status();
    EXPECT_EQ(DeviceOf(*g, *p, "relu5"), 1) << StrategyName(s);
    EXPECT_EQ(DeviceOf(*g, *p, "relu2"), 0) << StrategyName(s);
    const std::string& why = p->reason[g->FindNode("relu5")->id()];
    EXPECT_THAT(why, HasSubstr("/gpu:0: "));
    EXPECT_THAT(why, HasSubstr("rank 5 > 4"));
    EXPECT_THAT(why, HasSubstr("only /cpu:0 has a kernel"));
    // The refusal is also a placement note (sessions log them).
    bool noted = false;
    for (const std::string& note : p->notes) {
      noted = noted || (note.find("'relu5'") != std::string::npos &&
                        note.find("rank 5 > 4") != std::string::npos);
    }
    EXPECT_TRUE(noted) << StrategyName(s);
  }
}

TEST(PlacerCapabilityTest, NodeNoDeviceCanRunIsAnErrorNamingItAndTheReason) {
  auto g = TwoRanks().Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB)});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, RankFour());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("node 'relu5' (Relu)"));
  EXPECT_THAT(p.status().message(), HasSubstr("/gpu:0, /gpu:1: "));
  EXPECT_THAT(p.status().message(), HasSubstr("rank 5 > 4"));
}

TEST(PlacerCapabilityTest, RequestForADeviceThatCannotRunTheNode) {
  DefWriter w = TwoRanks();
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "relu5") n.set_device("/gpu:0");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  // Soft placement off: an error naming the node, the reason and the
  // devices that were possible.
  PlacerOptions strict = RankFour();
  strict.soft_placement = false;
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, strict);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("node 'relu5' (Relu)"));
  EXPECT_THAT(p.status().message(), HasSubstr("requests /gpu:0"));
  EXPECT_THAT(p.status().message(), HasSubstr("rank 5 > 4"));
  EXPECT_THAT(p.status().message(), HasSubstr("possible devices: /cpu:0"));
  // Soft placement on: the request is dropped and the reason says why.
  p = PlaceGraph(*g, topo, RankFour());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "relu5"), 1);
  const std::string& why = p->reason[g->FindNode("relu5")->id()];
  EXPECT_THAT(why, HasSubstr("requested /gpu:0"));
  EXPECT_THAT(why, HasSubstr("rank 5 > 4"));
  EXPECT_THAT(why, HasSubstr("soft placement"));
}

TEST(PlacerCapabilityTest, UnknownRankIsLeftToTheKernel) {
  // Ranks the shapes do not know cannot be refused: the node stays where
  // the GPU-first rule puts it.
  DefWriter w;
  std::string x = w.Input("x", {});
  w.def().mutable_node(0)->mutable_attr()->erase("shape");
  w.Op("Relu", "relu", {x});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, RankFour());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "relu"), 0);
}

TEST(PlacerCapabilityTest, PlacingWithoutAKernelQueryIsAnError) {
  auto g = TwoRanks().Build();
  ASSERT_NE(g, nullptr);
  absl::StatusOr<Placement> p =
      PlaceGraph(*g, FakeTopology({Cpu()}), PlacerOptions());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("kernel query"));
  EXPECT_THAT(p.status().message(), HasSubstr("KernelCapabilityQuery"));
}

}  // namespace
}  // namespace sluice::capability_test
