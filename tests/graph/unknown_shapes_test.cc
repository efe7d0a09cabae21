// Shape inference on graphs whose shapes depend on their data (issue 31):
// it ends in unknown dims and unknown ranks without refusing the graph,
// keeps every dim it can still know, and still reports, naming the node,
// what is wrong whatever the unknown dims turn out to be.
#include <string>

#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace sluice::unknown_shapes_test {
namespace {

using ::testing::HasSubstr;
using testing_util::InferOne;
using testing_util::ParseGraphDef;

// x [?, 8] -> NonZero -> [2, K]; Gather of x's rows by the second row of
// indices -> [K, 8]; TopK with k fed at run time -> [K, k]; DynamicReshape
// to a fed shape -> unknown rank; Relu and Add keep it unknown; Unique ->
// [U].
constexpr char kChain[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: -1 dim: 8 } } } }
  node { name: "k" op: "Input"
         attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim: 1 } } } }
  node { name: "to" op: "Input"
         attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim: -1 } } } }
  node { name: "nz" op: "NonZero" input: "x" }
  node { name: "rows" op: "Slice" input: "nz"
         attr { key: "begin" value { list { i: 0 i: 0 } } }
         attr { key: "end" value { list { i: 1 i: 4611686018427387904 } } } }
  node { name: "flat_rows" op: "Reshape" input: "rows"
         attr { key: "shape" value { list { i: -1 } } } }
  node { name: "picked" op: "Gather" input: "x" input: "flat_rows" }
  node { name: "top" op: "TopK" input: "picked" input: "k" }
  node { name: "any" op: "DynamicReshape" input: "picked" input: "to" }
  node { name: "relu" op: "Relu" input: "any" }
  node { name: "sum" op: "Add" input: "relu" input: "relu" }
  node { name: "uniq" op: "Unique" input: "picked" }
)pb";

TEST(UnknownShapesTest, DataDependentChainEndsInUnknownDimsWithoutRefusing) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(kChain));
  ASSERT_TRUE(g.ok()) << g.status();
  auto shape = [&](const char* name, int port = 0) {
    return (*g)->FindNode(name)->output_shape(port);
  };
  EXPECT_EQ(shape("nz"), Shape({2, kUnknownDim}));
  EXPECT_EQ(shape("picked"), Shape({kUnknownDim, 8}));
  // The known dim survives; k is known only at run time.
  EXPECT_EQ(shape("top"), Shape({kUnknownDim, kUnknownDim}));
  EXPECT_EQ(shape("top", 1), Shape({kUnknownDim, kUnknownDim}));
  EXPECT_TRUE(shape("any").unknown_rank());
  EXPECT_TRUE(shape("relu").unknown_rank());
  EXPECT_TRUE(shape("sum").unknown_rank());
  EXPECT_EQ(shape("uniq"), Shape({kUnknownDim}));
  EXPECT_EQ(shape("uniq", 2), Shape({kUnknownDim}));  // one per element
}

TEST(UnknownShapesTest, ElementwiseOfUnknownRankAndKnownShapeStaysUnknown) {
  absl::StatusOr<Shape> s =
      InferOne("Add", {{DT_FLOAT, Shape::UnknownRank()},
                       {DT_FLOAT, Shape({3, 4})}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->unknown_rank()) << s->DebugString();
}

TEST(UnknownShapesTest, CertainErrorIsStillReportedNamingTheNode) {
  // Whatever the batch, inner dims 4 and 5 cannot multiply.
  absl::StatusOr<Shape> s =
      InferOne("MatMul", {{DT_FLOAT, Shape({kUnknownDim, 4})},
                          {DT_FLOAT, Shape({5, 3})}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("'op' (MatMul)"));
  // A known rank other than RoiAlign's is refused, its dims unknown.
  const Shape unknown2({kUnknownDim, kUnknownDim});
  absl::StatusOr<Shape> r =
      InferOne("RoiAlign", {{DT_FLOAT, unknown2},
                            {DT_FLOAT, Shape({kUnknownDim, 4})},
                            {DT_INT64, Shape({kUnknownDim})}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("'op' (RoiAlign)"));
  EXPECT_THAT(r.status().message(), HasSubstr("[N,C,H,W]"));
  // Scalar rois (once read past their rank) and disagreeing box counts.
  const Shape x4({kUnknownDim, 3, kUnknownDim, kUnknownDim});
  r = InferOne("RoiAlign", {{DT_FLOAT, x4}, {DT_FLOAT, Shape({})},
                            {DT_INT64, Shape({kUnknownDim})}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("rois [R,4]"));
  r = InferOne("RoiAlign", {{DT_FLOAT, x4}, {DT_FLOAT, Shape({5, 4})},
                            {DT_INT64, Shape({6})}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("5 rois but 6 batch_indices"));
}

TEST(UnknownShapesTest, RoiAlignTakesTheBoxCountFromWhicheverInputKnowsIt) {
  const Shape x4({kUnknownDim, 3, kUnknownDim, kUnknownDim});
  absl::StatusOr<Shape> r =
      InferOne("RoiAlign", {{DT_FLOAT, x4},
                            {DT_FLOAT, Shape({kUnknownDim, 4})},
                            {DT_INT64, Shape({7})}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, Shape({7, 3, 1, 1}));
  r = InferOne("RoiAlign", {{DT_FLOAT, Shape::UnknownRank()},
                            {DT_FLOAT, Shape::UnknownRank()},
                            {DT_INT64, Shape({kUnknownDim})}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, Shape({kUnknownDim, kUnknownDim, 1, 1}));
}

}  // namespace
}  // namespace sluice::unknown_shapes_test
