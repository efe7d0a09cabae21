// MatMul, Softmax, LayerNorm and Cast kernels against naive references and
// hand-computed values.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::linalg_test {
namespace {

using ::testing::HasSubstr;

// Deterministic small values without a random engine.
std::vector<double> Ramp(int n, double scale = 0.25, int mod = 7) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = ((i * 5) % mod - mod / 2) * scale;
  return v;
}

// C[b] = op(A[b]) x op(B[b]), by the textbook triple loop. `a_batch` /
// `b_batch`: how many matrices each operand holds (1 broadcasts).
std::vector<double> NaiveMatMul(const std::vector<double>& a,
                                const std::vector<double>& b, int batch,
                                int a_batch, int b_batch, int m, int n, int k,
                                bool ta, bool tb) {
  std::vector<double> c(batch * m * n, 0);
  for (int z = 0; z < batch; ++z) {
    const double* ap = a.data() + (a_batch == 1 ? 0 : z) * m * k;
    const double* bp = b.data() + (b_batch == 1 ? 0 : z) * k * n;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int p = 0; p < k; ++p) {
          s += (ta ? ap[p * m + i] : ap[i * k + p]) *
               (tb ? bp[j * k + p] : bp[p * n + j]);
        }
        c[(z * m + i) * n + j] = s;
      }
  }
  return c;
}

TEST(MatMulKernelTest, TwoByTwoByHand) {
  auto out = RunOp("MatMul", {F32({1, 2, 3, 4}, {2, 2}), F32({5, 6, 7, 8}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 2}, {19, 22, 43, 50});
}

TEST(MatMulKernelTest, TransposeFlagsEveryDtype) {
  const int m = 3, n = 4, k = 5;
  auto a = Ramp(m * k), b = Ramp(k * n, 0.5, 5);
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BFLOAT16}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Shape sa = ta ? Shape({k, m}) : Shape({m, k});
        Shape sb = tb ? Shape({n, k}) : Shape({k, n});
        auto out = RunOp("MatMul", {MakeTensor(t, sa, a), MakeTensor(t, sb, b)},
                         {{"transpose_a", BoolAttr(ta)},
                          {"transpose_b", BoolAttr(tb)}});
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ((*out)[0].dtype(), t);
        // Exact in every dtype: the operands are multiples of 0.25 and 0.5
        // below 1, so every product, partial sum and result (|c| <= 3.75,
        // multiples of 0.125) fits bfloat16's 8 significant bits.
        ExpectTensor((*out)[0], {m, n},
                     NaiveMatMul(a, b, 1, 1, 1, m, n, k, ta, tb), kExact);
      }
    }
  }
}

TEST(MatMulKernelTest, BroadcastsBatchDimensions) {
  // a [2,1,2,3] x b [3,3,2] -> [2,3,2,2]: a's batch [2,1] vs b's [3].
  const int m = 2, k = 3, n = 2;
  auto a = Ramp(2 * m * k), b = Ramp(3 * k * n, 1, 9);
  auto out = RunOp("MatMul", {MakeTensor(DT_FLOAT, {2, 1, m, k}, a),
                              MakeTensor(DT_FLOAT, {3, k, n}, b)});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      std::vector<double> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
      std::vector<double> bj(b.begin() + j * k * n, b.begin() + (j + 1) * k * n);
      auto c = NaiveMatMul(ai, bj, 1, 1, 1, m, n, k, false, false);
      want.insert(want.end(), c.begin(), c.end());
    }
  ExpectTensor((*out)[0], {2, 3, m, n}, want, 1e-5);
}

TEST(MatMulKernelTest, LargeThreadedMatchesNaive) {
  const int m = 96, n = 80, k = 128, batch = 2;  // above the pool threshold
  auto a = Ramp(batch * m * k, 0.125, 11), b = Ramp(k * n, 0.25, 13);
  RunOptions threaded;
  threaded.intra_op_threads = 4;
  auto out = RunOp("MatMul", {MakeTensor(DT_FLOAT, {batch, m, k}, a),
                              MakeTensor(DT_FLOAT, {k, n}, b)},
                   {{"transpose_b", BoolAttr(false)}}, threaded);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {batch, m, n},
               NaiveMatMul(a, b, batch, batch, 1, m, n, k, false, false), 1e-3);
}

