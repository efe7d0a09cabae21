// The shared setup of the shape and copy ops (kernels/array_params.h),
// called directly or through the CPU kernel: the shapes, strides and
// refusals both devices share, checked without a GPU.
#include "kernels/array_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace sluice::array_params_test {
namespace {

using ::sluice::testing::F32;
using ::sluice::testing::I32;
using ::sluice::testing::I64;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ViewPlanTest, ReshapesAndRefusesAViewOfAnotherSize) {
  ViewAttrs a;
  a.kind = ViewAttrs::Kind::kReshape;
  a.dims = {3, -1};
  absl::StatusOr<Shape> s = PlanView(a, Shape({2, 6}), nullptr);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, Shape({3, 4}));
  a.dims = {5};
  EXPECT_EQ(PlanView(a, Shape({2, 6}), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ViewPlanTest, DynamicReshapeReadsInputOneWithOnnxZeros) {
  ViewAttrs a;
  a.kind = ViewAttrs::Kind::kReshape;
  a.dynamic = true;
  const Tensor shape = I64({0, -1}, Shape({2}));  // 0: keep dim 0
  absl::StatusOr<Shape> s = PlanView(a, Shape({2, 3, 4}), &shape);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, Shape({2, 12}));
}

TEST(TransposePlanTest, ReadsTheInputStridesInPermutedOrder) {
  TransposeAttrs a;
  a.perm = {2, 0, 1};
  absl::StatusOr<CopyPlan> p = PlanTranspose(a, Shape({2, 3, 4}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->out_shape, Shape({4, 2, 3}));
  EXPECT_THAT(p->in_strides, ElementsAre(1, 12, 4));
  a.perm = {};  // reversed
  p = PlanTranspose(a, Shape({2, 3}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->in_strides, ElementsAre(1, 3));
}

TEST(ExpandPlanTest, StretchesOnesWithAZeroStride) {
  absl::StatusOr<CopyPlan> p = PlanExpand(Shape({3, 1}), std::vector<int64_t>{2, 3, 4});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->out_shape, Shape({2, 3, 4}));
  EXPECT_THAT(p->in_strides, ElementsAre(0, 1, 0));
}

TEST(ExpandPlanTest, RefusesADimThatDoesNotBroadcast) {
  absl::StatusOr<CopyPlan> p = PlanExpand(Shape({3}), std::vector<int64_t>{2, 4});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConcatPlanTest, JoinsAlongTheAxisAndRefusesMixedDtypes) {
  // The plan reads only the context's inputs: no node or device needed.
  std::vector<Tensor> inputs = {F32({1, 2, 3, 4}, Shape({2, 2})), F32({5, 6}, Shape({2, 1}))};
  std::vector<Tensor> outputs(1);
  OpKernelContext ctx(nullptr, nullptr, inputs, absl::MakeSpan(outputs));
  absl::StatusOr<ConcatPlan> p = PlanConcat(ConcatAttrs{-1}, ctx);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->axis, 1);
  EXPECT_EQ(p->out_shape, Shape({2, 3}));
  inputs[1] = I32({5, 6}, Shape({2, 1}));
  OpKernelContext mixed(nullptr, nullptr, inputs, absl::MakeSpan(outputs));
  p = PlanConcat(ConcatAttrs{1}, mixed);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("input 1 is int32"));
}

TEST(SplitPlanTest, SplitsBySizesAndRefusesAnotherNumberOfOutputs) {
  const std::vector<Tensor> inputs = {F32({1, 2, 3}, Shape({3}))};
  SplitAttrs a;
  a.num_split = 2;
  a.sizes = {1, 2};
  std::vector<Tensor> two(2);
  OpKernelContext ctx(nullptr, nullptr, inputs, absl::MakeSpan(two));
  absl::StatusOr<SplitPlan> p = PlanSplit(a, ctx);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->out_shapes, ElementsAre(Shape({1}), Shape({2})));
  std::vector<Tensor> one(1);
  OpKernelContext fewer(nullptr, nullptr, inputs, absl::MakeSpan(one));
  p = PlanSplit(a, fewer);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("Split makes 2 outputs but the node has 1"));
}

}  // namespace
}  // namespace sluice::array_params_test
