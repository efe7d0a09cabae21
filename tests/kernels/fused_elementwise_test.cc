// FusedElementwise: the CPU kernel against the unfused ops run one by one
// (each instruction through its own CPU kernel), on every float dtype,
// broadcast classes, blocks that end mid-row and several threads; the
// layout the kernels share; and the generated CUDA source, which NVRTC
// compiles here without a GPU (skipping where NVRTC is missing), and whose
// errors come back as a Status with NVRTC's log. The GPU kernel itself is
// in the conformance table (conformance_test.cc, FusedElementwise_*).
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/attr_map.h"
#include "graph/elementwise_program.h"
#include "graph/shape_fns.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/cpu/fused_elementwise.h"
#include "kernels/fused_elementwise_source.h"
#include "testing/compare.h"

#ifdef SLUICE_WITH_CUDA
#include "device/cuda/nvrtc_library.h"
#include "kernels/cuda/fused_elementwise.h"
#include "kernels/cuda/nvrtc_kernel_cache.h"
#include "tests/kernels/nvrtc_required.h"
#endif

namespace sluice::testing::fused_elementwise_test {
namespace {

using ::testing::HasSubstr;

struct Program {
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
};

Attrs ProgramAttrs(const Program& p, int n, DataType t) {
  return {{"T", TypeAttr(t)},
          {"N", IntAttr(n)},
          {"ops", MakeStringListAttr(p.ops)},
          {"operands", IntListAttr(p.operands)}};
}

Tensor Random(DataType t, const Shape& s, uint32_t seed, bool positive) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<double> v(s.num_elements());
  for (double& x : v) x = positive ? std::fabs(u(rng)) + 0.1 : u(rng);
  return MakeTensor(t, s, v);
}

// The program run as the unfused ops, each on its own CPU kernel.
absl::StatusOr<Tensor> RunUnfused(const Program& p,
                                  const std::vector<Tensor>& inputs) {
  std::vector<Tensor> values = inputs;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    std::vector<Tensor> args = {values[p.operands[2 * i]]};
    if (p.operands[2 * i + 1] >= 0) args.push_back(values[p.operands[2 * i + 1]]);
    absl::StatusOr<std::vector<Tensor>> out = RunOp(p.ops[i], args, {});
    if (!out.ok()) return out.status();
    values.push_back((*out)[0]);
  }
  return values.back();
}

// Through the tests' one comparator (testing/compare.h): integers exactly,
// NaN only against NaN, infinities by sign, finite values within
// rtol * (1 + |unfused|).
void ExpectNear(const Tensor& got, const Tensor& want, double rtol,
                const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(::sluice::testing::CompareValues(
                ToDoubles(got), ToDoubles(want), want.dtype(),
                ::sluice::testing::RelativeAndAbsolute(rtol)),
            "")
      << what << " (fused against unfused)";
}

double Tolerance(DataType t) {
  // 16-bit: the unfused ops round after every op, the fused one once.
  return t == DT_DOUBLE ? 1e-12 : t == DT_FLOAT ? 1e-5 : 2e-2;
}

struct KernelCase {
  std::string name;
  Program program;
  std::vector<Shape> shapes;
  std::vector<bool> positive;  // per input: values > 0 (Log, Sqrt, Pow)
};

