// Placer behaviour on fake devices: splitting by memory, requests,
// colocation, soft placement, strategies and the errors.
#include "placer/placer.h"
#include "placer/partition.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "placer_test_util.h"

namespace sluice::placer_test {
namespace {

using ::testing::HasSubstr;
using testing_util::AllKernels;
using testing_util::Cpu;
using testing_util::DefWriter;
using testing_util::FakeTopology;
using testing_util::Gpu;
using testing_util::RecomputeMemory;

constexpr int64_t kMiB = int64_t{1} << 20;

// x[1,512] -> `layers` dense layers of 512x512 float weights (1 MiB each).
DefWriter Mlp(int layers) {
  DefWriter w;
  std::string h = w.Input("x", {1, 512});
  for (int i = 0; i < layers; ++i) {
    h = w.Dense("fc" + std::to_string(i), h, 512, 512);
    h = w.Op("Relu", "relu" + std::to_string(i), {h});
  }
  return w;
}

PlacerOptions Fake(PlacementStrategy s = PLACEMENT_AUTO) {
  PlacerOptions o;
  o.strategy = s;
  o.has_kernel = AllKernels();
  return o;
}

int DeviceOf(const Graph& g, const Placement& p, const std::string& name) {
  return p.device_of_node[g.FindNode(name)->id()];
}

const std::string& ReasonOf(const Graph& g, const Placement& p,
                            const std::string& name) {
  return p.reason[g.FindNode(name)->id()];
}

void ExpectWithinBudgets(const Graph& g, const DeviceTopology& topo,
                         const Placement& p) {
  testing_util::MemoryCheck m = RecomputeMemory(g, topo, p);
  for (int d = 0; d < topo.num_devices(); ++d) {
    EXPECT_EQ(m.weights[d], p.devices[d].weight_bytes) << topo.devices[d].name;
    EXPECT_EQ(m.peak[d], p.devices[d].peak_activation_bytes)
        << topo.devices[d].name;
    EXPECT_LE(m.weights[d] + m.peak[d], topo.devices[d].memory_budget)
        << topo.devices[d].name;
  }
}

TEST(PlacerTest, SplitsWeightsAcrossTwoGpusWhenOneIsTooSmall) {
  auto g = Mlp(6).Build();  // 6 MiB of weights
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(4 * kMiB), Gpu(4 * kMiB)});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->devices[0].weight_bytes, 0);
  EXPECT_GT(p->devices[1].weight_bytes, 0);
  EXPECT_EQ(p->devices[0].weight_bytes + p->devices[1].weight_bytes, 6 * kMiB);
  ExpectWithinBudgets(*g, topo, *p);
  // Weights sit with their MatMul, so only activations cross the link.
  for (int i = 0; i < 6; ++i) {
    std::string fc = "fc" + std::to_string(i);
    EXPECT_EQ(DeviceOf(*g, *p, fc + "_w"), DeviceOf(*g, *p, fc));
    EXPECT_THAT(ReasonOf(*g, *p, fc + "_w"), HasSubstr("first consumer"));
  }
  // No CPU in the topology: feeds and results cross no modelled link.
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, *p);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->links.size(), 1u);
  EXPECT_EQ(parts->links[0].bytes, 512 * 4);
  // Neither GPU holds the model: AUTO cut it into two pipeline stages.
  bool stage_reason = false;
  for (const std::string& r : p->reason) {
    stage_reason = stage_reason ||
                   r.find("pipeline stage: no single device holds the "
                          "model") != std::string::npos;
  }
  EXPECT_TRUE(stage_reason);
}

TEST(PlacerTest, KeepsSmallModelOnOneGpu) {
  auto g = Mlp(2).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB), Cpu()});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[0].num_nodes, g->num_nodes());
  EXPECT_EQ(p->device_names,
            std::vector<std::string>({"/gpu:0", "/gpu:1", "/cpu:0"}));
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, *p);
  ASSERT_TRUE(parts.ok()) << parts.status();
  for (const Transfer& t : parts->transfers) {  // only with the host
    EXPECT_TRUE(t.fed || t.fetched) << g->node(t.producer.node).name();
  }
  EXPECT_GT(p->estimated_step_seconds, 0);
  EXPECT_THAT(ReasonOf(*g, *p, "fc1"), HasSubstr("earliest finish"));
  EXPECT_THAT(ReasonOf(*g, *p, "fc1"), HasSubstr("on /gpu:0 vs"));
}

