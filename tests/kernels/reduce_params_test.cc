// The shared setup of the reductions (kernels/reduce_params.h), called
// directly: the reduced dims, the output's shape and the refusals both
// devices share, checked without a GPU.
#include "kernels/reduce_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace sluice::reduce_params_test {
namespace {

using ::sluice::testing::F32;
using ::sluice::testing::I32;
using ::sluice::testing::I64;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A float32 tensor of `shape` whose values the plan never reads.
Tensor Zeros(const Shape& shape) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(DT_FLOAT, shape);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(ReducePlanTest, ReducesTheAxesKeepingDimsOfOne) {
  ReduceAttrs a;
  a.axes = {-1};
  a.keepdims = true;
  absl::StatusOr<ReducePlanning> p = PlanReduce(a, Zeros(Shape({2, 3})), nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->reduced, ElementsAre(false, true));
  EXPECT_EQ(p->out_shape, Shape({2, 1}));
  EXPECT_FALSE(p->pass_through);
}

TEST(ReducePlanTest, RefusesAnAxisListedTwice) {
  ReduceAttrs a;
  a.axes = {0, -2};
  absl::StatusOr<ReducePlanning> p = PlanReduce(a, Zeros(Shape({2, 3})), nullptr);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("twice"));
}

TEST(ReducePlanTest, DynamicEmptyAxesPassTheInputThroughWhenAsked) {
  ReduceAttrs a;
  a.dynamic = true;
  a.noop_with_empty_axes = true;
  const Tensor axes = I64({}, Shape({0}));
  absl::StatusOr<ReducePlanning> p = PlanReduce(a, Zeros(Shape({2, 3})), &axes);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->pass_through);
  a.noop_with_empty_axes = false;  // empty axes: every axis
  p = PlanReduce(a, Zeros(Shape({2, 3})), &axes);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->reduced, ElementsAre(true, true));
  EXPECT_EQ(p->out_shape, Shape({}));
}

TEST(ReducePlanTest, RefusesAnIntegerMeanOfNothing) {
  ReduceAttrs a;
  a.mean = true;
  a.axes = {1};
  absl::StatusOr<ReducePlanning> p = PlanReduce(a, I32({}, Shape({2, 0})), nullptr);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("integer ReduceMean over an empty axis"));
  // A float mean of nothing is NaN, not an error.
  EXPECT_TRUE(PlanReduce(a, F32({}, Shape({2, 0})), nullptr).ok());
}

}  // namespace
}  // namespace sluice::reduce_params_test
