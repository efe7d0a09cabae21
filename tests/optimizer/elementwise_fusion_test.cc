// elementwise_fusion: the chains it fuses (before/after structure, the
// program, the same outputs), the graphs it leaves alone, and how
// reduced_precision treats the fused node.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/elementwise_program.h"
#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::elementwise_fusion_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> ProgramOps(const Node& n) {
  return *n.attrs().GetStringList("ops");
}
std::vector<int64_t> ProgramOperands(const Node& n) {
  return *n.attrs().GetIntList("operands");
}
// The names of the tensors node `n` reads.
std::vector<std::string> InputNames(const Graph& g, const Node& n) {
  std::vector<std::string> names;
  for (const TensorRef& r : n.inputs()) names.push_back(g.node(r.node).name());
  return names;
}

std::unique_ptr<const Graph> WithDevice(const GraphMaker& m,
                                        const std::string& node,
                                        const std::string& device) {
  GraphDef def = m.def();
  for (NodeDef& n : *def.mutable_node()) {
    if (n.name() == node) n.set_device(device);
  }
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

TEST(ElementwiseFusionPassTest, FusesReluSixExportedAsMaximumMinimum) {
  GraphMaker m;
  m.Input("x", {2, 8, 5, 5})
      .Const("zero", {0}, {})
      .Const("six", {6}, {})
      .Op("lo", "Maximum", {"x", "zero"})
      .Op("y", "Minimum", {"lo", "six"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* y = out.graph->FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op(), "FusedElementwise");
  EXPECT_EQ(out.graph->FindNode("lo"), nullptr);
  EXPECT_THAT(ProgramOps(*y), ElementsAre("Maximum", "Minimum"));
  EXPECT_THAT(ProgramOperands(*y), ElementsAre(0, 1, 3, 2));
  EXPECT_THAT(InputNames(*out.graph, *y), ElementsAre("x", "zero", "six"));
  EXPECT_EQ(y->output_shape(0), Shape({2, 8, 5, 5}));
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_THAT(out.changes[0], HasSubstr("fused 2 nodes ('lo', 'y')"));
  EXPECT_THAT(out.changes[0], HasSubstr("t1 = Minimum(t0, in2)"));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 1));
}

// A gated MLP's activation as exporters leave it (LLaMA's SwiGLU: the gate
// through SiLU, x * sigmoid(x), times the up projection): one FusedElementwise
// kernel reading the two projections.
TEST(ElementwiseFusionPassTest, FusesASiluGatedMlpActivation) {
  GraphMaker m;
  m.Input("gate", {2, 16, 64})
      .Input("up", {2, 16, 64})
      .Op("sig", "Sigmoid", {"gate"})
      .Op("silu", "Mul", {"gate", "sig"})
      .Op("y", "Mul", {"silu", "up"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* y = out.graph->FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op(), "FusedElementwise");
  EXPECT_EQ(out.graph->FindNode("sig"), nullptr);
  EXPECT_EQ(out.graph->FindNode("silu"), nullptr);
  EXPECT_THAT(ProgramOps(*y), ElementsAre("Sigmoid", "Mul", "Mul"));
  EXPECT_THAT(InputNames(*out.graph, *y), ElementsAre("gate", "up"));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 3));
}

TEST(ElementwiseFusionPassTest, FusesABatchNormReluWithBroadcastInputs) {
  // DenseNet's pre-activation BatchNorm: Relu(x * scale + shift), and a
  // diamond after it that reads the Relu twice.
  GraphMaker m;
  m.Input("x", {2, 4, 3, 3})
      .Const("scale", Values(4, 1, 0.5f, 1.5f), {4, 1, 1})
      .Const("shift", Values(4, 2, -0.5f, 0.5f), {4, 1, 1})
      .Op("mul", "Mul", {"x", "scale"})
      .Op("add", "Add", {"mul", "shift"})
      .Op("relu", "Relu", {"add"})
      .Op("sq", "Mul", {"relu", "relu"})
      .Op("y", "Sub", {"sq", "relu"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpCounts(*out.graph)["FusedElementwise"], 1);
  EXPECT_EQ(out.graph->num_nodes(), 4);  // x, scale, shift, y
  const Node* y = out.graph->FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_THAT(ProgramOps(*y), ElementsAre("Mul", "Add", "Relu", "Mul", "Sub"));
  EXPECT_THAT(ProgramOperands(*y),
              ElementsAre(0, 1, 3, 2, 4, -1, 5, 5, 6, 5));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 2));
}

TEST(ElementwiseFusionPassTest, StopsAtAValueReadOutsideTheGroup) {
  // `a` is read by the chain and by the MatMul: the chain starts after it.
  GraphMaker m;
  m.Input("x", {4, 4})
      .Input("w", {4, 4})
      .Op("a", "Add", {"x", "w"})
      .Op("e", "Exp", {"a"})
      .Op("t", "Tanh", {"e"})
      .Op("mm", "MatMul", {"a", "t"})
      .Output("mm");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "a"), "Add");
  EXPECT_EQ(OpOf(*out.graph, "e"), "(none)");
  const Node* t = out.graph->FindNode("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->op(), "FusedElementwise");
  EXPECT_THAT(ProgramOps(*t), ElementsAre("Exp", "Tanh"));
  EXPECT_THAT(InputNames(*out.graph, *t), ElementsAre("a"));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 3));
}

