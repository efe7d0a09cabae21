// Session and executor behaviour on the CPU: feeds, fetches, plan caching,
// early release of buffers, errors, and concurrent Run calls.
#include "executor/runtime_config.h"
#include "executor/session.h"
#include "executor/step_stats.h"

#include <algorithm>
#include <set>
#include <thread>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "device/cpu_memory.h"
#include "device/device.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/compare.h"
#include "tests/test_data.h"

namespace sluice::session_test {
namespace {

using ::testing::HasSubstr;

// y = relu(x @ w + b), x: float32[?,2], w = [[1,-1],[2,0.5]], b = [0.5,-4].
constexpr char kSmallModel[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: -1 dim: 2 } } } }
  node { name: "w" op: "Const"
         attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 2 dim: 2 }
                                              float_val: [1, -1, 2, 0.5] } } } }
  node { name: "b" op: "Const"
         attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 2 }
                                              float_val: [0.5, -4] } } } }
  node { name: "mm" op: "MatMul" input: "x" input: "w" }
  node { name: "add" op: "Add" input: "mm" input: "b" }
  node { name: "y" op: "Relu" input: "add" }
  signature {
    inputs { name: "x" }
    outputs { name: "y" tensor: "y" }
  }
)pb";

// These tests are about the CPU path: GPUs stay out unless a test asks.
std::unique_ptr<Session> MakeSession(const std::string& text,
                                     RuntimeConfig config = {}) {
  if (!config.has_use_gpu()) config.set_use_gpu(false);
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

std::vector<float> Values(const Tensor& t) {
  auto v = t.flat<float>();
  return std::vector<float>(v.begin(), v.end());
}

TEST(SessionTest, RunsSmallModelAndMatchesHandComputedValues) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2, -1, 0}, Shape({2, 2}));
  auto out = s->Run({{"x", x}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  // Row 0: [1+4, -1+1] + b = [5.5, -4] -> relu [5.5, 0].
  // Row 1: [-1, 1] + b = [-0.5, -3] -> relu [0, 0].
  EXPECT_EQ((*out)[0].shape(), Shape({2, 2}));
  EXPECT_THAT(Values((*out)[0]), ::testing::ElementsAre(5.5f, 0.f, 0.f, 0.f));
}

TEST(SessionTest, EmptyFetchListReturnsGraphOutputs) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  EXPECT_THAT(s->DefaultFetchNames(), ::testing::ElementsAre("y"));
  auto out = s->Run({{"x", Tensor::FromVector<float>({1, 1}, Shape({1, 2}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ::testing::ElementsAre(3.5f, 0.f));
}

// Unoptimised graphs where a test is about the nodes as written: at level
// all, elementwise_fusion makes Add + Relu one node, and a Neg chain one
// kernel with one output allocation.
RuntimeConfig Unoptimized() {
  RuntimeConfig config;
  config.set_optimization_level(OPTIMIZATION_NONE);
  return config;
}

TEST(SessionTest, FetchesIntermediateNodeOutput) {
  auto s = MakeSession(kSmallModel, Unoptimized());
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({1, 2}));
  auto out = s->Run({{"x", x}}, {"mm:0", "add"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ::testing::ElementsAre(5.f, 0.f));
  EXPECT_THAT(Values((*out)[1]), ::testing::ElementsAre(5.5f, -4.f));
}

TEST(SessionTest, FeedingANodeOutputSkipsEverythingAboveIt) {
  // As written: at level all, mm, add and y are one FusedMatMul named y.
  auto s = MakeSession(kSmallModel, Unoptimized());
  ASSERT_NE(s, nullptr);
  // "x" is not fed: if mm were computed, the run would fail on the input.
  Tensor mm = Tensor::FromVector<float>({-1, 3}, Shape({1, 2}));
  auto out = s->Run({{"mm", mm}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ::testing::ElementsAre(0.f, 0.f));
  Tensor mm2 = Tensor::FromVector<float>({1, 5}, Shape({1, 2}));
  out = s->Run({{"mm:0", mm2}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ::testing::ElementsAre(1.5f, 1.f));
}

TEST(SessionTest, MissingInputIsAnErrorShowingTheSignature) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  auto out = s->Run({}, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("missing input 'x'"));
  EXPECT_THAT(out.status().message(), HasSubstr("float32[?,2]"));
}

TEST(SessionTest, WrongDtypeFeedNamesTheInputAndExpectedType) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<int32_t>({1, 2}, Shape({1, 2}));
  auto out = s->Run({{"x", x}}, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("input 'x' has dtype int32"));
  EXPECT_THAT(out.status().message(), HasSubstr("x: float32[?,2]"));
}

TEST(SessionTest, WrongShapeFeedNamesTheInputAndExpectedShape) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2, 3}, Shape({1, 3}));
  auto out = s->Run({{"x", x}}, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("input 'x' has shape [1,3]"));
  EXPECT_THAT(out.status().message(), HasSubstr("float32[?,2]"));
}

TEST(SessionTest, UnknownFeedAndFetchAreErrors) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({1, 2}));
  auto out = s->Run({{"nope", x}}, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("unknown input 'nope'"));
  out = s->Run({{"x", x}}, {"zzz"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("unknown fetch 'zzz'"));
  EXPECT_THAT(out.status().message(), HasSubstr("y: float32"));
  out = s->Run({{"x", x}, {"x", x}}, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("more than once"));
}

