// Tests for dtype names, sizes and parsing.
#include "core/dtype.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::dtype_test {
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
  EXPECT_EQ(AllDataTypes().size(), 23u);
  EXPECT_EQ(CppToDataType<half>(), DT_FLOAT16);
  EXPECT_TRUE(IsFloatingPoint(DT_FLOAT8_E5M2));
  EXPECT_TRUE(IsSmallFloat(DT_FLOAT4_E2M1));
  EXPECT_FALSE(IsSmallFloat(DT_FLOAT16));
  EXPECT_TRUE(IsInteger(DT_UINT64));
  EXPECT_TRUE(IsSignedInteger(DT_INT4));
  EXPECT_FALSE(IsSignedInteger(DT_UINT2));
  EXPECT_TRUE(IsSubByte(DT_UINT4));
  EXPECT_FALSE(IsSubByte(DT_FLOAT8_E4M3FN));
  EXPECT_EQ(CppToDataType<uint16_t>(), DT_UINT16);
  EXPECT_EQ(CppToDataType<float8_e4m3fn>(), DT_FLOAT8_E4M3FN);
  EXPECT_EQ(CppToDataType<int4>(), DT_INT4);
}

TEST(DTypeTest, NewTypesSizesBitsAndNames) {
  EXPECT_EQ(DataTypeSize(DT_INT16), 2u);
  EXPECT_EQ(DataTypeSize(DT_UINT16), 2u);
  EXPECT_EQ(DataTypeSize(DT_UINT32), 4u);
  EXPECT_EQ(DataTypeSize(DT_UINT64), 8u);
  EXPECT_EQ(DataTypeSize(DT_FLOAT8_E8M0), 1u);
  // Sub-byte types take a byte each in memory.
  EXPECT_EQ(DataTypeSize(DT_INT4), 1u);
  EXPECT_EQ(DataTypeSize(DT_UINT2), 1u);
  EXPECT_EQ(DataTypeBits(DT_INT4), 4);
  EXPECT_EQ(DataTypeBits(DT_FLOAT4_E2M1), 4);
  EXPECT_EQ(DataTypeBits(DT_INT2), 2);
  EXPECT_EQ(DataTypeBits(DT_UINT16), 16);
  EXPECT_EQ(DataTypeName(DT_FLOAT8_E4M3FNUZ), "float8_e4m3fnuz");
  EXPECT_EQ(DataTypeName(DT_FLOAT8_E8M0), "float8_e8m0fnu");
  EXPECT_EQ(DataTypeName(DT_UINT32), "uint32");
  // ONNX's and the enum's spellings.
  EXPECT_EQ(*ParseDataType("FLOAT8E4M3FN"), DT_FLOAT8_E4M3FN);
  EXPECT_EQ(*ParseDataType("DT_FLOAT8_E5M2FNUZ"), DT_FLOAT8_E5M2FNUZ);
  EXPECT_EQ(*ParseDataType("float8e8m0"), DT_FLOAT8_E8M0);
  EXPECT_EQ(*ParseDataType("FLOAT4E2M1"), DT_FLOAT4_E2M1);
  EXPECT_EQ(*ParseDataType("DT_UINT4"), DT_UINT4);
  EXPECT_FALSE(ParseDataType("float6e2m3").ok());
}

}  // namespace
}  // namespace sluice::dtype_test
