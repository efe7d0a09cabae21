// The shared setup of GatherElements, ScatterElements, GatherND and
// ScatterND (kernels/scatter_gather_params.h), called directly: the offsets
// both devices move data by, and what both refuse with one message,
// checked without a GPU.
#include "kernels/scatter_gather_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace sluice::scatter_gather_params_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::F32;
using ::sluice::testing::I32;
using ::sluice::testing::I64;
using ::sluice::testing::IntAttr;
using ::sluice::testing::OneNodeGraph;
using ::sluice::testing::RunOp;
using ::sluice::testing::StringAttr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The attributes of a one-node graph of `op` over `inputs`.
absl::StatusOr<ScatterGatherAttrs> Parse(const std::string& op,
                                         const std::vector<Tensor>& inputs,
                                         const Attrs& attrs = {}) {
  auto g = OneNodeGraph(op, inputs, attrs);
  if (!g.ok()) return g.status();
  return ParseScatterGatherAttrs(*(*g)->FindNode("op"));
}

const Tensor kData = F32({0, 1, 2, 3, 4, 5}, {2, 3});

TEST(ScatterGatherPlanTest, ParsesWhichOpItIsFromTheNode) {
  auto a = Parse("ScatterND", {kData, I64({1}, {1, 1}), F32({0, 0, 0}, {1, 3})},
                 {{"reduction", StringAttr("max")}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->nd);
  EXPECT_TRUE(a->scatter);
  EXPECT_EQ(a->reduction, ScatterReduction::kMax);
  a = Parse("GatherElements", {kData, I64({0}, {1, 1})}, {{"axis", IntAttr(1)}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->nd);
  EXPECT_FALSE(a->scatter);
  EXPECT_EQ(a->axis, 1);
}

TEST(ScatterGatherPlanTest, GatherElementsOffsetsFollowTheAxis) {
  ScatterGatherAttrs a;
  a.axis = 1;
  auto p = PlanScatterGather(a, kData, I32({2, -3, 1, 1}, {2, 2}), nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->offsets, ElementsAre(2, 0, 4, 4));
  EXPECT_EQ(p->slice, 1);
  EXPECT_EQ(p->out_shape, Shape({2, 2}));
}

TEST(ScatterGatherPlanTest, GatherNdOffsetsAddressRows) {
  ScatterGatherAttrs a;
  a.nd = true;
  auto p = PlanScatterGather(a, kData, I64({1, 0, -1}, {3, 1}), nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->offsets, ElementsAre(3, 0, 3));
  EXPECT_EQ(p->slice, 3);
  EXPECT_EQ(p->out_shape, Shape({3, 3}));
}

TEST(ScatterGatherPlanTest, AScatterOutputsDataShape) {
  ScatterGatherAttrs a;
  a.nd = true;
  a.scatter = true;
  const Tensor updates = F32({7, 8, 9}, {1, 3});
  auto p = PlanScatterGather(a, kData, I64({1}, {1, 1}), &updates);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->out_shape, Shape({2, 3}));
}

TEST(ScatterGatherPlanTest, RefusesAnIndexOutOfRange) {
  ScatterGatherAttrs a;
  a.axis = 0;
  auto p = PlanScatterGather(a, kData, I64({0, 2}, {2, 1}), nullptr);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("index 2 is out of range for axis 0 of size 2"));
}

TEST(ScatterGatherPlanTest, RefusesIndicesOfAnotherRank) {
  ScatterGatherAttrs a;
  auto p = PlanScatterGather(a, kData, I64({0}, {1}), nullptr);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("data [2,3] and indices [1] must have the same rank"));
}

TEST(ScatterGatherPlanTest, RefusesFloatIndices) {
  ScatterGatherAttrs a;
  auto p = PlanScatterGather(a, kData, F32({0}, {1, 1}), nullptr);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("indices must be int32 or int64, got float32"));
}

TEST(ScatterGatherPlanTest, RefusesABatchDimsBeyondTheIndices) {
  ScatterGatherAttrs a;
  a.nd = true;
  a.batch_dims = 2;
  auto p = PlanScatterGather(a, kData, I64({0}, {1, 1}), nullptr);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("batch_dims 2 must be in [0, rank)"));
}

TEST(ScatterGatherPlanTest, RefusesUpdatesThatDoNotMatchTheSlices) {
  ScatterGatherAttrs a;
  a.nd = true;
  a.scatter = true;
  const Tensor updates = F32({7, 8}, {1, 2});
  auto p = PlanScatterGather(a, kData, I64({1}, {1, 1}), &updates);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("updates [1,2] do not match the 1 slices of 3 elements"));
}

TEST(ScatterGatherPlanTest, RefusesUpdatesOfAnotherDtype) {
  ScatterGatherAttrs a;
  a.scatter = true;
  const Tensor updates = I64({7}, {1, 1});
  auto p = PlanScatterGather(a, kData, I64({1}, {1, 1}), &updates);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("updates are int64 but data is float32"));
}

TEST(ScatterGatherPlanTest, RefusesAnUnknownReductionAtParsing) {
  auto a = Parse("ScatterElements",
                 {kData, I64({1}, {1, 1}), F32({0}, {1, 1})},
                 {{"reduction", StringAttr("mean")}});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(a.status().message(),
              HasSubstr("reduction must be none, add, mul, max or min, got mean"));
}

TEST(ScatterGatherPlanTest, TheCpuKernelSaysWhatTheSetupSays) {
  ScatterGatherAttrs a;
  a.scatter = true;
  const Tensor updates = F32({7, 8}, {1, 2});
  const Tensor indices = I64({1}, {1, 1});
  const std::string want(
      PlanScatterGather(a, kData, indices, &updates).status().message());
  ASSERT_FALSE(want.empty());
  auto out = RunOp("ScatterElements", {kData, indices, updates},
                   {{"axis", IntAttr(0)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr(want));
}

}  // namespace
}  // namespace sluice::scatter_gather_params_test