TEST(SessionTest, CompilesOnePlanPerInputShape) {
  auto s = MakeSession(kSmallModel);
  ASSERT_NE(s, nullptr);
  Tensor x1 = Tensor::FromVector<float>({1, 2}, Shape({1, 2}));
  Tensor x2 = Tensor::FromVector<float>({1, 2, 3, 4}, Shape({2, 2}));
  ASSERT_TRUE(s->Run({{"x", x1}}).ok());
  ASSERT_TRUE(s->Run({{"x", x1}}).ok());
  EXPECT_EQ(s->stats().plans_compiled, 1);
  ASSERT_TRUE(s->Run({{"x", x2}}).ok());
  ASSERT_TRUE(s->Run({{"x", x2}}).ok());
  ASSERT_TRUE(s->Run({{"x", x1}}).ok());
  EXPECT_EQ(s->stats().plans_compiled, 2);
  EXPECT_EQ(s->stats().runs, 5);
}

// A chain of 12 Neg ops on 1 MiB tensors. With buffers released as soon as
// their last reader has run, at most two are live at once; without, 12 MiB.
// `dim` is the input's declared size (-1: unknown until it is fed).
std::string NegChain(int n, int64_t dim = 262144) {
  std::string text = absl::StrCat(R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: )pb", dim, R"pb( } } } }
  )pb");
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string name = absl::StrCat("n", i);
    absl::StrAppend(&text, "node { name: '", name, "' op: 'Neg' input: '",
                    prev, "' }\n");
    prev = name;
  }
  absl::StrAppend(&text, "signature { inputs { name: 'x' } outputs { name: 'y' tensor: '",
                  prev, "' } }");
  return text;
}

