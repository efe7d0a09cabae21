// Unary, binary and Where kernels: values worked out by hand or from
// std:: functions, broadcasting edge cases, every registered dtype.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::elementwise_test {
namespace {

using ::testing::HasSubstr;

const std::vector<DataType> kArith = {DT_FLOAT,    DT_DOUBLE, DT_FLOAT16,
                                      DT_BFLOAT16, DT_INT32,  DT_INT64};
const std::vector<DataType> kFloats = {DT_FLOAT, DT_DOUBLE, DT_FLOAT16,
                                       DT_BFLOAT16};

double TolFor(DataType t) {
  switch (t) {
    case DT_FLOAT16: return 1e-2;
    case DT_BFLOAT16: return 5e-2;
    case DT_FLOAT: return 1e-5;
    default: return 1e-12;
  }
}

TEST(BinaryKernelTest, AddSameShapeEveryArithDtype) {
  for (DataType t : kArith) {
    auto out = RunOp("Add", {MakeTensor(t, {2, 2}, {1, 2, 3, 4}),
                             MakeTensor(t, {2, 2}, {10, 20, 30, 40})});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << ": " << out.status();
    EXPECT_EQ((*out)[0].dtype(), t);
    ExpectTensor((*out)[0], {2, 2}, {11, 22, 33, 44});
  }
}

TEST(BinaryKernelTest, EveryArithOpEveryDtype) {
  struct Case {
    const char* op;
    std::vector<double> want;  // x = {6, -7, 8, 2}, y = {3, 2, -3, 2}
  };
  const std::vector<Case> cases = {
      {"Sub", {3, -9, 11, 0}},     {"Mul", {18, -14, -24, 4}},
      {"Maximum", {6, 2, 8, 2}},   {"Minimum", {3, -7, -3, 2}},
  };
  for (DataType t : kArith) {
    for (const Case& c : cases) {
      auto out = RunOp(c.op, {MakeTensor(t, {4}, {6, -7, 8, 2}),
                              MakeTensor(t, {4}, {3, 2, -3, 2})});
      ASSERT_TRUE(out.ok()) << c.op << " " << DataTypeName(t) << out.status();
      ExpectTensor((*out)[0], {4}, c.want, TolFor(t));
    }
  }
}

TEST(BinaryKernelTest, IntegerDivTruncatesTowardZero) {
  for (DataType t : {DT_INT32, DT_INT64}) {
    auto out = RunOp("Div", {MakeTensor(t, {4}, {7, -7, 7, -7}),
                             MakeTensor(t, {4}, {2, 2, -2, -2})});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], {4}, {3, -3, -3, 3});
  }
}

TEST(BinaryKernelTest, FloatDivEveryDtype) {
  for (DataType t : kFloats) {
    auto out = RunOp("Div", {MakeTensor(t, {3}, {1, -3, 5}),
                             MakeTensor(t, {3}, {4, 2, 0})});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], {3}, {0.25, -1.5, INFINITY}, TolFor(t));
  }
}

