// Tests for the float8 / float4 / int4 / int2 conversions (core/small_types.h),
// against bit patterns worked out by hand from the formats.
#include "core/small_types.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace sluice::small_types_test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

uint8_t Enc(double v, SmallFloat f, bool saturate = true) {
  return EncodeSmallFloat(v, f, saturate);
}

TEST(SmallFloatTest, E4M3FN) {
  const SmallFloat f = SmallFloat::kE4M3FN;
  EXPECT_EQ(Enc(1.0, f), 0x38);    // exponent 7 (bias 7), mantissa 0
  EXPECT_EQ(Enc(-2.0, f), 0xC0);
  EXPECT_EQ(Enc(448, f), 0x7E);    // the largest finite value
  EXPECT_EQ(Enc(300, f), 0x79);    // 300 / 32 = 9.375 -> 9 -> 288
  EXPECT_EQ(DecodeSmallFloat(0x79, f), 288.0f);
  EXPECT_EQ(Enc(464, f, false), 0x7E);  // tie: to the even 448
  EXPECT_EQ(Enc(465, f, false), 0x7F);  // rounds past 448: NaN
  EXPECT_EQ(Enc(465, f, true), 0x7E);
  EXPECT_EQ(Enc(1e6, f, true), 0x7E);
  EXPECT_EQ(Enc(-1e6, f, false), 0xFF);
  EXPECT_EQ(Enc(kInf, f, true), 0x7E);
  EXPECT_EQ(Enc(-kInf, f, true), 0xFE);
  EXPECT_EQ(Enc(kInf, f, false), 0x7F);
  EXPECT_EQ(Enc(kNan, f), 0x7F);
  EXPECT_EQ(Enc(std::ldexp(1.0, -9), f), 0x01);  // smallest subnormal
  EXPECT_EQ(Enc(std::ldexp(1.0, -11), f), 0x00);  // below half of it
  EXPECT_EQ(Enc(-1e-7, f), 0x80);                 // -0 is kept
  EXPECT_TRUE(std::isnan(DecodeSmallFloat(0xFF, f)));
  EXPECT_EQ(SmallFloatMax(f), 448.0);
}

TEST(SmallFloatTest, E4M3FNUZ) {
  const SmallFloat f = SmallFloat::kE4M3FNUZ;
  EXPECT_EQ(Enc(1.0, f), 0x40);  // bias 8
  EXPECT_EQ(Enc(240, f), 0x7F);
  EXPECT_EQ(Enc(-1.0, f), 0xC0);    // negative values keep their sign
  EXPECT_EQ(Enc(-kInf, f, true), 0xFF);
  EXPECT_EQ(Enc(-0.0, f), 0x00);  // no negative zero
  EXPECT_EQ(Enc(-1e-7, f), 0x00);
  EXPECT_EQ(Enc(kNan, f), 0x80);
  EXPECT_EQ(Enc(kInf, f, true), 0x7F);
  EXPECT_EQ(Enc(-kInf, f, false), 0x80);
  EXPECT_EQ(Enc(1e6, f, false), 0x80);
  EXPECT_TRUE(std::isnan(DecodeSmallFloat(0x80, f)));
}