TEST(SessionTest, PeakMemoryFollowsTheLiveSetNotTheGraph) {
  RuntimeConfig config;
  // One logical CPU with a 3 MiB budget: enough for two live 1 MiB tensors.
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(3 << 20);
  auto s = MakeSession(NegChain(12), config);
  ASSERT_NE(s, nullptr);
  absl::StatusOr<Tensor> x = Tensor::Zeros(DT_FLOAT, Shape({262144}));
  ASSERT_TRUE(x.ok());
  x->flat<float>()[7] = 2.5f;
  auto out = s->Run({{"x", *x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].flat<float>()[7], 2.5f);  // 12 negations
}

TEST(SessionTest, FetchesFromABudgetedCpuOutliveTheSession) {
  // A logical CPU with a budget allocates through its own allocator; its
  // results must stay readable, and be freed safely, after the session is
  // gone (Python frees them whenever its garbage collector gets to them).
  RuntimeConfig config;
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  auto s = MakeSession(kSmallModel, config);
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2, -1, 0}, Shape({2, 2}));
  auto out = s->Run({{"x", x}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  Tensor y = (*out)[0];
  out->clear();
  EXPECT_NE(y.allocator(), CpuAllocator());  // the budgeted CPU's own
  s.reset();
  EXPECT_THAT(Values(y), ::testing::ElementsAre(5.5f, 0.f, 0.f, 0.f));
  y = Tensor();  // the last release, after the session (ASan: no error)
}

TEST(SessionTest, PlanCacheEvictsTheLeastRecentlyUsedPlan) {
  RuntimeConfig config;
  config.set_plan_cache_max_plans(2);
  auto s = MakeSession(NegChain(2, /*dim=*/-1), config);
  ASSERT_NE(s, nullptr);
  auto run = [&](int n) {
    std::vector<float> v(n, 1.5f);
    auto out = s->Run({{"x", Tensor::FromVector(v, Shape({n}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values((*out)[0]), v);  // two negations
  };
  run(1);
  run(2);
  run(1);  // 1 is now the most recent: 3 evicts 2, not 1
  run(3);
  Session::Stats st = s->stats();
  EXPECT_EQ(st.plans_compiled, 3);
  EXPECT_EQ(st.plans_cached, 2);
  EXPECT_EQ(st.plans_evicted, 1);
  run(1);
  EXPECT_EQ(s->stats().plans_compiled, 3);
  run(2);  // compiled again; evicts 3
  st = s->stats();
  EXPECT_EQ(st.plans_compiled, 4);
  EXPECT_EQ(st.plans_cached, 2);
  EXPECT_EQ(st.plans_evicted, 2);
  EXPECT_EQ(st.plan_cache_bytes, 0);  // CPU plans hold nothing between steps
}

TEST(SessionTest, PlanCacheKeepsAtMostTheDefaultNumberOfPlans) {
  auto s = MakeSession(NegChain(1, /*dim=*/-1));
  ASSERT_NE(s, nullptr);
  for (int n = 1; n <= kDefaultPlanCachePlans + 6; ++n) {
    ASSERT_TRUE(s->Run({{"x", Tensor::FromVector(std::vector<float>(n, 1.f),
                                                 Shape({n}))}}).ok());
  }
  EXPECT_EQ(s->stats().plans_cached, kDefaultPlanCachePlans);
  EXPECT_EQ(s->stats().plans_evicted, 6);
}

TEST(SessionTest, NegativePlanCacheBoundsAreRejected) {
  for (const char* field : {"plan_cache_max_plans", "plan_cache_max_bytes"}) {
    RuntimeConfig config;
    config.set_use_gpu(false);
    if (std::string(field) == "plan_cache_max_plans") {
      config.set_plan_cache_max_plans(-1);
    } else {
      config.set_plan_cache_max_bytes(-5);
    }
    GraphDef def;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(NegChain(1), &def));
    auto graph = BuildGraph(def);
    ASSERT_TRUE(graph.ok());
    auto made = Session::Create(*std::move(graph), config);
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(made.status().message(), HasSubstr(field));
  }
}

TEST(SessionTest, CpuStepsReuseTheBlocksEarlierStepsFreed) {
  ReleaseCachedCpuMemory();  // what earlier tests' sessions left
  auto s = MakeSession(NegChain(6, /*dim=*/-1));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ReleaseUnusedMemory(), 0);  // nothing kept before a step
  absl::StatusOr<Tensor> x = Tensor::Zeros(DT_FLOAT, Shape({524288}));  // 2 MiB
  ASSERT_TRUE(x.ok());
  x->flat<float>()[5] = 1.5f;
  ASSERT_TRUE(s->Run({{"x", *x}}).ok());
  const CachingHostAllocator::Stats first = CachedCpuMemoryStats();
  for (int step = 0; step < 3; ++step) {
    auto out = s->Run({{"x", *x}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].flat<float>()[5], 1.5f);  // six negations
  }
  const CachingHostAllocator::Stats later = CachedCpuMemoryStats();
#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
  // Nothing is kept under ASan (a use after free must meet freed memory).
  EXPECT_EQ(later.bytes_cached, 0);
  EXPECT_EQ(later.hits, first.hits);
#else
  // The steps after the first take every 2 MiB block from the kept ones.
  EXPECT_EQ(later.misses, first.misses);
  EXPECT_GT(later.hits, first.hits);
  EXPECT_GE(later.bytes_cached, int64_t{2} << 20);
  EXPECT_EQ(s->ReleaseUnusedMemory(), later.bytes_cached);
#endif
  EXPECT_EQ(CachedCpuMemoryStats().bytes_cached, 0);
  // Destroying a session gives back what its steps left kept.
  ASSERT_TRUE(s->Run({{"x", *x}}).ok());
  s.reset();
  EXPECT_EQ(CachedCpuMemoryStats().bytes_cached, 0);
}

TEST(SessionTest, ModelThatCannotFitIsRejectedWhenTheSessionIsCreated) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(NegChain(3), &def));
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok());
  // Shapes are known: two live 1 MiB tensors cannot fit in 1 MiB.
  auto s = Session::Create(*std::move(graph), config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.status().message(), HasSubstr("does not fit"));
  EXPECT_THAT(s.status().message(), HasSubstr("/cpu:0"));
}

