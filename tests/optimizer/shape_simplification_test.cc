#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::shape_simplification_test {
namespace {

TEST(ShapeSimplificationPassTest, StaticShapeAndSizeBecomeConstants) {
  GraphMaker m;
  m.Input("x", {2, 3, 4})
      .Input("d", {-1, 5})
      .Op("s", "Shape", {"x"}, {{"start", MakeIntAttr(1)}})
      .Op("n", "Size", {"x"})
      .Op("ds", "Shape", {"d"})  // a dimension is unknown: stays
      .Op("tail", "Shape", {"d"}, {{"start", MakeIntAttr(-1)}})  // known
      .Output("s")
      .Output("n")
      .Output("ds")
      .Output("tail");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeShapeSimplificationPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "s"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "n"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "ds"), "Shape");
  EXPECT_EQ(OpOf(*out.graph, "tail"), "Const");
  const Tensor* s = out.graph->FindNode("s")->const_value();
  ASSERT_EQ(s->NumElements(), 2);
  EXPECT_EQ(s->data<int64_t>()[0], 3);
  EXPECT_EQ(s->data<int64_t>()[1], 4);
  EXPECT_EQ(out.graph->FindNode("n")->const_value()->data<int64_t>()[0], 24);
  EXPECT_EQ(out.graph->FindNode("tail")->const_value()->data<int64_t>()[0], 5);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 4));
}

TEST(ShapeSimplificationPassTest,
     DynamicOpsWithConstantParametersBecomeStatic) {
  GraphMaker m;
  m.Input("x", {2, 3, 4})
      .ConstInt("shape", {6, -1}, {2})
      .ConstInt("zero_shape", {0, -1}, {2})
      .ConstInt("axes", {1}, {1})
      .ConstInt("b", {0}, {1})
      .ConstInt("e", {2}, {1})
      .ConstInt("st", {1}, {1})
      .Op("r", "DynamicReshape", {"x", "shape"})
      .Op("r0", "DynamicReshape", {"x", "zero_shape"})  // 0 copies: stays
      .Op("u", "DynamicUnsqueeze", {"x", "axes"})
      .Op("sl", "DynamicSlice", {"x", "b", "e", "axes", "st"})
      .Op("m", "DynamicReduceMean", {"x", "axes"})
      .Output("r")
      .Output("r0")
      .Output("u")
      .Output("sl")
      .Output("m");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeShapeSimplificationPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "r"), "Reshape");
  EXPECT_EQ(OpOf(*out.graph, "r0"), "DynamicReshape");
  EXPECT_EQ(OpOf(*out.graph, "u"), "Unsqueeze");
  EXPECT_EQ(OpOf(*out.graph, "sl"), "Slice");
  EXPECT_EQ(OpOf(*out.graph, "m"), "ReduceMean");
  EXPECT_EQ(out.graph->FindNode("m")->output_shape(0), Shape({2, 1, 4}));
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 5));
}

TEST(ShapeSimplificationPipelineTest, TheParameterConstantsAreFreed) {
  // Their values become Reshape's and Unsqueeze's attributes.
  GraphMaker m;
  m.Input("x", {2, 3, 4})
      .ConstInt("shape", {6, -1}, {2})
      .ConstInt("axes", {1}, {1})
      .Op("r", "DynamicReshape", {"x", "shape"})
      .Op("u", "DynamicUnsqueeze", {"r", "axes"})
      .Output("u");
  auto g = m.Build();
  std::weak_ptr<Buffer> shape = ConstBuffer(*g, "shape");
  std::weak_ptr<Buffer> axes = ConstBuffer(*g, "axes");
  ASSERT_FALSE(shape.expired());
  ASSERT_FALSE(axes.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_BASIC, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(OpOf(*opt->graph, "u"), "Unsqueeze");
  EXPECT_TRUE(shape.expired());
  EXPECT_TRUE(axes.expired());
  auto given = m.Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 6));
}

}  // namespace
}  // namespace sluice::optimizer_test::shape_simplification_test
