#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::conv_scale_folding_test {
namespace {


// Conv2D 3->4, bias Add, then a BatchNormalization as Mul and Add.
GraphMaker ConvBn(bool conv_has_other_reader) {
  GraphMaker m;
  m.Input("x", {1, 3, 6, 6})
      .Const("w", Values(4 * 3 * 3 * 3, 1, -1, 1), {4, 3, 3, 3})
      .Const("b", Values(4, 2, -1, 1), {4, 1, 1})
      .Const("scale", Values(4, 3, 0.5, 2), {1, 4, 1, 1})
      .Const("shift", Values(4, 4, -1, 1), {4, 1, 1})
      .Op("conv", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("bias", "Add", {"conv", "b"})
      .Op("bn_mul", "Mul", {"bias", "scale"})
      .Op("bn_add", "Add", {"shift", "bn_mul"})
      .Op("y", "Relu", {"bn_add"})
      .Output("y");
  if (conv_has_other_reader) m.Op("peek", "Neg", {"conv"}).Output("peek");
  return m;
}

TEST(ConvScaleFoldingPassTest, FoldsBatchNormIntoTheFilter) {
  auto g = ConvBn(false).Build();
  PassOutput out = RunPass(*MakeConvScaleFoldingPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "bias"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "bn_mul"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "bn_add"), "Add");
  EXPECT_EQ(OpCounts(*out.graph)["Mul"], 0);
  const Node* conv = out.graph->FindNode("conv");
  EXPECT_EQ(out.graph->node(conv->input(1).node).name(), "conv/scaled_filter");
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_NE(out.changes[0].find("'bias', 'bn_mul', 'bn_add'"),
            std::string::npos)
      << out.changes[0];
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 8));
}

TEST(ConvScaleFoldingPassTest, LeavesAConvWhoseOutputIsReadElsewhere) {
  auto g = ConvBn(true).Build();
  EXPECT_EQ(RunPass(*MakeConvScaleFoldingPass(), *g).graph, nullptr);
}

TEST(ConvScaleFoldingPassTest, LeavesNonPerChannelConstants) {
  GraphMaker m;
  m.Input("x", {1, 3, 4, 4})
      .Const("w", Values(2 * 3 * 1 * 1, 5, -1, 1), {2, 3, 1, 1})
      .Const("s", Values(4, 6, 1, 2), {1, 1, 1, 4})  // per column, not channel
      .Op("conv", "Conv2D", {"x", "w"})
      .Op("y", "Mul", {"conv", "s"})
      .Output("y");
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeConvScaleFoldingPass(), *g).graph, nullptr);
}

TEST(ConvScaleFoldingPipelineTest, TheOldFilterAndTheScaleConstantsAreFreed) {
  for (OptimizationLevel level : {OPTIMIZATION_BASIC, OPTIMIZATION_ALL}) {
    SCOPED_TRACE(OptimizationLevelName(level));
    auto g = ConvBn(false).Build();
    std::map<std::string, std::weak_ptr<Buffer>> old;
    for (const char* name : {"w", "b", "scale", "shift"}) {
      old[name] = ConstBuffer(*g, name);
      ASSERT_FALSE(old[name].expired()) << name;
    }
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(std::move(g), level, PassOptions{});
    ASSERT_TRUE(opt.ok()) << opt.status();
    EXPECT_EQ(OpOf(*opt->graph, "conv/scaled_filter"), "Const");
    EXPECT_EQ(OpCounts(*opt->graph)["Mul"], 0);
    for (const auto& [name, buffer] : old) {
      EXPECT_TRUE(buffer.expired()) << name;
    }
    auto given = ConvBn(false).Build();
    ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 9));
  }
}

}  // namespace
}  // namespace sluice::optimizer_test::conv_scale_folding_test