TEST(SessionTest, MemoryLimitExhaustionIsAnErrorAndSessionStaysUsable) {
  RuntimeConfig config = Unoptimized();
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  // The input's size is unknown until it is fed, so the placer cannot tell.
  auto s = MakeSession(NegChain(3, /*dim=*/-1), config);
  ASSERT_NE(s, nullptr);
  // 262144 floats is exactly 1 MiB: two live at once do not fit.
  absl::StatusOr<Tensor> big = Tensor::Zeros(DT_FLOAT, Shape({262144}));
  ASSERT_TRUE(big.ok());
  auto out = s->Run({{"x", *big}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("node 'n"));
  EXPECT_THAT(out.status().message(), HasSubstr("/cpu:0"));
  // A smaller input then runs.
  auto small = s->Run({{"x", Tensor::FromVector<float>({1, -2}, Shape({2}))}});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(Values((*small)[0]), ::testing::ElementsAre(-1.f, 2.f));
}

TEST(SessionTest, KernelErrorNamesTheNodeAndSessionStaysUsable) {
  constexpr char kGather[] = R"pb(
    node { name: "idx" op: "Input"
           attr { key: "dtype" value { type: DT_INT64 } }
           attr { key: "shape" value { shape { dim: 2 } } } }
    node { name: "table" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 3 }
                                                float_val: [10, 20, 30] } } } }
    node { name: "lookup" op: "Gather" input: "table" input: "idx" }
    signature { inputs { name: "idx" } outputs { name: "out" tensor: "lookup" } }
  )pb";
  auto s = MakeSession(kGather);
  ASSERT_NE(s, nullptr);
  auto bad = s->Run({{"idx", Tensor::FromVector<int64_t>({0, 7}, Shape({2}))}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'lookup' (Gather)"));
  EXPECT_THAT(bad.status().message(), HasSubstr("7"));
  auto good = s->Run({{"idx", Tensor::FromVector<int64_t>({2, 0}, Shape({2}))}});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_THAT(Values((*good)[0]), ::testing::ElementsAre(30.f, 10.f));
}

// Two branches joined: z = exp(x) + neg(x) * x, on the inter-op pool.
constexpr char kDiamond[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: -1 } } } }
  node { name: "e" op: "Exp" input: "x" }
  node { name: "n" op: "Neg" input: "x" }
  node { name: "m" op: "Mul" input: "n" input: "x" }
  node { name: "z" op: "Add" input: "e" input: "m" }
  signature { inputs { name: "x" } outputs { name: "z" tensor: "z" } }
)pb";

