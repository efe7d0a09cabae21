// If, Loop and Scan run through a session: their subgraphs (graph
// attributes) are validated by the builder, compiled once with the plan
// (executor/subgraph.h) and run per branch, iteration or slice. Expected
// values are worked by hand in the comments.
#include <vector>

#include "device/discovery.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernels/kernel_registry.h"

namespace sluice::control_flow_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<const Graph>> Build(const std::string& text) {
  GraphDef def;
  if (!google::protobuf::TextFormat::ParseFromString(text, &def)) {
    return absl::InvalidArgumentError("text does not parse");
  }
  return BuildGraph(def);
}

// "cpu": every node on the CPU. "gpu": the default placement on a machine
// with a GPU, where the control-flow node and its subgraphs run on /gpu:0.
std::unique_ptr<Session> MakeSession(const std::string& text,
                                     const std::string& device = "cpu") {
  absl::StatusOr<std::unique_ptr<const Graph>> graph = Build(text);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  RuntimeConfig config;
  config.set_use_gpu(device == "gpu");
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

bool HaveGpu() {
  DeviceInventory inv = DiscoverDevices();
  for (const GpuInfo& gpu : inv.gpus) {
    if (gpu.usable) return true;
  }
  return false;
}

// The device `name` runs on.
std::string DeviceOf(const Session& s, const std::string& name) {
  const Node* n = s.graph().FindNode(name);
  if (n == nullptr) return "no such node";
  const Device* d = s.assignment()[n->id()];
  return d == nullptr ? "none" : d->name();
}

// Runs each test on the CPU and, where there is one, on the GPU.
class ControlFlowRunTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Session> Make(const std::string& text,
                                const std::string& node) {
    if (GetParam() == "gpu" && !HaveGpu()) return nullptr;
    std::unique_ptr<Session> s = MakeSession(text, GetParam());
    if (s != nullptr && GetParam() == "gpu") {
      EXPECT_THAT(DeviceOf(*s, node), HasSubstr("gpu"));
    }
    return s;
  }
};

#define MAKE_OR_SKIP(s, text, node)                         \
  auto s = Make(text, node);                                \
  if (s == nullptr && GetParam() == "gpu" && !HaveGpu()) {  \
    GTEST_SKIP() << "no usable GPU";                        \
  }                                                         \
  ASSERT_NE(s, nullptr)

std::vector<float> Floats(const Tensor& t) {
  auto v = t.flat<float>();
  return std::vector<float>(v.begin(), v.end());
}

// y = cond ? x + c : x * c, with c read from outside (a capture).
constexpr char kIfModel[] = R"pb(
  node { name: "cond" op: "Input"
         attr { key: "dtype" value { type: DT_BOOL } }
         attr { key: "shape" value { shape { } } } }
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 2 } } } }
  node { name: "c" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 2 } } } }
  node { name: "y" op: "If" input: "cond" input: "x" input: "c"
    attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
    attr { key: "Tout" value { list { type: [DT_FLOAT] } } }
    attr { key: "then_branch" value { graph {
      node { name: "a" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim: 2 } } } }
      node { name: "b" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim: 2 } } } }
      node { name: "sum" op: "Add" input: "a" input: "b" }
      signature { inputs { name: "a" } inputs { name: "b" }
                  outputs { name: "out" tensor: "sum" } } } } }
    attr { key: "else_branch" value { graph {
      node { name: "a" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim: 2 } } } }
      node { name: "b" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim: 2 } } } }
      node { name: "prod" op: "Mul" input: "a" input: "b" }
      signature { inputs { name: "a" } inputs { name: "b" }
                  outputs { name: "out" tensor: "prod" } } } } } }
  signature { inputs { name: "cond" } inputs { name: "x" } inputs { name: "c" }
              outputs { name: "y" tensor: "y" } }
)pb";

TEST_P(ControlFlowRunTest, IfRunsTheBranchTheConditionPicks) {
  MAKE_OR_SKIP(s, kIfModel, "y");
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({2}));
  Tensor c = Tensor::FromVector<float>({3, 4}, Shape({2}));
  auto yes = s->Run({{"cond", Tensor::Scalar<bool>(true)}, {"x", x}, {"c", c}},
                    {"y"});
  ASSERT_TRUE(yes.ok()) << yes.status();
  EXPECT_THAT(Floats((*yes)[0]), ElementsAre(4.f, 6.f));  // [1+3, 2+4]
  auto no = s->Run({{"cond", Tensor::Scalar<bool>(false)}, {"x", x}, {"c", c}},
                   {"y"});
  ASSERT_TRUE(no.ok()) << no.status();
  EXPECT_THAT(Floats((*no)[0]), ElementsAre(3.f, 8.f));  // [1*3, 2*4]
}

