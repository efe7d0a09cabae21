// Partitioning: one send/recv pair per (producer output, destination),
// control edges carried, GraphDefs rewritten to read the receives.
#include "placer/partition.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer_test_util.h"

namespace sluice::partition_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::Cpu;
using testing_util::DefWriter;
using testing_util::FakeTopology;
using testing_util::Gpu;

constexpr int64_t kMiB = int64_t{1} << 20;

// A placement by node name; every other node on device 0.
Placement PlaceByName(const Graph& g,
                      const std::vector<std::pair<std::string, int>>& where) {
  Placement p;
  p.device_of_node.assign(g.num_nodes(), 0);
  for (const auto& [name, d] : where) p.device_of_node[g.FindNode(name)->id()] = d;
  p.run_order.assign(g.topological_order().begin(), g.topological_order().end());
  return p;
}

const NodeDef* FindDef(const GraphDef& def, const std::string& name) {
  for (const NodeDef& n : def.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

TEST(PartitionTest, OneTransferPerProducerOutputAndDestination) {
  DefWriter w;
  std::string x = w.Input("x", {4, 8});
  std::string h = w.Op("Relu", "h", {x});
  w.Op("Neg", "a", {h});
  w.Op("Abs", "b", {h});
  w.Op("Add", "c", {h, h});
  w.Op("Exp", "d", {h});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(kMiB), Gpu(kMiB), Cpu()});
  Placement p = PlaceByName(*g, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 2}});
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p);
  ASSERT_TRUE(parts.ok()) << parts.status();
  // x arrives on the host (/cpu:0, device 2) and goes to /gpu:0; h goes to
  // /gpu:1 once for four reads and to the CPU once; a, b and c come back to
  // the host as results (d is there already).
  const int x_id = g->FindNode("x")->id(), h_id = g->FindNode("h")->id();
  ASSERT_EQ(parts->transfers.size(), 6u);
  EXPECT_EQ(parts->host_device, 2);
  const Transfer& feed = parts->transfers[0];
  EXPECT_EQ(feed.producer.node, x_id);
  EXPECT_TRUE(feed.fed);
  EXPECT_EQ(feed.src_device, 2);
  EXPECT_EQ(feed.dst_device, 0);
  const Transfer& to_gpu1 = parts->transfers[1];
  EXPECT_EQ(to_gpu1.producer.node, h_id);
  EXPECT_EQ(to_gpu1.src_device, 0);
  EXPECT_EQ(to_gpu1.dst_device, 1);
  EXPECT_EQ(to_gpu1.bytes, 4 * 8 * 4);
  EXPECT_EQ(to_gpu1.consumers.size(), 4u);  // a, b, and c twice
  EXPECT_EQ(parts->transfers[2].dst_device, 2);
  EXPECT_EQ(parts->FindTransfer({h_id, 0}, 2), 2);
  for (int t = 3; t < 6; ++t) {
    EXPECT_TRUE(parts->transfers[t].fetched);
    EXPECT_EQ(parts->transfers[t].src_device, 1);
    EXPECT_EQ(parts->transfers[t].dst_device, 2);
  }
  ASSERT_EQ(parts->partitions.size(), 3u);
  EXPECT_THAT(parts->partitions[0].sends, ElementsAre(1, 2));
  EXPECT_THAT(parts->partitions[1].recvs, ElementsAre(1));
  // By (src, dst): gpu0->gpu1, gpu0->cpu, gpu1->cpu, cpu->gpu0.
  ASSERT_EQ(parts->links.size(), 4u);
  EXPECT_EQ(parts->links[0].src, 0);
  EXPECT_EQ(parts->links[0].dst, 1);
  EXPECT_EQ(parts->links[0].transfers, 1);
  EXPECT_EQ(parts->links[2].src, 1);
  EXPECT_EQ(parts->links[2].transfers, 3);
  // GraphDefs: the consumers read the receive; the producer feeds a send.
  const GraphDef& gpu1 = parts->partitions[1].def;
  const NodeDef* c = FindDef(gpu1, "c");
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(c->input(), ElementsAre(to_gpu1.recv_node, to_gpu1.recv_node));
  EXPECT_EQ(c->device(), "/gpu:1");
  const NodeDef* recv = FindDef(gpu1, to_gpu1.recv_node);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->op(), "_Recv");
  EXPECT_EQ(recv->attr().at("send_device").s(), "/gpu:0");
  const NodeDef* send = FindDef(parts->partitions[0].def, to_gpu1.send_node);
  ASSERT_NE(send, nullptr);
  EXPECT_THAT(send->input(), ElementsAre("h:0"));
  EXPECT_EQ(FindDef(parts->partitions[0].def, "a"), nullptr);
}