// Fewer products than threads, each large enough to be cut into tiles
// (the other branch of MatMul's batch split), and more products than
// threads, each split into tiles on fewer threads.
TEST(MatMulKernelTest, FewLargeBatchesAreEachCutIntoTiles) {
  const int m = 257, n = 131, k = 260, batch = 3;  // 8.75M multiply-adds each
  auto a = Ramp(batch * m * k, 0.125, 11), b = Ramp(batch * k * n, 0.25, 13);
  for (int threads : {2, 4, 16}) {
    RunOptions opts;
    opts.intra_op_threads = threads;
    auto out = RunOp("MatMul", {MakeTensor(DT_FLOAT, {batch, m, k}, a),
                                MakeTensor(DT_FLOAT, {batch, k, n}, b)},
                     {}, opts);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], {batch, m, n},
                 NaiveMatMul(a, b, batch, batch, batch, m, n, k, false, false),
                 1e-3);
  }
}

TEST(MatMulKernelTest, ManySmallBatchesThreaded) {
  const int m = 4, n = 3, k = 2, batch = 64;
  auto a = Ramp(batch * m * k), b = Ramp(batch * k * n, 0.5, 5);
  RunOptions threaded;
  threaded.intra_op_threads = 4;
  auto out = RunOp("MatMul", {MakeTensor(DT_DOUBLE, {batch, m, k}, a),
                              MakeTensor(DT_DOUBLE, {batch, k, n}, b)},
                   {}, threaded);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {batch, m, n},
               NaiveMatMul(a, b, batch, batch, batch, m, n, k, false, false),
               1e-12);
}