std::vector<KernelCase> Cases() {
  return {
      // MobileNetV2's ReLU6 as exported: Minimum(Maximum(x, 0), 6).
      {"relu6", {{"Maximum", "Minimum"}, {0, 1, 3, 2}},
       {Shape({2, 8, 9, 9}), Shape(), Shape()}, {false, false, false}},
      // DenseNet's pre-activation BatchNorm: Relu(x * scale + shift).
      {"batchnorm_relu", {{"Mul", "Add", "Relu"}, {0, 1, 3, 2, 4, -1}},
       {Shape({2, 16, 7, 7}), Shape({16, 1, 1}), Shape({16, 1, 1})},
       {false, false, false}},
      // The same channels last: a chain on x with per-channel rows, run
      // op by op over chunks of each row in place.
      {"batchnorm_relu_channels_last", {{"Mul", "Add", "Relu"}, {0, 1, 3, 2, 4, -1}},
       {Shape({2, 7, 7, 48}), Shape({48}), Shape({48})}, {false, false, false}},
      // A chain with the previous result on either side, scalars and rows
      // of 2500 (three chunks a row).
      {"chain_both_sides",
       {{"Sub", "Mul", "Maximum", "Div", "Neg"}, {1, 0, 4, 2, 2, 5, 6, 3, 7, -1}},
       {Shape({3, 5, 2500}), Shape({2500}), Shape(), Shape({1, 1, 2500})},
       {false, false, false, true}},
      // Every affine step (a chain's first steps, folded into one
      // alpha * x + beta a call), ending the chain.
      {"chain_affine_forms",
       {{"Neg", "Sub", "Sub", "Div", "Add", "Mul"},
        {0, -1, 4, 1, 2, 5, 6, 3, 1, 7, 2, 8}},
       {Shape({2, 3, 40}), Shape({40}), Shape(), Shape({40})},
       {false, false, false, true}},
      // A transformer's (x + bias) * scale + mask, mask [B, 1, 1, S].
      {"bias_scale_mask", {{"Add", "Mul", "Add"}, {0, 1, 4, 2, 5, 3}},
       {Shape({2, 4, 5, 33}), Shape({33}), Shape(), Shape({2, 1, 1, 33})},
       {false, false, false, false}},
      // Rows: a bias [64] and a mask [B,1,1,64] over blocks of whole rows
      // (read in place, one row per block), a result of rows only
      // (Tanh(bias) + mask) kept as a row, then applied to x.
      {"row_operands", {{"Tanh", "Add", "Mul", "Sub"}, {1, -1, 3, 2, 0, 4, 5, 1}},
       {Shape({2, 4, 8, 64}), Shape({64}), Shape({2, 1, 1, 64})},
       {false, false, false}},
      // Every unary op once, on values kept in their domains.
      {"unary_chain",
       {{"Abs", "Sqrt", "Log", "Neg", "Exp", "Tanh", "Sigmoid", "Erf",
         "Rsqrt", "Relu"},
        {0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1, 9,
         -1}},
       {Shape({3, 300})}, {false}},
      // Every binary op, broadcasting both ways ([4,1,5] and [1,3,1]) and
      // reusing a result twice.
      {"binary_diamond",
       {{"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum"},
        {0, 1, 0, 1, 2, 3, 4, 1, 1, 0, 6, 5, 7, 2}},
       {Shape({4, 1, 5}), Shape({1, 3, 1})}, {true, true}},
  };
}

TEST(FusedElementwiseCpuTest, MatchesTheUnfusedOps) {
  for (const KernelCase& c : Cases()) {
    for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BFLOAT16}) {
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        inputs.push_back(Random(t, c.shapes[i], 7 + i, c.positive[i]));
      }
      const std::string what = absl::StrCat(c.name, " ", DataTypeName(t));
      absl::StatusOr<std::vector<Tensor>> fused = RunOp(
          "FusedElementwise", inputs,
          ProgramAttrs(c.program, static_cast<int>(inputs.size()), t));
      ASSERT_TRUE(fused.ok()) << what << ": " << fused.status();
      // 16-bit references run in float32 on the same values, rounded once
      // at the end, as the fused kernel computes.
      std::vector<Tensor> wide;
      for (const Tensor& x : inputs) {
        wide.push_back(t == DT_DOUBLE ? x
                                      : MakeTensor(DT_FLOAT, x.shape(),
                                                   ToDoubles(x)));
      }
      absl::StatusOr<Tensor> want = RunUnfused(c.program, wide);
      ASSERT_TRUE(want.ok()) << what << ": " << want.status();
      ExpectNear((*fused)[0], MakeTensor(t, want->shape(), ToDoubles(*want)),
                 Tolerance(t), what);
    }
  }
}

TEST(FusedElementwiseCpuTest, SixteenBitMatchesTheUnfusedSixteenBitOps) {
  const KernelCase c = Cases()[1];  // batchnorm_relu
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      inputs.push_back(Random(t, c.shapes[i], 3 + i, false));
    }
    absl::StatusOr<std::vector<Tensor>> fused =
        RunOp("FusedElementwise", inputs, ProgramAttrs(c.program, 3, t));
    ASSERT_TRUE(fused.ok()) << fused.status();
    absl::StatusOr<Tensor> want = RunUnfused(c.program, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectNear((*fused)[0], *want, 2e-2, DataTypeName(t));
  }
}

