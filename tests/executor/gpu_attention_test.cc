// FusedAttention end to end on a GPU: attention_fusion makes the node, the
// placer puts it on /gpu:0, steps are recorded as a CUDA graph and replayed,
// and the results match the unfused graph run on the CPU (float32 within
// 1e-4 relative L2, --precision float16 and bfloat16 within 1e-2 / 3e-2).
// The packed form (one [B, S, 3*H*D] projection output, Split, heads
// Reshape + Transpose, the merge after) runs with FusedAttention reading
// and writing the token-major layouts in place (design decision 29).
// Skips without a GPU.
#include <cmath>
#include <string>
#include <vector>

#include "executor/session.h"
#include "executor/step_stats.h"
#include "gtest/gtest.h"
#include "tests/executor/gpu_test_util.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::gpu_attention_test {
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

// The encoder layer's form: qkv [B, S, 3*H*D] (the packed projection's
// output), Split, Reshape + Transpose into heads (K^T by (0,2,3,1)), the
// context merged back to [B, S, H*D] as "ctx".
std::unique_ptr<const Graph> PackedAttentionGraph(bool causal, int64_t b,
                                                  int64_t h, int64_t s,
                                                  int64_t d) {
  const int64_t c = h * d;
  GraphMaker m;
  m.Input("qkv", {b, s, 3 * c})
      .Op("split", "Split", {"qkv"},
          {{"axis", MakeIntAttr(2)}, {"num_split", MakeIntAttr(3)},
           {"sizes", MakeIntListAttr({c, c, c})}});
  const std::vector<std::vector<int64_t>> perms = {
      {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
  for (int i = 0; i < 3; ++i) {
    const std::string t = std::string(1, "qkv"[i]);
    m.Op(t + "1", "Reshape", {absl::StrCat("split:", i)},
         {{"shape", MakeIntListAttr({b, s, h, d})}})
        .Op(t + "h", "Transpose", {t + "1"}, {{"perm", MakeIntListAttr(perms[i])}});
  }
  m.Op("qk", "MatMul", {"qh", "kh"})
      .Const("c", {1.f / std::sqrt(static_cast<float>(d))}, {})
      .Op("scaled", "Mul", {"qk", "c"});
  std::string scores = "scaled";
  if (causal) {
    std::vector<float> mask(s * s);
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j) mask[i * s + j] = j <= i ? 0.f : -3.4e38f;
    }
    m.Const("mask", mask, {1, 1, s, s}).Op("masked", "Add", {"scaled", "mask"});
    scores = "masked";
  }
  m.Op("p", "Softmax", {scores}, {{"axis", MakeIntAttr(-1)}})
      .Op("ctx0", "MatMul", {"p", "vh"})
      .Op("ctx1", "Transpose", {"ctx0"}, {{"perm", MakeIntListAttr({0, 2, 1, 3})}})
      .Op("ctx", "Reshape", {"ctx1"}, {{"shape", MakeIntListAttr({b, s, c})}})
      .Output("ctx");
  return m.Build();
}

// `gpu` false: the same session on the CPU alone (runs everywhere, so the
// comparison itself is checked where there is no GPU).
// `packed`: PackedAttentionGraph, FusedAttention in the BSHD layouts.
void RunAndCompare(bool causal, Precision precision, double tol, bool gpu = true,
                   bool packed = false) {
  SCOPED_TRACE(absl::StrCat(causal ? "causal" : "padding mask", ", precision ",
                            static_cast<int>(precision), gpu ? "" : ", CPU",
                            packed ? ", packed" : ""));
  std::unique_ptr<const Graph> g = packed ? PackedAttentionGraph(causal, 2, 4, 100, 64)
                                          : AttentionGraph(causal, 2, 4, 100, 64);
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
  if (packed) {
    EXPECT_EQ(ctx->attrs().GetString("q_layout").value_or(""), "BSHD");
    EXPECT_EQ(ctx->attrs().GetString("out_layout").value_or(""), "BSHD");
  }
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
  for (bool packed : {false, true}) {
    for (bool causal : {false, true}) {
      RunAndCompare(causal, PRECISION_MODEL, 1e-5, /*gpu=*/false, packed);
      RunAndCompare(causal, PRECISION_FLOAT16, 1e-2, /*gpu=*/false, packed);
    }
  }
}

TEST(GpuAttentionTest, PackedProjectionMatchesTheUnfusedGraphOnTheCpu) {
  SKIP_WITHOUT_GPU();
  for (bool causal : {false, true}) {
    RunAndCompare(causal, PRECISION_MODEL, 1e-4, /*gpu=*/true, /*packed=*/true);
    RunAndCompare(causal, PRECISION_FLOAT16, 1e-2, /*gpu=*/true, /*packed=*/true);
    RunAndCompare(causal, PRECISION_BFLOAT16, 3e-2, /*gpu=*/true, /*packed=*/true);
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
}  // namespace sluice::gpu_attention_test