TEST(MatMulKernelTest, ZeroInnerDimensionGivesZeros) {
  auto out = RunOp("MatMul", {F32({}, {2, 0}), F32({}, {0, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(MatMulKernelTest, MismatchedInnerDimensionIsAnError) {
  auto out = RunOp("MatMul", {F32({1, 2, 3, 4, 5, 6}, {2, 3}),
                              F32({1, 2, 3, 4}, {2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("inner dimensions"));
  out = RunOp("MatMul", {F32({1, 2}, {2}), F32({1, 2}, {2, 1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SoftmaxKernelTest, LastAxisByHand) {
  auto out = RunOp("Softmax", {F32({0, 0, 1000, 1000, 1000, 1000}, {3, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {3, 2}, {0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 1e-6);
}

TEST(SoftmaxKernelTest, NegativeAndMiddleAxis) {
  // [2,3,2], softmax over axis 1 (== -2).
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = 0.1f * i * (i % 3 == 0 ? -1.f : 1.f);
  auto out = RunOp("Softmax", {F32(x, {2, 3, 2})}, {{"axis", IntAttr(-2)}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want(12);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 2; ++i) {
      double sum = 0;
      for (int j = 0; j < 3; ++j) sum += std::exp(x[o * 6 + j * 2 + i]);
      for (int j = 0; j < 3; ++j)
        want[o * 6 + j * 2 + i] = std::exp(x[o * 6 + j * 2 + i]) / sum;
    }
  ExpectTensor((*out)[0], {2, 3, 2}, want, 1e-6);
}

// Long rows with large magnitudes and -inf (a masked score, which must give
// exactly 0) match a float64 reference.
TEST(SoftmaxKernelTest, LongContiguousRowsMatchAReference) {
  constexpr int kRows = 3, kLen = 37;
  std::vector<float> x(kRows * kLen);
  for (int i = 0; i < kRows * kLen; ++i) x[i] = 0.37f * static_cast<float>((i * 13) % 29) - 4.f;
  x[5] = 1000.f;          // row 0 is dominated by one value
  x[kLen + 3] = -INFINITY;  // row 1 has a masked entry
  for (int i = 2 * kLen; i < 3 * kLen; ++i) x[i] -= 900.f;  // row 2 far below 0
  auto out = RunOp("Softmax", {F32(x, {kRows, kLen})});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want(x.size());
  for (int r = 0; r < kRows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < kLen; ++j) mx = std::max(mx, double(x[r * kLen + j]));
    for (int j = 0; j < kLen; ++j) sum += std::exp(double(x[r * kLen + j]) - mx);
    for (int j = 0; j < kLen; ++j) {
      want[r * kLen + j] = std::exp(double(x[r * kLen + j]) - mx) / sum;
    }
  }
  ExpectTensor((*out)[0], {kRows, kLen}, want, 1e-6);
  EXPECT_EQ((*out)[0].flat<float>()[kLen + 3], 0.f);
}

// Attention-sized rows (the vectorised float32 path): 12 x 128 scores with
// masked (-inf) entries and entries 90 to 110 below the row's maximum (whose
// exponentials underflow float) match a float64 reference, sum to 1, and
// the masked ones are exactly 0.
TEST(SoftmaxKernelTest, AttentionRowsWithMasksAndUnderflowMatchAReference) {
  constexpr int kRows = 12, kLen = 128;
  std::vector<float> x(kRows * kLen);
  for (int i = 0; i < kRows * kLen; ++i) {
    x[i] = 0.011f * static_cast<float>((i * 37) % 101) - 0.5f;
  }
  for (int r = 0; r < kRows; ++r) {
    x[r * kLen + (r * 7) % kLen] = -INFINITY;
    x[r * kLen + (r * 11 + 3) % kLen] = -90.f - static_cast<float>(2 * r);
  }
  auto out = RunOp("Softmax", {F32(x, {1, kRows, kLen})});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want(x.size());
  for (int r = 0; r < kRows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < kLen; ++j) mx = std::max(mx, double(x[r * kLen + j]));
    for (int j = 0; j < kLen; ++j) sum += std::exp(double(x[r * kLen + j]) - mx);
    for (int j = 0; j < kLen; ++j) {
      want[r * kLen + j] = std::exp(double(x[r * kLen + j]) - mx) / sum;
    }
  }
  ExpectTensor((*out)[0], {1, kRows, kLen}, want, 1e-6);
  const float* y = (*out)[0].flat<float>().data();
  for (int r = 0; r < kRows; ++r) {
    EXPECT_EQ(y[r * kLen + (r * 7) % kLen], 0.f) << "row " << r;
    double total = 0;
    for (int j = 0; j < kLen; ++j) total += y[r * kLen + j];
    EXPECT_NEAR(total, 1.0, 1e-5) << "row " << r;
  }
}

TEST(SoftmaxKernelTest, AxisOutOfRangeIsAnError) {
  auto out = RunOp("Softmax", {F32({1, 2}, {2})}, {{"axis", IntAttr(1)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("axis"));
}

TEST(LayerNormKernelTest, LastAxisByHand) {
  // Row {1,2,3}: mean 2, variance 2/3.
  auto out = RunOp("LayerNorm", {F32({1, 2, 3, 5, 5, 5}, {2, 3}),
                                 F32({1, 2, 1}, {3}), F32({0, 0, 1}, {3})},
                   {{"epsilon", FloatAttr(0)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const double s = 1 / std::sqrt(2.0 / 3.0);
  // A constant row has zero variance; with epsilon 0 that is 0/0.
  ExpectTensor((*out)[0], {2, 3}, {-s, 0, s + 1, NAN, NAN, NAN}, 1e-5);
}

TEST(LayerNormKernelTest, LeadingAxisNormalisesTrailingBlock) {
  std::vector<float> x = {1, 2, 3, 4, 10, 20, 30, 40};
  auto out = RunOp("LayerNorm", {F32(x, {2, 2, 2}), F32({1, 1, 1, 1}, {2, 2}),
                                 F32({0, 0, 0, 0}, {2, 2})},
                   {{"axis", IntAttr(1)}, {"epsilon", FloatAttr(1e-5f)}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += x[r * 4 + i] / 4.0;
    for (int i = 0; i < 4; ++i) var += std::pow(x[r * 4 + i] - mean, 2) / 4.0;
    for (int i = 0; i < 4; ++i)
      want.push_back((x[r * 4 + i] - mean) / std::sqrt(var + 1e-5));
  }
  ExpectTensor((*out)[0], {2, 2, 2}, want, 1e-5);
}

TEST(SoftmaxKernelTest, EveryFloatDtype) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BFLOAT16}) {
    auto out = RunOp("Softmax", {MakeTensor(t, {2}, {0, std::log(3.0)})});
    ASSERT_TRUE(out.ok()) << out.status();
    // log(3) is rounded to the dtype on the way in (softmax's slope
    // p (1 - p) = 0.19 carries that on) and the row sums 2 terms.
    ExpectTensor((*out)[0], {2}, {0.25, 0.75},
                 DtypeTolerance(t, /*reduction_length=*/2, /*scale=*/0));
  }
}

TEST(LayerNormKernelTest, EveryFloatDtype) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BFLOAT16}) {
    // Row {1, 3}: mean 2, variance 1 -> {-1, 1}, then * 2 + 0.5.
    auto out = RunOp("LayerNorm", {MakeTensor(t, {2}, {1, 3}),
                                   MakeTensor(t, {2}, {2, 2}),
                                   MakeTensor(t, {2}, {0.5, 0.5})},
                     {{"epsilon", FloatAttr(0)}});
    ASSERT_TRUE(out.ok()) << out.status();
    // Mean and variance of 2 terms; no cancellation in the result.
    ExpectTensor((*out)[0], {2}, {-1.5, 2.5},
                 DtypeTolerance(t, /*reduction_length=*/2, /*scale=*/0));
  }
}

TEST(LayerNormKernelTest, WrongScaleShapeIsAnError) {
  auto out = RunOp("LayerNorm", {F32({1, 2, 3, 4}, {2, 2}), F32({1, 1, 1}, {3}),
                                 F32({0, 0}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("scale"));
}

TEST(CastKernelTest, FloatToIntTruncatesTowardZero) {
  auto out = RunOp("Cast", {F32({2.7f, -2.7f, 0.5f, NAN, 1e20f}, {5})},
                   {{"DstT", TypeAttr(DT_INT32)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DT_INT32);
  ExpectTensor((*out)[0], {5}, {2, -2, 0, 0, 2147483647});
}

TEST(CastKernelTest, ToBoolIsNonZero) {
  auto out = RunOp("Cast", {F32({0, -0.0f, 0.1f, -3}, {4})},
                   {{"DstT", TypeAttr(DT_BOOL)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {4}, {0, 0, 1, 1});
}

TEST(CastKernelTest, EveryRegisteredPair) {
  const std::vector<DataType> types = {DT_FLOAT, DT_DOUBLE, DT_FLOAT16,
                                       DT_BFLOAT16, DT_INT32, DT_INT64, DT_BOOL};
  for (DataType src : types) {
    for (DataType dst : types) {
      // 0, 1 and 3 survive every conversion (bool maps 3 to 1).
      auto out = RunOp("Cast", {MakeTensor(src, {3}, {0, 1, 3})},
                       {{"DstT", TypeAttr(dst)}});
      ASSERT_TRUE(out.ok()) << DataTypeName(src) << "->" << DataTypeName(dst)
                            << ": " << out.status();
      EXPECT_EQ((*out)[0].dtype(), dst);
      const double three = (src == DT_BOOL || dst == DT_BOOL) ? 1 : 3;
      ExpectTensor((*out)[0], {3}, {0, 1, three});
    }
  }
}

TEST(CastKernelTest, HalfRoundTripKeepsRepresentableValues) {
  auto h = RunOp("Cast", {F32({0.5f, -1.25f, 1024}, {3})},
                 {{"DstT", TypeAttr(DT_FLOAT16)}});
  ASSERT_TRUE(h.ok());
  auto f = RunOp("Cast", {(*h)[0]}, {{"DstT", TypeAttr(DT_FLOAT)}});
  ASSERT_TRUE(f.ok());
  ExpectTensor((*f)[0], {3}, {0.5, -1.25, 1024});
}

}  // namespace
}  // namespace sluice::testing::linalg_test