TEST(PlacerTest, SpreadsIndependentHeavyBranchesOverTwoGpus) {
  DefWriter w;
  std::string x = w.Input("x", {2048, 2048});
  std::string a = w.Dense("a1", x, 2048, 2048);
  a = w.Dense("a2", a, 2048, 2048);
  std::string b = w.Dense("b1", x, 2048, 2048);
  b = w.Dense("b2", b, 2048, 2048);
  w.Op("Add", "sum", {a, b});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(1024 * kMiB), Gpu(1024 * kMiB)});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(DeviceOf(*g, *p, "a2"), DeviceOf(*g, *p, "b2"));
  EXPECT_EQ(DeviceOf(*g, *p, "a1"), DeviceOf(*g, *p, "a2"));
  ExpectWithinBudgets(*g, topo, *p);
}

TEST(PlacerTest, HonoursFullRequest) {
  DefWriter w = Mlp(2);
  for (NodeDef& n : *w.def().mutable_node()) {
    n.set_device(n.name() == "fc1" ? "/gpu:1" : "");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB), Cpu()});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(topo.devices[DeviceOf(*g, *p, "fc1")].name, "/gpu:1");
  EXPECT_EQ(ReasonOf(*g, *p, "fc1"), "requested /gpu:1");
}

TEST(PlacerTest, PartialRequestPicksAmongMatchingDevices) {
  DefWriter w = Mlp(1);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "relu0") n.set_device("/cpu:*");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo =
      FakeTopology({Gpu(64 * kMiB), Cpu(), Cpu()});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(topo.devices[DeviceOf(*g, *p, "relu0")].type, DeviceType::kCpu);
  EXPECT_THAT(ReasonOf(*g, *p, "relu0"), HasSubstr("requested /cpu:*"));
}

TEST(PlacerTest, FallsBackToCpuWhenNoGpuKernel) {
  auto g = Mlp(2).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  PlacerOptions o = Fake();
  o.has_kernel = AllKernels({"Relu"});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "relu0"), 1);
  EXPECT_EQ(ReasonOf(*g, *p, "relu0"), "only /cpu:0 has a kernel");
  EXPECT_EQ(DeviceOf(*g, *p, "fc1"), 0);
}

TEST(PlacerTest, NodeWithNoKernelAnywhereIsAnError) {
  auto g = Mlp(1).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB)});
  PlacerOptions o = Fake();
  o.has_kernel = AllKernels({"MatMul"});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("'fc0' (MatMul)"));
  EXPECT_THAT(p.status().message(), HasSubstr("no kernel"));
}

TEST(PlacerTest, ColocatesGroupMembersByAttribute) {
  DefWriter w = Mlp(3);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "relu0" || n.name() == "fc2") {
      (*n.mutable_attr())[kColocateAttr].set_s("g");
    }
    if (n.name() == "fc2") n.set_device("/gpu:1");
  }
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(w.def());
  ASSERT_TRUE(g.ok()) << g.status();
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB)});
  absl::StatusOr<Placement> p = PlaceGraph(**g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(**g, *p, "relu0"), 1);
  EXPECT_EQ(DeviceOf(**g, *p, "fc2"), 1);
}

TEST(PlacerTest, ColocatesGroupMembersByOption) {
  auto g = Mlp(3).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB), Cpu()});
  PlacerOptions o = Fake();
  o.has_kernel = AllKernels({"Relu"});  // relu* only on the CPU
  o.colocation_groups = {{"fc0", "grp"}, {"relu2", "grp"}};
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "fc0"), 2);
  EXPECT_EQ(DeviceOf(*g, *p, "relu2"), 2);
  EXPECT_THAT(ReasonOf(*g, *p, "relu2"), HasSubstr("colocation group 'grp'"));
}

