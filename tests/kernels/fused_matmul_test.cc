// FusedMatMul's CPU kernel (kernels/cpu/fused_matmul.cc) against a naive
// reference: act(a b + bias (+ residual)), for every activation, with and
// without the residual and a transposed b, on one thread and on a pool
// (the epilogue runs per tile), and its errors.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/kernels/kernel_test_util.h"

namespace sluice::testing::fused_matmul_test {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The reference in double: rows x k times b ([k, n], or [n, k] with tb).
std::vector<double> Naive(const std::vector<float>& a,
                          const std::vector<float>& b,
                          const std::vector<float>& bias,
                          const std::vector<float>* residual, int64_t rows,
                          int64_t k, int64_t n, bool tb,
                          const std::string& act) {
  std::vector<double> y(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) {
        s += double{a[r * k + i]} * (tb ? b[j * k + i] : b[i * n + j]);
      }
      s += bias[j];
      if (residual != nullptr) s += (*residual)[r * n + j];
      if (act == "relu") s = s < 0 ? 0 : s;
      if (act == "gelu_tanh") {
        s = 0.5 * s *
            (1 + std::tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)));
      }
      y[r * n + j] = s;
    }
  }
  return y;
}

struct Case {
  std::vector<int64_t> a_dims;  // [..., M, K]
  int64_t n;
  bool tb;
  bool residual;
  std::string act;
  int threads;
};

void RunCase(const Case& c, uint32_t seed) {
  const int64_t k = c.a_dims.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < c.a_dims.size(); ++i) rows *= c.a_dims[i];
  std::vector<int64_t> out_dims = c.a_dims;
  out_dims.back() = c.n;
  const std::vector<float> a = Random(rows * k, seed);
  const std::vector<float> b = Random(k * c.n, seed + 1);
  const std::vector<float> bias = Random(c.n, seed + 2);
  const std::vector<float> res = Random(rows * c.n, seed + 3);
  std::vector<Tensor> in = {
      F32(a, Shape(c.a_dims)),
      F32(b, c.tb ? Shape({c.n, k}) : Shape({k, c.n})), F32(bias, Shape({c.n}))};
  if (c.residual) in.push_back(F32(res, Shape(out_dims)));
  RunOptions options;
  options.intra_op_threads = c.threads;
  absl::StatusOr<std::vector<Tensor>> out = RunOp(
      "FusedMatMul", in,
      {{"transpose_b", BoolAttr(c.tb)},
       {"activation", StringAttr(c.act)},
       {"num_args", IntAttr(c.residual ? 2 : 1)}},
      options);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], Shape(out_dims),
               Naive(a, b, bias, c.residual ? &res : nullptr, rows, k, c.n,
                     c.tb, c.act),
               2e-5 * static_cast<double>(k));
}

TEST(FusedMatMulKernelTest, MatchesTheNaiveReferenceForEveryEpilogue) {
  uint32_t seed = 1;
  for (const char* act : {"none", "relu", "gelu_tanh"}) {
    for (bool residual : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(absl::StrCat(act, residual ? " residual" : "",
                                  tb ? " transpose_b" : ""));
        RunCase({{2, 5, 7}, 9, tb, residual, act, 1}, seed++);
      }
    }
  }
}

TEST(FusedMatMulKernelTest, EpilogueReachesEveryTileOnAPool) {
  // Large enough for PlanGemmGrid to cut the product into tiles.
  for (const char* act : {"relu", "gelu_tanh"}) {
    SCOPED_TRACE(act);
    RunCase({{4, 64, 96}, 160, false, true, act, 4}, 40);
  }
}

TEST(FusedMatMulKernelTest, EmptyInnerDimensionGivesTheEpilogueOfZero) {
  RunCase({{3, 0}, 4, false, true, "relu", 1}, 50);
}

TEST(FusedMatMulKernelTest, BiasOfTheWrongSizeIsAnError) {
  absl::StatusOr<std::vector<Tensor>> out = RunOp(
      "FusedMatMul",
      {F32(Random(6, 1), Shape({2, 3})), F32(Random(12, 2), Shape({3, 4})),
       F32(Random(3, 3), Shape({3}))},
      {{"activation", StringAttr("none")}, {"num_args", IntAttr(1)}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("bias"), std::string::npos)
      << out.status();
}

TEST(FusedMatMulKernelTest, ResidualOfAnotherShapeIsAnError) {
  absl::StatusOr<std::vector<Tensor>> out = RunOp(
      "FusedMatMul",
      {F32(Random(6, 1), Shape({2, 3})), F32(Random(12, 2), Shape({3, 4})),
       F32(Random(4, 3), Shape({4})), F32(Random(4, 4), Shape({1, 4}))},
      {{"activation", StringAttr("none")}, {"num_args", IntAttr(2)}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("residual"), std::string::npos)
      << out.status();
}

TEST(FusedMatMulKernelTest, UnknownActivationIsAnError) {
  absl::StatusOr<std::vector<Tensor>> out = RunOp(
      "FusedMatMul",
      {F32(Random(6, 1), Shape({2, 3})), F32(Random(12, 2), Shape({3, 4})),
       F32(Random(4, 3), Shape({4}))},
      {{"activation", StringAttr("gelu")}, {"num_args", IntAttr(1)}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::testing::fused_matmul_test
