// Clusters of hosts: the "2x(4xgpu:80GiB)" grammar of ParseDeviceSpecs,
// network links between hosts, and placements over fake 2x4 and 4x8 GPU
// clusters whose partitions and per-host traffic agree.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/cluster_topology.h"
#include "placer/device_spec.h"
#include "placer/partition.h"
#include "placer/placer.h"
#include "placer_test_util.h"
#include "tests/test_data.h"
#include "tools/place_command.h"

namespace sluice::cluster_test {
namespace {

using testing_util::AllKernels;
using testing_util::EncoderStack;
using ::testing::HasSubstr;

TEST(ClusterSpecTest, HostsInParenthesesNameDevicesByTask) {
  ASSERT_OK_AND_ASSIGN(DeviceTopology t, ParseDeviceSpecs("2x(4xgpu:80GiB)"));
  ASSERT_EQ(t.num_devices(), 8);
  EXPECT_EQ(t.num_hosts, 2);
  EXPECT_EQ(t.devices[0].name, "/job:worker/task:0/gpu:0");
  EXPECT_EQ(t.devices[5].name, "/job:worker/task:1/gpu:1");
  EXPECT_EQ(t.devices[5].host, 1);
  EXPECT_EQ(t.devices[5].index, 5);  // over the whole cluster
  EXPECT_EQ(t.Find("/job:worker/task:1/gpu:1"), 5);
  EXPECT_EQ(t.Find("/gpu:5"), 5);
  EXPECT_EQ(t.link(0, 3).kind, LinkKind::kNvlinkPeer);
  EXPECT_EQ(t.link(0, 4).kind, LinkKind::kNetwork);
  EXPECT_EQ(t.link(7, 2).kind, LinkKind::kNetwork);
  EXPECT_EQ(LinkKindName(LinkKind::kNetwork), "network");
  EXPECT_GT(t.TransferSeconds(0, 4, 1 << 20), t.TransferSeconds(0, 3, 1 << 20));
}

TEST(ClusterSpecTest, RankTopologiesJoinAsTasksWithTheNetworkBetween) {
  // What each rank of a job reports: its own CPUs and GPUs.
  ASSERT_OK_AND_ASSIGN(DeviceTopology a, ParseDeviceSpecs("cpu,2xgpu:16GiB"));
  ASSERT_OK_AND_ASSIGN(DeviceTopology b, ParseDeviceSpecs("cpu,gpu:40GiB"));
  ClusterTopology c = JoinRankTopologies({a, b});
  ASSERT_EQ(c.topology.num_devices(), 5);
  EXPECT_EQ(c.topology.num_hosts, 2);
  EXPECT_EQ(c.first_device, (std::vector<int>{0, 3}));
  EXPECT_EQ(c.rank_of_device, (std::vector<int>{0, 0, 0, 1, 1}));
  EXPECT_EQ(c.topology.devices[0].name, "/job:worker/task:0/cpu:0");
  EXPECT_EQ(c.topology.devices[4].name, "/job:worker/task:1/gpu:0");
  EXPECT_EQ(c.topology.devices[4].index, 2);  // GPUs counted over the job
  EXPECT_EQ(c.topology.Find("/gpu:2"), 4);
  EXPECT_EQ(c.topology.link(1, 2).kind, a.link(1, 2).kind);  // inside rank 0
  EXPECT_EQ(c.topology.link(2, 4).kind, LinkKind::kNetwork);
  EXPECT_EQ(c.topology.link(3, 4).kind, b.link(0, 1).kind);
}

TEST(ClusterSpecTest, HostsMayDifferAndHoldCpus) {
  ASSERT_OK_AND_ASSIGN(DeviceTopology t,
                       ParseDeviceSpecs("(2xgpu:16GiB,cpu), (gpu:40GiB)"));
  ASSERT_EQ(t.num_devices(), 4);
  EXPECT_EQ(t.num_hosts, 2);
  EXPECT_EQ(t.devices[2].name, "/job:worker/task:0/cpu:0");
  EXPECT_EQ(t.devices[3].name, "/job:worker/task:1/gpu:0");
  EXPECT_EQ(t.devices[3].index, 2);
  EXPECT_EQ(t.link(0, 2).kind, LinkKind::kPcie);
  EXPECT_EQ(t.link(2, 3).kind, LinkKind::kNetwork);
}

TEST(ClusterSpecTest, SpecsWithoutHostsAreOneMachineAsBefore) {
  ASSERT_OK_AND_ASSIGN(DeviceTopology t, ParseDeviceSpecs("2xgpu:16GiB,cpu"));
  EXPECT_EQ(t.num_hosts, 1);
  EXPECT_EQ(t.devices[1].name, "/gpu:1");
  EXPECT_EQ(t.devices[2].name, "/cpu:0");
  for (const DeviceSpec& d : t.devices) EXPECT_EQ(d.host, 0);
}

TEST(ClusterSpecTest, MalformedClustersAreRefusedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"2x(4xgpu:80GiB", "never closed"},
      {"2x4xgpu:80GiB)", "closes no '('"},
      {"((gpu:1GiB))", "cannot nest"},
      {"2x(gpu:1GiB),gpu:1GiB", "every device must be in a host"},
      {"()", "a host with no devices"},
      {"0x(gpu:1GiB)", "count of hosts"},
      {"(gpu:1GiB)x2", "text after the closing ')'"},
      {"2x(gpu)", "a GPU needs a memory size"},
      {"9x(8xgpu:1GiB)", "lists 72 devices; at most 64"},
      {"64x(64xgpu:1GiB)", "lists 4096 devices"},
  };
  for (const auto& [spec, message] : cases) {
    absl::StatusOr<DeviceTopology> t = ParseDeviceSpecs(spec);
    ASSERT_FALSE(t.ok()) << spec;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_THAT(t.status().message(), HasSubstr(message)) << spec;
  }
}

