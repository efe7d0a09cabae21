// Pipeline stages (placer/stages.h through PlaceGraph's AUTO strategy): a
// model that no device holds is cut into contiguous stages, few values cross
// between them, and only forward.
#include "placer/stages.h"

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "placer/partition.h"
#include "placer/placer.h"
#include "placer_test_util.h"
#include "tests/test_data.h"
#include "tools/place_command.h"

namespace sluice::stages_test {
namespace {

using testing_util::AllKernels;
using testing_util::DefWriter;
using testing_util::EncoderStack;
using testing_util::FakeTopology;
using testing_util::Gpu;
using testing_util::RecomputeMemory;
using ::testing::HasSubstr;

constexpr int64_t kKiB = 1024;

PlacerOptions Auto(bool stages = true) {
  PlacerOptions o;
  o.has_kernel = AllKernels();
  o.pipeline_stages = stages;
  return o;
}

int DevicesUsed(const Placement& p) {
  int used = 0;
  for (const DeviceUsage& u : p.devices) used += u.num_nodes > 0;
  return used;
}

// The layer number of "l<i>/..." nodes, -1 for others.
int LayerOf(const std::string& name) {
  int layer = -1;
  if (name.size() > 1 && name[0] == 'l') {
    layer = 0;
    for (size_t i = 1; i < name.size() && name[i] != '/'; ++i) {
      layer = layer * 10 + (name[i] - '0');
    }
  }
  return layer;
}

// Every transfer between devices goes to a device later in `order`.
void ExpectForwardOnly(const Partitioning& parts,
                       const std::vector<int>& order) {
  std::vector<int> rank(order.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  for (const Transfer& t : parts.transfers) {
    EXPECT_LT(rank[t.src_device], rank[t.dst_device])
        << "a value goes back from device " << t.src_device << " to "
        << t.dst_device;
  }
}

TEST(StagesTest, EncoderSplitInTwoIsCutBetweenLayersWithOneTransfer) {
  // 8 layers of 192 KiB weights; each GPU holds about five.
  auto g = EncoderStack(8, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(1024 * kKiB), Gpu(1024 * kKiB)});
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*g, topo, Auto()));
  EXPECT_EQ(DevicesUsed(p), 2);
  ASSERT_OK_AND_ASSIGN(Partitioning parts, PartitionGraph(*g, topo, p));
  // Feeds and fetches are not modelled on a topology of GPUs alone.
  ASSERT_EQ(parts.transfers.size(), 1u);
  EXPECT_EQ(g->node(parts.transfers[0].producer.node).name().substr(3),
            "out");
  ExpectForwardOnly(parts, {0, 1});
  // Every layer lies on one device.
  for (const Node& n : g->nodes()) {
    const int layer = LayerOf(n.name());
    if (layer < 0) continue;
    EXPECT_EQ(p.device_of_node[n.id()],
              p.device_of_node[g->FindNode(absl::StrCat("l", layer, "/out"))
                                   ->id()])
        << n.name();
  }
  EXPECT_THAT(p.notes, ::testing::Contains(HasSubstr("2 pipeline stages")));
  // Within every budget, by the tests' own count.
  testing_util::MemoryCheck m = RecomputeMemory(*g, topo, p);
  for (int d = 0; d < 2; ++d) {
    EXPECT_LE(m.weights[d] + m.peak[d], topo.devices[d].memory_budget);
  }
}

TEST(StagesTest, EncoderOverManySmallDevicesFlowsOneWay) {
  auto g = EncoderStack(12, 16, 64);  // 2.25 MiB of weights
  ASSERT_NE(g, nullptr);
  std::vector<DeviceSpec> gpus(6, Gpu(640 * kKiB));
  DeviceTopology topo = FakeTopology(gpus);
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*g, topo, Auto()));
  EXPECT_GE(DevicesUsed(p), 4);
  ASSERT_OK_AND_ASSIGN(Partitioning parts, PartitionGraph(*g, topo, p));
  ExpectForwardOnly(parts, {0, 1, 2, 3, 4, 5});
  // One value (a layer's output) per boundary between stages.
  EXPECT_EQ(static_cast<int>(parts.transfers.size()), DevicesUsed(p) - 1);
}

