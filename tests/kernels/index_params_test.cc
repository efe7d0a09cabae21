// The shared setup of ArgMax/ArgMin, CumSum/CumProd and Trilu
// (kernels/index_params.h), called directly: what the CPU and CUDA kernels
// both refuse, with one message, checked without a GPU.
#include "kernels/index_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace sluice::index_params_test {
namespace {

using ::sluice::testing::F32;
using ::sluice::testing::I32;
using ::sluice::testing::I64;
using ::sluice::testing::RunOp;
using ::testing::HasSubstr;

TEST(ArgReducePlanTest, ViewsTheAxisAndDropsItWithoutKeepdims) {
  ArgReduceAttrs a;
  a.axis = -2;
  a.keepdims = false;
  auto p = PlanArgReduce(a, Shape({2, 3, 4}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->axis, 1);
  EXPECT_EQ(p->view.outer, 2);
  EXPECT_EQ(p->view.n, 3);
  EXPECT_EQ(p->view.inner, 4);
  EXPECT_EQ(p->out_shape, Shape({2, 4}));
}

TEST(ArgReducePlanTest, RefusesAnEmptyAxis) {
  ArgReduceAttrs a;
  a.axis = 1;
  auto p = PlanArgReduce(a, Shape({2, 0}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("over an empty dimension (axis 1 of [2,0])"));
}

TEST(ArgReducePlanTest, RefusesAnAxisOutsideTheRank) {
  ArgReduceAttrs a;
  a.axis = 3;
  auto p = PlanArgReduce(a, Shape({2, 3}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("axis 3"));
}

TEST(CumulativePlanTest, ReadsTheAxisFromTheHostInput) {
  CumulativeAttrs a;
  auto p = PlanCumulative(a, Shape({2, 3}), I32({-1}, {}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->axis, 1);
  EXPECT_EQ(p->view.outer, 2);
  EXPECT_EQ(p->view.n, 3);
  EXPECT_EQ(p->out_shape, Shape({2, 3}));
}

TEST(CumulativePlanTest, RefusesAnAxisOfTwoValuesNamingTheOp) {
  CumulativeAttrs a;
  a.prod = true;
  auto p = PlanCumulative(a, Shape({2, 3}), I64({0, 1}, {2}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("CumProd's axis must hold one value, got shape [2]"));
}

TEST(CumulativePlanTest, RefusesAFloatAxis) {
  CumulativeAttrs a;
  auto p = PlanCumulative(a, Shape({2, 3}), F32({0}, {}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("CumSum's axis must be an integer"));
}

TEST(TriluPlanTest, ReadsKAndTheInnermostMatrix) {
  auto p = PlanTrilu(Shape({5, 2, 3}), I64({-1}, {1}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->k, -1);
  EXPECT_EQ(p->rows, 2);
  EXPECT_EQ(p->cols, 3);
}

TEST(TriluPlanTest, RefusesAVector) {
  auto p = PlanTrilu(Shape({4}), I64({0}, {}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("Trilu needs rank >= 2, got [4]"));
}

TEST(TriluPlanTest, TheCpuKernelSaysWhatTheSetupSays) {
  const std::string want(
      PlanTrilu(Shape({4}), I64({0}, {})).status().message());
  auto out = RunOp("Trilu", {F32({1, 2, 3, 4}, {4}), I64({0}, {})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr(want));
}

}  // namespace
}  // namespace sluice::index_params_test
