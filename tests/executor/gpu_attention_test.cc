// FusedAttention end to end on a GPU: attention_fusion makes the node, the
// placer puts it on /gpu:0, steps are recorded as a CUDA graph and replayed,
// and the results match the unfused graph run on the CPU (float32 within
// 1e-4 relative L2, --precision float16 and bfloat16 within 1e-2 / 3e-2).
// Skips without a GPU.
#include <cmath>
#include <string>
#include <vector>

#include "executor/session.h"
#include "executor/step_stats.h"
#include "gtest/gtest.h"
#include "tests/executor/gpu_test_util.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice {
namespace {

using optimizer_test::GraphMaker;
using optimizer_test::RandomFeeds;
using optimizer_test::RelL2;
using optimizer_test::RunAsIs;

// BERT-style (padding mask [B,1,1,S], Div scale) or GPT-2-style (a Const
// causal mask of finfo.min), with K^T from a Transpose.
std::unique_ptr<const Graph> AttentionGraph(bool causal, int64_t b, int64_t h,
                                            int64_t s, int64_t d) {
  GraphMaker m;
  m.Input("q", {b, h, s, d}).Input("k", {b, h, s, d}).Input("v", {b, h, s, d});
  m.Op("kt", "Transpose", {"k"}, {{"perm", MakeIntListAttr({0, 1, 3, 2})}})
      .Op("qk", "MatMul", {"q", "kt"})
      .Const("c", {std::sqrt(static_cast<float>(d))}, {})
      .Op("scaled", "Div", {"qk", "c"});
  if (causal) {
    std::vector<float> mask(s * s);
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j) mask[i * s + j] = j <= i ? 0.f : -3.4e38f;
    }
    m.Const("mask", mask, {1, 1, s, s});
  } else {
    m.Input("mask", {b, 1, 1, s});
  }
  m.Op("masked", "Add", {"scaled", "mask"})
      .Op("p", "Softmax", {"masked"}, {{"axis", MakeIntAttr(-1)}})
      .Op("ctx", "MatMul", {"p", "v"})
      .Output("ctx");
  return m.Build();
}

// `gpu` false: the same session on the CPU alone (runs everywhere, so the
// comparison itself is checked where there is no GPU).
void RunAndCompare(bool causal, Precision precision, double tol, bool gpu = true) {
  SCOPED_TRACE(absl::StrCat(causal ? "causal" : "padding mask", ", precision ",
                            static_cast<int>(precision), gpu ? "" : ", CPU"));
  std::unique_ptr<const Graph> g = AttentionGraph(causal, 2, 4, 100, 64);
  ASSERT_NE(g, nullptr);
  RuntimeConfig config;
  config.set_precision(precision);
  config.set_use_gpu(gpu);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(optimizer_test::Copy(*g), config);
  ASSERT_TRUE(s.ok()) << s.status();
  const Node* ctx = (*s)->graph().FindNode("ctx");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->op(), "FusedAttention");
  for (int step = 0; step < 3; ++step) {
    Feeds feeds = RandomFeeds(*g, 40 + step);
    absl::StatusOr<std::vector<Tensor>> want = RunAsIs(*g, feeds);
    absl::StatusOr<std::vector<Tensor>> got = (*s)->Run(feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << "step " << step << ": " << got.status();
    EXPECT_LT(RelL2((*got)[0], (*want)[0]), tol) << "step " << step;
  }
  if (!gpu) return;
  EXPECT_EQ((*s)->stats().gpu_graph_steps, 2);  // all but the first
  StepStats stats;
  ASSERT_TRUE((*s)->RunWithStats(RandomFeeds(*g, 1), {}, &stats).ok());
  absl::MutexLock lock(&stats.mu);
  bool on_gpu = false;
  for (const NodeTiming& t : stats.nodes) {
    if (!t.is_copy && t.node->name() == "ctx") {
      on_gpu = t.device->type() == DeviceType::kGpu;
    }
  }
  EXPECT_TRUE(on_gpu);
}

TEST(GpuAttentionTest, Float32MatchesTheUnfusedGraphOnTheCpu) {
  SKIP_WITHOUT_GPU();
  RunAndCompare(false, PRECISION_MODEL, 1e-4);
  RunAndCompare(true, PRECISION_MODEL, 1e-4);
}

TEST(GpuAttentionTest, TheSameComparisonOnTheCpu) {
  for (bool causal : {false, true}) {
    RunAndCompare(causal, PRECISION_MODEL, 1e-5, /*gpu=*/false);
    RunAndCompare(causal, PRECISION_FLOAT16, 1e-2, /*gpu=*/false);
  }
}

TEST(GpuAttentionTest, ReducedPrecisionStaysClose) {
  SKIP_WITHOUT_GPU();
  for (bool causal : {false, true}) {
    RunAndCompare(causal, PRECISION_FLOAT16, 1e-2);
    RunAndCompare(causal, PRECISION_BFLOAT16, 3e-2);
  }
}

}  // namespace
}  // namespace sluice
