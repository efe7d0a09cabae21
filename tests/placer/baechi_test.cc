// Baechi's m-TOPO and m-ETF (placer/baechi.h), the baselines `sluice place
// --baseline` compares PlaceGraph with: each fills devices within Baechi's
// memory model, m-TOPO in topological order and m-ETF by earliest start,
// and the result is scheduled and checked as PlaceGraph's are.
#include "placer/baechi.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "placer/partition.h"
#include "placer/placer.h"
#include "placer_test_util.h"
#include "tests/test_data.h"
#include "tools/place_command.h"

namespace sluice::baechi_test {
namespace {

using ::testing::HasSubstr;
using testing_util::AllKernels;
using testing_util::DefWriter;
using testing_util::EncoderStack;
using testing_util::FakeTopology;
using testing_util::Gpu;
using testing_util::RecomputeMemory;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

PlacerOptions Options() {
  PlacerOptions o;
  o.has_kernel = AllKernels();
  return o;
}

std::vector<int> NodesPerDevice(const Placement& p) {
  std::vector<int> n;
  for (const DeviceUsage& u : p.devices) n.push_back(u.num_nodes);
  return n;
}

// Every device's weights and peak activations, recomputed, within budget.
void ExpectWithinBudgets(const Graph& g, const DeviceTopology& topo,
                         const Placement& p) {
  const testing_util::MemoryCheck m = RecomputeMemory(g, topo, p);
  for (int d = 0; d < topo.num_devices(); ++d) {
    EXPECT_LE(m.weights[d] + m.peak[d], topo.devices[d].memory_budget)
        << topo.devices[d].name;
  }
}

// Two independent chains of `layers` Dense + Relu layers from one input,
// added at the end.
std::unique_ptr<const Graph> TwoBranches(int layers, int64_t width) {
  DefWriter w;
  const std::string x = w.Input("x", {64, width});
  std::string a = x;
  std::string b = x;
  for (int i = 0; i < layers; ++i) {
    a = w.Op("Relu", absl::StrCat("a", i),
             {w.Dense(absl::StrCat("a", i, "/mm"), a, width, width)});
    b = w.Op("Relu", absl::StrCat("b", i),
             {w.Dense(absl::StrCat("b", i, "/mm"), b, width, width)});
  }
  w.Op("Add", "y", {a, b});
  return w.Build();
}

TEST(BaechiTest, TopoKeepsAModelThatFitsOnTheFirstDevice) {
  auto g = EncoderStack(4, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB)});
  ASSERT_OK_AND_ASSIGN(
      Placement p, PlaceBaechi(*g, topo, Options(), BaechiAlgorithm::kTopo));
  EXPECT_EQ(NodesPerDevice(p), (std::vector<int>{g->num_nodes(), 0}));
  EXPECT_GT(p.estimated_step_seconds, 0);
  EXPECT_THAT(p.notes.back(), HasSubstr("m-TOPO"));
}

TEST(BaechiTest, TopoFillsTheFirstDeviceThenTheNextInOneDirection) {
  // 8 layers of 192 KiB weights; Baechi's model also keeps every output.
  auto g = EncoderStack(8, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(1200 * kKiB), Gpu(1200 * kKiB)});
  ASSERT_OK_AND_ASSIGN(
      Placement p, PlaceBaechi(*g, topo, Options(), BaechiAlgorithm::kTopo));
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_GT(p.devices[0].num_nodes, 0);
  EXPECT_GT(p.devices[1].num_nodes, 0);
  ExpectWithinBudgets(*g, topo, p);
  ASSERT_OK_AND_ASSIGN(Partitioning parts, PartitionGraph(*g, topo, p));
  ASSERT_FALSE(parts.transfers.empty());
  for (const Transfer& t : parts.transfers) {
    EXPECT_EQ(t.src_device, 0);
    EXPECT_EQ(t.dst_device, 1);
  }
}

