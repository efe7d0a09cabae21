#include "core/resource_limits.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ResourceLimitsTest, DefaultsAreOneAndTwoGiB) {
  ResourceLimits limits;
  EXPECT_EQ(limits.max_created_tensor_bytes, int64_t{1} << 30);
  EXPECT_EQ(limits.max_import_folded_bytes, int64_t{2} << 30);
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

}  // namespace
}  // namespace sluice