TEST(SessionTest, ConcurrentRunsFromManyThreadsGiveCorrectResults) {
  RuntimeConfig config;
  config.set_inter_op_threads(4);
  auto s = MakeSession(kDiamond, config);
  ASSERT_NE(s, nullptr);
  constexpr int kThreads = 8;
  constexpr int kRuns = 50;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        // Each thread uses its own values and a size of its own.
        int n = 1 + (t + r) % 5;
        std::vector<float> xs(n);
        for (int i = 0; i < n; ++i) xs[i] = 0.1f * (t - i) + 0.01f * r;
        auto out = s->Run({{"x", Tensor::FromVector<float>(xs, Shape({n}))}});
        if (!out.ok()) {
          ++failures[t];
          continue;
        }
        auto z = (*out)[0].flat<float>();
        for (int i = 0; i < n; ++i) {
          float want = std::exp(xs[i]) - xs[i] * xs[i];
          if (!testing::Mismatch<float>(z[i], want, testing::RelativeAndAbsolute(1e-5)).empty()) {
            ++failures[t];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(s->stats().runs, kThreads * kRuns);
  EXPECT_EQ(s->stats().plans_compiled, 5);
}

}  // namespace
}  // namespace sluice::session_test

namespace sluice::session_test {
namespace {

// Two logical CPUs; the middle node asks for /cpu:1, so its input is copied
// there and its output copied back for the caller: a -> (copy) b on /cpu:1
// -> (copy) c, every value float32[3].
std::unique_ptr<Session> LogicalCpuSession() {
  constexpr char kModel[] = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 3 } } } }
    node { name: "a" op: "Neg" input: "x" }
    node { name: "b" op: "Exp" input: "a" device: "/cpu:1" }
    node { name: "c" op: "Neg" input: "b" }
    signature { inputs { name: "x" } outputs { name: "c" tensor: "c" } }
  )pb";
  RuntimeConfig config;
  config.add_logical_cpus();
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  // Manual placement: requests only, the rest on the default device.
  config.set_placement_strategy(PLACEMENT_MANUAL);
  return MakeSession(kModel, config);
}

TEST(SessionDevicesTest, RequestedLogicalCpuGetsTheNodeWithCopiesBetween) {
  auto s = LogicalCpuSession();
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->devices().size(), 2u);
  const Graph& g = s->graph();
  EXPECT_EQ(s->assignment()[g.FindNode("a")->id()]->name(), "/cpu:0");
  EXPECT_EQ(s->assignment()[g.FindNode("b")->id()]->name(), "/cpu:1");
  EXPECT_EQ(s->assignment()[g.FindNode("c")->id()]->name(), "/cpu:0");
  auto out = s->Run({{"x", Tensor::FromVector<float>({0, 1, -2}, Shape({3}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  auto c = (*out)[0].flat<float>();
  EXPECT_FLOAT_EQ(c[0], -1.f);
  EXPECT_FLOAT_EQ(c[1], -std::exp(-1.f));
  EXPECT_FLOAT_EQ(c[2], -std::exp(2.f));
}

TEST(SessionDevicesTest, UnknownDefaultDeviceIsAnError) {
  RuntimeConfig config;
  config.set_default_device("/gpu:3");
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSmallModel, &def));
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok());
  auto s = Session::Create(*std::move(graph), config);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("'/gpu:3' is not present"));
}

TEST(SessionDevicesTest, InvalidConfigIsRejected) {
  RuntimeConfig config;
  config.set_inter_op_threads(-3);
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSmallModel, &def));
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok());
  auto s = Session::Create(*std::move(graph), config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("inter_op_threads"));
}

// A config naming GPU 0, as on a GPU machine, with manual placement on a CPU.
RuntimeConfig ManualOnCpuNamingGpu0() {
  RuntimeConfig config;
  config.set_use_gpu(true);
  config.add_visible_gpus(0);
  config.set_allow_growth(true);
  config.set_placement_strategy(PLACEMENT_MANUAL);
  config.set_default_device("cpu:0");
  return config;
}

