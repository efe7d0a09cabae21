// TreeEnsemble on the CPU (kernels/cpu/tree_ensemble.cc): a two-tree
// ensemble worked out by hand for each aggregate, set membership and NaN
// routing, and the attribute checks made when the kernel is created.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/attr_map.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::tree_ensemble_test {
namespace {

using ::testing::HasSubstr;

// Tree 0: node 0 (x0 <= 0.5, NaN goes true) -> leaf 0 : node 1.
//         node 1 (x1 in {2, 3}) -> leaf 1 : leaf 2.
// Tree 1: node 2 (x0 > 1) -> leaf 3 : leaf 4.
// Leaves: 0 {t0: 1}, 1 {t1: 2}, 2 {t0: 5, t1: -1}, 3 {t0: 10}, 4 {t1: 4}.
Attrs TwoTrees(const std::string& aggregate) {
  return {{"n_targets", IntAttr(2)},
          {"aggregate", StringAttr(aggregate)},
          {"base_values", MakeFloatListAttr({0.5f, -0.5f})},
          {"tree_roots", IntListAttr({0, 2})},
          {"node_features", IntListAttr({0, 1, 0})},
          {"node_thresholds", MakeFloatListAttr({0.5f, 0, 1})},
          {"node_modes", MakeStringListAttr({"LEQ", "MEMBER", "GT"})},
          {"node_true", IntListAttr({-1, -2, -4})},
          {"node_false", IntListAttr({1, -3, -5})},
          {"node_missing_true", IntListAttr({1, 0, 0})},
          {"member_begin", IntListAttr({0, 0, 2, 2})},
          {"member_values", MakeFloatListAttr({2, 3})},
          {"leaf_begin", IntListAttr({0, 1, 2, 4, 5, 6})},
          {"leaf_targets", IntListAttr({0, 1, 0, 1, 0, 1})},
          {"leaf_weights", MakeFloatListAttr({1, 2, 5, -1, 10, 4})}};
}

// Rows: [0, 7] -> leaves 0, 4; [2, 3] -> leaves 1, 3; [0.7, 9] -> leaves
// 2, 4; [NaN, 2] -> leaves 0, 4 (NaN takes node 0's true branch; NaN > 1
// is false).
Tensor Rows() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return F32({0, 7, 2, 3, 0.7f, 9, nan, 2}, {4, 2});
}

TEST(TreeEnsembleKernelTest, SumsEachTargetOverTheTreesPlusBase) {
  auto y = RunOp("TreeEnsemble", {Rows()}, TwoTrees("SUM"));
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensor((*y)[0], {4, 2}, {1.5, 3.5, 10.5, 1.5, 5.5, 2.5, 1.5, 3.5});
}

TEST(TreeEnsembleKernelTest, AverageDividesByTheTreeCount) {
  auto y = RunOp("TreeEnsemble", {Rows()}, TwoTrees("AVERAGE"));
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensor((*y)[0], {4, 2}, {1.0, 1.5, 5.5, 0.5, 3.0, 1.0, 1.0, 1.5}, 1e-6);
}

TEST(TreeEnsembleKernelTest, MinAndMaxTakeTheLeavesThatReachATarget) {
  auto lo = RunOp("TreeEnsemble", {Rows()}, TwoTrees("MIN"));
  ASSERT_TRUE(lo.ok()) << lo.status();
  // Row 2 reaches t1 with -1 (tree 0) and 4 (tree 1).
  ExpectTensor((*lo)[0], {4, 2}, {1.5, 3.5, 10.5, 1.5, 5.5, -1.5, 1.5, 3.5});
  auto hi = RunOp("TreeEnsemble", {Rows()}, TwoTrees("MAX"));
  ASSERT_TRUE(hi.ok()) << hi.status();
  ExpectTensor((*hi)[0], {4, 2}, {1.5, 3.5, 10.5, 1.5, 5.5, 3.5, 1.5, 3.5});
}

TEST(TreeEnsembleKernelTest, DoubleInputGivesDoubleScores) {
  auto y = RunOp("TreeEnsemble", {MakeTensor(DT_DOUBLE, {1, 2}, {2, 3})},
                 TwoTrees("SUM"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dtype(), DT_DOUBLE);
  ExpectTensor((*y)[0], {1, 2}, {10.5, 1.5});
}

TEST(TreeEnsembleKernelTest, RefusesATreeThatLoops) {
  Attrs a = TwoTrees("SUM");
  a["node_false"] = IntListAttr({1, 0, -5});  // node 1 back to node 0
  auto y = RunOp("TreeEnsemble", {Rows()}, a);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(),
              HasSubstr("tree 0 reaches node 0 twice: a tree cannot loop"));
}

TEST(TreeEnsembleKernelTest, RefusesAChildThatIsNeitherNodeNorLeaf) {
  Attrs a = TwoTrees("SUM");
  a["node_true"] = IntListAttr({-1, -9, -4});
  auto y = RunOp("TreeEnsemble", {Rows()}, a);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(),
              HasSubstr("node_true -9 names neither one of the 3 nodes nor "
                        "one of the 5 leaves"));
}

TEST(TreeEnsembleKernelTest, RefusesAnInputWithTooFewFeatures) {
  auto y = RunOp("TreeEnsemble", {F32({1, 2}, {2, 1})}, TwoTrees("SUM"));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(),
              HasSubstr("reads feature 1 of an input with 1"));
}

TEST(TreeEnsembleKernelTest, RefusesAnUnknownAggregate) {
  auto y = RunOp("TreeEnsemble", {Rows()}, TwoTrees("MEDIAN"));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(),
              HasSubstr("aggregate 'MEDIAN' is not SUM, AVERAGE, MIN or MAX"));
}

}  // namespace
}  // namespace sluice::testing::tree_ensemble_test