struct ClusterCase {
  std::string spec;
  int hosts;
  int layers;
};

// Places an encoder stack that needs most of the cluster's GPUs and checks
// the partitioning against the graph and the per-host sums.
TEST(ClusterPlacementTest, PartitionsAndInterHostTransfersAgree) {
  // A layer of width 64 holds 192 KiB of weights; each GPU (a 768 KiB
  // budget) three.
  for (const ClusterCase& c :
       {ClusterCase{"2x(4xgpu:1MiB)", 2, 20},
        ClusterCase{"4x(8xgpu:1MiB)", 4, 90}}) {
    SCOPED_TRACE(c.spec);
    auto g = EncoderStack(c.layers, 16, 64);
    ASSERT_NE(g, nullptr);
    ASSERT_OK_AND_ASSIGN(DeviceTopology topo, ParseDeviceSpecs(c.spec));
    PlacerOptions options;
    options.has_kernel = AllKernels();
    ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*g, topo, options));
    PartitionOptions po;
    po.build_graph_defs = true;
    ASSERT_OK_AND_ASSIGN(Partitioning parts, PartitionGraph(*g, topo, p, po));

    // Every input read across devices arrives by a transfer to the reader's
    // device, listed as a send of the producer's partition and a receive of
    // the reader's, with a _Send / _Recv pair in their GraphDefs.
    std::map<int, const DevicePartition*> part_of;
    for (const DevicePartition& dp : parts.partitions) part_of[dp.device] = &dp;
    std::set<int> hosts_used;
    for (const Node& n : g->nodes()) {
      const int d = p.device_of_node[n.id()];
      hosts_used.insert(topo.devices[d].host);
      for (const TensorRef& in : n.inputs()) {
        if (p.device_of_node[in.node] == d) continue;
        const int t = parts.FindTransfer(in, d);
        ASSERT_GE(t, 0) << n.name() << " reads " << g->node(in.node).name();
        const Transfer& x = parts.transfers[t];
        EXPECT_EQ(x.src_device, p.device_of_node[in.node]);
        const DevicePartition& src = *part_of.at(x.src_device);
        const DevicePartition& dst = *part_of.at(x.dst_device);
        EXPECT_THAT(src.sends, ::testing::Contains(t));
        EXPECT_THAT(dst.recvs, ::testing::Contains(t));
        auto has_node = [](const GraphDef& def, const std::string& name,
                           const std::string& op) {
          for (const NodeDef& nd : def.node()) {
            if (nd.name() == name && nd.op() == op) return true;
          }
          return false;
        };
        EXPECT_TRUE(has_node(src.def, x.send_node, "_Send")) << x.send_node;
        EXPECT_TRUE(has_node(dst.def, x.recv_node, "_Recv")) << x.recv_node;
      }
    }
    // The model needs every host: the stages cross each host boundary.
    EXPECT_EQ(static_cast<int>(hosts_used.size()), c.hosts);
    // Per pair of hosts: the sum of the transfers between them; values go
    // from a host to the next one only, one layer output per boundary.
    std::map<std::pair<int, int>, std::pair<int64_t, int>> expected;
    for (const Transfer& x : parts.transfers) {
      const int a = topo.devices[x.src_device].host;
      const int b = topo.devices[x.dst_device].host;
      EXPECT_LE(a, b);
      if (a == b) continue;
      expected[{a, b}].first += x.bytes;
      expected[{a, b}].second += 1;
    }
    std::vector<LinkTraffic> hosts = HostTraffic(topo, parts);
    ASSERT_EQ(hosts.size(), expected.size());
    ASSERT_EQ(static_cast<int>(hosts.size()), c.hosts - 1);
    for (const LinkTraffic& h : hosts) {
      EXPECT_EQ(h.dst, h.src + 1);
      EXPECT_EQ(h.bytes, (expected[{h.src, h.dst}].first));
      EXPECT_EQ(h.transfers, (expected[{h.src, h.dst}].second));
      EXPECT_LE(h.transfers, 2);
    }
  }
}

