// BitShift, BitwiseAnd/Or/Xor/Not and BitCast (kernels/cpu/bitwise.cc):
// values worked out by hand.
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::bitwise_test {
namespace {

using ::testing::HasSubstr;

TEST(BitwiseKernelTest, ShiftsOutEveryBitForWideOrNegativeAmounts) {
  for (DataType t : {DT_INT8, DT_INT32, DT_INT64}) {
    const double width = DataTypeSize(t) * 8;
    auto left = RunOp("BitShift",
                      {MakeTensor(t, {4}, {1, -8, 3, 5}),
                       MakeTensor(t, {4}, {3, 1, width, -1})},
                      {{"direction", StringAttr("LEFT")}});
    ASSERT_TRUE(left.ok()) << DataTypeName(t) << ": " << left.status();
    ExpectTensor((*left)[0], {4}, {8, -16, 0, 0});
    // Right shifts of negative values are arithmetic; shifted out: -1.
    auto right = RunOp("BitShift",
                       {MakeTensor(t, {4}, {16, -8, -1, 7}),
                        MakeTensor(t, {4}, {2, 1, width + 3, -2})},
                       {{"direction", StringAttr("RIGHT")}});
    ASSERT_TRUE(right.ok()) << right.status();
    ExpectTensor((*right)[0], {4}, {4, -4, -1, 0});
  }
}

TEST(BitwiseKernelTest, LeftShiftOverflowWraps) {
  auto out = RunOp("BitShift",
                   {MakeTensor(DT_INT8, {2}, {64, 1}),
                    MakeTensor(DT_INT8, {2}, {1, 7})},
                   {{"direction", StringAttr("LEFT")}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2}, {-128, -128});
  auto u8 = RunOp("BitShift",
                  {MakeTensor(DT_UINT8, {2}, {255, 16}),
                   MakeTensor(DT_UINT8, {1}, {4})},
                  {{"direction", StringAttr("RIGHT")}});
  ASSERT_TRUE(u8.ok()) << u8.status();
  ExpectTensor((*u8)[0], {2}, {15, 1});
}

TEST(BitwiseKernelTest, AndOrXorBroadcastAndNot) {
  const Tensor x = MakeTensor(DT_INT32, {2, 2}, {12, 10, -1, 0});
  const Tensor y = MakeTensor(DT_INT32, {2}, {6, 3});
  auto a = RunOp("BitwiseAnd", {x, y});
  auto o = RunOp("BitwiseOr", {x, y});
  auto e = RunOp("BitwiseXor", {x, y});
  auto n = RunOp("BitwiseNot", {x});
  ASSERT_TRUE(a.ok() && o.ok() && e.ok() && n.ok());
  ExpectTensor((*a)[0], {2, 2}, {4, 2, 6, 0});
  ExpectTensor((*o)[0], {2, 2}, {14, 11, -1, 3});
  ExpectTensor((*e)[0], {2, 2}, {10, 9, -7, 3});
  ExpectTensor((*n)[0], {2, 2}, {-13, -11, 0, -1});
  auto u = RunOp("BitwiseNot", {MakeTensor(DT_UINT8, {2}, {0, 15})});
  ASSERT_TRUE(u.ok()) << u.status();
  ExpectTensor((*u)[0], {2}, {255, 240});
}

TEST(BitwiseKernelTest, FloatsHaveNoBitwiseKernel) {
  auto out = RunOp("BitwiseAnd", {F32({1}, {1}), F32({1}, {1})});
  EXPECT_FALSE(out.ok());
}

TEST(BitwiseKernelTest, BitCastKeepsTheBits) {
  auto out = RunOp("BitCast", {F32({1.0f, -2.0f}, {2})},
                   {{"DstT", TypeAttr(DT_INT32)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DT_INT32);
  ExpectTensor((*out)[0], {2}, {0x3f800000, static_cast<int32_t>(0xc0000000)});
  auto back = RunOp("BitCast", {(*out)[0]}, {{"DstT", TypeAttr(DT_FLOAT)}});
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectTensor((*back)[0], {2}, {1.0, -2.0});
  auto to_bool = RunOp("BitCast", {MakeTensor(DT_UINT8, {3}, {0, 1, 7})},
                       {{"DstT", TypeAttr(DT_BOOL)}});
  ASSERT_TRUE(to_bool.ok()) << to_bool.status();
  ExpectTensor((*to_bool)[0], {3}, {0, 1, 1});
}

TEST(BitwiseKernelTest, BitCastRefusesDifferentWidths) {
  auto out = RunOp("BitCast", {F32({1.0f}, {1})},
                   {{"DstT", TypeAttr(DT_INT64)}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("width"));
}

}  // namespace
}  // namespace sluice::testing::bitwise_test