TEST(ElementwiseFusionPassTest, KeepsGraphOutputsAsValues) {
  // `mid` is a graph output: two groups, each ending at an output.
  GraphMaker m;
  m.Input("x", {8})
      .Op("n", "Neg", {"x"})
      .Op("mid", "Abs", {"n"})
      .Op("s", "Sqrt", {"mid"})
      .Op("y", "Relu", {"s"})
      .Output("mid")
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "mid"), "FusedElementwise");
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedElementwise");
  EXPECT_EQ(out.graph->num_nodes(), 3);
  EXPECT_THAT(InputNames(*out.graph, *out.graph->FindNode("y")),
              ElementsAre("mid"));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 4));
}

TEST(ElementwiseFusionPassTest, LeavesSingleOpsAndOtherDtypesAlone) {
  GraphMaker m;
  m.Input("x", {4, 4})
      .Input("i", {4}, DT_INT32)
      .Input("j", {4}, DT_INT32)
      .Op("r", "Relu", {"x"})
      .Op("mm", "MatMul", {"r", "r"})
      .Op("ia", "Add", {"i", "j"})
      .Op("ineg", "Neg", {"ia"})
      .Output("mm")
      .Output("ineg");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  EXPECT_EQ(out.graph, nullptr);
  EXPECT_TRUE(out.changes.empty());
}

TEST(ElementwiseFusionPassTest, LeavesTheOtherFusionsOpsAlone) {
  GraphMaker m;
  m.Input("x", {2, 8})
      .Op("g", "Gelu", {"x"}, {{"approximate", MakeStringAttr("none")}})
      .Op("s", "Softmax", {"g"}, {{"axis", MakeIntAttr(-1)}})
      .Op("r", "Relu", {"s"})
      .Op("y", "Gelu", {"r"}, {{"approximate", MakeStringAttr("tanh")}})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  EXPECT_EQ(out.graph, nullptr);
}

TEST(ElementwiseFusionPassTest, DoesNotMergeNodesOfDifferentDevices) {
  GraphMaker m;
  m.Input("x", {8})
      .Op("a", "Exp", {"x"})
      .Op("b", "Neg", {"a"})
      .Op("y", "Relu", {"b"})
      .Output("y");
  // `a` must run on the CPU: it stays a node of its own; b and y fuse.
  auto g = WithDevice(m, "a", "/cpu:0");
  ASSERT_NE(g, nullptr);
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "a"), "Exp");
  EXPECT_EQ(out.graph->FindNode("a")->requested_device(), "/cpu:0");
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedElementwise");
  EXPECT_THAT(ProgramOps(*out.graph->FindNode("y")),
              ElementsAre("Neg", "Relu"));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 5));
}

TEST(ElementwiseFusionPassTest, TheFusedNodeKeepsTheRootsDevice) {
  GraphMaker m;
  m.Input("x", {8}).Op("a", "Exp", {"x"}).Op("y", "Neg", {"a"}).Output("y");
  GraphDef def = m.def();
  for (NodeDef& n : *def.mutable_node()) {
    if (n.name() != "x") n.set_device("/cpu:0");
  }
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  ASSERT_TRUE(g.ok()) << g.status();
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), **g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(out.graph->FindNode("y")->requested_device(), "/cpu:0");
}

TEST(ElementwiseFusionPassTest, LeavesNodesWithControlEdges) {
  GraphMaker m;
  m.Input("x", {4}).Op("a", "Exp", {"x"}).Op("y", "Neg", {"a", "^x"});
  auto g = m.Build();
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->FindNode("y")->control_inputs().size(), 1u);
  PassOutput out = RunPass(*MakeElementwiseFusionPass(), *g);
  EXPECT_EQ(out.graph, nullptr);
}

TEST(ElementwiseFusionPassTest, RunsInThePipelineAtLevelAllOnly) {
  GraphMaker m;
  m.Input("x", {4})
      .Const("b", {1, 2, 3, 4}, {4})
      .Op("a", "Add", {"x", "b"})
      .Op("y", "Sigmoid", {"a"})
      .Output("y");
  auto g = m.Build();
  absl::StatusOr<OptimizedGraph> all =
      OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(OpOf(*all->graph, "y"), "FusedElementwise");
  absl::StatusOr<OptimizedGraph> basic =
      OptimizeGraph(Copy(*g), OPTIMIZATION_BASIC, PassOptions{});
  ASSERT_TRUE(basic.ok()) << basic.status();
  EXPECT_EQ(OpOf(*basic->graph, "y"), "Sigmoid");
}

TEST(ElementwiseFusionPassTest, ReducedPrecisionConvertsProgramsWithoutExp) {
  GraphMaker m;
  m.Input("x", {2, 8})
      .Const("b", Values(8, 6, -1, 1), {8})
      .Op("a", "Add", {"x", "b"})
      .Op("r", "Relu", {"a"})
      .Op("e", "Exp", {"x"})
      .Op("z", "Mul", {"e", "b"})
      .Output("r")
      .Output("z");
  auto g = m.Build();
  PassOutput fused = RunPass(*MakeElementwiseFusionPass(), *g);
  ASSERT_NE(fused.graph, nullptr);
  PassOptions reduced;
  reduced.reduced_precision = DT_FLOAT16;
  PassOutput out = RunPass(*MakeReducedPrecisionPass(), *fused.graph, reduced);
  ASSERT_NE(out.graph, nullptr);
  const Node* r = out.graph->FindNode("r");
  const Node* z = out.graph->FindNode("z");
  ASSERT_NE(r, nullptr);
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(r->op(), "FusedElementwise");
  EXPECT_EQ(r->output_dtype(0), DT_FLOAT16);  // Add, Relu: 16-bit
  EXPECT_EQ(z->op(), "FusedElementwise");
  EXPECT_EQ(z->output_dtype(0), DT_FLOAT);    // holds Exp: float32
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 6), 1e-2, 1e-2);
}

}  // namespace
}  // namespace sluice::optimizer_test::elementwise_fusion_test