TEST(PartitionTest, ConstantsAreHeldWhereReadWhenSmallOrInHostMemory) {
  // "s" (256 bytes) and "big" (128 KiB) are read on /gpu:1 and the CPU;
  // both live on /gpu:0. s is held by its readers: no copy per step.
  // big is copied to /gpu:1 each step (held twice it would pass what the
  // placer counted) but held by the CPU, which reads it in host memory.
  // Fetched, s comes back by a copy like any result.
  DefWriter w;
  std::string x = w.Input("x", {64});
  std::string s = w.Const("s", {64});
  std::string big = w.Const("big", {512, 64});
  w.Op("Add", "a", {x, s});
  w.Op("Add", "b", {x, s});
  w.Op("Neg", "nb", {big});
  w.Op("Abs", "cb", {big});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(kMiB), Gpu(kMiB), Cpu()});
  Placement p = PlaceByName(*g, {{"x", 1}, {"a", 1}, {"b", 2}, {"nb", 1},
                                 {"cb", 2}});
  const int s_id = g->FindNode("s")->id();
  const std::vector<TensorRef> none;
  std::vector<TensorRef> fetches;
  for (const char* name : {"a", "b", "nb", "cb"}) {
    fetches.push_back({g->FindNode(name)->id(), 0});
  }
  std::vector<TensorRef> fetch_s = fetches;
  fetch_s.push_back({s_id, 0});
  PartitionOptions o;
  o.feeds = &none;
  o.fetches = &fetches;
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p, o);
  ASSERT_TRUE(parts.ok()) << parts.status();
  auto find = [&](const Partitioning& pt, const std::string& name, int dst) {
    const int t = pt.FindTransfer({g->FindNode(name)->id(), 0}, dst);
    EXPECT_GE(t, 0) << name << " to " << dst;
    return t < 0 ? Transfer() : pt.transfers[t];
  };
  EXPECT_TRUE(find(*parts, "s", 1).constant);
  EXPECT_TRUE(find(*parts, "s", 2).constant);
  EXPECT_FALSE(find(*parts, "big", 1).constant);
  EXPECT_TRUE(find(*parts, "big", 2).constant);
  // Between the GPUs only big's copy moves bytes per step (the results
  // go to the host).
  for (const LinkTraffic& l : parts->links) {
    if (l.src == 0 && l.dst == 1) {
      EXPECT_EQ(l.bytes, 512 * 64 * 4);
      EXPECT_EQ(l.transfers, 1);
    }
    EXPECT_FALSE(l.src == 0 && l.dst == 2) << "nothing goes /gpu:0 -> CPU";
  }
  o.fetches = &fetch_s;
  parts = PartitionGraph(*g, topo, p, o);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_TRUE(find(*parts, "s", 2).fetched);
  EXPECT_FALSE(find(*parts, "s", 2).constant);
}

TEST(PartitionTest, CarriesControlEdgesAcrossDevices) {
  DefWriter w;
  std::string x = w.Input("x", {2});
  w.Op("Relu", "first", {x});
  w.Op("Neg", "second", {x});
  w.last()->add_input("^first");
  w.Op("Abs", "third", {x});
  w.last()->add_input("^first");
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Gpu(kMiB), Gpu(kMiB)});
  Placement p = PlaceByName(*g, {{"second", 1}, {"third", 1}});
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->control_transfers.size(), 1u);
  const ControlTransfer& ct = parts->control_transfers[0];
  EXPECT_EQ(ct.producer, g->FindNode("first")->id());
  EXPECT_EQ(ct.consumers.size(), 2u);
  const NodeDef* second = FindDef(parts->partitions[1].def, "second");
  ASSERT_NE(second, nullptr);
  EXPECT_THAT(second->input(),
              ElementsAre(parts->transfers[0].recv_node, "^" + ct.recv_node));
  const NodeDef* send = FindDef(parts->partitions[0].def, ct.send_node);
  ASSERT_NE(send, nullptr);
  EXPECT_THAT(send->input(), ElementsAre("^first"));
  EXPECT_TRUE(send->attr().at("control").b());
}