TEST(SmallFloatTest, E5M2) {
  const SmallFloat f = SmallFloat::kE5M2;
  EXPECT_EQ(Enc(1.0, f), 0x3C);
  EXPECT_EQ(Enc(57344, f), 0x7B);
  EXPECT_EQ(Enc(1e6, f, true), 0x7B);
  EXPECT_EQ(Enc(1e6, f, false), 0x7C);  // infinity
  EXPECT_EQ(Enc(-kInf, f, false), 0xFC);
  EXPECT_EQ(Enc(-kInf, f, true), 0xFB);
  EXPECT_EQ(Enc(61440, f, false), 0x7C);  // tie between 57344 and 2^16: even
  EXPECT_EQ(Enc(kNan, f), 0x7E);
  EXPECT_EQ(DecodeSmallFloat(0x7C, f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(DecodeSmallFloat(0x7D, f)));
}

TEST(SmallFloatTest, E5M2FNUZ) {
  const SmallFloat f = SmallFloat::kE5M2FNUZ;
  EXPECT_EQ(Enc(1.0, f), 0x40);  // bias 16
  EXPECT_EQ(Enc(57344, f), 0x7F);
  EXPECT_EQ(Enc(kInf, f, false), 0x80);
  EXPECT_EQ(Enc(kInf, f, true), 0x7F);
}

TEST(SmallFloatTest, E2M1) {
  const SmallFloat f = SmallFloat::kE2M1;
  EXPECT_EQ(Enc(1.0, f), 0x2);
  EXPECT_EQ(Enc(0.5, f), 0x1);  // the only subnormal
  EXPECT_EQ(Enc(6.0, f), 0x7);
  EXPECT_EQ(Enc(2.5, f), 0x4);   // tie between 2 and 3: even mantissa
  EXPECT_EQ(Enc(0.25, f), 0x0);  // tie between 0 and 0.5
  EXPECT_EQ(Enc(0.75, f), 0x2);  // tie between 0.5 and 1
  EXPECT_EQ(Enc(-8, f, false), 0xF);  // always saturates
  EXPECT_EQ(Enc(kInf, f, false), 0x7);
  EXPECT_EQ(Enc(kNan, f), 0x8);  // as ml_dtypes
  EXPECT_EQ(DecodeSmallFloat(0xD, f), -3.0f);
}

TEST(SmallFloatTest, E8M0) {
  EXPECT_EQ(EncodeE8M0(1.0f, true, E8M0Rounding::kUp), 127);
  EXPECT_EQ(EncodeE8M0(3.0f, true, E8M0Rounding::kUp), 129);
  EXPECT_EQ(EncodeE8M0(3.0f, true, E8M0Rounding::kDown), 128);
  EXPECT_EQ(EncodeE8M0(3.0f, true, E8M0Rounding::kNearest), 129);
  EXPECT_EQ(EncodeE8M0(2.5f, true, E8M0Rounding::kNearest), 128);
  EXPECT_EQ(EncodeE8M0(-4.0f, true, E8M0Rounding::kUp), 129);  // sign dropped
  EXPECT_EQ(EncodeE8M0(0.0f, true, E8M0Rounding::kUp), 0);
  EXPECT_EQ(EncodeE8M0(NAN, true, E8M0Rounding::kUp), 0xFF);
  const float big = std::numeric_limits<float>::max();
  EXPECT_EQ(EncodeE8M0(big, true, E8M0Rounding::kUp), 0xFE);
  EXPECT_EQ(EncodeE8M0(big, false, E8M0Rounding::kUp), 0xFF);
  EXPECT_EQ(DecodeSmallFloat(128, SmallFloat::kE8M0), 2.0f);
  EXPECT_EQ(DecodeSmallFloat(124, SmallFloat::kE8M0), 0.125f);
  EXPECT_TRUE(std::isnan(DecodeSmallFloat(0xFF, SmallFloat::kE8M0)));
}

// Every non-NaN pattern decodes to a value that encodes back to it.
TEST(SmallFloatTest, EveryPatternRoundTrips) {
  for (SmallFloat f : {SmallFloat::kE4M3FN, SmallFloat::kE4M3FNUZ,
                       SmallFloat::kE5M2, SmallFloat::kE5M2FNUZ,
                       SmallFloat::kE2M1}) {
    const int patterns = f == SmallFloat::kE2M1 ? 16 : 256;
    for (int b = 0; b < patterns; ++b) {
      const float v = DecodeSmallFloat(static_cast<uint8_t>(b), f);
      if (std::isnan(v)) continue;
      EXPECT_EQ(EncodeSmallFloat(v, f, /*saturate=*/false), b)
          << "format " << static_cast<int>(f) << " pattern " << b;
    }
  }
}

TEST(SmallFloatTest, TypeConvertsAndComputes) {
  float8_e4m3fn a(2.0f);
  float8_e4m3fn b(3);
  EXPECT_EQ(static_cast<float>(a + b), 5.0f);
  EXPECT_EQ(static_cast<int64_t>(a * b), 6);
  EXPECT_TRUE(a < b);
  EXPECT_EQ(float8_e4m3fn(1e9).bits, 0x7E);  // construction saturates
  EXPECT_EQ(float8_e5m2::FromBits(0x3C).bits, 0x3C);
}

TEST(SmallIntTest, WrapsLikeMlDtypes) {
  EXPECT_EQ(int4(-9).value, 7);
  EXPECT_EQ(int4(8).value, -8);
  EXPECT_EQ(int4(300.0f).value, -4);  // 300 = 0x12C, low bits 0xC
  EXPECT_EQ(int4(7.9f).value, 7);     // truncates
  EXPECT_EQ(int4(-2.5).value, -2);
  EXPECT_EQ(int4(NAN).value, 0);
  EXPECT_EQ(uint4(-1).value, 15);
  EXPECT_EQ(int2(3).value, -1);
  EXPECT_EQ(uint2(5).value, 1);
  EXPECT_EQ(static_cast<int>(int4(3) + int4(6)), -7);
  EXPECT_EQ(int4::kMin, -8);
  EXPECT_EQ(uint2::kMax, 3);
}

}  // namespace
}  // namespace sluice::small_types_test