TEST(ClusterPlacementTest, StepTimeCountsTheNetwork) {
  // The same split, once over two GPUs of one host and once over two hosts:
  // only the link differs, and the network is slower.
  auto g = EncoderStack(8, 64, 64);
  ASSERT_NE(g, nullptr);
  PlacerOptions options;
  options.has_kernel = AllKernels();
  ASSERT_OK_AND_ASSIGN(DeviceTopology one, ParseDeviceSpecs("2xgpu:1600KiB"));
  ASSERT_OK_AND_ASSIGN(DeviceTopology two,
                       ParseDeviceSpecs("2x(gpu:1600KiB)"));
  ASSERT_OK_AND_ASSIGN(Placement p1, PlaceGraph(*g, one, options));
  ASSERT_OK_AND_ASSIGN(Placement p2, PlaceGraph(*g, two, options));
  EXPECT_EQ(p1.device_of_node, p2.device_of_node);
  const double link_gap =
      two.TransferSeconds(0, 1, 64 * 64 * 4) -
      one.TransferSeconds(0, 1, 64 * 64 * 4);
  EXPECT_NEAR(p2.estimated_step_seconds - p1.estimated_step_seconds, link_gap,
              link_gap * 1e-6);
}

TEST(ClusterPlacementTest, PlaceReportsBytesBetweenHosts) {
  std::ostringstream out, err;
  int code = PlaceMain({TestDataPath("examples/transformer_block.pb"),
                        "--devices", "2x(gpu:4MiB)"},
                       out, err);
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("/job:worker/task:1/gpu:0"));
  EXPECT_THAT(out.str(), HasSubstr("between hosts:\n  task:0 -> task:1: "));
  EXPECT_THAT(out.str(), HasSubstr("(network)"));
  EXPECT_THAT(out.str(), HasSubstr("estimated step time"));
}

}  // namespace
}  // namespace sluice::cluster_test
