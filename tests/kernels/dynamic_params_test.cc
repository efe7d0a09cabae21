// The shared setup of Shape, Fill and Range (kernels/dynamic_params.h),
// called directly: what the CPU and CUDA kernels both refuse, with one
// message, checked without a GPU.
#include "kernels/dynamic_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace sluice::dynamic_params_test {
namespace {

using ::sluice::testing::F32;
using ::sluice::testing::I32;
using ::sluice::testing::I64;
using ::sluice::testing::RunOp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ShapePlanTest, ClampsStartAndEndLikeOnnx) {
  ShapeAttrs a;
  a.start = -2;
  a.end = 100;
  const ShapePlan p = PlanShape(a, Shape({2, 3, 4}));
  EXPECT_THAT(p.dims, ElementsAre(3, 4));
  EXPECT_EQ(p.out_shape, Shape({2}));
}

TEST(FillPlanTest, RefusesANegativeDimension) {
  auto s = PlanFill(I64({2, -1}, {2}));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("shape has a negative dimension -1"));
}

TEST(RangePlanTest, CountsTheValues) {
  RangeAttrs a{DT_INT32};
  auto p = PlanRange(a, I32({1}, {}), I32({10}, {}), I32({3}, {}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->n, 3);
  EXPECT_EQ(p->istart, 1);
  EXPECT_EQ(p->idelta, 3);
  EXPECT_EQ(p->out_shape, Shape({3}));
}

TEST(RangePlanTest, RefusesALimitOfAnotherDtypeNamingIt) {
  RangeAttrs a{DT_FLOAT};
  auto p = PlanRange(a, F32({0}, {}), I32({4}, {}), F32({1}, {}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("start, limit and delta must be float32 scalars; "
                        "input 1 is int32[]"));
}

TEST(RangePlanTest, RefusesANonScalar) {
  RangeAttrs a{DT_FLOAT};
  auto p = PlanRange(a, F32({0, 1}, {2}), F32({4}, {}), F32({1}, {}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("input 0 is float32[2]"));
}

TEST(RangePlanTest, RefusesAZeroDelta) {
  RangeAttrs a{DT_INT64};
  auto p = PlanRange(a, I64({0}, {}), I64({4}, {}), I64({0}, {}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("delta is 0"));
}

TEST(RangePlanTest, TheCpuKernelSaysWhatTheSetupSays) {
  RangeAttrs a{DT_FLOAT};
  const Tensor start = F32({0, 1}, {2}), limit = F32({4}, {}), delta = F32({1}, {});
  const std::string want(PlanRange(a, start, limit, delta).status().message());
  ASSERT_FALSE(want.empty());
  auto out = RunOp("Range", {start, limit, delta});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr(want));
}

}  // namespace
}  // namespace sluice::dynamic_params_test