// A stack of layers out = x + (Relu(x W_i) T + gamma), where every layer
// reads the same two constants: "gamma" [64] (256 bytes: like the ones and
// zeros common_subexpressions merges in exported models) and "table"
// [320, 64] (80 KiB, above kMaxConstantHeldWhereReadBytes). 80 KiB of
// weights a layer.
std::unique_ptr<const Graph> SharedConstantStack(int layers) {
  DefWriter w;
  std::string x = w.Input("x", {16, 64});
  const std::string gamma = w.Const("gamma", {64});
  const std::string table = w.Const("table", {320, 64});
  for (int i = 0; i < layers; ++i) {
    const std::string p = absl::StrCat("l", i, "/");
    std::string h = w.Op("Relu", p + "h", {w.Dense(p + "ff1", x, 64, 320)});
    std::string y = w.Op("MatMul", p + "y", {h, table});
    std::string g = w.Op("Add", p + "g", {y, gamma});
    x = w.Op("Add", p + "out", {x, g});
  }
  return w.Build();
}

TEST(StagesTest, ASmallConstantEveryLayerReadsIsHeldOnBothSidesOfTheCut) {
  auto g = SharedConstantStack(8);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(512 * kKiB), Gpu(512 * kKiB)});
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*g, topo, Auto()));
  ASSERT_EQ(DevicesUsed(p), 2);
  ASSERT_OK_AND_ASSIGN(Partitioning parts, PartitionGraph(*g, topo, p));
  ExpectForwardOnly(parts, {0, 1});
  // Per step: the layer output at the cut and the large constant; gamma is
  // held by the second GPU too, a transfer that moves nothing per step.
  int per_step = 0;
  bool gamma_held = false;

  for (const Transfer& t : parts.transfers) {
    const std::string& name = g->node(t.producer.node).name();
    if (t.constant) {
      EXPECT_EQ(name, "gamma");
      gamma_held = true;
      continue;
    }
    ++per_step;
    EXPECT_TRUE(name == "table" || name.substr(name.find('/') + 1) == "out")
        << name;
  }
  EXPECT_TRUE(gamma_held);
  EXPECT_EQ(per_step, 2);
  int64_t link_bytes = 0;
  for (const LinkTraffic& l : parts.links) link_bytes += l.bytes;
  EXPECT_EQ(link_bytes, 16 * 64 * 4 + 320 * 64 * 4);
  // The placer's note counts what crosses per step, gamma not included.
  EXPECT_THAT(p.notes, ::testing::Contains(HasSubstr(
                           "2 values crossing between them per step")));
}

TEST(StagesTest, ModelThatFitsOnOneDeviceIsPlacedByEarliestFinish) {
  auto g = EncoderStack(2, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(4096 * kKiB), Gpu(4096 * kKiB)});
  ASSERT_OK_AND_ASSIGN(Placement staged, PlaceGraph(*g, topo, Auto(true)));
  ASSERT_OK_AND_ASSIGN(Placement heft, PlaceGraph(*g, topo, Auto(false)));
  EXPECT_EQ(staged.device_of_node, heft.device_of_node);
  EXPECT_THAT(staged.notes,
              ::testing::Not(::testing::Contains(HasSubstr("pipeline"))));
}

TEST(StagesTest, PlannerSaysWhetherTheModelMustSplit) {
  auto g = EncoderStack(4, 16, 64);  // 768 KiB of weights
  ASSERT_NE(g, nullptr);
  CostModel cost(*g);
  for (int64_t budget : {512 * kKiB, 2048 * kKiB}) {
    DeviceTopology topo = FakeTopology({Gpu(budget), Gpu(budget)});
    ASSERT_OK_AND_ASSIGN(NodeConstraints c,
                         ComputeConstraints(*g, topo, AllKernels(), true));
    std::vector<int> order(g->topological_order().begin(),
                           g->topological_order().end());
    StagePlanner planner(*g, topo, cost, c, order, StageDeviceOrder(topo));
    EXPECT_EQ(planner.must_split(), budget == 512 * kKiB) << budget;
    std::optional<StageSplit> s = planner.Plan(0.5);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->devices.size(), budget == 512 * kKiB ? 2u : 1u);
  }
}