// for i in range(trips) while cond: acc = acc + i (as float), cond =
// acc < limit; scan output: acc after each iteration.
constexpr char kLoopModel[] = R"pb(
  node { name: "trips" op: "Input"
         attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { } } } }
  node { name: "go" op: "Const"
         attr { key: "value" value { tensor { dtype: DT_BOOL shape { }
                                              int_val: 1 } } } }
  node { name: "acc0" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { } } } }
  node { name: "limit" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { } } } }
  node { name: "loop" op: "Loop"
    input: "trips" input: "go" input: "acc0" input: "limit"
    attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
    attr { key: "Tout" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
    attr { key: "num_captures" value { i: 1 } }
    attr { key: "body" value { graph {
      node { name: "i" op: "Input"
             attr { key: "dtype" value { type: DT_INT64 } }
             attr { key: "shape" value { shape { } } } }
      node { name: "cond_in" op: "Input"
             attr { key: "dtype" value { type: DT_BOOL } }
             attr { key: "shape" value { shape { } } } }
      node { name: "acc" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { } } } }
      node { name: "lim" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { } } } }
      node { name: "fi" op: "Cast" input: "i"
             attr { key: "DstT" value { type: DT_FLOAT } } }
      node { name: "next" op: "Add" input: "acc" input: "fi" }
      node { name: "more" op: "Less" input: "next" input: "lim" }
      signature {
        inputs { name: "i" } inputs { name: "cond_in" }
        inputs { name: "acc" } inputs { name: "lim" }
        outputs { name: "cond" tensor: "more" }
        outputs { name: "acc_out" tensor: "next" }
        outputs { name: "scan" tensor: "next" } } } } } }
  signature { inputs { name: "trips" } inputs { name: "acc0" }
              inputs { name: "limit" }
              outputs { name: "final" tensor: "loop:0" }
              outputs { name: "all" tensor: "loop:1" } }
)pb";

TEST_P(ControlFlowRunTest, LoopCarriesValuesAndStacksScanOutputs) {
  MAKE_OR_SKIP(s, kLoopModel, "loop");
  Tensor acc0 = Tensor::Scalar<float>(10);
  // Limit high: runs all 4 trips. acc: 10, 11, 13, 16.
  auto out = s->Run({{"trips", Tensor::Scalar<int64_t>(4)},
                     {"acc0", acc0},
                     {"limit", Tensor::Scalar<float>(100)}},
                    {"final", "all"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(16.f));
  EXPECT_EQ((*out)[1].shape(), Shape({4}));
  EXPECT_THAT(Floats((*out)[1]), ElementsAre(10.f, 11.f, 13.f, 16.f));
  // Limit 12: after iteration 1 acc = 11 < 12 goes on, after iteration 2
  // acc = 13 stops the loop.
  out = s->Run({{"trips", Tensor::Scalar<int64_t>(10)},
                {"acc0", acc0},
                {"limit", Tensor::Scalar<float>(12)}},
               {"final", "all"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(13.f));
  EXPECT_THAT(Floats((*out)[1]), ElementsAre(10.f, 11.f, 13.f));
  // No trips: the initial value, and an empty scan output of shape [0].
  out = s->Run({{"trips", Tensor::Scalar<int64_t>(0)},
                {"acc0", acc0},
                {"limit", Tensor::Scalar<float>(12)}},
               {"final", "all"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(10.f));
  EXPECT_EQ((*out)[1].shape(), Shape({0}));
}

// Running sum over the rows of x [3, 2] (scan axis 0), the per-step sums
// stacked along axis 1 in reverse order.
constexpr char kScanModel[] = R"pb(
  node { name: "init" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 2 } } } }
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 3 dim: 2 } } } }
  node { name: "scan" op: "Scan" input: "init" input: "x"
    attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
    attr { key: "Tout" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
    attr { key: "num_scan_inputs" value { i: 1 } }
    attr { key: "scan_output_axes" value { list { i: [1] } } }
    attr { key: "scan_output_directions" value { list { i: [1] } } }
    attr { key: "body" value { graph {
      node { name: "sum" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim: 2 } } } }
      node { name: "row" op: "Input"
             attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim: 2 } } } }
      node { name: "next" op: "Add" input: "sum" input: "row" }
      signature { inputs { name: "sum" } inputs { name: "row" }
                  outputs { name: "state" tensor: "next" }
                  outputs { name: "each" tensor: "next" } } } } } }
  signature { inputs { name: "init" } inputs { name: "x" }
              outputs { name: "total" tensor: "scan:0" }
              outputs { name: "steps" tensor: "scan:1" } }
)pb";

