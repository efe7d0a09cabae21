#include "core/resource_limits.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::resource_limits_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ResourceLimitsTest, Defaults) {
  ResourceLimits limits;
  EXPECT_EQ(limits.max_created_tensor_bytes, int64_t{1} << 30);
  EXPECT_EQ(limits.max_folded_constant_bytes, int64_t{16} << 20);
  EXPECT_EQ(limits.max_folded_bytes, int64_t{2} << 30);
}

TEST(ResourceLimitsTest, ATensorUpToTheLimitIsAllowed) {
  ResourceLimits limits;
  limits.max_created_tensor_bytes = 400;
  EXPECT_TRUE(CheckCreatedTensor(limits, "x", DT_FLOAT, Shape({10, 10})).ok());
  EXPECT_TRUE(CheckCreatedTensor(limits, "x", DT_INT8, Shape({400})).ok());
  EXPECT_TRUE(CheckCreatedTensor(limits, "x", DT_FLOAT, Shape({0, 7})).ok());
}

TEST(ResourceLimitsTest, ATensorOverTheLimitNamesItAndTheConfigField) {
  absl::Status s = CheckCreatedTensor(ResourceLimits(), "random input 'x'",
                                      DT_FLOAT, Shape({1000000000}));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("random input 'x': float32[1000000000] is 3.7 GiB"),
                    HasSubstr("limit of 1.0 GiB"),
                    HasSubstr("resource_limits.max_created_tensor_bytes")));
}

TEST(ResourceLimitsTest, ByteCountsThatOverflowAreInvalid) {
  // 2^62 elements is past what a Shape counts (2^48).
  absl::Status s = CheckCreatedTensor(ResourceLimits(), "x", DT_DOUBLE,
                                      Shape({int64_t{1} << 31, int64_t{1} << 31}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = CheckCreatedTensor(ResourceLimits(), "x", DT_FLOAT, Shape({-1, 3}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST(FoldBudgetTest, CapsEachConstantUnlessItsInputsWereAsLarge) {
  ResourceLimits limits;
  limits.max_folded_constant_bytes = 100;
  FoldBudget budget(limits);
  EXPECT_TRUE(budget.Take(100, 100, 0));
  EXPECT_FALSE(budget.Take(101, 101, 0));
  EXPECT_TRUE(budget.Take(400, 400, 400));  // a Transpose of a weight
  EXPECT_FALSE(budget.Take(DT_FLOAT, Shape({26}), 0));   // 104 bytes
  EXPECT_TRUE(budget.Take(DT_FLOAT, Shape({25}), 0));
  EXPECT_FALSE(budget.Take(DT_FLOAT, Shape({-1, 2}), 0));  // unknown
  EXPECT_FALSE(budget.Take(-1, -1, 0));
}

TEST(FoldBudgetTest, ChargesTheTotalUntilItIsSpent) {
  ResourceLimits limits;
  limits.max_folded_constant_bytes = 100;
  limits.max_folded_bytes = 250;
  FoldBudget budget(limits);
  EXPECT_TRUE(budget.Take(100, 100, 0));
  EXPECT_TRUE(budget.Take(100, 100, 0));
  EXPECT_EQ(budget.bytes_left(), 50);
  EXPECT_FALSE(budget.Fits(100, 100, 0));
  EXPECT_FALSE(budget.Take(100, 100, 0));  // nothing charged
  EXPECT_EQ(budget.bytes_left(), 50);
  EXPECT_TRUE(budget.Take(50, 50, 0));
  EXPECT_EQ(budget.bytes_left(), 0);
}

TEST(ResourceLimitsTest, EffectiveLimitsReadTheConfigAndItsDeprecatedFields) {
  RuntimeConfig config;
  ResourceLimits limits = EffectiveResourceLimits(config);
  EXPECT_EQ(limits.max_folded_constant_bytes, ResourceLimits().max_folded_constant_bytes);
  EXPECT_EQ(limits.max_folded_bytes, ResourceLimits().max_folded_bytes);
  // The fields that moved are read where they went.
  config.set_max_folded_constant_bytes(1000);
  config.mutable_resource_limits()->set_max_import_folded_bytes(5000);
  limits = EffectiveResourceLimits(config);
  EXPECT_EQ(limits.max_folded_constant_bytes, 1000);
  EXPECT_EQ(limits.max_folded_bytes, 5000);
  // The new fields win.
  config.mutable_resource_limits()->set_max_folded_constant_bytes(2000);
  config.mutable_resource_limits()->set_max_folded_bytes(6000);
  config.mutable_resource_limits()->set_max_created_tensor_bytes(7000);
  limits = EffectiveResourceLimits(config);
  EXPECT_EQ(limits.max_folded_constant_bytes, 2000);
  EXPECT_EQ(limits.max_folded_bytes, 6000);
  EXPECT_EQ(limits.max_created_tensor_bytes, 7000);
}

}  // namespace
}  // namespace sluice::resource_limits_test
