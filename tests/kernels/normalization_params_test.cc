// The shared setup of Softmax, LayerNorm and RMSNorm
// (kernels/normalization_params.h), called directly: what the CPU and CUDA
// kernels both refuse, with one message, checked without a GPU.
#include "kernels/normalization_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"

namespace sluice::normalization_params_test {
namespace {

using ::sluice::testing::F32;
using ::sluice::testing::IntAttr;
using ::sluice::testing::OneNodeGraph;
using ::sluice::testing::RunOp;
using ::testing::HasSubstr;

// A tensor of `dtype` and `shape` whose values the setup never reads.
Tensor Meta(DataType dtype, const Shape& shape) {
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, shape);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(SoftmaxPlanTest, ViewsTheInputAroundANegativeAxis) {
  absl::StatusOr<SoftmaxPlan> p =
      PlanSoftmax(SoftmaxAttrs{-2}, Shape({2, 3, 4}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->axis, 1);
  EXPECT_EQ(p->outer, 2);
  EXPECT_EQ(p->n, 3);
  EXPECT_EQ(p->inner, 4);
  EXPECT_EQ(p->out_shape, Shape({2, 3, 4}));
}

TEST(SoftmaxPlanTest, RefusesAScalar) {
  absl::StatusOr<SoftmaxPlan> p = PlanSoftmax(SoftmaxAttrs{-1}, Shape({}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("Softmax needs an input of rank >= 1"));
}

TEST(SoftmaxPlanTest, RefusesAnAxisOutsideTheRank) {
  absl::StatusOr<SoftmaxPlan> p = PlanSoftmax(SoftmaxAttrs{2}, Shape({4, 5}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("axis 2"));
}

TEST(SoftmaxPlanTest, TheCpuKernelSaysWhatTheSetupSays) {
  // The CUDA kernel calls the same PlanSoftmax; the CPU kernel's error
  // for a scalar is the setup's, word for word.
  const std::string want =
      std::string(PlanSoftmax(SoftmaxAttrs{0}, Shape({})).status().message());
  auto out = RunOp("Softmax", {F32({1}, {})}, {{"axis", IntAttr(0)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr(want));
}

TEST(SoftmaxPlanTest, ParsingANodeWithoutAxisNamesIt) {
  auto g = OneNodeGraph("Relu", {F32({1}, {1})});
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<SoftmaxAttrs> a = ParseSoftmaxAttrs(*(*g)->FindNode("op"));
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(a.status().message(), HasSubstr("attribute 'axis'"));
}

TEST(NormPlanTest, LayerNormViewsRowsOfTheTrailingDims) {
  absl::StatusOr<NormPlan> p = PlanLayerNorm(
      NormAttrs{-2, 1e-5f}, Meta(DT_FLOAT, {2, 3, 4}),
      Meta(DT_FLOAT, {3, 4}), Meta(DT_FLOAT, {3, 4}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->rows, 2);
  EXPECT_EQ(p->n, 12);
}

TEST(NormPlanTest, LayerNormRefusesAScaleOfTheWrongShape) {
  absl::StatusOr<NormPlan> p = PlanLayerNorm(
      NormAttrs{-1, 0}, Meta(DT_FLOAT, {2, 4}),
      Meta(DT_FLOAT, {3}), Meta(DT_FLOAT, {4}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("LayerNorm scale [3] and bias [4] must have shape "
                        "x.shape[axis:] = [4] (x [2,4], axis -1)"));
}

TEST(NormPlanTest, LayerNormRefusesABiasOfAnotherDtype) {
  absl::StatusOr<NormPlan> p = PlanLayerNorm(
      NormAttrs{-1, 0}, Meta(DT_FLOAT, {2, 4}),
      Meta(DT_FLOAT, {4}), Meta(DT_DOUBLE, {4}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("LayerNorm scale float32 and bias float64 must have "
                        "x's dtype, float32"));
}

TEST(NormPlanTest, RmsNormRefusesAScaleOfTheWrongShapeNamingNoBias) {
  absl::StatusOr<NormPlan> p =
      PlanRmsNorm(NormAttrs{1, 0}, Meta(DT_FLOAT, {2, 4}),
                     Meta(DT_FLOAT, {2, 4}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("RMSNorm scale [2,4] must have shape x.shape[axis:] "
                        "= [4]"));
  EXPECT_THAT(p.status().message(), ::testing::Not(HasSubstr("bias")));
}

TEST(NormPlanTest, RefusesAScalarInput) {
  absl::StatusOr<NormPlan> p =
      PlanRmsNorm(NormAttrs{-1, 0}, Meta(DT_FLOAT, {}),
                     Meta(DT_FLOAT, {}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("RMSNorm needs an input of rank >= 1"));
}

}  // namespace
}  // namespace sluice::normalization_params_test