TEST_P(ControlFlowRunTest, ScanSlicesInputsAndStacksOutputsAlongTheirAxes) {
  MAKE_OR_SKIP(s, kScanModel, "scan");
  auto out = s->Run(
      {{"init", Tensor::FromVector<float>({0, 0}, Shape({2}))},
       {"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape({3, 2}))}},
      {"total", "steps"});
  ASSERT_TRUE(out.ok()) << out.status();
  // Sums after each row: [1,2], [4,6], [9,12].
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(9.f, 12.f));
  // Reversed ([9,12], [4,6], [1,2]) and stacked along axis 1: [2, 3].
  EXPECT_EQ((*out)[1].shape(), Shape({2, 3}));
  EXPECT_THAT(Floats((*out)[1]), ElementsAre(9.f, 4.f, 1.f, 12.f, 6.f, 2.f));
}

INSTANTIATE_TEST_SUITE_P(Devices, ControlFlowRunTest,
                         ::testing::Values("cpu", "gpu"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The GPU kernels of If, Loop and Scan take a node only when every node
// of its subgraphs has a GPU kernel; the refusal names the node that has
// none (the placer then keeps the control-flow node on the CPU).
TEST(ControlFlowTest, GpuKernelTakesOnlySubgraphsThatRunOnTheGpu) {
#ifndef SLUICE_WITH_CUDA
  GTEST_SKIP() << "this build of sluice has no CUDA support";
#else
  absl::StatusOr<std::unique_ptr<const Graph>> on_gpu = Build(kIfModel);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
  EXPECT_TRUE(KernelRegistry::Global()
                  ->Supports(*(*on_gpu)->FindNode("y"), DeviceType::kGpu)
                  .ok());
  // Transpose has no GPU kernel for int16: a branch that uses it keeps the
  // If on the CPU.
  std::string text = kIfModel;
  const std::string from = R"(node { name: "prod" op: "Mul" input: "a" input: "b" })";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(),
               R"(node { name: "a16" op: "Cast" input: "a"
                         attr { key: "DstT" value { type: DT_INT16 } } }
                  node { name: "t" op: "Transpose" input: "a16" }
                  node { name: "back" op: "Cast" input: "t"
                         attr { key: "DstT" value { type: DT_FLOAT } } }
                  node { name: "prod" op: "Mul" input: "back" input: "b" })");
  absl::StatusOr<std::unique_ptr<const Graph>> mixed = Build(text);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  absl::Status why = KernelRegistry::Global()->Supports(
      *(*mixed)->FindNode("y"), DeviceType::kGpu);
  EXPECT_FALSE(why.ok());
  EXPECT_THAT(why.message(), HasSubstr("subgraph node 't' (Transpose)"));
#endif
}

TEST(ControlFlowTest, BuilderRejectsABodyWithTheWrongOutputs) {
  // The body gives float where the node declares int64: an error naming
  // the node and the subgraph.
  std::string text = kScanModel;
  std::string from = R"(key: "Tout" value { list { type: [DT_FLOAT, DT_FLOAT])";
  std::string to = R"(key: "Tout" value { list { type: [DT_FLOAT, DT_INT64])";
  text.replace(text.find(from), from.size(), to);
  absl::StatusOr<std::unique_ptr<const Graph>> g = Build(text);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("node 'scan' (Scan)"));
  EXPECT_THAT(g.status().message(), HasSubstr("subgraph 'body' gives 2"));
}

TEST(ControlFlowTest, BuilderReportsErrorsInsideASubgraph) {
  std::string text = kIfModel;
  std::string from = R"(op: "Mul")";
  text.replace(text.find(from), from.size(), R"(op: "NoSuchOp")");
  absl::StatusOr<std::unique_ptr<const Graph>> g = Build(text);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("node 'y' (If)"));
  EXPECT_THAT(g.status().message(), HasSubstr("subgraph 'else_branch'"));
  EXPECT_THAT(g.status().message(), HasSubstr("unknown op 'NoSuchOp'"));
}

TEST(ControlFlowTest, ScanWithInputsOfDifferentLengthsIsAnError) {
  // Two scan inputs whose lengths are unknown until run time disagree.
  std::string text = R"pb(
    node { name: "a" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 } } } }
    node { name: "b" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 } } } }
    node { name: "scan" op: "Scan" input: "a" input: "b"
      attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT] } } }
      attr { key: "num_scan_inputs" value { i: 2 } }
      attr { key: "body" value { graph {
        node { name: "p" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { } } } }
        node { name: "q" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { } } } }
        node { name: "s" op: "Add" input: "p" input: "q" }
        signature { inputs { name: "p" } inputs { name: "q" }
                    outputs { name: "s" tensor: "s" } } } } } }
    signature { inputs { name: "a" } inputs { name: "b" }
                outputs { name: "s" tensor: "scan" } }
  )pb";
  auto s = MakeSession(text);
  ASSERT_NE(s, nullptr);
  auto out = s->Run({{"a", Tensor::FromVector<float>({1, 2, 3}, Shape({3}))},
                     {"b", Tensor::FromVector<float>({1, 2}, Shape({2}))}},
                    {"s"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("node 'scan' (Scan)"));
  EXPECT_THAT(out.status().message(), HasSubstr("scan input 1 has 2 steps"));
  // Equal lengths: elementwise sums [2, 4].
  out = s->Run({{"a", Tensor::FromVector<float>({1, 2}, Shape({2}))},
                {"b", Tensor::FromVector<float>({1, 2}, Shape({2}))}},
               {"s"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(2.f, 4.f));
}

}  // namespace
}  // namespace sluice::control_flow_test
