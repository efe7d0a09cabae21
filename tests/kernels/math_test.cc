// The unary math family (elementwise_math.cc) and Mod/FMod: values worked out
// by hand, every float dtype where the op takes them.
#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::math_test {
namespace {

using ::testing::HasSubstr;

const std::vector<DataType> kFloats = {DT_FLOAT, DT_DOUBLE, DT_FLOAT16,
                                       DT_BFLOAT16};

double TolFor(DataType t) {
  switch (t) {
    case DT_FLOAT16: return 1e-2;
    case DT_BFLOAT16: return 3e-2;
    case DT_FLOAT: return 1e-6;
    default: return 1e-12;
  }
}

TEST(MathKernelTest, TrigonometricAndHyperbolicEveryFloatDtype) {
  struct Case {
    const char* op;
    std::vector<double> x;
    std::vector<double> want;
  };
  const double pi = M_PI;
  const std::vector<Case> cases = {
      {"Sin", {0, pi / 6, pi / 2}, {0, 0.5, 1}},
      {"Cos", {0, pi / 3, pi}, {1, 0.5, -1}},
      {"Tan", {0, pi / 4, -pi / 4}, {0, 1, -1}},
      {"Asin", {0, 0.5, -1}, {0, pi / 6, -pi / 2}},
      {"Acos", {1, 0.5, -1}, {0, pi / 3, pi}},
      {"Atan", {0, 1, -1}, {0, pi / 4, -pi / 4}},
      {"Sinh", {0, std::log(2.0), -std::log(2.0)}, {0, 0.75, -0.75}},
      {"Cosh", {0, std::log(2.0), -std::log(2.0)}, {1, 1.25, 1.25}},
      {"Asinh", {0, 0.75, -0.75}, {0, std::log(2.0), -std::log(2.0)}},
      {"Acosh", {1, 1.25, 1}, {0, std::log(2.0), 0}},
      {"Atanh", {0, 0.6, -0.6}, {0, std::log(2.0), -std::log(2.0)}},
  };
  for (DataType t : kFloats) {
    for (const Case& c : cases) {
      auto out = RunOp(c.op, {MakeTensor(t, {3}, c.x)});
      ASSERT_TRUE(out.ok()) << c.op << " " << DataTypeName(t) << ": "
                            << out.status();
      EXPECT_EQ((*out)[0].dtype(), t);
      ExpectTensor((*out)[0], {3}, c.want, 4 * TolFor(t));
    }
  }
}

TEST(MathKernelTest, RoundingHalvesToEven) {
  for (DataType t : kFloats) {
    const std::vector<double> x = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.3, -2.7};
    auto round = RunOp("Round", {MakeTensor(t, {8}, x)});
    ASSERT_TRUE(round.ok()) << round.status();
    ExpectTensor((*round)[0], {8}, {-2, -2, -0, 0, 2, 2, 2, -3});
    auto floor = RunOp("Floor", {MakeTensor(t, {8}, x)});
    ASSERT_TRUE(floor.ok()) << floor.status();
    ExpectTensor((*floor)[0], {8}, {-3, -2, -1, 0, 1, 2, 2, -3});
    auto ceil = RunOp("Ceil", {MakeTensor(t, {8}, x)});
    ASSERT_TRUE(ceil.ok()) << ceil.status();
    ExpectTensor((*ceil)[0], {8}, {-2, -1, -0, 1, 2, 3, 3, -2});
  }
}

TEST(MathKernelTest, SignOfFloatsAndInts) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
    auto out = RunOp("Sign", {MakeTensor(t, {4}, {-3, 0, 7, -1})});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << ": " << out.status();
    EXPECT_EQ((*out)[0].dtype(), t);
    ExpectTensor((*out)[0], {4}, {-1, 0, 1, -1});
  }
}

