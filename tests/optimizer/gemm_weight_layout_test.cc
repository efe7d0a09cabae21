#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "testing/compare.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::gemm_weight_layout_test {
namespace {

// x [4, k] x w [k, n] (+ b [n] when `bias`), the result node "y";
// `shared` adds a second reader of w.
GraphMaker WideLinear(int64_t k, int64_t n, bool shared, bool bias = true) {
  GraphMaker m;
  m.Input("x", {4, k})
      .Const("w", Values(static_cast<int>(k * n), 3, -1, 1), {k, n});
  if (bias) {
    m.Const("b", Values(static_cast<int>(n), 4, -1, 1), {n})
        .Op("mm", "MatMul", {"x", "w"})
        .Op("y", "Add", {"mm", "b"});
  } else {
    m.Op("y", "MatMul", {"x", "w"});
  }
  m.Output("y");
  if (shared) m.Op("neg_w", "Neg", {"w"}).Output("neg_w");
  return m;
}

PassOptions Transposing() {
  PassOptions options;
  options.transpose_weight_row_bytes = 2048;
  return options;
}

// The product's weight input (y's, or mm's when y is the unfused bias
// Add): its Const's name and value.
std::pair<std::string, const Tensor*> Weight(const Graph& g) {
  const Node* y = g.FindNode("y");
  if (y != nullptr && y->op() == "Add") y = g.FindNode("mm");
  if (y == nullptr || y->num_inputs() < 2) return {"", nullptr};
  return {g.node(y->input(1).node).name(), ConstValueOf(g, y->input(1))};
}

// Whether `wt` is `w` [k, n] transposed, every element (the edges of the
// 8 x 8 tiles included).
void ExpectTransposed(const Tensor& w, const Tensor& wt) {
  const int64_t k = w.dim(0), n = w.dim(1);
  ASSERT_EQ(wt.shape(), Shape({n, k}));
  int64_t wrong = 0;
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      wrong += wt.data<float>()[j * k + i] != w.data<float>()[i * n + j];
    }
  }
  EXPECT_EQ(wrong, 0);
}

// What the pass left for product y of `given` (op `op`): y reads
// "y/weight_t", given's w transposed, with transpose_b, and w is gone.
void ExpectStoredTransposed(const Graph& given, const Graph& out,
                            const std::string& op) {
  const Node* y = out.FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op(), op);
  EXPECT_TRUE(y->attrs().GetBool("transpose_b").value());
  auto [name, wt] = Weight(out);
  EXPECT_EQ(name, "y/weight_t");
  ASSERT_NE(wt, nullptr);
  ExpectTransposed(*ConstValueOf(given, {given.FindNode("w")->id(), 0}), *wt);
  // The old Const is gone with the pass's input graph.
  EXPECT_EQ(out.FindNode("w"), nullptr);
}

TEST(GemmWeightLayoutPassTest,
     StoresAFusedMatMulsWeightWith4KiBRowsTransposed) {
  auto g = WideLinear(768, 1024, false).Build();
  PassOutput fused = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(fused.graph, nullptr);
  ASSERT_EQ(fused.graph->FindNode("y")->op(), "FusedMatMul");
  PassOutput out =
      RunPass(*MakeGemmWeightLayoutPass(), *fused.graph, Transposing());
  ASSERT_NE(out.graph, nullptr);
  ExpectStoredTransposed(*g, *out.graph, "FusedMatMul");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 28));
}