TEST(FusedElementwiseCpuTest, ManyBlocksOnSeveralThreads) {
  // 10 rows of 3000: blocks of 1024 end mid-row, the [3000] input is
  // gathered across row ends.
  const Program p{{"Add", "Tanh", "Mul"}, {0, 1, 2, -1, 3, 0}};
  std::vector<Tensor> inputs = {Random(DT_FLOAT, Shape({10, 3000}), 1, false),
                                Random(DT_FLOAT, Shape({3000}), 2, false)};
  absl::StatusOr<std::vector<Tensor>> fused =
      RunOp("FusedElementwise", inputs, ProgramAttrs(p, 2, DT_FLOAT),
            {.intra_op_threads = 4});
  ASSERT_TRUE(fused.ok()) << fused.status();
  absl::StatusOr<Tensor> want = RunUnfused(p, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectNear((*fused)[0], *want, 1e-5, "threads");
}

// Chains (a flat input, then ops with per-channel rows or scalars) split
// over threads by chunks of rows, and of one long row.
TEST(FusedElementwiseCpuTest, ChainsOnSeveralThreads) {
  const Program bn{{"Mul", "Add", "Relu"}, {0, 1, 3, 2, 4, -1}};
  const Program scaled{{"Mul", "Relu"}, {0, 1, 2, -1}};
  struct Run {
    const Program* p;
    std::vector<Shape> shapes;
  };
  for (const Run& r : {Run{&bn, {Shape({1, 28, 28, 96}), Shape({96}), Shape({96})}},
                       Run{&bn, {Shape({1, 7, 7, 1500}), Shape({1500}), Shape({1500})}},
                       Run{&scaled, {Shape({50000}), Shape()}}}) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < r.shapes.size(); ++i) {
      inputs.push_back(Random(DT_FLOAT, r.shapes[i], 11 + i, false));
    }
    const std::string what = r.shapes[0].DebugString();
    for (int threads : {2, 4}) {
      absl::StatusOr<std::vector<Tensor>> fused = RunOp(
          "FusedElementwise", inputs,
          ProgramAttrs(*r.p, static_cast<int>(inputs.size()), DT_FLOAT),
          {.intra_op_threads = threads});
      ASSERT_TRUE(fused.ok()) << what << ": " << fused.status();
      absl::StatusOr<Tensor> want = RunUnfused(*r.p, inputs);
      ASSERT_TRUE(want.ok()) << what << ": " << want.status();
      ExpectNear((*fused)[0], *want, 1e-5, absl::StrCat(what, " threads ", threads));
    }
  }
}

TEST(FusedElementwiseCpuTest, EmptyOutputIsEmpty) {
  const Program p{{"Add", "Relu"}, {0, 1, 2, -1}};
  absl::StatusOr<std::vector<Tensor>> out = RunOp(
      "FusedElementwise",
      {MakeTensor(DT_FLOAT, Shape({0, 4}), {}), MakeTensor(DT_FLOAT, Shape({4}),
                                                           {1, 2, 3, 4})},
      ProgramAttrs(p, 2, DT_FLOAT));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, 4}));
}

TEST(FusedElementwiseCpuTest, AnInvalidProgramIsAnErrorNamingTheInstruction) {
  const Program p{{"Add", "Softmax"}, {0, 1, 2, -1}};
  absl::StatusOr<std::vector<Tensor>> out = RunOp(
      "FusedElementwise",
      {F32({1, 2}, Shape({2})), F32({3, 4}, Shape({2}))},
      ProgramAttrs(p, 2, DT_FLOAT));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("instruction 1"));
  EXPECT_THAT(out.status().message(), HasSubstr("Softmax"));
}

TEST(FusedElementwiseLayoutTest, MergesDimensionsAndClassifiesInputs) {
  const Shape out({2, 3, 4}), a({2, 3, 4}), bias({4}), scalar({1}),
      col({2, 3, 1});
  FusedElementwiseLayout l =
      LayoutFusedElementwise(out, {&a, &bias, &scalar, &col});
  EXPECT_EQ(l.num_elements, 24);
  ASSERT_EQ(l.rank, 2);  // [2, 3] merge: every input chains there
  EXPECT_EQ(l.dims[0], 6);
  EXPECT_EQ(l.dims[1], 4);
  EXPECT_EQ(l.strides[1][0], 0);
  EXPECT_EQ(l.strides[1][1], 1);
  EXPECT_EQ(l.strides[3][0], 1);
  EXPECT_EQ(l.strides[3][1], 0);
  EXPECT_EQ(l.ClassKey(), "r2_fxsx_i32");
}

