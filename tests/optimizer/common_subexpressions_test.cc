#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::common_subexpressions_test {
namespace {

TEST(CommonSubexpressionPassTest, MergesSameOpAttrsAndInputs) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Const("c1", {1, 2, 3}, {3})
      .Const("c2", {1, 2, 3}, {3})  // same value: merged too
      .Op("a1", "Add", {"x", "c1"})
      .Op("a2", "Add", {"x", "c2"})
      .Op("r1", "ReduceSum", {"a1"}, {{"axes", Ints({1})}})
      .Op("r2", "ReduceSum", {"a2"}, {{"axes", Ints({1})}})
      .Op("r3", "ReduceSum", {"a2"}, {{"axes", Ints({0})}})
      .Op("s", "Add", {"r1", "r2"})
      .Output("s")
      .Output("r3");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeCommonSubexpressionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  // c2, a2 and r2 go; r3 (other axes) stays and now reads a1.
  EXPECT_EQ(OpOf(*out.graph, "c2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "a2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "r2"), "(none)");
  ASSERT_NE(out.graph->FindNode("r3"), nullptr);
  EXPECT_EQ(out.graph->node(out.graph->FindNode("r3")->input(0).node).name(),
            "a1");
  EXPECT_EQ(OpCounts(*out.graph)["ReduceSum"], 2);
  EXPECT_EQ(out.changes.size(), 3u);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 2));
}

TEST(CommonSubexpressionPassTest, LargeConstantsMergeOnlyWhenEqualByteForByte) {
  // 256 KiB each, past the fully hashed size: c3 has c1's start, middle and
  // end (the fingerprint's windows) but differs between them.
  constexpr int64_t kN = 65536;
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(i % 7);
  std::vector<float> w = v;
  w[5000] += 1;
  GraphMaker m;
  m.Input("x", {kN})
      .ConstTensor("c1", Tensor::FromVector(v, Shape({kN})))
      .ConstTensor("c2", Tensor::FromVector(v, Shape({kN})))
      .ConstTensor("c3", Tensor::FromVector(w, Shape({kN})))
      .Op("a1", "Add", {"x", "c1"})
      .Op("a2", "Add", {"x", "c2"})
      .Op("a3", "Add", {"x", "c3"})
      .Op("s12", "Add", {"a1", "a2"})
      .Op("s", "Add", {"s12", "a3"})
      .Output("s");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeCommonSubexpressionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "c2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "a2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "c3"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "a3"), "Add");
  // The kept constant is the same buffer, not a copy.
  EXPECT_EQ(out.graph->FindNode("c1")->const_value()->raw_data(),
            g->FindNode("c1")->const_value()->raw_data());
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 3));
}

TEST(CommonSubexpressionPassTest, KeepsDifferentAttrsAndGraphOutputs) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Op("t1", "Transpose", {"x"}, {{"perm", Ints({1, 0})}})
      .Op("t2", "Transpose", {"x"}, {{"perm", Ints({1, 0})}})
      .Op("n1", "Neg", {"x"})
      .Op("n2", "Neg", {"x"})
      .Op("y", "Add", {"t1", "t2"})
      .Output("y")
      .Output("n1")
      .Output("n2");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeCommonSubexpressionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "t2"), "(none)");
  // n1 and n2 are both graph outputs: fetchable by their names, kept.
  EXPECT_EQ(OpOf(*out.graph, "n1"), "Neg");
  EXPECT_EQ(OpOf(*out.graph, "n2"), "Neg");
}

TEST(CommonSubexpressionPipelineTest, TheMergedAwayConstantIsFreed) {
  // c2 equals c1: its readers read c1, and c2's bytes go.
  GraphMaker m;
  m.Input("x", {2, 3})
      .Const("c1", {1, 2, 3}, {3})
      .Const("c2", {1, 2, 3}, {3})
      .Op("a", "Add", {"x", "c1"})
      .Op("p", "Mul", {"x", "c2"})
      .Op("y", "Sub", {"a", "p"})
      .Output("y");
  for (OptimizationLevel level : {OPTIMIZATION_BASIC, OPTIMIZATION_ALL}) {
    SCOPED_TRACE(OptimizationLevelName(level));
    auto g = m.Build();
    std::weak_ptr<Buffer> kept = ConstBuffer(*g, "c1");
    std::weak_ptr<Buffer> merged = ConstBuffer(*g, "c2");
    ASSERT_FALSE(merged.expired());
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(std::move(g), level, PassOptions{});
    ASSERT_TRUE(opt.ok()) << opt.status();
    EXPECT_EQ(OpOf(*opt->graph, "c2"), "(none)");
    EXPECT_FALSE(kept.expired());  // read by both now
    EXPECT_TRUE(merged.expired());
    auto given = m.Build();
    ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 4));
  }
}

}  // namespace
}  // namespace sluice::optimizer_test::common_subexpressions_test
