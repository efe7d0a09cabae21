// Reductions and the shape and indexing kernels: Reshape, Transpose,
// Concat, Split, Slice, Gather, Expand, Squeeze, Unsqueeze, Identity.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::shape_ops_test {
namespace {

using ::testing::HasSubstr;

std::vector<double> Iota(int n) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(ReduceKernelTest, SumMeanMaxByHandEveryDtype) {
  // [[1, 5, 3], [4, 2, 6]]
  for (DataType t : {DT_FLOAT, DT_INT32, DT_INT64}) {
    Tensor x = MakeTensor(t, {2, 3}, {1, 5, 3, 4, 2, 6});
    auto s0 = RunOp("ReduceSum", {x}, {{"axes", IntListAttr({0})}});
    auto s1 = RunOp("ReduceSum", {x}, {{"axes", IntListAttr({-1})},
                                       {"keepdims", BoolAttr(true)}});
    auto sa = RunOp("ReduceSum", {x});
    auto m1 = RunOp("ReduceMean", {x}, {{"axes", IntListAttr({1})}});
    auto x0 = RunOp("ReduceMax", {x}, {{"axes", IntListAttr({0})}});
    auto xa = RunOp("ReduceMax", {x}, {{"keepdims", BoolAttr(true)}});
    ASSERT_TRUE(s0.ok() && s1.ok() && sa.ok() && m1.ok() && x0.ok() && xa.ok())
        << DataTypeName(t);
    ExpectTensor((*s0)[0], {3}, {5, 7, 9});
    ExpectTensor((*s1)[0], {2, 1}, {9, 12});
    ExpectTensor((*sa)[0], {}, {21});
    ExpectTensor((*m1)[0], {2}, {3, 4});
    ExpectTensor((*x0)[0], {3}, {4, 5, 6});
    ExpectTensor((*xa)[0], {1, 1}, {6});
  }
}

TEST(ReduceKernelTest, NonAdjacentAxesMatchNaive) {
  // [2,3,4], reduce axes {0, 2}.
  auto x = Iota(24);
  auto out = RunOp("ReduceSum", {MakeTensor(DT_FLOAT, {2, 3, 4}, x)},
                   {{"axes", IntListAttr({0, -1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want(3, 0);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) want[b] += x[(a * 3 + b) * 4 + c];
  ExpectTensor((*out)[0], {3}, want);
  auto mx = RunOp("ReduceMax", {MakeTensor(DT_INT64, {2, 3, 4}, x)},
                  {{"axes", IntListAttr({1})}, {"keepdims", BoolAttr(true)}});
  ASSERT_TRUE(mx.ok()) << mx.status();
  ExpectTensor((*mx)[0], {2, 1, 4}, {8, 9, 10, 11, 20, 21, 22, 23});
}

TEST(ReduceKernelTest, IntegerMeanTruncates) {
  auto out = RunOp("ReduceMean", {I32({1, 2, -1, -2}, {2, 2})},
                   {{"axes", IntListAttr({1})}});
  ASSERT_TRUE(out.ok());
  ExpectTensor((*out)[0], {2}, {1, -1});
}

TEST(ReduceKernelTest, EmptyAxisRules) {
  Tensor x = F32({}, {3, 0});
  auto sum = RunOp("ReduceSum", {x}, {{"axes", IntListAttr({1})}});
  ASSERT_TRUE(sum.ok()) << sum.status();
  ExpectTensor((*sum)[0], {3}, {0, 0, 0});
  auto mean = RunOp("ReduceMean", {x}, {{"axes", IntListAttr({1})}});
  ASSERT_TRUE(mean.ok());
  ExpectTensor((*mean)[0], {3}, {NAN, NAN, NAN});
  // ONNX (18 on): the max of an empty set is the lowest value, -inf.
  auto mx = RunOp("ReduceMax", {x}, {{"axes", IntListAttr({1})}});
  ASSERT_TRUE(mx.ok()) << mx.status();
  ExpectTensor((*mx)[0], {3}, {-INFINITY, -INFINITY, -INFINITY});
  auto imean = RunOp("ReduceMean", {I32({}, {2, 0})}, {{"axes", IntListAttr({1})}});
  EXPECT_EQ(imean.status().code(), absl::StatusCode::kInvalidArgument);
  // Reducing the non-empty axis of an empty tensor is fine for Max.
  auto ok = RunOp("ReduceMax", {F32({}, {0, 3})}, {{"axes", IntListAttr({1})}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectTensor((*ok)[0], {0}, {});
}

TEST(ReduceKernelTest, BadAxesAreErrors) {
  auto out = RunOp("ReduceSum", {F32({1, 2}, {2})}, {{"axes", IntListAttr({2})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunOp("ReduceSum", {F32({1, 2}, {2})}, {{"axes", IntListAttr({0, -1})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReshapeKernelTest, SharesBufferAndInfersMinusOne) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto out = RunOp("Reshape", {x}, {{"shape", IntListAttr({3, -1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  auto bad = RunOp("Reshape", {x}, {{"shape", IntListAttr({4, -1})}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TransposeKernelTest, PermutesEveryDtype) {
  for (DataType t : SmallIntExactTypes()) {
    const bool is_bool = t == DT_BOOL;
    std::vector<double> v = {0, 1, 1, 0, 1, 1};
    if (!is_bool) v = {1, 2, 3, 4, 5, 6};
    auto out = RunOp("Transpose", {MakeTensor(t, {2, 3}, v)});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << out.status();
    ExpectTensor((*out)[0], {3, 2}, {v[0], v[3], v[1], v[4], v[2], v[5]});
  }
}

TEST(TransposeKernelTest, ThreeDimsAgainstNaive) {
  auto x = Iota(24);
  auto out = RunOp("Transpose", {MakeTensor(DT_INT64, {2, 3, 4}, x)},
                   {{"perm", IntListAttr({1, 2, 0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want;
  for (int b = 0; b < 3; ++b)
    for (int c = 0; c < 4; ++c)
      for (int a = 0; a < 2; ++a) want.push_back(x[(a * 3 + b) * 4 + c]);
  ExpectTensor((*out)[0], {3, 4, 2}, want);
}

// The permutations that move the input's innermost axis (NCHW <-> NHWC, a
// channel shuffle inside each pixel, a matrix transpose under batch axes),
// which StridedCopy runs as a tiled transpose, against the index formula,
// at sizes that are and are not multiples of its tiles and bands, on one
// thread and on pools that split the tiles.
TEST(TransposeKernelTest, InnermostAxisMovesMatchTheIndexFormulaOnEveryPoolSize) {
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  const std::vector<Case> cases = {
      {{1, 3, 7, 9}, {0, 2, 3, 1}},        // NCHW -> NHWC, 3 channels
      {{2, 40, 5, 6}, {0, 2, 3, 1}},       // two images, 40 channels
      {{1, 5, 6, 40}, {0, 3, 1, 2}},       // NHWC -> NCHW
      {{1, 4, 4, 2, 29}, {0, 1, 2, 4, 3}}, // a shuffle of 2 x 29 per pixel
      {{3, 17, 300}, {0, 2, 1}},           // rows past a band of columns
      {{300, 17}, {1, 0}},
      {{1, 1, 33}, {2, 0, 1}},             // size-1 axes dropped
      {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}},
      // Past ParallelFor's threshold, so the pools split the tiles.
      {{2, 64, 56, 56}, {0, 2, 3, 1}},
      {{1, 56, 56, 72}, {0, 3, 1, 2}},
      // Two to four planes interleaved, in runs of rows: past one run,
      // not a multiple of it, under a batch axis.
      {{2, 3, 70, 90}, {0, 2, 3, 1}},
      {{1, 2, 5000}, {0, 2, 1}},
      {{4, 4099}, {1, 0}},
      {{3, 2}, {1, 0}},
  };
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.dims) n *= d;
    std::vector<double> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<double>(i);
    const int r = static_cast<int>(c.dims.size());
    std::vector<int64_t> in_strides(r, 1), out_dims(r);
    for (int d = r - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * c.dims[d + 1];
    for (int d = 0; d < r; ++d) out_dims[d] = c.dims[c.perm[d]];
    std::vector<double> want(n);
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0; o < n; ++o) {
      int64_t at = 0;
      for (int d = 0; d < r; ++d) at += idx[d] * in_strides[c.perm[d]];
      want[o] = x[at];
      for (int d = r - 1; d >= 0 && ++idx[d] == out_dims[d]; --d) idx[d] = 0;
    }
    for (int threads : {1, 2, 3, 8}) {
      SCOPED_TRACE(::testing::Message() << "dims " << ::testing::PrintToString(c.dims)
                                        << " perm " << ::testing::PrintToString(c.perm)
                                        << " threads " << threads);
      RunOptions options;
      options.intra_op_threads = threads;
      for (DataType t : {DT_FLOAT, DT_INT64, DT_UINT8}) {
        std::vector<double> xs = x, ws = want;
        if (t == DT_UINT8) {
          for (double& v : xs) v = std::fmod(v, 251.0);
          for (double& v : ws) v = std::fmod(v, 251.0);
        }
        auto out = RunOp("Transpose", {MakeTensor(t, Shape(c.dims), xs)},
                         {{"perm", IntListAttr(c.perm)}}, options);
        ASSERT_TRUE(out.ok()) << out.status();
        ExpectTensor((*out)[0], Shape(out_dims), ws);
      }
    }
  }
}

// An Expand whose last axis repeats one input value (stride 0) while
// another axis is the input's contiguous one takes the same tiled path
// (200 columns), or the interleaving one (3).
TEST(TransposeKernelTest, ExpandAlongTheLastAxisOnEveryPoolSize) {
  for (const int64_t m : {200, 3}) {
  SCOPED_TRACE(::testing::Message() << "columns " << m);
  const int64_t n = 300;
  std::vector<double> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<double>(i) - 7;
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i) want.insert(want.end(), m, x[i]);
  for (int threads : {1, 2, 8}) {
    SCOPED_TRACE(::testing::Message() << "threads " << threads);
    RunOptions options;
    options.intra_op_threads = threads;
    auto out = RunOp("Expand", {MakeTensor(DT_FLOAT, {n, 1}, x)},
                     {{"shape", IntListAttr({n, m})}}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], {n, m}, want);
  }
  }
}

TEST(TransposeKernelTest, BadPermIsAnError) {
  auto out = RunOp("Transpose", {F32({1, 2}, {1, 2})},
                   {{"perm", IntListAttr({0, 0})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConcatKernelTest, MiddleAxisAndEmptyInput) {
  auto out = RunOp("Concat", {F32({1, 2, 3, 4}, {2, 1, 2}), F32({}, {2, 0, 2}),
                              F32({5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 2})},
                   {{"axis", IntAttr(-2)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3, 2}, {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
}

TEST(ConcatKernelTest, EveryDtypeAndMismatchError) {
  for (DataType t : SmallIntExactTypes()) {
    auto out = RunOp("Concat", {MakeTensor(t, {1}, {1}), MakeTensor(t, {2}, {0, 1})},
                     {{"axis", IntAttr(0)}});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << out.status();
    ExpectTensor((*out)[0], {3}, {1, 0, 1});
  }
  auto bad = RunOp("Concat", {F32({1, 2}, {1, 2}), F32({1, 2, 3}, {1, 3})},
                   {{"axis", IntAttr(0)}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

// Concat cuts its output into blocks of bytes over the pool: a block may
// start or end inside any input's part of a row. Channel concats at batch 1
// (one row, DenseNet's) and a last-axis concat of 1-byte values with parts
// shorter than a block, on pools of 1 to 16 threads.
TEST(ConcatKernelTest, BlocksOfTheOutputMatchOnAnyPool) {
  struct Case {
    DataType t;
    std::vector<Shape> inputs;
    int axis;
  };
  const Case cases[] = {
      {DT_FLOAT, {Shape({1, 33, 29, 31}), Shape({1, 0, 29, 31}),
                  Shape({1, 7, 29, 31}), Shape({1, 64, 29, 31})}, 1},
      {DT_INT8, {Shape({37, 3, 101}), Shape({37, 3, 1}), Shape({37, 3, 250})},
       2},
      {DT_INT32, {Shape({2, 5000}), Shape({3, 5000})}, 0},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> in;
    std::vector<std::vector<double>> values;
    int64_t rows = 1;
    for (int d = 0; d < c.axis; ++d) rows *= c.inputs[0].dim(d);
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      std::vector<double> v(c.inputs[i].num_elements());
      for (size_t j = 0; j < v.size(); ++j) v[j] = (j * 7 + i * 3) % 100;
      values.push_back(v);
      in.push_back(MakeTensor(c.t, c.inputs[i], v));
    }
    // Row r of the output is row r of each input in turn.
    std::vector<double> want;
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < values.size(); ++i) {
        const int64_t row = c.inputs[i].num_elements() / rows;
        want.insert(want.end(), values[i].begin() + r * row,
                    values[i].begin() + (r + 1) * row);
      }
    }
    Shape out_shape = c.inputs[0];
    int64_t axis_size = 0;
    for (const Shape& s : c.inputs) axis_size += s.dim(c.axis);
    out_shape.set_dim(c.axis, axis_size);
    for (int threads : {1, 2, 3, 16}) {
      RunOptions opts;
      opts.intra_op_threads = threads;
      auto out = RunOp("Concat", in, {{"axis", IntAttr(c.axis)}}, opts);
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectTensor((*out)[0], out_shape, want);
    }
  }
}

TEST(SplitKernelTest, EqualPartsAndSizes) {
  RunOptions three;
  three.num_outputs = 3;
  auto eq = RunOp("Split", {MakeTensor(DT_INT32, {2, 3}, Iota(6))},
                  {{"axis", IntAttr(1)}, {"num_split", IntAttr(3)}}, three);
  ASSERT_TRUE(eq.ok()) << eq.status();
  ASSERT_EQ(eq->size(), 3u);
  ExpectTensor((*eq)[0], {2, 1}, {0, 3});
  ExpectTensor((*eq)[2], {2, 1}, {2, 5});
  auto sz = RunOp("Split", {MakeTensor(DT_BOOL, {4}, {1, 0, 0, 1})},
                  {{"num_split", IntAttr(2)}, {"sizes", IntListAttr({3, 1})}});
  ASSERT_TRUE(sz.ok()) << sz.status();
  ExpectTensor((*sz)[0], {3}, {1, 0, 0});
  ExpectTensor((*sz)[1], {1}, {1});
  auto bad = RunOp("Split", {F32({1, 2, 3}, {3})}, {{"num_split", IntAttr(2)}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SliceKernelTest, NegativeBoundsAndSteps) {
  // x = 0..9; [-3:] -> 7,8,9; [8:1:-3] -> 8,5,2; [::-1] with clamping.
  Tensor x = MakeTensor(DT_FLOAT, {10}, Iota(10));
  auto a = RunOp("Slice", {x}, {{"begin", IntListAttr({-3})},
                                {"end", IntListAttr({100})}});
  auto b = RunOp("Slice", {x}, {{"begin", IntListAttr({8})},
                                {"end", IntListAttr({1})},
                                {"steps", IntListAttr({-3})}});
  auto c = RunOp("Slice", {x}, {{"begin", IntListAttr({-1})},
                                {"end", IntListAttr({-100})},
                                {"steps", IntListAttr({-4})}});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status() << b.status() << c.status();
  ExpectTensor((*a)[0], {3}, {7, 8, 9});
  ExpectTensor((*b)[0], {3}, {8, 5, 2});
  ExpectTensor((*c)[0], {3}, {9, 5, 1});
}

TEST(SliceKernelTest, AxesSelectDimensionsAndEmptyResult) {
  // [3,4]: rows 0..3, columns 1..3 step 2 via axes {1}.
  Tensor x = MakeTensor(DT_INT64, {3, 4}, Iota(12));
  auto out = RunOp("Slice", {x}, {{"begin", IntListAttr({1})},
                                  {"end", IntListAttr({4})},
                                  {"axes", IntListAttr({-1})},
                                  {"steps", IntListAttr({2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {3, 2}, {1, 3, 5, 7, 9, 11});
  auto empty = RunOp("Slice", {x}, {{"begin", IntListAttr({2})},
                                    {"end", IntListAttr({1})}});
  ASSERT_TRUE(empty.ok()) << empty.status();
  ExpectTensor((*empty)[0], {0, 4}, {});
  auto zero = RunOp("Slice", {x}, {{"begin", IntListAttr({0})},
                                   {"end", IntListAttr({1})},
                                   {"steps", IntListAttr({0})}});
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GatherKernelTest, AxisZeroAndNegativeIndices) {
  Tensor params = MakeTensor(DT_FLOAT, {3, 2}, Iota(6));
  auto out = RunOp("Gather", {params, I64({2, -3, 1, 2}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 2, 2}, {4, 5, 0, 1, 2, 3, 4, 5});
}

TEST(GatherKernelTest, LastAxisEveryDtype) {
  for (DataType t : SmallIntExactTypes()) {
    std::vector<double> v = t == DT_BOOL ? std::vector<double>{1, 0, 0, 1}
                                         : std::vector<double>{1, 2, 3, 4};
    auto out = RunOp("Gather", {MakeTensor(t, {2, 2}, v), I32({1}, {})},
                     {{"axis", IntAttr(-1)}});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << out.status();
    ExpectTensor((*out)[0], {2}, {v[1], v[3]});
  }
}

TEST(GatherKernelTest, OutOfRangeIndexNamesValueAndRange) {
  auto out = RunOp("Gather", {F32({1, 2, 3}, {3}), I32({0, 3}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("index 3"));
  EXPECT_THAT(out.status().message(), HasSubstr("[-3, 3)"));
  out = RunOp("Gather", {F32({1, 2, 3}, {3}), I64({-4}, {1})});
  EXPECT_THAT(out.status().message(), HasSubstr("index -4"));
}

TEST(ExpandKernelTest, BroadcastsBothWays) {
  // [3,1] with shape [2,1,4] -> [2,3,4].
  auto out = RunOp("Expand", {F32({1, 2, 3}, {3, 1})},
                   {{"shape", IntListAttr({2, 1, 4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) want.push_back(b + 1);
  ExpectTensor((*out)[0], {2, 3, 4}, want);
  auto bad = RunOp("Expand", {F32({1, 2, 3}, {3})}, {{"shape", IntListAttr({2})}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SqueezeKernelTest, DefaultAndExplicitAxes) {
  Tensor x = F32({1, 2}, {1, 2, 1});
  auto all = RunOp("Squeeze", {x});
  auto one = RunOp("Squeeze", {x}, {{"axes", IntListAttr({-1})}});
  ASSERT_TRUE(all.ok() && one.ok());
  ExpectTensor((*all)[0], {2}, {1, 2});
  ExpectTensor((*one)[0], {1, 2}, {1, 2});
  auto bad = RunOp("Squeeze", {x}, {{"axes", IntListAttr({1})}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UnsqueezeKernelTest, InsertsOutputPositions) {
  auto out = RunOp("Unsqueeze", {MakeTensor(DT_BOOL, {2}, {1, 0})},
                   {{"axes", IntListAttr({0, -1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 2, 1}, {1, 0});
}

TEST(IdentityKernelTest, ForwardsBufferEveryDtype) {
  for (DataType t : SmallIntExactTypes()) {
    Tensor x = MakeTensor(t, {2}, {1, 0});
    auto out = RunOp("Identity", {x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  }
}

}  // namespace
}  // namespace sluice::testing::shape_ops_test