// A Linear layer without a bias (Llama's projections; a Gemm whose zero
// bias the exporter dropped) is a plain MatMul, and its weight is as slow
// to multiply untransposed.
TEST(GemmWeightLayoutPassTest, StoresAPlainMatMulsWeightTransposed) {
  // Rows of 4096 and 2048 bytes (Llama's 1376 -> 512 down projection).
  for (auto [k, n] : {std::pair<int64_t, int64_t>{768, 1024}, {1376, 512}}) {
    SCOPED_TRACE(absl::StrCat(k, " x ", n));
    auto g = WideLinear(k, n, false, /*bias=*/false).Build();
    PassOutput out = RunPass(*MakeGemmWeightLayoutPass(), *g, Transposing());
    ASSERT_NE(out.graph, nullptr);
    ExpectStoredTransposed(*g, *out.graph, "MatMul");
    ASSERT_EQ(out.changes.size(), 1u);
    EXPECT_NE(out.changes[0].find(
                  absl::StrCat("'w' [", k, ", ", n,
                               "] transposed as 'y/weight_t' for 'y' (MatMul; "
                               "rows of a multiple of 2048 bytes")),
              std::string::npos)
        << out.changes[0];
    // The two layouts sum k products of values in [-1, 1] in different
    // orders: partial sums of about sqrt(k) / 3, so float32's rounding
    // differs by about sqrt(k) * eps * sqrt(k) / 3 (2.9e-5 at k = 1376 on
    // an AVX-512 host, where an absolute 1e-5 failed); three times k * eps.
    const double atol = 3.0 * static_cast<double>(k) * 1.2e-7;
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 30), 1e-4, atol);
  }
}

TEST(GemmWeightLayoutPassTest,
     KeepsWeightsOfOtherRowsSharedOrOptionOffAsTheyAre) {
  struct Case {
    const char* what;
    int64_t k, n;
    bool shared, option, bias;
  };
  for (const Case& c :
       {Case{"768-float rows", 1024, 768, false, true, true},
        Case{"768-float rows, no bias", 1024, 768, false, true, false},
        Case{"1376-float rows (Llama's up projection)", 512, 1376, false, true,
             false},
        Case{"option off", 768, 1024, false, false, true},
        Case{"option off, no bias", 768, 1024, false, false, false},
        Case{"second reader", 768, 1024, true, true, true},
        Case{"second reader, no bias", 768, 1024, true, true, false}}) {
    SCOPED_TRACE(c.what);
    auto g = WideLinear(c.k, c.n, c.shared, c.bias).Build();
    PassOutput fused = RunPass(*MakeMatMulBiasFusionPass(), *g);
    const Graph& in = fused.graph != nullptr ? *fused.graph : *g;
    PassOutput out = RunPass(*MakeGemmWeightLayoutPass(), in,
                             c.option ? Transposing() : PassOptions{});
    EXPECT_EQ(out.graph, nullptr);
    EXPECT_TRUE(out.changes.empty());
    auto [name, w] = Weight(in);
    EXPECT_EQ(name, "w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->shape(), Shape({c.k, c.n}));
  }
}

// An already transposed weight ([n, k] read with transpose_b, as ONNX Gemm's
// transB gives) is what the target wants: left alone.
TEST(GemmWeightLayoutPassTest, LeavesATransposeBWeightAlone) {
  auto g =
      GraphMaker()
          .Input("x", {4, 768})
          .Const("w", Values(1024 * 768, 5, -1, 1), {1024, 768})
          .Op("y", "MatMul", {"x", "w"}, {{"transpose_b", MakeBoolAttr(true)}})
          .Output("y")
          .Build();
  PassOutput out = RunPass(*MakeGemmWeightLayoutPass(), *g, Transposing());
  EXPECT_EQ(out.graph, nullptr);
}

// Nine weights of 8 MiB: a run transposes 64 MiB of them (a quarter of the
// constants' bytes is less), the next the ninth, the third nothing; the
// pipeline runs the rounds and records them as one pass.
TEST(GemmWeightLayoutPassTest, TransposesABoundedShareOfTheWeightsPerRound) {
  constexpr int kLayers = 9;
  constexpr int64_t kK = 2048, kN = 1024;  // 8 MiB of float32
  GraphMaker m;
  m.Input("x", {2, kK});
  for (int i = 0; i < kLayers; ++i) {
    const std::string w = absl::StrCat("w", i), y = absl::StrCat("y", i);
    // Values of their own, or common_subexpressions would merge them.
    m.Const(w, std::vector<float>(kK * kN, (i + 1.0f) / kK), {kK, kN})
        .Op(y, "MatMul", {"x", w})
        .Output(y);
  }
  auto g = m.Build();
  auto transposed = [](const Graph& graph) {
    int count = 0;
    for (int i = 0; i < kLayers; ++i) {
      count += graph.FindNode(absl::StrCat("y", i))
                   ->attrs()
                   .GetBool("transpose_b")
                   .value_or(false);
    }
    return count;
  };
  PassOutput first = RunPass(*MakeGemmWeightLayoutPass(), *g, Transposing());
  ASSERT_NE(first.graph, nullptr);
  EXPECT_EQ(transposed(*first.graph), 8);
  EXPECT_EQ(first.changes.size(), 8u);
  PassOutput second =
      RunPass(*MakeGemmWeightLayoutPass(), *first.graph, Transposing());
  ASSERT_NE(second.graph, nullptr);
  EXPECT_EQ(transposed(*second.graph), kLayers);
  EXPECT_EQ(second.changes.size(), 1u);
  EXPECT_EQ(
      RunPass(*MakeGemmWeightLayoutPass(), *second.graph, Transposing()).graph,
      nullptr);

  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, Transposing());
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(transposed(*opt->graph), kLayers);
  int records = 0;
  for (const PassRecord& r : opt->records) {
    if (r.pass != "gemm_weight_layout") continue;
    ++records;
    EXPECT_EQ(r.changes.size(), static_cast<size_t>(kLayers));
    EXPECT_TRUE(r.error.empty()) << r.error;
  }
  EXPECT_EQ(records, 1);
  ExpectSameOutputs(*g, *opt->graph, RandomFeeds(*g, 31));
}

