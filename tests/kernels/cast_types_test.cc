// Cast over every dtype pair, and the float8 / 4-bit rules of ONNX Cast
// (saturate, round_mode, wrapping to int4) on hand-worked values.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::cast_types_test {
namespace {

std::vector<double> CastF32(const std::vector<float>& v, DataType to,
                            Attrs attrs = {}) {
  attrs["DstT"] = TypeAttr(to);
  auto out = RunOp("Cast", {F32(v, {static_cast<int64_t>(v.size())})}, attrs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ((*out)[0].dtype(), to);
  return ToDoubles((*out)[0]);
}

TEST(CastTypesTest, EveryPairKeepsOne) {
  for (DataType src : AllDataTypes()) {
    for (DataType dst : AllDataTypes()) {
      auto out = RunOp("Cast", {MakeTensor(src, {2}, {1, 1})},
                       {{"DstT", TypeAttr(dst)}});
      ASSERT_TRUE(out.ok()) << DataTypeName(src) << "->" << DataTypeName(dst)
                            << ": " << out.status();
      EXPECT_EQ((*out)[0].dtype(), dst);
      ExpectTensor((*out)[0], {2}, {1, 1});
    }
  }
}

TEST(CastTypesTest, Float8SaturatesByDefault) {
  EXPECT_EQ(CastF32({1e6f, -INFINITY, 300.0f, 0.5f}, DT_FLOAT8_E4M3FN),
            (std::vector<double>{448, -448, 288, 0.5}));
  EXPECT_EQ(CastF32({INFINITY, -1e6f}, DT_FLOAT8_E4M3FNUZ),
            (std::vector<double>{240, -240}));
  EXPECT_EQ(CastF32({1e6f}, DT_FLOAT8_E5M2), (std::vector<double>{57344}));
}

TEST(CastTypesTest, Float8WithoutSaturation) {
  std::vector<double> v =
      CastF32({1e6f, 1.0f}, DT_FLOAT8_E4M3FN, {{"saturate", BoolAttr(false)}});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 1.0);
  v = CastF32({1e6f, -INFINITY}, DT_FLOAT8_E5M2,
              {{"saturate", BoolAttr(false)}});
  EXPECT_EQ(v, (std::vector<double>{INFINITY, -INFINITY}));
}

TEST(CastTypesTest, E8M0RoundModes) {
  EXPECT_EQ(CastF32({3.0f, 0.3f}, DT_FLOAT8_E8M0),
            (std::vector<double>{4, 0.5}));  // "up" by default
  EXPECT_EQ(CastF32({3.0f}, DT_FLOAT8_E8M0, {{"round_mode", StringAttr("down")}}),
            (std::vector<double>{2}));
  auto bad = RunOp("Cast", {F32({1}, {1})},
                   {{"DstT", TypeAttr(DT_FLOAT8_E8M0)},
                    {"round_mode", StringAttr("sideways")}});
  EXPECT_FALSE(bad.ok());
}

TEST(CastTypesTest, SubByteIntegersWrap) {
  EXPECT_EQ(CastF32({-9, 15, 7.9f, -2.5f}, DT_INT4),
            (std::vector<double>{7, -1, 7, -2}));
  EXPECT_EQ(CastF32({-1, 16, 3}, DT_UINT4), (std::vector<double>{15, 0, 3}));
  EXPECT_EQ(CastF32({2, -3}, DT_INT2), (std::vector<double>{-2, 1}));
  EXPECT_EQ(CastF32({0.48f, 9, -3.5f}, DT_FLOAT4_E2M1),
            (std::vector<double>{0.5, 6, -4}));
}

TEST(CastTypesTest, WideIntegersSaturateFromFloat) {
  EXPECT_EQ(CastF32({70000, -5, 3.9f}, DT_UINT16),
            (std::vector<double>{65535, 0, 3}));
  EXPECT_EQ(CastF32({-40000, 40000}, DT_INT16),
            (std::vector<double>{-32768, 32767}));
}

}  // namespace
}  // namespace sluice::testing::cast_types_test
