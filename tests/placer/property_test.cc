// Properties over a few hundred random layered DAGs with random sizes,
// budgets, requests and strategies (fixed seeds): a placement either fails
// with RESOURCE_EXHAUSTED or keeps every device within its budget (checked
// by recomputing memory independently), honours kernels and requests, and
// partitions into exactly one transfer per (producer output, destination).
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "placer/partition.h"
#include "placer/placer.h"
#include "placer_test_util.h"

namespace sluice::property_test {
namespace {

using testing_util::AllKernels;
using testing_util::Cpu;
using testing_util::DefWriter;
using testing_util::FakeTopology;
using testing_util::Gpu;
using testing_util::RecomputeMemory;

struct RandomCase {
  GraphDef def;
  DeviceTopology topo;
  PlacerOptions options;
};

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// Layers of dense nodes; each reads 1-3 earlier nodes (concatenated).
GraphDef RandomGraph(std::mt19937& rng, int64_t* weight_bytes) {
  DefWriter w;
  std::vector<std::pair<std::string, int64_t>> nodes;  // name, width
  int64_t width = Uniform(rng, 1, 64);
  nodes.push_back({w.Input("x", {-1, width}), width});
  const int layers = Uniform(rng, 2, 8);
  int id = 0;
  *weight_bytes = 0;
  for (int l = 0; l < layers; ++l) {
    std::vector<std::pair<std::string, int64_t>> layer;
    const int count = Uniform(rng, 1, 4);
    for (int i = 0; i < count; ++i, ++id) {
      const std::string name = absl::StrCat("n", id);
      const int fan_in = Uniform(rng, 1, std::min<int>(3, nodes.size()));
      std::vector<std::string> ins;
      int64_t in_width = 0;
      for (int k = 0; k < fan_in; ++k) {
        const auto& src = nodes[Uniform(rng, 0, nodes.size() - 1)];
        ins.push_back(src.first);
        in_width += src.second;
      }
      std::string x = ins[0];
      if (fan_in > 1) {
        x = w.Op("Concat", name + "_cat", ins);
        (*w.last()->mutable_attr())["axis"] = MakeIntAttr(1);
      }
      const int64_t out = Uniform(rng, 1, 128);
      std::string h = w.Dense(name, x, in_width, out);
      *weight_bytes += in_width * out * 4;
      if (Uniform(rng, 0, 9) == 0) {
        w.last()->set_device(Uniform(rng, 0, 1) ? "/gpu:*" : "/cpu:0");
      }
      if (Uniform(rng, 0, 1)) h = w.Op("Relu", name + "_relu", {h});
      layer.push_back({h, out});
    }
    nodes.insert(nodes.end(), layer.begin(), layer.end());
  }
  return w.def();
}

RandomCase MakeCase(uint32_t seed) {
  std::mt19937 rng(seed);
  RandomCase c;
  int64_t weights = 0;
  c.def = RandomGraph(rng, &weights);
  std::vector<DeviceSpec> devices;
  const int gpus = Uniform(rng, 1, 3);
  for (int i = 0; i < gpus; ++i) {
    double share = std::uniform_real_distribution<double>(0.2, 1.5)(rng);
    devices.push_back(Gpu(static_cast<int64_t>(share * weights / gpus) + 1));
  }
  const bool cpu = Uniform(rng, 0, 1);
  if (cpu) devices.push_back(Uniform(rng, 0, 1) ? Cpu() : Cpu(weights / 4 + 1));
  c.topo = FakeTopology(std::move(devices));
  static constexpr PlacementStrategy kStrategies[] = {
      PLACEMENT_AUTO, PLACEMENT_AUTO, PLACEMENT_AUTO, PLACEMENT_SINGLE,
      PLACEMENT_MANUAL};
  c.options.strategy = kStrategies[Uniform(rng, 0, 4)];
  c.options.has_kernel =
      cpu && Uniform(rng, 0, 3) == 0 ? AllKernels({"Relu"}) : AllKernels();
  c.options.cost.batch = Uniform(rng, 1, 8);
  return c;
}

void CheckPlacement(const Graph& g, const RandomCase& c, const Placement& p) {
  const DeviceTopology& topo = c.topo;
  testing_util::MemoryCheck m = RecomputeMemory(g, topo, p, c.options.cost.batch);
  for (int d = 0; d < topo.num_devices(); ++d) {
    EXPECT_LE(m.weights[d] + m.peak[d], topo.devices[d].memory_budget)
        << topo.devices[d].name;
    EXPECT_EQ(m.weights[d], p.devices[d].weight_bytes);
    EXPECT_EQ(m.peak[d], p.devices[d].peak_activation_bytes);
  }
  for (const Node& n : g.nodes()) {
    const DeviceSpec& d = topo.devices[p.device_of_node[n.id()]];
    EXPECT_TRUE(c.options.has_kernel(n, d.type).ok()) << n.name();
    EXPECT_FALSE(p.reason[n.id()].empty());
    const std::string& want = n.requested_device();
    bool relaxed = p.reason[n.id()].find("soft placement") != std::string::npos;
    if (want == "/gpu:*" && !relaxed) {
      EXPECT_EQ(d.type, DeviceType::kGpu) << n.name();
    }
    if (want == "/cpu:0" && !relaxed) {
      EXPECT_EQ(d.name, "/cpu:0") << n.name();
    }
  }
  // Every node computed (each output fetched, nothing fed): the transfers
  // are the cross-device edges, plus results leaving GPUs for the host.
  std::vector<TensorRef> feeds, fetches;
  for (const Node& n : g.nodes()) {
    for (int port = 0; port < n.num_outputs(); ++port) {
      fetches.push_back({n.id(), port});
    }
  }
  PartitionOptions po;
  po.feeds = &feeds;
  po.fetches = &fetches;
  absl::StatusOr<Partitioning> parts = PartitionGraph(g, topo, p, po);
  ASSERT_TRUE(parts.ok()) << parts.status();
  std::set<std::tuple<int, int, int>> seen;
  int64_t bytes = 0;
  for (const Transfer& t : parts->transfers) {
    EXPECT_TRUE(seen.insert({t.producer.node, t.producer.port, t.dst_device})
                    .second);
    EXPECT_NE(t.src_device, t.dst_device);
    // A constant held where read moves nothing per step: a Const's value,
    // neither fed nor fetched.
    if (t.constant) {
      EXPECT_TRUE(g.node(t.producer.node).is_const());
      EXPECT_FALSE(t.fed || t.fetched);
      continue;
    }
    bytes += t.bytes;
  }
  int64_t link_bytes = 0;
  for (const LinkTraffic& l : parts->links) link_bytes += l.bytes;
  EXPECT_EQ(bytes, link_bytes);
  for (const Node& n : g.nodes()) {
    for (const TensorRef& in : n.inputs()) {
      int dst = p.device_of_node[n.id()];
      bool cross = p.device_of_node[in.node] != dst;
      EXPECT_EQ(seen.count({in.node, in.port, dst}), cross ? 1u : 0u);
    }
  }
}

TEST(PlacerPropertyTest, BudgetsHoldOverRandomGraphs) {
  int placed = 0, exhausted = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    RandomCase c = MakeCase(seed);
    absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(c.def);
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<Placement> p = PlaceGraph(**g, c.topo, c.options);
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted)
          << p.status();
      ++exhausted;
      continue;
    }
    ++placed;
    CheckPlacement(**g, c, *p);
    if (::testing::Test::HasFailure()) return;
  }
  // Both outcomes occur, so neither half of the property is vacuous.
  EXPECT_GT(placed, 100);
  EXPECT_GT(exhausted, 10);
}

}  // namespace
}  // namespace sluice::property_test