TEST(GemmWeightLayoutPassTest, PipelineDropsTheUntransposedWeightAndFreesIt) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "FusedMatMul" : "MatMul");
    for (OptimizationLevel level : {OPTIMIZATION_BASIC, OPTIMIZATION_ALL}) {
      SCOPED_TRACE(OptimizationLevel_Name(level));
      auto g = WideLinear(768, 1024, false, bias).Build();
      absl::StatusOr<OptimizedGraph> opt =
          OptimizeGraph(Copy(*g), level, Transposing());
      ASSERT_TRUE(opt.ok()) << opt.status();
      EXPECT_EQ(Weight(*opt->graph).first, bias && level == OPTIMIZATION_BASIC
                                               ? "mm/weight_t"
                                               : "y/weight_t");
      EXPECT_EQ(opt->graph->FindNode("w"), nullptr);
      // Sums of 768 products of values in [-1, 1]: the two weight orders
      // run different sgemm kernels, which may round differently (they did
      // on an Intel host with AVX-512), by up to a few units of 2 eps per
      // product.
      const ::sluice::testing::Tolerance tol =
          ::sluice::testing::DtypeTolerance(DT_FLOAT, 768);
      ExpectSameOutputs(*g, *opt->graph, RandomFeeds(*g, 29), tol.rel, tol.abs);
      // And its bytes are freed once the pipeline's graph does not read them.
      auto own = WideLinear(768, 1024, false, bias).Build();
      std::weak_ptr<Buffer> untransposed =
          ConstValueOf(*own, {own->FindNode("w")->id(), 0})->buffer();
      ASSERT_FALSE(untransposed.expired());
      absl::StatusOr<OptimizedGraph> moved =
          OptimizeGraph(std::move(own), level, Transposing());
      ASSERT_TRUE(moved.ok()) << moved.status();
      EXPECT_TRUE(untransposed.expired());
    }
  }
}

}  // namespace
}  // namespace sluice::optimizer_test::gemm_weight_layout_test