TEST(PlacerTest, ColocationConflictIsAnErrorNamingTheGroup) {
  DefWriter w = Mlp(2);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "fc0") n.set_device("/gpu:0");
    if (n.name() == "fc1") n.set_device("/gpu:1");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB)});
  PlacerOptions o = Fake();
  o.colocation_groups = {{"fc0", "pair"}, {"fc1", "pair"}};
  o.soft_placement = false;
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("colocation group 'pair'"));
  // Soft placement drops the conflicting requests and keeps the group.
  o.soft_placement = true;
  p = PlaceGraph(*g, topo, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "fc0"), DeviceOf(*g, *p, "fc1"));
  EXPECT_THAT(ReasonOf(*g, *p, "fc1"), HasSubstr("soft placement"));
}

TEST(PlacerTest, SoftPlacementMovesRequestForMissingDevice) {
  DefWriter w = Mlp(1);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "fc0") n.set_device("/gpu:5");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(ReasonOf(*g, *p, "fc0"),
              HasSubstr("requested /gpu:5 but there is no device /gpu:5"));
  EXPECT_THAT(ReasonOf(*g, *p, "fc0"), HasSubstr("(soft placement)"));
  EXPECT_FALSE(p->notes.empty());
}

TEST(PlacerTest, SoftPlacementOffNamesNodeAndPossibleDevices) {
  DefWriter w = Mlp(1);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "relu0") n.set_device("/gpu:0");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu(), Cpu()});
  PlacerOptions o = Fake();
  o.has_kernel = AllKernels({"Relu"});
  o.soft_placement = false;
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("'relu0' (Relu)"));
  EXPECT_THAT(p.status().message(), HasSubstr("requests /gpu:0"));
  EXPECT_THAT(p.status().message(),
              HasSubstr("possible devices: /cpu:0, /cpu:1"));
  o.soft_placement = true;
  p = PlaceGraph(*g, topo, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(ReasonOf(*g, *p, "relu0"), HasSubstr("no gpu kernel for Relu"));
}

TEST(PlacerTest, RequestedDeviceWithoutRoomMovesOnlyWithSoftPlacement) {
  DefWriter w = Mlp(2);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "fc1_w") n.set_device("/gpu:0");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(kMiB / 2), Gpu(64 * kMiB)});
  PlacerOptions o = Fake();
  o.soft_placement = false;
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr("'fc1_w' (Const)"));
  o.soft_placement = true;
  p = PlaceGraph(*g, topo, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "fc1_w"), 1);
  EXPECT_THAT(ReasonOf(*g, *p, "fc1_w"), HasSubstr("has no room"));
}

TEST(PlacerTest, ModelThatFitsNowhereIsResourceExhaustedWithNumbers) {
  auto g = Mlp(6).Build();  // 6 MiB of weights
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(2 * kMiB), Gpu(2 * kMiB)});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr("does not fit"));
  EXPECT_THAT(p.status().message(), HasSubstr("weights are 6.0 MiB"));
  EXPECT_THAT(p.status().message(), HasSubstr("/gpu:0"));
  EXPECT_THAT(p.status().message(), HasSubstr("of 2.0 MiB"));
  EXPECT_THAT(p.status().message(), HasSubstr("bytes"));
}

TEST(PlacerTest, SingleStrategyUsesFastestDeviceThatHoldsEverything) {
  auto g = Mlp(3).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(2 * kMiB), Gpu(64 * kMiB), Cpu()});
  absl::StatusOr<Placement> p =
      PlaceGraph(*g, topo, Fake(PLACEMENT_SINGLE));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[1].num_nodes, g->num_nodes());
  EXPECT_THAT(ReasonOf(*g, *p, "fc0"), HasSubstr("single device /gpu:1"));
  // Nothing but the CPU holds it: everything goes there.
  topo = FakeTopology({Gpu(2 * kMiB), Gpu(2 * kMiB), Cpu()});
  p = PlaceGraph(*g, topo, Fake(PLACEMENT_SINGLE));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[2].num_nodes, g->num_nodes());
  // Nothing holds it: an error, not a split.
  topo = FakeTopology({Gpu(2 * kMiB), Gpu(2 * kMiB)});
  p = PlaceGraph(*g, topo, Fake(PLACEMENT_SINGLE));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr("no single device"));
}