TEST(PartitionTest, SignaturesFollowTheirNodes) {
  DefWriter w;
  std::string x = w.Input("x", {2});
  w.Op("Relu", "y", {x});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Cpu(), Gpu(kMiB)});
  Placement p = PlaceByName(*g, {{"y", 1}});
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(parts->partitions[0].def.signature().inputs(0).name(), "x");
  EXPECT_EQ(parts->partitions[1].def.signature().outputs(0).tensor(), "y:0");
}

TEST(PartitionTest, FeedsCutTheGraphAndHostMemoryInputsGoToTheHost) {
  DefWriter w;
  std::string x = w.Input("x", {4});
  std::string h = w.Op("Relu", "h", {x});
  w.Op("Neg", "y", {h});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Cpu(), Gpu(kMiB)});
  Placement p = PlaceByName(*g, {{"x", 1}, {"h", 1}, {"y", 1}});
  const int h_id = g->FindNode("h")->id();
  // Feeding h: x and h are not computed; h arrives on the host, y reads it
  // in host memory (as Gather's indices on a GPU), so nothing is copied in.
  std::vector<TensorRef> feeds = {{h_id, 0}};
  std::vector<TensorRef> fetches = {{g->FindNode("y")->id(), 0}};
  PartitionOptions po;
  po.feeds = &feeds;
  po.fetches = &fetches;
  po.host_memory_inputs = [](const Node& n, DeviceType type) {
    return n.op() == "Neg" && type == DeviceType::kGpu ? std::vector<int>{0}
                                                       : std::vector<int>{};
  };
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p, po);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_FALSE(parts->computed[g->FindNode("x")->id()]);
  EXPECT_FALSE(parts->computed[h_id]);
  ASSERT_EQ(parts->transfers.size(), 1u);  // only y's result
  EXPECT_TRUE(parts->transfers[0].fetched);
  // Computing h on the GPU instead: its value must reach the host for y.
  fetches.push_back({h_id, 0});
  feeds = {{g->FindNode("x")->id(), 0}};
  parts = PartitionGraph(*g, topo, p, po);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->transfers.size(), 3u);
  EXPECT_TRUE(parts->transfers[0].fed);   // x: host -> gpu
  EXPECT_EQ(parts->transfers[1].producer.node, h_id);  // h: gpu -> host, read
  EXPECT_EQ(parts->transfers[1].dst_device, 0);        // there by y
  EXPECT_TRUE(parts->transfers[1].fetched);            // and fetched too
  EXPECT_EQ(parts->transfers[1].consumers.size(), 1u);
  EXPECT_TRUE(parts->transfers[2].fetched);            // y
}