TEST(FusedElementwiseSourceTest, GeneratesOneKernelForTheProgram) {
  absl::StatusOr<ElementwiseProgram> p =
      MakeElementwiseProgram(2, {"Add", "Relu"}, {0, 1, 2, -1});
  ASSERT_TRUE(p.ok()) << p.status();
  const Shape out({4, 8}), bias({8});
  const FusedElementwiseLayout l = LayoutFusedElementwise(out, {&out, &bias});
  absl::StatusOr<std::string> src = FusedElementwiseSource(*p, DT_FLOAT, l);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_THAT(*src, HasSubstr(absl::StrCat("extern \"C\" __global__ void ",
                                           kFusedElementwiseKernelName)));
  EXPECT_THAT(*src, HasSubstr("const C x0 = ld(in0[i]);"));
  EXPECT_THAT(*src, HasSubstr("const C x1 = ld(in1[o1]);"));
  EXPECT_THAT(*src, HasSubstr("const C t0 = x0 + x1;"));
  EXPECT_THAT(*src, HasSubstr("out[i] = st(t1);"));
  // Another dtype is another source (another cache entry).
  absl::StatusOr<std::string> half = FusedElementwiseSource(*p, DT_FLOAT16, l);
  ASSERT_TRUE(half.ok());
  EXPECT_NE(*half, *src);
  EXPECT_FALSE(FusedElementwiseSource(*p, DT_INT32, l).ok());
}

TEST(FusedElementwiseSourceTest, RefusesMoreDimensionsThanTheGpuIndexes) {
  absl::StatusOr<ElementwiseProgram> p =
      MakeElementwiseProgram(2, {"Add"}, {0, 1});
  ASSERT_TRUE(p.ok());
  // Nine dimensions that cannot merge: the inputs alternate broadcasting.
  const Shape out({2, 2, 2, 2, 2, 2, 2, 2, 2});
  const Shape a({2, 1, 2, 1, 2, 1, 2, 1, 2}), b({1, 2, 1, 2, 1, 2, 1, 2, 1});
  const FusedElementwiseLayout l = LayoutFusedElementwise(out, {&a, &b});
  ASSERT_EQ(l.rank, 9);
  absl::StatusOr<std::string> src = FusedElementwiseSource(*p, DT_FLOAT, l);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(src.status().message(), HasSubstr("at most 8"));
}

#ifdef SLUICE_WITH_CUDA

// Every dtype and broadcast class of the cases compiles with NVRTC (for
// sm_90, the H200's; no GPU needed).
TEST(FusedElementwiseNvrtcTest, GeneratedSourcesCompile) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  for (const KernelCase& c : Cases()) {
    absl::StatusOr<ElementwiseProgram> p = MakeElementwiseProgram(
        static_cast<int>(c.shapes.size()), c.program.ops, c.program.operands);
    ASSERT_TRUE(p.ok()) << p.status();
    Shape out = c.shapes[0];
    std::vector<const Shape*> shapes;
    for (const Shape& s : c.shapes) {
      shapes.push_back(&s);
      out = *BroadcastShapes(out, s);
    }
    const FusedElementwiseLayout l = LayoutFusedElementwise(out, shapes);
    for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BFLOAT16}) {
      absl::StatusOr<std::string> src = FusedElementwiseSource(*p, t, l);
      ASSERT_TRUE(src.ok()) << src.status();
      absl::StatusOr<cuda::NvrtcOutput> cubin =
          cuda::CompileToCubin(*src, kFusedElementwiseKernelName, {}, 90);
      EXPECT_TRUE(cubin.ok()) << c.name << " " << DataTypeName(t) << ": "
                              << cubin.status() << "\n" << *src;
    }
  }
}

// A source NVRTC rejects is an INVALID_ARGUMENT carrying NVRTC's log, not
// a crash: the generated source with one expression broken.
TEST(FusedElementwiseNvrtcTest, ACompileErrorReturnsTheCompilerLog) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  absl::StatusOr<ElementwiseProgram> p =
      MakeElementwiseProgram(2, {"Add", "Relu"}, {0, 1, 2, -1});
  ASSERT_TRUE(p.ok());
  const Shape s({16});
  absl::StatusOr<std::string> src =
      FusedElementwiseSource(*p, DT_FLOAT, LayoutFusedElementwise(s, {&s, &s}));
  ASSERT_TRUE(src.ok());
  std::string broken = *src;
  const size_t at = broken.find("x0 + x1;");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 8, "x0 + ;");
  absl::StatusOr<cuda::NvrtcOutput> out =
      cuda::CompileToCubin(broken, kFusedElementwiseKernelName, {}, 90);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("error"));
}

// CompileFusedElementwise refuses what it cannot generate with a Status,
// before NVRTC or a GPU is involved.
TEST(FusedElementwiseNvrtcTest, CompileRefusesAnUnsupportedDtype) {
  absl::StatusOr<ElementwiseProgram> p =
      MakeElementwiseProgram(1, {"Relu"}, {0, -1});
  ASSERT_TRUE(p.ok());
  const Shape s({4});
  absl::StatusOr<const cuda::CompiledCudaKernel*> k =
      cuda::CompileFusedElementwise(*p, DT_INT64,
                                    LayoutFusedElementwise(s, {&s}), 90);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("int64"));
}

#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::testing::fused_elementwise_test