// `sluice run --device cpu:0`: manual placement on the CPU with no node
// asking for a GPU sets up no GPU at all, so the config naming GPU 0 opens
// alike with and without one (and in a CPU-only build), everything on the
// CPU.
TEST(SessionDevicesTest, ManualPlacementOnTheCpuSetsUpNoGpu) {
  auto s = MakeSession(kSmallModel, ManualOnCpuNamingGpu0());
  ASSERT_NE(s, nullptr);
  for (Device* d : s->devices()) EXPECT_EQ(d->type(), DeviceType::kCpu);
  for (Device* d : s->assignment()) EXPECT_EQ(d->name(), "/cpu:0");
  auto out = s->Run({{"x", Tensor::FromVector<float>({1, 2}, Shape({1, 2}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ::testing::ElementsAre(5.5f, 0.f));
}

// A node that asks for a GPU needs one: the GPUs are set up as usual, which
// for GPU 0 fails without it.
TEST(SessionDevicesTest, ManualPlacementOnTheCpuSetsUpTheGpuANodeRequests) {
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSmallModel, &def));
  def.mutable_node(3)->set_device("/gpu:0");  // mm
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto s = Session::Create(*std::move(graph), ManualOnCpuNamingGpu0());
  if (!s.ok()) {
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition)
        << s.status();
    return;
  }
  const Graph& g = (*s)->graph();
  EXPECT_EQ((*s)->assignment()[g.FindNode("mm")->id()]->name(), "/gpu:0");
  EXPECT_EQ((*s)->assignment()[g.FindNode("y")->id()]->name(), "/cpu:0");
}

}  // namespace
}  // namespace sluice::session_test

namespace sluice::session_test {
namespace {

// x [?,256] -> 4 x (MatMul with 256x256 weights, Tanh): 1 MiB of weights.
std::string WideMlp() {
  std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 256 } } } }
  )pb";
  std::string prev = "x";
  for (int l = 0; l < 4; ++l) {
    // A splat plus a per-layer value keeps the file small and the layers
    // distinct.
    absl::StrAppend(&text, "node { name: 'w", l, "' op: 'Const' attr { key: 'value' ",
                    "value { tensor { dtype: DT_FLOAT shape { dim: 256 dim: 256 } ",
                    "float_val: ", 0.001 * (l + 1), " } } } }\n");
    absl::StrAppend(&text, "node { name: 'mm", l, "' op: 'MatMul' input: '", prev,
                    "' input: 'w", l, "' }\n");
    absl::StrAppend(&text, "node { name: 'act", l, "' op: 'Tanh' input: 'mm", l,
                    "' }\n");
    prev = absl::StrCat("act", l);
  }
  absl::StrAppend(&text, "signature { inputs { name: 'x' } outputs { name: 'y' tensor: '",
                  prev, "' } }");
  return text;
}

TEST(SessionDevicesTest, WeightsBeyondOneBudgetSplitAcrossLogicalCpusSameOutputs) {
  std::vector<float> xs(2 * 256);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.1f * i);
  Tensor x = Tensor::FromVector(xs, Shape({2, 256}));

  auto one = MakeSession(WideMlp());
  ASSERT_NE(one, nullptr);
  auto want = one->Run({{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status();

  RuntimeConfig config;
  // Each logical CPU may hold 1 MiB, less the placer's reserve: the 1 MiB
  // of weights cannot sit on one of them.
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  auto split = MakeSession(WideMlp(), config);
  ASSERT_NE(split, nullptr);
  std::set<std::string> used;
  for (Device* d : split->assignment()) used.insert(d->name());
  EXPECT_EQ(used, (std::set<std::string>{"/cpu:0", "/cpu:1"}));
  auto got = split->Run({{"x", x}});
  ASSERT_TRUE(got.ok()) << got.status();
  auto a = (*got)[0].flat<float>();
  auto b = (*want)[0].flat<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]) << i;
}