// A caller that keeps tensors on a GPU: a feed that arrives on /gpu:0 is
// read there with no copy in, by a CPU node through a copy to the host,
// and a fetch left on a GPU comes back with no copy (or with one to the
// GPU asked for).
TEST(PartitionTest, FeedsAndFetchesOnAGpuCrossOnlyWhereTheyMust) {
  DefWriter w;
  std::string x = w.Input("x", {4});
  std::string h = w.Op("Relu", "h", {x});
  w.Op("Neg", "y", {h});
  w.Op("Abs", "c", {x});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  // /cpu:0 (0), /gpu:0 (1), /gpu:1 (2); h and y on /gpu:0, c on the CPU.
  DeviceTopology topo = FakeTopology({Cpu(), Gpu(kMiB), Gpu(kMiB)});
  Placement p = PlaceByName(*g, {{"x", 1}, {"h", 1}, {"y", 1}, {"c", 0}});
  const int x_id = g->FindNode("x")->id();
  const int y_id = g->FindNode("y")->id();
  const int c_id = g->FindNode("c")->id();
  std::vector<TensorRef> feeds = {{x_id, 0}};
  std::vector<TensorRef> fetches = {{y_id, 0}, {c_id, 0}};
  std::vector<int> feed_devices = {1};       // x is on /gpu:0
  std::vector<int> fetch_devices = {1, -1};  // y stays there, c to the host
  PartitionOptions po;
  po.feeds = &feeds;
  po.fetches = &fetches;
  po.feed_devices = &feed_devices;
  po.fetch_devices = &fetch_devices;
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p, po);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_THAT(parts->feed_devices, ElementsAre(1));
  EXPECT_THAT(parts->fetch_devices, ElementsAre(1, 0));
  // Only x to the host, for c: no copy in for h, none out for y.
  ASSERT_EQ(parts->transfers.size(), 1u);
  EXPECT_TRUE(parts->transfers[0].fed);
  EXPECT_EQ(parts->transfers[0].producer.node, x_id);
  EXPECT_EQ(parts->transfers[0].src_device, 1);
  EXPECT_EQ(parts->transfers[0].dst_device, 0);

  // x on /gpu:1 and y asked for on /gpu:1: x goes to /gpu:0 for h, y comes
  // back to /gpu:1; c on the CPU gets x from /gpu:1.
  feed_devices = {2};
  fetch_devices = {2, -1};
  parts = PartitionGraph(*g, topo, p, po);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->transfers.size(), 3u);
  EXPECT_EQ(parts->FindTransfer({x_id, 0}, 1), 0);  // x: gpu:1 -> gpu:0
  EXPECT_EQ(parts->transfers[0].src_device, 2);
  EXPECT_GE(parts->FindTransfer({x_id, 0}, 0), 0);  // x: gpu:1 -> host
  const int y_back = parts->FindTransfer({y_id, 0}, 2);
  ASSERT_GE(y_back, 0);
  EXPECT_TRUE(parts->transfers[y_back].fetched);
  EXPECT_EQ(parts->transfers[y_back].src_device, 1);

  // Without devices, as before: x in from the host, y out to it.
  po.feed_devices = nullptr;
  po.fetch_devices = nullptr;
  parts = PartitionGraph(*g, topo, p, po);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_THAT(parts->feed_devices, ElementsAre(0));
  EXPECT_THAT(parts->fetch_devices, ElementsAre(0, 0));
  ASSERT_EQ(parts->transfers.size(), 2u);
  EXPECT_EQ(parts->transfers[0].src_device, 0);
  EXPECT_EQ(parts->transfers[1].dst_device, 0);
}

TEST(PartitionTest, RejectsFeedDevicesThatDoNotMatchTheFeeds) {
  DefWriter w;
  std::string x = w.Input("x", {2});
  w.Op("Neg", "y", {x});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Cpu(), Gpu(kMiB)});
  Placement p = PlaceByName(*g, {});
  std::vector<TensorRef> feeds = {{g->FindNode("x")->id(), 0}};
  std::vector<int> two = {1, 1};
  PartitionOptions po;
  po.feeds = &feeds;
  po.feed_devices = &two;
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p, po);
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parts.status().message(), HasSubstr("2 feed devices for 1 feeds"));
  std::vector<int> outside = {5};
  po.feed_devices = &outside;
  parts = PartitionGraph(*g, topo, p, po);
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parts.status().message(), HasSubstr("feed 0 is on device 5 of 2"));
}

TEST(PartitionTest, RejectsFeedsThatAreNotOutputs) {
  DefWriter w;
  w.Input("x", {2});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Cpu()});
  Placement p = PlaceByName(*g, {});
  std::vector<TensorRef> feeds = {{0, 3}};
  PartitionOptions po;
  po.feeds = &feeds;
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p, po);
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parts.status().message(), HasSubstr("not an output"));
}

TEST(PartitionTest, RejectsPlacementOfWrongSize) {
  DefWriter w;
  w.Input("x", {2});
  auto g = w.Build();
  ASSERT_NE(g, nullptr);
  DeviceTopology topo = FakeTopology({Cpu()});
  Placement p;
  absl::StatusOr<Partitioning> parts = PartitionGraph(*g, topo, p);
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parts.status().message(), HasSubstr("placement is for 0 nodes"));
}

}  // namespace
}  // namespace sluice::partition_test
