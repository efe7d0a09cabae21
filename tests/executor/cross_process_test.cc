// Plans of one rank of a job (CrossProcessPlan) and their transfers
// (CrossProcessTransfers), with two ranks as threads of this process over a
// loopback ProcessGroup: the plans split the graph, both ends of a transfer
// sit at the same point, the step gives one process's result, steps in
// flight at once keep their messages apart, and a rank that fails or goes
// silent ends its peer's receive with an error naming it.
#include <deque>
#include <map>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "device/cpu_device.h"
#include "executor/cross_process.h"
#include "executor/executor.h"
#include "executor/plan.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "placer/cluster_topology.h"
#include "placer/partition.h"

namespace sluice::cross_process_test {
namespace {

using ::testing::HasSubstr;

// Messages between ranks that are threads of this process.
struct Mailboxes {
  absl::Mutex mu;
  std::map<std::tuple<int, int, int>, std::deque<std::string>> queues
      ABSL_GUARDED_BY(mu);  // (src, dst, tag)
  std::map<int, std::deque<int>> aborts ABSL_GUARDED_BY(mu);  // dst -> src
};

class LoopbackGroup final : public ProcessGroup {
 public:
  LoopbackGroup(int rank, int size, Mailboxes* boxes)
      : rank_(rank), size_(size), boxes_(boxes) {}
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string Describe() const override { return "loopback"; }
  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view,
                                                     absl::Duration) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::StatusOr<std::string> Broadcast(absl::string_view,
                                        absl::Duration) override {
    return absl::UnimplementedError("not in this test");
  }
  bool HasMessages() const override { return true; }
  absl::Status Send(int dst, int tag, const void* data,
                    size_t bytes) override {
    absl::MutexLock lock(&boxes_->mu);
    boxes_->queues[{rank_, dst, tag}].emplace_back(
        static_cast<const char*>(data), bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> Recv(int src, int tag, void* data, size_t capacity,
                              absl::Time deadline) override {
    absl::MutexLock lock(&boxes_->mu);
    auto& q = boxes_->queues[{src, rank_, tag}];
    auto& aborts = boxes_->aborts[rank_];
    auto ready = [&] { return !q.empty() || !aborts.empty(); };
    boxes_->mu.AwaitWithDeadline(absl::Condition(&ready), deadline);
    if (q.empty() && !aborts.empty()) {
      return absl::AbortedError(
          absl::StrCat("rank ", aborts.front(), " failed the step"));
    }
    if (q.empty()) {
      return absl::DeadlineExceededError(
          absl::StrCat("nothing from rank ", src));
    }
    std::string m = std::move(q.front());
    q.pop_front();
    if (m.size() > capacity) return absl::InvalidArgumentError("too large");
    memcpy(data, m.data(), m.size());
    return m.size();
  }
  absl::Status WaitSends(uint64_t, absl::Time) override {
    return absl::OkStatus();
  }
  absl::Status SendAbort(uint64_t) override {
    absl::MutexLock lock(&boxes_->mu);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) boxes_->aborts[r].push_back(rank_);
    }
    return absl::OkStatus();
  }
  absl::Status DiscardAbort(int, uint64_t, absl::Time) override {
    return absl::OkStatus();
  }

 private:
  const int rank_, size_;
  Mailboxes* const boxes_;
};

// x -> n0 -> n1 -> n2 -> n3 = y, all Neg; n0, n1 on rank 0, n2, n3 on rank 1.
constexpr char kChain[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 3 } } } }
  node { name: "n0" op: "Neg" input: "x" }
  node { name: "n1" op: "Neg" input: "n0" }
  node { name: "n2" op: "Neg" input: "n1" }
  node { name: "n3" op: "Neg" input: "n2" }
  signature { inputs { name: "x" } outputs { name: "y" tensor: "n3" } }
)pb";

// One rank's side: its device, plan and transfers.
struct Rank {
  std::unique_ptr<CpuDevice> cpu;
  std::vector<Device*> topology_devices;
  DeviceAssignment assignment;
  std::unique_ptr<LoopbackGroup> group;
  std::unique_ptr<CrossProcessTransfers> transfers;
  CrossProcessPlan cross;
  std::unique_ptr<const ExecutionPlan> plan;
};

class CrossProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GraphDef def;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kChain, &def));
    absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = *std::move(g);
    DeviceTopology one;
    one.devices.push_back(MakeDeviceSpec(DeviceType::kCpu, 0, 0));
    BuildLinks(&one);
    cluster_ = JoinRankTopologies({one, one});
    placement_.run_order.assign(graph_->topological_order().begin(),
                                graph_->topological_order().end());
    feeds_ = {TensorRef{graph_->FindNode("x")->id(), 0}};
    fetches_ = {TensorRef{graph_->FindNode("n3")->id(), 0}};
    Split({"n2", "n3"}, /*feed_device=*/-1);
  }

  // Places the nodes `on_rank1` on rank 1, the others on rank 0, with the
  // feed at topology device `feed_device` (-1: rank 0's host), and
  // compiles both ranks' plans.
  void Split(const std::vector<std::string>& on_rank1, int feed_device) {
    placement_.device_of_node.assign(graph_->num_nodes(), 0);
    for (const std::string& name : on_rank1) {
      placement_.device_of_node[graph_->FindNode(name)->id()] = 1;
    }
    feed_devices_ = {feed_device};
    PartitionOptions po;
    po.feeds = &feeds_;
    po.fetches = &fetches_;
    po.feed_devices = &feed_devices_;
    po.host_device = 0;
    po.host_memory_inputs = KernelHostMemoryInputs;
    absl::StatusOr<Partitioning> parts =
        PartitionGraph(*graph_, cluster_.topology, placement_, po);
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = std::make_shared<const Partitioning>(*std::move(parts));
    for (int r = 0; r < 2; ++r) SetUpRank(r);
  }

  void SetUpRank(int r) {
    Rank& k = ranks_[r];
    k.plan.reset();
    k.cpu = std::make_unique<CpuDevice>(0, 0, 1);
    k.topology_devices.assign(2, nullptr);
    k.topology_devices[r] = k.cpu.get();
    k.assignment.clear();
    for (int id = 0; id < graph_->num_nodes(); ++id) {
      k.assignment.push_back(k.topology_devices[placement_.device_of_node[id]]);
    }
    k.group = std::make_unique<LoopbackGroup>(r, 2, &boxes_);
    k.transfers = std::make_unique<CrossProcessTransfers>(
        k.group.get(), k.cpu.get(), &cluster_.topology,
        &cluster_.rank_of_device, absl::Milliseconds(500));
    k.cross.rank_of_device = &cluster_.rank_of_device;
    k.cross.rank = r;
    k.cross.make_kernel = [t = k.transfers.get()](
                              int i, const Transfer& x, const Node& producer,
                              Device* local, bool send) {
      return t->MakeKernel(i, x, producer, local, send);
    };
    PlanOptions o;
    o.devices = &k.assignment;
    o.topology_devices = &k.topology_devices;
    o.order = &placement_.run_order;
    o.host = k.cpu.get();
    o.cross_process = &k.cross;
    absl::StatusOr<std::unique_ptr<const ExecutionPlan>> plan =
        CompilePlan(*graph_, feeds_, fetches_, parts_, o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    k.plan = *std::move(plan);
  }

  Mailboxes boxes_;
  std::unique_ptr<const Graph> graph_;
  ClusterTopology cluster_;
  Placement placement_;
  std::vector<TensorRef> feeds_, fetches_;
  std::vector<int> feed_devices_;
  std::shared_ptr<const Partitioning> parts_;
  Rank ranks_[2];
};

TEST_F(CrossProcessTest, EachRankPlansItsNodesAndOneKernelPerCrossing) {
  // n1 goes to rank 1, y (n3) comes back to rank 0's host.
  ASSERT_EQ(parts_->transfers.size(), 2u);
  for (const Rank& k : ranks_) {
    EXPECT_EQ(k.plan->num_cross_process, 2);
    EXPECT_TRUE(k.plan->sequential);
  }
  // Rank 0: n0, n1, the send of n1, the receive of y; feeds and fetches.
  EXPECT_EQ(ranks_[0].plan->nodes.size(), 4u);
  EXPECT_EQ(ranks_[0].plan->feed_slots.size(), 1u);
  EXPECT_EQ(ranks_[0].plan->fetch_slots.size(), 1u);
  // Rank 1: the receive of n1, n2, n3, the send of y; no feed, no fetch.
  EXPECT_EQ(ranks_[1].plan->nodes.size(), 4u);
  EXPECT_TRUE(ranks_[1].plan->feed_slots.empty());
  EXPECT_TRUE(ranks_[1].plan->fetch_slots.empty());
  EXPECT_EQ(ranks_[1].plan->nodes[0].node->name(), "n1");  // its receive
  EXPECT_TRUE(ranks_[1].plan->nodes[0].is_copy);
}

TEST_F(CrossProcessTest, TwoRanksGiveOneProcesssResult) {
  CrossProcessStep step0(1), step1(1);
  absl::StatusOr<std::vector<Tensor>> worker;
  std::thread rank1([&] {
    ScopedCrossProcessStep scope(&step1);
    worker = RunPlan(*ranks_[1].plan, {}, nullptr);
  });
  absl::StatusOr<std::vector<Tensor>> out;
  {
    ScopedCrossProcessStep scope(&step0);
    out = RunPlan(
        *ranks_[0].plan,
        {Tensor::FromVector(std::vector<float>{1.5f, -2.f, 3.f}, Shape({3}))},
        nullptr);
  }
  rank1.join();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_EQ(out->size(), 1u);
  const float* y = (*out)[0].data<float>();
  EXPECT_EQ(y[0], 1.5f);  // four negations
  EXPECT_EQ(y[1], -2.f);
  EXPECT_EQ(y[2], 3.f);
  EXPECT_EQ(step0.sent(), std::vector<int>{0});
  EXPECT_EQ(step0.received(), std::vector<int>{1});
  EXPECT_TRUE(ranks_[0].transfers->EndStep(&step0, parts_.get(), {}).ok());
}