TEST(StagesTest, HeftStaysAvailable) {
  auto g = EncoderStack(8, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(1024 * kKiB), Gpu(1024 * kKiB)});
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*g, topo, Auto(false)));
  EXPECT_EQ(DevicesUsed(p), 2);
  EXPECT_THAT(p.notes,
              ::testing::Not(::testing::Contains(HasSubstr("pipeline"))));
}

// `sluice place --json` on an example with the given devices.
// An empty object when it fails (a test failure unless `may_fail`).
nlohmann::json PlaceJson(const std::string& model, const std::string& devices,
                         bool may_fail = false) {
  std::ostringstream out, err;
  std::vector<std::string> args = {TestDataPath(model), "--devices", devices,
                                   "--json"};
  int code = PlaceMain(args, out, err);
  if (!may_fail) {
    EXPECT_EQ(code, 0) << err.str();
  }
  if (code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(out.str());
}

int UsedDevices(const nlohmann::json& j) {
  int used = 0;
  for (const auto& d : j["devices"]) used += d["nodes"].get<int>() > 0;
  return used;
}

// The N of "/gpu:N" or ".../gpu:N".
int GpuNumber(const std::string& name) {
  return std::stoi(name.substr(name.rfind(':') + 1));
}

TEST(StagesTest, TransformerBlockSplitByMemoryCrossesOnceOneWay) {
  for (const char* devices : {"3xgpu:4MiB", "2xgpu:4MiB"}) {
    SCOPED_TRACE(devices);
    nlohmann::json j = PlaceJson("examples/transformer_block.pb", devices);
    ASSERT_TRUE(j.contains("transfers"));
    EXPECT_EQ(UsedDevices(j), 2);
    EXPECT_LE(j["transfers"].size(), 2u) << j["transfers"].dump();
    EXPECT_GE(j["transfers"].size(), 1u);
    for (const auto& t : j["transfers"]) {
      EXPECT_LT(GpuNumber(t["src"]), GpuNumber(t["dst"])) << t.dump();
    }
  }
}

TEST(StagesTest, NoStagesFlagPlacesByEarliestFinish) {
  const std::string model = TestDataPath("examples/transformer_block.pb");
  auto notes = [&](std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), {model, "--devices", "3xgpu:4MiB", "--json"});
    EXPECT_EQ(PlaceMain(args, out, err), 0) << err.str();
    return out.str().empty() ? std::string()
                             : nlohmann::json::parse(out.str())["notes"].dump();
  };
  EXPECT_THAT(notes({}), HasSubstr("pipeline stages"));
  EXPECT_THAT(notes({"--no-stages"}),
              ::testing::Not(HasSubstr("pipeline stages")));
}

// For every example model: budgets of 60% to 95% of what it needs on one
// device (from its weights and peak); where AUTO cuts it into stages (a
// model whose largest activations meet at one node splits only near the
// top), values flow one way, and at least one budget does.
TEST(StagesTest, EveryExampleSplitByMemoryFlowsOneWay) {
  for (const char* model :
       {"examples/mlp.pbtxt", "examples/cnn.pb",
        "examples/transformer_block.pb"}) {
    SCOPED_TRACE(model);
    nlohmann::json one = PlaceJson(model, "gpu:16GiB");
    ASSERT_TRUE(one.contains("devices"));
    const int64_t weights = one["devices"][0]["weight_bytes"];
    const int64_t peak = one["devices"][0]["peak_activation_bytes"];
    int splits = 0;
    for (int percent = 60; percent < 100; percent += 5) {
      // A budget is three quarters of a small limit (WorkspaceReserve).
      const int64_t limit = (weights + peak) * percent / 100 * 4 / 3;
      nlohmann::json j = PlaceJson(
          model, absl::StrCat("3xgpu:", limit, "B"), /*may_fail=*/true);
      // A run order with a lower peak may still fit on one device.
      if (!j.contains("notes") ||
          j["notes"].dump().find("pipeline stages") == std::string::npos) {
        continue;
      }
      SCOPED_TRACE(percent);
      EXPECT_GE(UsedDevices(j), 2);
      ++splits;
      for (const auto& t : j["transfers"]) {
        EXPECT_LT(GpuNumber(t["src"]), GpuNumber(t["dst"])) << t.dump();
      }
    }
    EXPECT_GE(splits, 1);
  }
}

}  // namespace
}  // namespace sluice::stages_test