TEST(MathKernelTest, SoftplusDoesNotOverflow) {
  auto out = RunOp("Softplus", {F32({-1, 0, 1, 100, -100}, {5})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {5},
               {std::log1p(std::exp(-1.0)), std::log(2.0),
                1 + std::log1p(std::exp(-1.0)), 100, std::exp(-100.0)},
               1e-6);
}

TEST(MathKernelTest, ActivationsWithoutAttributes) {
  const double sp1 = 1 + std::log1p(std::exp(-1.0));  // softplus(1)
  struct Case {
    const char* op;
    std::vector<double> want;  // x = {-4, -1, 0, 1, 4}
  };
  const std::vector<Case> cases = {
      {"Softsign", {-0.8, -0.5, 0, 0.5, 0.8}},
      {"HardSwish", {0, -1.0 / 3, 0, 2.0 / 3, 4}},
      {"Mish",
       {-4 * std::tanh(std::log1p(std::exp(-4.0))),
        -std::tanh(std::log1p(std::exp(-1.0))), 0, std::tanh(sp1),
        4 * std::tanh(4 + std::log1p(std::exp(-4.0)))}},
  };
  for (const Case& c : cases) {
    auto out = RunOp(c.op, {F32({-4, -1, 0, 1, 4}, {5})});
    ASSERT_TRUE(out.ok()) << c.op << ": " << out.status();
    ExpectTensor((*out)[0], {5}, c.want, 1e-6);
  }
}

TEST(MathKernelTest, ActivationsReadTheirAttributesOrDefaults) {
  const Tensor x = F32({-2, -0.5, 0, 0.5, 3}, {5});
  auto hs = RunOp("HardSigmoid", {x});  // alpha 0.2, beta 0.5
  ASSERT_TRUE(hs.ok()) << hs.status();
  ExpectTensor((*hs)[0], {5}, {0.1, 0.4, 0.5, 0.6, 1}, 1e-6);
  auto hs2 = RunOp("HardSigmoid", {x},
                   {{"alpha", FloatAttr(0.5f)}, {"beta", FloatAttr(0.6f)}});
  ASSERT_TRUE(hs2.ok()) << hs2.status();
  ExpectTensor((*hs2)[0], {5}, {0, 0.35, 0.6, 0.85, 1}, 1e-6);

  auto elu = RunOp("Elu", {x}, {{"alpha", FloatAttr(2.0f)}});
  ASSERT_TRUE(elu.ok()) << elu.status();
  ExpectTensor((*elu)[0], {5},
               {2 * std::expm1(-2.0), 2 * std::expm1(-0.5), 0, 0.5, 3}, 1e-6);

  auto selu = RunOp("Selu", {x}, {{"alpha", FloatAttr(2.0f)},
                                  {"gamma", FloatAttr(3.0f)}});
  ASSERT_TRUE(selu.ok()) << selu.status();
  ExpectTensor((*selu)[0], {5},
               {6 * std::expm1(-2.0), 6 * std::expm1(-0.5), 0, 1.5, 9}, 1e-5);

  auto celu = RunOp("Celu", {x}, {{"alpha", FloatAttr(2.0f)}});
  ASSERT_TRUE(celu.ok()) << celu.status();
  ExpectTensor((*celu)[0], {5},
               {2 * std::expm1(-1.0), 2 * std::expm1(-0.25), 0, 0.5, 3},
               1e-6);

  auto thr = RunOp("ThresholdedRelu", {x});  // alpha 1
  ASSERT_TRUE(thr.ok()) << thr.status();
  ExpectTensor((*thr)[0], {5}, {0, 0, 0, 0, 3});
}

TEST(MathKernelTest, ModTakesTheDivisorsSignFModTheDividends) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
    const Tensor x = MakeTensor(t, {4}, {7, -7, 7, -7});
    const Tensor y = MakeTensor(t, {4}, {3, 3, -3, -3});
    auto mod = RunOp("Mod", {x, y});
    ASSERT_TRUE(mod.ok()) << DataTypeName(t) << ": " << mod.status();
    ExpectTensor((*mod)[0], {4}, {1, 2, -2, -1});
    auto fmod = RunOp("FMod", {x, y});
    ASSERT_TRUE(fmod.ok()) << DataTypeName(t) << ": " << fmod.status();
    ExpectTensor((*fmod)[0], {4}, {1, -1, 1, -1});
  }
  // Broadcast, fractional floats.
  auto out = RunOp("Mod", {F32({5.5f, -5.5f}, {2}), F32({2}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2}, {1.5, 0.5}, 1e-6);
}