TEST(BaechiTest, EtfRunsIndependentBranchesOnBothDevices) {
  // 8 layers of 256 x 256 products a branch: each is worth far more than
  // its 64 KiB output's copy, so earliest start gives each branch a device.
  auto g = TwoBranches(8, 256);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB)});
  ASSERT_OK_AND_ASSIGN(Placement etf,
                       PlaceBaechi(*g, topo, Options(), BaechiAlgorithm::kEtf));
  EXPECT_GT(etf.devices[0].num_nodes, 0);
  EXPECT_GT(etf.devices[1].num_nodes, 0);
  ASSERT_OK_AND_ASSIGN(Placement topo_p, PlaceBaechi(*g, topo, Options(),
                                                     BaechiAlgorithm::kTopo));
  EXPECT_EQ(topo_p.devices[1].num_nodes, 0);  // it all fits on the first
  EXPECT_LT(etf.estimated_step_seconds, topo_p.estimated_step_seconds);
  ExpectWithinBudgets(*g, topo, etf);
  // A layer's weights sit with the product that reads them.
  for (int v = 0; v < g->num_nodes(); ++v) {
    const Node& n = g->node(v);
    if (n.op() != "MatMul") continue;
    EXPECT_EQ(etf.device_of_node[n.input(1).node], etf.device_of_node[v])
        << n.name();
  }
}

TEST(BaechiTest, EtfStaysWithinBudgetsWhenTheModelMustSplit) {
  auto g = EncoderStack(8, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology(
      {Gpu(700 * kKiB), Gpu(700 * kKiB), Gpu(700 * kKiB), Gpu(700 * kKiB)});
  ASSERT_OK_AND_ASSIGN(Placement p,
                       PlaceBaechi(*g, topo, Options(), BaechiAlgorithm::kEtf));
  int used = 0;
  for (const DeviceUsage& u : p.devices) used += u.num_nodes > 0;
  EXPECT_GE(used, 2);
  ExpectWithinBudgets(*g, topo, p);
}

TEST(BaechiTest, EtfPlacesANodeThatWaitsOnAConstantsControlEdge) {
  DefWriter w;
  const std::string x = w.Input("x", {4, 8});
  const std::string c = w.Const("c", {8});
  w.Op("Relu", "r", {x});
  w.last()->add_input("^" + c);
  w.Op("Tanh", "y", {"r"});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(64 * kMiB), Gpu(64 * kMiB)});
  for (BaechiAlgorithm a : {BaechiAlgorithm::kTopo, BaechiAlgorithm::kEtf}) {
    ASSERT_OK_AND_ASSIGN(Placement p, PlaceBaechi(*g, topo, Options(), a));
    EXPECT_EQ(p.devices[0].num_nodes + p.devices[1].num_nodes, g->num_nodes())
        << BaechiAlgorithmName(a);
  }
}

TEST(BaechiTest, AModelThatFitsNowhereIsRefusedWithTheNumbers) {
  auto g = EncoderStack(8, 16, 64);
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(300 * kKiB), Gpu(300 * kKiB)});
  for (BaechiAlgorithm a : {BaechiAlgorithm::kTopo, BaechiAlgorithm::kEtf}) {
    absl::StatusOr<Placement> p = PlaceBaechi(*g, topo, Options(), a);
    ASSERT_FALSE(p.ok()) << BaechiAlgorithmName(a);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(p.status().message(), HasSubstr("Baechi's memory model"));
    EXPECT_THAT(p.status().message(), HasSubstr("/gpu:1"));
  }
}

TEST(BaechiTest, PlaceCommandComparesWithABaseline) {
  const std::string model = TestDataPath("examples/transformer_block.pb");
  for (const char* baseline : {"m-topo", "m-etf"}) {
    std::ostringstream out, err;
    ASSERT_EQ(PlaceMain({model, "--devices", "3xgpu:4MiB", "--baseline",
                         baseline, "--json"},
                        out, err),
              0)
        << err.str();
    const nlohmann::json j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["algorithm"],
              std::string(baseline) == "m-topo" ? "m-TOPO" : "m-ETF");
  }
  std::ostringstream out, err;
  ASSERT_EQ(PlaceMain({model, "--devices", "3xgpu:4MiB", "--json"}, out, err),
            0)
      << err.str();
  EXPECT_EQ(nlohmann::json::parse(out.str())["algorithm"], "sluice");
  for (BaechiAlgorithm a : {BaechiAlgorithm::kTopo, BaechiAlgorithm::kEtf}) {
    EXPECT_EQ(ParseBaechiAlgorithm(BaechiAlgorithmName(a)), a);
  }
  EXPECT_EQ(ParseBaechiAlgorithm("M-Etf"), BaechiAlgorithm::kEtf);
  EXPECT_EQ(ParseBaechiAlgorithm("m-sct"), std::nullopt);
  std::ostringstream bad_out, bad_err;
  EXPECT_EQ(PlaceMain({model, "--baseline", "m-sct"}, bad_out, bad_err), 2);
  EXPECT_THAT(bad_err.str(), HasSubstr("m-sct"));
}

}  // namespace
}  // namespace sluice::baechi_test