TEST(PlacerTest, ManualStrategyPutsUnrequestedNodesOnDefaultDevice) {
  DefWriter w = Mlp(2);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "fc1") n.set_device("/gpu:1");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB), Cpu()});
  PlacerOptions o = Fake(PLACEMENT_MANUAL);
  o.default_device = "/cpu:0";
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "fc1"), 1);
  EXPECT_EQ(DeviceOf(*g, *p, "fc0"), 2);
  EXPECT_EQ(DeviceOf(*g, *p, "fc1_w"), 2);  // manual: weights do not follow
  EXPECT_EQ(ReasonOf(*g, *p, "fc0"), "default device /cpu:0");
  o.default_device = "/gpu:7";
  EXPECT_EQ(PlaceGraph(*g, topo, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Options as a session sets them: GPUs first, fake kernels.
PlacerOptions GpuFirst(PlacementStrategy s, const std::string& default_device,
                       std::vector<std::string> cpu_only = {}) {
  PlacerOptions o = Fake(s);
  o.default_device = default_device;
  o.gpu_first = true;
  o.has_kernel = AllKernels(std::move(cpu_only));
  return o;
}

TEST(PlacerTest, GpuFirstLeavesTheCpuOnlyWhatNoGpuCanRun) {
  auto g = Mlp(2).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  for (PlacementStrategy s : {PLACEMENT_AUTO, PLACEMENT_SINGLE, PLACEMENT_MANUAL}) {
    absl::StatusOr<Placement> p =
        PlaceGraph(*g, topo, GpuFirst(s, "", /*cpu_only=*/{"Relu"}));
    ASSERT_TRUE(p.ok()) << StrategyName(s) << ": " << p.status();
    for (const Node& n : g->nodes()) {
      EXPECT_EQ(p->device_of_node[n.id()], n.op() == "Relu" ? 1 : 0)
          << StrategyName(s) << ": " << n.name();
    }
  }
  // AUTO ignores default_device: still the GPU.
  absl::StatusOr<Placement> p =
      PlaceGraph(*g, topo, GpuFirst(PLACEMENT_AUTO, "/cpu:0"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[0].num_nodes, g->num_nodes());
  // Without a GPU in the topology it changes nothing.
  p = PlaceGraph(*g, FakeTopology({Cpu()}), GpuFirst(PLACEMENT_AUTO, ""));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[0].num_nodes, g->num_nodes());
}

TEST(PlacerTest, GpuFirstYieldsToACpuRequestInAnySpelling) {
  DefWriter w = Mlp(1);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "fc0") n.set_device("/device:CPU:0");
    if (n.name() == "relu0") n.set_device("CPU:0");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  absl::StatusOr<Placement> p =
      PlaceGraph(*g, topo, GpuFirst(PLACEMENT_AUTO, ""));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "fc0"), 1);
  EXPECT_EQ(DeviceOf(*g, *p, "relu0"), 1);
  EXPECT_EQ(ReasonOf(*g, *p, "fc0"), "requested /device:CPU:0");
}

