// Tests for dtype names, sizes and parsing.
#include "core/dtype.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DataTypeSize(DT_FLOAT), 4u);
  EXPECT_EQ(DataTypeSize(DT_BFLOAT16), 2u);
  EXPECT_EQ(DataTypeSize(DT_INT64), 8u);
  EXPECT_EQ(DataTypeSize(DT_BOOL), 1u);
  EXPECT_EQ(DataTypeSize(DT_INVALID), 0u);
  EXPECT_EQ(DataTypeName(DT_DOUBLE), "float64");
  EXPECT_EQ(DataTypeName(DT_INVALID), "invalid");
}

TEST(DTypeTest, ParsesNamesAliasesAndEnumSpellings) {
  for (DataType t : AllDataTypes()) {
    EXPECT_EQ(*ParseDataType(DataTypeName(t)), t);
  }
  EXPECT_EQ(*ParseDataType("float"), DT_FLOAT);
  EXPECT_EQ(*ParseDataType("half"), DT_FLOAT16);
  EXPECT_EQ(*ParseDataType("DT_INT32"), DT_INT32);
  absl::Status s = ParseDataType("complex64").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("unknown dtype 'complex64'"));
}

TEST(DTypeTest, Categories) {
  EXPECT_TRUE(IsFloatingPoint(DT_BFLOAT16));
  EXPECT_FALSE(IsFloatingPoint(DT_INT8));
  EXPECT_TRUE(IsInteger(DT_UINT8));
  EXPECT_FALSE(IsInteger(DT_BOOL));
  EXPECT_EQ(AllDataTypes().size(), 9u);
  EXPECT_EQ(CppToDataType<half>(), DT_FLOAT16);
}

}  // namespace
}  // namespace sluice