TEST(BinaryKernelTest, IntegerDivisionByZeroIsAnError) {
  auto out = RunOp("Div", {I32({1, 2, 3}, {3}), I32({1, 0, 1}, {3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("division by zero"));
  // Also when the zero is a broadcast scalar.
  out = RunOp("Div", {I64({1, 2}, {2}), I64({0}, {})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BinaryKernelTest, IntegerDivMinByMinusOneWraps) {
  auto out = RunOp("Div", {I32({INT32_MIN}, {1}), I32({-1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int32_t>()[0], INT32_MIN);
}

TEST(BinaryKernelTest, PowFloatAndInt) {
  auto f = RunOp("Pow", {F32({2, 9, 4}, {3}), F32({3, 0.5, -1}, {3})});
  ASSERT_TRUE(f.ok()) << f.status();
  ExpectTensor((*f)[0], {3}, {8, 3, 0.25}, 1e-6);
  auto i = RunOp("Pow", {I64({2, -3, 5, 7}, {4}), I64({10, 3, 0, 1}, {4})});
  ASSERT_TRUE(i.ok()) << i.status();
  ExpectTensor((*i)[0], {4}, {1024, -27, 1, 7});
  auto bad = RunOp("Pow", {I32({2}, {1}), I32({-1}, {1})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("negative exponent"));
}

TEST(BinaryKernelTest, MaximumPropagatesNaN) {
  auto out = RunOp("Maximum", {F32({NAN, 1}, {2}), F32({1, NAN}, {2})});
  ASSERT_TRUE(out.ok());
  ExpectTensor((*out)[0], {2}, {NAN, NAN});
}

TEST(BinaryKernelTest, BroadcastsRowAgainstColumn) {
  // [2,1] + [3] -> [2,3]
  auto out = RunOp("Add", {F32({10, 20}, {2, 1}), F32({1, 2, 3}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3}, {11, 12, 13, 21, 22, 23});
}

TEST(BinaryKernelTest, BroadcastsScalarOnEitherSide) {
  auto a = RunOp("Sub", {F32({5}, {}), F32({1, 2, 3}, {3})});
  ASSERT_TRUE(a.ok());
  ExpectTensor((*a)[0], {3}, {4, 3, 2});
  auto b = RunOp("Sub", {F32({1, 2, 3}, {3}), F32({5}, {})});
  ASSERT_TRUE(b.ok());
  ExpectTensor((*b)[0], {3}, {-4, -3, -2});
  auto c = RunOp("Mul", {F32({3}, {}), F32({4}, {})});
  ASSERT_TRUE(c.ok());
  ExpectTensor((*c)[0], {}, {12});
}

TEST(BinaryKernelTest, BroadcastsMiddleDimension) {
  // x [2,1,2] and y [1,3,1] -> [2,3,2]; z[i][j][k] = x[i][0][k] * y[0][j][0].
  auto out = RunOp("Mul", {F32({1, 2, 3, 4}, {2, 1, 2}),
                           F32({1, 10, 100}, {1, 3, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3, 2},
               {1, 2, 10, 20, 100, 200, 3, 4, 30, 40, 300, 400});
}

TEST(BinaryKernelTest, BroadcastsAgainstNaiveReference) {
  // [3,1,4,1] against [2,1,5]: compare with a direct index loop.
  std::vector<float> x(12), y(10);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  for (int i = 0; i < 10; ++i) y[i] = static_cast<float>(100 * i);
  auto out = RunOp("Add", {F32(x, {3, 1, 4, 1}), F32(y, {2, 1, 5})});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 4; ++c)
        for (int d = 0; d < 5; ++d) want.push_back(x[a * 4 + c] + y[b * 5 + d]);
  ExpectTensor((*out)[0], {3, 2, 4, 5}, want);
}

TEST(BinaryKernelTest, ZeroSizedDimensionsBroadcast) {
  auto a = RunOp("Add", {F32({}, {0, 3}), F32({1, 2, 3}, {3})});
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectTensor((*a)[0], {0, 3}, {});
  auto b = RunOp("Add", {F32({}, {2, 0}), F32({1, 2}, {2, 1})});
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectTensor((*b)[0], {2, 0}, {});
  auto c = RunOp("Add", {F32({}, {0}), F32({5}, {1})});
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectTensor((*c)[0], {0}, {});
}

TEST(BinaryKernelTest, IncompatibleShapesAreAnError) {
  auto out = RunOp("Add", {F32({1, 2, 3}, {3}), F32({1, 2}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("broadcast"));
  out = RunOp("Add", {F32({}, {0}), F32({1, 2}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BinaryKernelTest, ComparisonsGiveBool) {
  for (DataType t : kArith) {
    auto x = MakeTensor(t, {3}, {1, 2, 3});
    auto y = MakeTensor(t, {3}, {2, 2, 2});
    auto eq = RunOp("Equal", {x, y});
    auto lt = RunOp("Less", {x, y});
    auto gt = RunOp("Greater", {x, y});
    ASSERT_TRUE(eq.ok() && lt.ok() && gt.ok()) << DataTypeName(t);
    EXPECT_EQ((*eq)[0].dtype(), DT_BOOL);
    ExpectTensor((*eq)[0], {3}, {0, 1, 0});
    ExpectTensor((*lt)[0], {3}, {1, 0, 0});
    ExpectTensor((*gt)[0], {3}, {0, 0, 1});
  }
  auto b = RunOp("Equal", {Bool({true, false}, {2}), Bool({true}, {})});
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectTensor((*b)[0], {2}, {1, 0});
}

TEST(BinaryKernelTest, SignedOverflowWraps) {
  auto out = RunOp("Add", {I32({INT32_MAX}, {1}), I32({1}, {1})});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].data<int32_t>()[0], INT32_MIN);
}

TEST(BinaryKernelTest, BoolArithmeticHasNoKernel) {
  auto out = RunOp("Add", {Bool({true}, {1}), Bool({true}, {1})});
  EXPECT_FALSE(out.ok());
}

TEST(BinaryKernelTest, LargeBroadcastWithThreadsMatchesSerial) {
  std::vector<float> x(512 * 256), y(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i);
  RunOptions threaded;
  threaded.intra_op_threads = 4;
  auto out = RunOp("Mul", {F32(x, {512, 256}), F32(y, {256})}, {}, threaded);
  ASSERT_TRUE(out.ok()) << out.status();
  const float* z = (*out)[0].data<float>();
  for (int r = 0; r < 512; ++r) {
    for (int c = 0; c < 256; ++c) {
      ASSERT_EQ(z[r * 256 + c], x[r * 256 + c] * y[c]);
    }
  }
}

TEST(UnaryKernelTest, NegAbsReluEveryArithDtype) {
  for (DataType t : kArith) {
    auto x = MakeTensor(t, {4}, {-2, -0.5, 0, 3});
    const bool is_int = t == DT_INT32 || t == DT_INT64;
    const double h = is_int ? 0 : 0.5;  // ints hold -0.5 as 0
    auto neg = RunOp("Neg", {x});
    auto abs = RunOp("Abs", {x});
    auto relu = RunOp("Relu", {x});
    ASSERT_TRUE(neg.ok() && abs.ok() && relu.ok()) << DataTypeName(t);
    ExpectTensor((*neg)[0], {4}, {2, h, 0, -3});
    ExpectTensor((*abs)[0], {4}, {2, h, 0, 3});
    ExpectTensor((*relu)[0], {4}, {0, 0, 0, 3});
  }
}

TEST(UnaryKernelTest, TranscendentalsMatchStdEveryFloatDtype) {
  const std::vector<double> xs = {0.25, 0.5, 1, 2, 3.5};
  struct Case {
    const char* op;
    double (*f)(double);
  };
  const std::vector<Case> cases = {
      {"Exp", [](double v) { return std::exp(v); }},
      {"Log", [](double v) { return std::log(v); }},
      {"Sqrt", [](double v) { return std::sqrt(v); }},
      {"Rsqrt", [](double v) { return 1 / std::sqrt(v); }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"Erf", [](double v) { return std::erf(v); }},
  };
  // Eigen's float32 functions (and float64 std's) are within a few ulps,
  // not correctly rounded: 4 ulps of room.
  constexpr double kUlps = 4;
  for (DataType t : kFloats) {
    for (const Case& c : cases) {
      auto out = RunOp(c.op, {MakeTensor(t, {5}, xs)});
      ASSERT_TRUE(out.ok()) << c.op << out.status();
      std::vector<double> want;
      for (double v : xs) want.push_back(c.f(v));
      // Relative to each value (they reach exp(3.5) = 33): the inputs are
      // exact in every dtype, so the result is the function's value
      // rounded once to the dtype (16-bit ones are computed in float32):
      // DtypeTolerance's 2 eps relative, no absolute part.
      ExpectTensor((*out)[0], {5}, want,
                   ::sluice::testing::DtypeTolerance(t, /*reduction_length=*/1,
                                                     /*scale=*/0, kUlps));
    }
  }
}

TEST(UnaryKernelTest, GeluExactAndTanh) {
  const std::vector<double> xs = {-3, -1, 0, 0.5, 2};
  std::vector<double> exact, approx;
  for (double v : xs) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    approx.push_back(
        0.5 * v *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  for (DataType t : kFloats) {
    auto e = RunOp("Gelu", {MakeTensor(t, {5}, xs)});
    auto a = RunOp("Gelu", {MakeTensor(t, {5}, xs)},
                   {{"approximate", StringAttr("tanh")}});
    ASSERT_TRUE(e.ok() && a.ok()) << DataTypeName(t);
    ExpectTensor((*e)[0], {5}, exact, TolFor(t) * 2);
    ExpectTensor((*a)[0], {5}, approx, TolFor(t) * 2);
  }
  // The exact and tanh forms really differ (at x = -3 by ~4e-4).
  EXPECT_GT(std::abs(exact[0] - approx[0]), 1e-4);
}

TEST(UnaryKernelTest, EmptyAndScalarInputs) {
  auto e = RunOp("Exp", {F32({}, {0, 4})});
  ASSERT_TRUE(e.ok());
  ExpectTensor((*e)[0], {0, 4}, {});
  auto s = RunOp("Neg", {F32({2}, {})});
  ASSERT_TRUE(s.ok());
  ExpectTensor((*s)[0], {}, {-2});
}

TEST(UnaryKernelTest, LongInputCrossesBlocksAndThreads) {
  // 16-bit inputs are widened in 256-element blocks; 1000 is not a multiple.
  std::vector<double> xs(1000);
  for (int i = 0; i < 1000; ++i) xs[i] = (i % 50) / 10.0 - 2.5;
  RunOptions threaded;
  threaded.intra_op_threads = 3;
  for (DataType t : {DT_FLOAT16, DT_FLOAT}) {
    auto out = RunOp("Tanh", {MakeTensor(t, {1000}, xs)}, {}, threaded);
    ASSERT_TRUE(out.ok());
    std::vector<double> want;
    for (double v : xs) want.push_back(std::tanh(v));
    ExpectTensor((*out)[0], {1000}, want, t == DT_FLOAT ? 1e-6 : 2e-3);
  }
}

TEST(UnaryKernelTest, IntExpHasNoKernel) {
  auto out = RunOp("Exp", {I32({1}, {1})});
  EXPECT_FALSE(out.ok());
}

TEST(WhereKernelTest, BroadcastsAllThree) {
  // condition [2,1], x [3], y scalar -> [2,3].
  auto out = RunOp("Where", {Bool({true, false}, {2, 1}),
                             F32({1, 2, 3}, {3}), F32({-1}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3}, {1, 2, 3, -1, -1, -1});
}

TEST(WhereKernelTest, EveryDtype) {
  for (DataType t : SmallIntExactTypes()) {
    auto out = RunOp("Where", {Bool({true, false, true}, {3}),
                               MakeTensor(t, {3}, {1, 1, 1}),
                               MakeTensor(t, {3}, {0, 0, 0})});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << out.status();
    ExpectTensor((*out)[0], {3}, {1, 0, 1});
  }
}

TEST(WhereKernelTest, NonBoolConditionIsRejected) {
  auto out = RunOp("Where", {F32({1}, {1}), F32({1}, {1}), F32({1}, {1})});
  EXPECT_FALSE(out.ok());
}

}  // namespace
}  // namespace sluice::testing::elementwise_test