// `sluice run --device cpu:0` on a machine with a GPU: manual placement
// with the CPU as default device must keep every unrequested node there.
TEST(PlacerTest, GpuFirstYieldsToACpuDefaultDeviceUnderManualAndSingle) {
  DefWriter w = Mlp(2);
  for (NodeDef& n : *w.def().mutable_node()) {
    if (n.name() == "fc1") n.set_device("/gpu:0");
  }
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu()});
  for (const char* cpu : {"/cpu:0", "cpu:0", "/device:CPU:0"}) {
    absl::StatusOr<Placement> p =
        PlaceGraph(*g, topo, GpuFirst(PLACEMENT_MANUAL, cpu));
    ASSERT_TRUE(p.ok()) << cpu << ": " << p.status();
    for (const Node& n : g->nodes()) {
      EXPECT_EQ(p->device_of_node[n.id()], n.name() == "fc1" ? 0 : 1)
          << cpu << ": " << n.name();
    }
    EXPECT_EQ(ReasonOf(*g, *p, "fc0"), "default device /cpu:0");
    EXPECT_EQ(ReasonOf(*g, *p, "fc1"), "requested /gpu:0");
  }
  absl::StatusOr<Placement> p =
      PlaceGraph(*g, topo, GpuFirst(PLACEMENT_SINGLE, "/cpu:0"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DeviceOf(*g, *p, "fc0"), 1);
  EXPECT_EQ(DeviceOf(*g, *p, "relu1"), 1);
  // A GPU default device is unchanged: everything unrequested goes there.
  p = PlaceGraph(*g, topo, GpuFirst(PLACEMENT_MANUAL, "gpu:0"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[0].num_nodes, g->num_nodes());
}

TEST(PlacerTest, GpuFirstWithALogicalCpuAsDefaultDevice) {
  auto g = Mlp(1).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Cpu(), Cpu()});
  absl::StatusOr<Placement> p =
      PlaceGraph(*g, topo, GpuFirst(PLACEMENT_MANUAL, "/cpu:1"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->devices[2].num_nodes, g->num_nodes());
}

TEST(PlacerTest, StaysOnCpusOnlyForManualOnACpuWithoutGpuRequests) {
  DefWriter w = Mlp(1);
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(StaysOnCpus(*g, GpuFirst(PLACEMENT_MANUAL, "cpu:0")));
  EXPECT_TRUE(StaysOnCpus(*g, GpuFirst(PLACEMENT_MANUAL, "/cpu:1")));
  EXPECT_FALSE(StaysOnCpus(*g, GpuFirst(PLACEMENT_MANUAL, "/gpu:0")));
  EXPECT_FALSE(StaysOnCpus(*g, GpuFirst(PLACEMENT_MANUAL, "")));  // first GPU
  EXPECT_FALSE(StaysOnCpus(*g, GpuFirst(PLACEMENT_SINGLE, "/cpu:0")));
  EXPECT_FALSE(StaysOnCpus(*g, GpuFirst(PLACEMENT_AUTO, "/cpu:0")));
  w.last()->set_device("/device:CPU:0");
  g = w.Build();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(StaysOnCpus(*g, GpuFirst(PLACEMENT_MANUAL, "/cpu:0")));
  w.last()->set_device("/gpu:*");
  g = w.Build();
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(StaysOnCpus(*g, GpuFirst(PLACEMENT_MANUAL, "/cpu:0")));
}

TEST(PlacerTest, EveryNodeHasAReasonAndRunOrderIsTopological) {
  auto g = Mlp(4).Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(3 * kMiB), Gpu(3 * kMiB), Cpu()});
  absl::StatusOr<Placement> p = PlaceGraph(*g, topo, Fake());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->reason.size(), static_cast<size_t>(g->num_nodes()));
  std::vector<int> pos(g->num_nodes());
  for (int i = 0; i < g->num_nodes(); ++i) pos[p->run_order[i]] = i;
  for (const Node& n : g->nodes()) {
    EXPECT_FALSE(p->reason[n.id()].empty()) << n.name();
    for (const TensorRef& in : n.inputs()) EXPECT_LT(pos[in.node], pos[n.id()]);
  }
}

TEST(PlacerTest, OptionsFromConfig) {
  RuntimeConfig c;
  PlacerOptions o = PlacerOptionsFromConfig(c);
  EXPECT_EQ(o.strategy, PLACEMENT_AUTO);
  EXPECT_TRUE(o.soft_placement);
  c.set_placement_strategy(PLACEMENT_MANUAL);
  c.set_soft_placement(false);
  c.set_default_device("/cpu:0");
  o = PlacerOptionsFromConfig(c);
  EXPECT_EQ(o.strategy, PLACEMENT_MANUAL);
  EXPECT_FALSE(o.soft_placement);
  EXPECT_EQ(o.default_device, "/cpu:0");
  EXPECT_EQ(*ParseStrategy("single"), PLACEMENT_SINGLE);
  EXPECT_EQ(ParseStrategy("best").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::placer_test