TEST(MathKernelTest, IntegerModByZeroIsAnError) {
  auto out = RunOp("Mod", {I32({1, 2}, {2}), I32({1, 0}, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("by zero"));
}

TEST(MathKernelTest, TrigonometryRefusesIntegers) {
  auto out = RunOp("Sin", {I32({1}, {1})});
  EXPECT_FALSE(out.ok());
}

TEST(ArgReduceKernelTest, FirstOrLastIndexAlongAnAxis) {
  // x = [[1, 5, 5], [7, 0, 7]]
  const Tensor x = F32({1, 5, 5, 7, 0, 7}, {2, 3});
  auto max1 = RunOp("ArgMax", {x}, {{"axis", IntAttr(1)}});
  ASSERT_TRUE(max1.ok()) << max1.status();
  EXPECT_EQ((*max1)[0].dtype(), DT_INT64);
  ExpectTensor((*max1)[0], {2, 1}, {1, 0});
  auto last = RunOp("ArgMax", {x},
                    {{"axis", IntAttr(-1)},
                     {"keepdims", BoolAttr(false)},
                     {"select_last_index", BoolAttr(true)}});
  ASSERT_TRUE(last.ok()) << last.status();
  ExpectTensor((*last)[0], {2}, {2, 2});
  auto min0 = RunOp("ArgMin", {x});  // axis 0, keepdims
  ASSERT_TRUE(min0.ok()) << min0.status();
  ExpectTensor((*min0)[0], {1, 3}, {0, 1, 0});
  auto ints = RunOp("ArgMin", {I64({4, -2, 9, -2}, {4})},
                    {{"select_last_index", BoolAttr(true)}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  ExpectTensor((*ints)[0], {1}, {3});
}

TEST(TriluKernelTest, KeepsOneSideOfDiagonalK) {
  // x = [[1, 2, 3], [4, 5, 6]]
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto upper = RunOp("Trilu", {x, I64({0}, {})});
  ASSERT_TRUE(upper.ok()) << upper.status();
  ExpectTensor((*upper)[0], {2, 3}, {1, 2, 3, 0, 5, 6});
  auto lower = RunOp("Trilu", {x, I64({1}, {1})}, {{"upper", BoolAttr(false)}});
  ASSERT_TRUE(lower.ok()) << lower.status();
  ExpectTensor((*lower)[0], {2, 3}, {1, 2, 0, 4, 5, 6});
  auto above = RunOp("Trilu", {x, I64({-1}, {})});
  ASSERT_TRUE(above.ok()) << above.status();
  ExpectTensor((*above)[0], {2, 3}, {1, 2, 3, 4, 5, 6});
  auto vec = RunOp("Trilu", {F32({1, 2}, {2}), I64({0}, {})});
  EXPECT_FALSE(vec.ok());
}

TEST(CumSumKernelTest, InclusiveExclusiveAndReverseAlongARuntimeAxis) {
  // x = [[1, 2, 3], [4, 5, 6]]
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto rows = RunOp("CumSum", {x, I32({1}, {})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ExpectTensor((*rows)[0], {2, 3}, {1, 3, 6, 4, 9, 15});
  auto cols = RunOp("CumSum", {x, I64({-2}, {})});
  ASSERT_TRUE(cols.ok()) << cols.status();
  ExpectTensor((*cols)[0], {2, 3}, {1, 2, 3, 5, 7, 9});
  auto excl_rev = RunOp("CumSum", {I64({1, 2, 3}, {3}), I64({0}, {})},
                        {{"exclusive", BoolAttr(true)},
                         {"reverse", BoolAttr(true)}});
  ASSERT_TRUE(excl_rev.ok()) << excl_rev.status();
  ExpectTensor((*excl_rev)[0], {3}, {5, 3, 0});
  auto bad_axis = RunOp("CumSum", {x, I64({2}, {})});
  EXPECT_FALSE(bad_axis.ok());
}

TEST(CastKernelTest, ToAndFromEightBitIntegersSaturatesFromFloats) {
  auto u8 = RunOp("Cast", {F32({-3, 0, 7.9f, 300}, {4})},
                  {{"DstT", TypeAttr(DT_UINT8)}});
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_EQ((*u8)[0].dtype(), DT_UINT8);
  ExpectTensor((*u8)[0], {4}, {0, 0, 7, 255});
  auto i8 = RunOp("Cast", {F32({-300, -5.5f, 5.5f, 200}, {4})},
                  {{"DstT", TypeAttr(DT_INT8)}});
  ASSERT_TRUE(i8.ok()) << i8.status();
  ExpectTensor((*i8)[0], {4}, {-128, -5, 5, 127});
  auto back = RunOp("Cast", {MakeTensor(DT_UINT8, {2}, {0, 255})},
                    {{"DstT", TypeAttr(DT_FLOAT)}});
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectTensor((*back)[0], {2}, {0, 255});
}

TEST(BinaryKernelTest, EightBitIntegersWrapCompareAndTakeModulo) {
  const Tensor a = MakeTensor(DT_UINT8, {3}, {250, 3, 7});
  const Tensor b = MakeTensor(DT_UINT8, {3}, {10, 5, 2});
  auto sum = RunOp("Add", {a, b});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].dtype(), DT_UINT8);
  ExpectTensor((*sum)[0], {3}, {4, 8, 9});  // 260 wraps to 4
  auto less = RunOp("Less", {a, b});
  ASSERT_TRUE(less.ok()) << less.status();
  ExpectTensor((*less)[0], {3}, {0, 1, 0});
  auto mod = RunOp("Mod", {a, b});
  ASSERT_TRUE(mod.ok()) << mod.status();
  ExpectTensor((*mod)[0], {3}, {0, 3, 1});
  const Tensor c = MakeTensor(DT_INT8, {3}, {-7, 100, -128});
  const Tensor d = MakeTensor(DT_INT8, {3}, {3, 100, -1});
  auto imod = RunOp("Mod", {c, d});
  ASSERT_TRUE(imod.ok()) << imod.status();
  ExpectTensor((*imod)[0], {3}, {2, 0, 0});
  auto idiv = RunOp("Div", {c, d});
  ASSERT_TRUE(idiv.ok()) << idiv.status();
  ExpectTensor((*idiv)[0], {3}, {-2, 1, -128});  // -128 / -1 wraps
  auto imax = RunOp("Maximum", {c, d});
  ASSERT_TRUE(imax.ok()) << imax.status();
  ExpectTensor((*imax)[0], {3}, {3, 100, -1});
}

TEST(ScatterGatherKernelTest, ElementsAlongAnAxisWithNegativeIndices) {
  // data = [[1, 2], [3, 4]]
  const Tensor data = F32({1, 2, 3, 4}, {2, 2});
  auto g = RunOp("GatherElements", {data, I64({0, 0, 1, -2}, {2, 2})},
                 {{"axis", IntAttr(1)}});
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectTensor((*g)[0], {2, 2}, {1, 1, 4, 3});
  auto s = RunOp("ScatterElements",
                 {data, I64({1, 0}, {1, 2}), F32({10, 20}, {1, 2})},
                 {{"reduction", StringAttr("add")}});
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectTensor((*s)[0], {2, 2}, {1, 22, 13, 4});
  auto bad = RunOp("GatherElements", {data, I64({2}, {1, 1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("index 2 is out of range"));
}

TEST(ScatterGatherKernelTest, NdTuplesAddressSlices) {
  // data = [[1, 2], [3, 4]]
  const Tensor data = F32({1, 2, 3, 4}, {2, 2});
  auto rows = RunOp("GatherND", {data, I64({1, 0}, {2, 1})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ExpectTensor((*rows)[0], {2, 2}, {3, 4, 1, 2});
  auto elems = RunOp("GatherND", {data, I64({0, 1, 1, 0}, {2, 2})});
  ASSERT_TRUE(elems.ok()) << elems.status();
  ExpectTensor((*elems)[0], {2}, {2, 3});
  auto batched = RunOp("GatherND", {data, I64({1, 0}, {2, 1})},
                       {{"batch_dims", IntAttr(1)}});
  ASSERT_TRUE(batched.ok()) << batched.status();
  ExpectTensor((*batched)[0], {2}, {2, 3});
  auto s = RunOp("ScatterND", {data, I64({1}, {1, 1}), F32({7, 8}, {1, 2})});
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectTensor((*s)[0], {2, 2}, {1, 2, 7, 8});
}

}  // namespace
}  // namespace sluice::testing::math_test