// Manual placement on a CPU that has no room for the weights falls back to
// the next device, so the GPUs are set up after all: GPU 0 takes the rest
// where there is one, and without it the config naming it fails.
TEST(SessionDevicesTest, ManualPlacementOnAFullCpuStillSetsUpTheGpus) {
  RuntimeConfig config = ManualOnCpuNamingGpu0();
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(1 << 20);
  GraphDef def;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(WideMlp(), &def));
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto s = Session::Create(*std::move(graph), config);
  if (!s.ok()) {
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition)
        << s.status();
    return;
  }
  std::set<std::string> used;
  for (Device* d : (*s)->assignment()) used.insert(d->name());
  EXPECT_EQ(used, (std::set<std::string>{"/cpu:0", "/gpu:0"}));
}

}  // namespace
}  // namespace sluice::session_test

namespace sluice::session_test {
namespace {

TEST(SessionStatsTest, RunWithStatsTimesEveryNodeInsideTheStep) {
  RuntimeConfig config;
  config.set_optimization_level(OPTIMIZATION_NONE);  // mm, add, y as written
  auto s = MakeSession(kSmallModel, config);
  ASSERT_NE(s, nullptr);
  StepStats stats;
  auto out = s->RunWithStats(
      {{"x", Tensor::FromVector<float>({1, 2}, Shape({1, 2}))}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  absl::MutexLock lock(&stats.mu);
  std::set<std::string> names;
  for (const NodeTiming& t : stats.nodes) {
    names.insert(t.node->name());
    EXPECT_LE(0.0, t.start_seconds);
    EXPECT_LE(t.start_seconds, t.end_seconds);
    EXPECT_LE(t.end_seconds, stats.step_seconds);
    EXPECT_FALSE(t.is_copy);
  }
  // Constants are not run; the three kernels are.
  EXPECT_EQ(names, (std::set<std::string>{"mm", "add", "y"}));
}

TEST(SessionStatsTest, StatsGiveShapesBytesAndCopySources) {
  auto s = LogicalCpuSession();
  ASSERT_NE(s, nullptr);
  StepStats stats;
  auto out = s->RunWithStats(
      {{"x", Tensor::FromVector<float>({0, 1, -2}, Shape({3}))}}, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  absl::MutexLock lock(&stats.mu);
  std::vector<std::string> copies;
  for (const NodeTiming& t : stats.nodes) {
    EXPECT_FALSE(t.gpu_timed);  // nothing ran on a GPU
    EXPECT_EQ(t.seconds(), t.host_seconds());
    EXPECT_EQ(t.bytes, 12);     // every value is float32[3]
    EXPECT_EQ(t.shapes, "float32[3] -> float32[3]") << t.node->name();
    if (t.is_copy) {
      ASSERT_NE(t.copy_source, nullptr);
      copies.push_back(t.copy_source->name() + " -> " + t.device->name());
    } else {
      EXPECT_EQ(t.copy_source, nullptr);
    }
  }
  std::sort(copies.begin(), copies.end());
  EXPECT_EQ(copies, (std::vector<std::string>{"/cpu:0 -> /cpu:1",
                                              "/cpu:1 -> /cpu:0"}));
}

// The stages CreateOptions::progress reports, in order: the model loaded,
// each pass (numbered, named), placement, the devices; a prepared model
// would skip the passes.
TEST(SessionTest, CreationReportsItsStagesAndEachPass) {
  std::vector<CreationProgress> seen;
  CreateOptions options;
  options.progress = [&](const CreationProgress& p) { seen.push_back(p); };
  RuntimeConfig config;
  config.set_use_gpu(false);
  absl::StatusOr<std::unique_ptr<Session>> s = Session::CreateFromFile(
      TestDataPath("examples/mlp.pbtxt"), config, options);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::string> stages;
  int passes = 0;
  for (const CreationProgress& p : seen) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
    if (p.stage != "optimizing") continue;
    EXPECT_EQ(p.done, passes) << p.detail;
    EXPECT_FALSE(p.detail.empty());
    EXPECT_GT(p.total, p.done);
    ++passes;
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"loading the model", "optimizing",
                                              "placing", "setting up devices"}));
  ASSERT_GT(passes, 0);
  EXPECT_EQ(seen[1].total, passes);  // every pass the level runs
}

}  // namespace
}  // namespace sluice::session_test
