#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::constant_folding_test {
namespace {

TEST(ConstantFoldingPassTest, FoldsChainsOfConstantsUnderTheirNames) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Const("a", {1, 2, 3}, {3})
      .Const("b", {10, 20, 30}, {3})
      .Op("sum", "Add", {"a", "b"})
      .Op("scaled", "Mul", {"sum", "a"})
      .Op("t", "Reshape", {"scaled"}, {{"shape", Ints({1, 3})}})
      .Op("y", "Add", {"x", "t"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeConstantFoldingPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "sum"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "scaled"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "t"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "y"), "Add");
  const Tensor* t = out.graph->FindNode("t")->const_value();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape(), Shape({1, 3}));
  EXPECT_EQ(t->data<float>()[2], 99.0f);  // (3 + 30) * 3
  EXPECT_EQ(out.changes.size(), 3u);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 3));
}

TEST(ConstantFoldingPassTest, CapsTheSizeOfWhatItMakes) {
  GraphMaker m;
  m.Input("x", {64, 64})
      .Const("one", {1}, {1})
      .Op("big", "Expand", {"one"}, {{"shape", Ints({64, 64})}})
      .Op("y", "Add", {"x", "big"})
      .Output("y");
  auto g = m.Build();
  PassOptions small;
  small.limits.max_folded_constant_bytes = 1024;  // the Expand makes 16 KiB
  PassOutput kept = RunPass(*MakeConstantFoldingPass(), *g, small);
  EXPECT_EQ(kept.graph, nullptr);
  PassOutput folded = RunPass(*MakeConstantFoldingPass(), *g);
  ASSERT_NE(folded.graph, nullptr);
  EXPECT_EQ(OpOf(*folded.graph, "big"), "Const");
}

TEST(ConstantFoldingPassTest, StopsFoldingPastTheTotalBudget) {
  GraphMaker m;
  m.Input("x", {64, 64})
      .Const("one", {1}, {1})
      .Op("big1", "Expand", {"one"}, {{"shape", Ints({64, 64})}})
      .Op("big2", "Expand", {"one"}, {{"shape", Ints({64, 32})}})
      .Op("y1", "Add", {"x", "big1"})
      .Op("y2", "MatMul", {"x", "big2"})
      .Output("y1")
      .Output("y2");
  auto g = m.Build();
  PassOptions options;
  options.limits.max_folded_bytes = 20000;  // big1 (16 KiB) fits, then not big2
  PassOutput out = RunPass(*MakeConstantFoldingPass(), *g, options);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "big1"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "big2"), "Expand");
}

TEST(ConstantFoldingPassTest, LeavesAFailingNodeForTheStepToReport) {
  GraphMaker m;
  m.ConstInt("n", {7}, {1})
      .ConstInt("zero", {0}, {1})
      .Op("q", "Div", {"n", "zero"})
      .Output("q");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeConstantFoldingPass(), *g);
  EXPECT_EQ(out.graph, nullptr);  // integer division by zero: not folded
}

TEST(ConstantFoldingPassTest, DoesNotFoldWhatDependsOnInputs) {
  GraphMaker m;
  m.Input("x", {3}).Const("c", {1, 2, 3}, {3}).Op("y", "Mul", {"x", "c"});
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeConstantFoldingPass(), *g).graph, nullptr);
}

TEST(ConstantFoldingPipelineTest, TheFoldedInputsAreFreed) {
  // (a + b) * a becomes one Const; a and b are read by nothing then.
  GraphMaker m;
  m.Input("x", {2, 3})
      .Const("a", Values(3, 11, -1, 1), {3})
      .Const("b", Values(3, 12, -1, 1), {3})
      .Op("sum", "Add", {"a", "b"})
      .Op("scaled", "Mul", {"sum", "a"})
      .Op("y", "Add", {"x", "scaled"})
      .Output("y");
  for (OptimizationLevel level : {OPTIMIZATION_BASIC, OPTIMIZATION_ALL}) {
    SCOPED_TRACE(OptimizationLevelName(level));
    auto g = m.Build();
    std::weak_ptr<Buffer> a = ConstBuffer(*g, "a");
    std::weak_ptr<Buffer> b = ConstBuffer(*g, "b");
    ASSERT_FALSE(a.expired());
    ASSERT_FALSE(b.expired());
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(std::move(g), level, PassOptions{});
    ASSERT_TRUE(opt.ok()) << opt.status();
    EXPECT_EQ(OpOf(*opt->graph, "scaled"), "Const");
    EXPECT_TRUE(a.expired());
    EXPECT_TRUE(b.expired());
    auto given = m.Build();  // its own constants, not a's or b's
    ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 13));
  }
}

}  // namespace
}  // namespace sluice::optimizer_test::constant_folding_test