TEST_F(CrossProcessTest, StepsInFlightAtOnceKeepTheirMessagesApart) {
  // Rank 0 runs its part of steps 1, 2 and 3 at once (three Run calls);
  // rank 1 serves them one after another, in order, as Serve does. Each
  // step gets its own input back (four negations): no step reads
  // another's message, although they share the plan and its transfers.
  // The callers start last step first, each once the one before has sent
  // its value, so rank 1's first receive would take step 3's value if the
  // steps shared tags.
  constexpr int kSteps = 3;
  std::vector<absl::StatusOr<std::vector<Tensor>>> out(kSteps);
  std::vector<std::thread> callers;
  auto sent_by_rank0 = [&] {
    absl::MutexLock lock(&boxes_.mu);
    size_t n = 0;
    for (const auto& [key, q] : boxes_.queues) {
      if (std::get<0>(key) == 0) n += q.size();
    }
    return n;
  };
  for (int i = kSteps - 1; i >= 0; --i) {
    const size_t before = sent_by_rank0();
    callers.emplace_back([&, i] {
      CrossProcessStep step(i + 1);
      ScopedCrossProcessStep scope(&step);
      std::vector<float> x = {1.f * i, 2.f, 3.f};
      out[i] = RunPlan(*ranks_[0].plan,
                       {Tensor::FromVector(x, Shape({3}))}, nullptr);
    });
    while (sent_by_rank0() < before + 2) absl::SleepFor(absl::Milliseconds(1));
  }
  // Rank 1 starts last, in the steps' order.
  for (int i = 0; i < kSteps; ++i) {
    CrossProcessStep step(i + 1);
    ScopedCrossProcessStep scope(&step);
    absl::StatusOr<std::vector<Tensor>> served =
        RunPlan(*ranks_[1].plan, {}, nullptr);
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_EQ(step.received(), std::vector<int>{0});
  }
  for (std::thread& t : callers) t.join();
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].status();
    EXPECT_EQ((*out[i])[0].data<float>()[0], 1.f * i) << "step " << i + 1;
  }
}

TEST_F(CrossProcessTest, AFeedGivenOnRankOneIsReadThereWithoutATransfer) {
  // Every node on rank 1 and x given there: the only transfer is y back to
  // rank 0; x never passes through rank 0.
  Split({"n0", "n1", "n2", "n3"}, /*feed_device=*/1);
  ASSERT_EQ(parts_->transfers.size(), 1u);
  EXPECT_EQ(parts_->transfers[0].producer.node, graph_->FindNode("n3")->id());
  EXPECT_TRUE(ranks_[0].plan->feed_slots.empty());
  EXPECT_EQ(ranks_[1].plan->feed_slots.size(), 1u);
  CrossProcessStep step0(1), step1(1);
  absl::StatusOr<std::vector<Tensor>> worker;
  std::thread rank1([&] {
    ScopedCrossProcessStep scope(&step1);
    worker = RunPlan(
        *ranks_[1].plan,
        {Tensor::FromVector(std::vector<float>{4.f, 5.f, 6.f}, Shape({3}))},
        nullptr);
  });
  absl::StatusOr<std::vector<Tensor>> out;
  {
    ScopedCrossProcessStep scope(&step0);
    out = RunPlan(*ranks_[0].plan, {}, nullptr);
  }
  rank1.join();
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[2], 6.f);
  EXPECT_TRUE(step0.sent().empty());
  EXPECT_EQ(step1.sent(), std::vector<int>{0});
}

TEST_F(CrossProcessTest, AKernelOutsideAStepIsAnInternalError) {
  absl::StatusOr<std::vector<Tensor>> out = RunPlan(
      *ranks_[0].plan,
      {Tensor::FromVector(std::vector<float>{1.f, 2.f, 3.f}, Shape({3}))},
      nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(out.status().message(), HasSubstr("outside a step"));
}

TEST_F(CrossProcessTest, AFailedRankEndsItsPeersReceiveNamingIt) {
  CrossProcessStep step(1);
  ScopedCrossProcessStep scope(&step);
  // Rank 1 fails before sending y back; rank 0 waits in that receive.
  ASSERT_TRUE(ranks_[1].group->SendAbort(1).ok());
  absl::StatusOr<std::vector<Tensor>> out = RunPlan(
      *ranks_[0].plan,
      {Tensor::FromVector(std::vector<float>{1.f, 2.f, 3.f}, Shape({3}))},
      nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(out.status().message(), HasSubstr("rank 1 failed"));
}

TEST_F(CrossProcessTest, ASilentRankIsADeadlineNamingIt) {
  CrossProcessStep step(1);
  ScopedCrossProcessStep scope(&step);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<Tensor>> out = RunPlan(
      *ranks_[0].plan,
      {Tensor::FromVector(std::vector<float>{1.f, 2.f, 3.f}, Shape({3}))},
      nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(out.status().message(), HasSubstr("rank 1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace sluice::cross_process_test
