#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test {
namespace {

constexpr float kMin = -3.4028234663852886e38f;  // torch.finfo(float32).min

std::map<std::string, AttrValue> Perm(const std::vector<int64_t>& p) {
  return {{"perm", Ints(p)}};
}

// A [1, 1, s, s] Const: 0 on and below the diagonal, `masked` above.
Tensor CausalMask(int64_t s, float masked) {
  std::vector<float> v(s * s);
  for (int64_t i = 0; i < s; ++i) {
    for (int64_t j = 0; j < s; ++j) v[i * s + j] = j <= i ? 0.f : masked;
  }
  return Tensor::FromVector<float>(v, Shape({1, 1, s, s}));
}

const Node& Fused(const Graph& g, const std::string& name) {
  const Node* n = g.FindNode(name);
  EXPECT_NE(n, nullptr) << name;
  EXPECT_EQ(n->op(), "FusedAttention");
  return *n;
}

// BERT as HF exports it without sdpa: Q·K^T / sqrt(D) + mask [B,1,1,S].
TEST(AttentionFusionPassTest, FusesBertWithPaddingMask) {
  GraphMaker m;
  m.Input("q", {2, 3, 5, 4})
      .Input("k", {2, 3, 5, 4})
      .Input("v", {2, 3, 5, 4})
      .Input("mask", {2, 1, 1, 5})
      .Op("kt", "Transpose", {"k"}, Perm({0, 1, 3, 2}))
      .Op("qk", "MatMul", {"q", "kt"})
      .Const("d", {2.f}, {})
      .Op("scaled", "Div", {"qk", "d"})
      .Op("masked", "Add", {"scaled", "mask"})
      .Op("p", "Softmax", {"masked"}, {{"axis", MakeIntAttr(-1)}})
      .Op("ctx", "MatMul", {"p", "v"})
      .Output("ctx");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx");
  EXPECT_FLOAT_EQ(*f.attrs().GetFloat("scale"), 0.5f);
  EXPECT_FALSE(*f.attrs().GetBool("causal"));
  EXPECT_EQ(*f.attrs().GetInt("num_args"), 2);
  EXPECT_EQ(f.num_inputs(), 4);
  std::map<std::string, int> ops = OpCounts(*out.graph);
  EXPECT_EQ(ops["Softmax"], 0);
  EXPECT_EQ(ops["MatMul"], 0);
  EXPECT_EQ(ops["Transpose"], 0);  // K^T^T is K
  ASSERT_EQ(out.changes.size(), 1u);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 3));
}

// The encoder layer: Mul on the scores, no mask, K^T from [B,S,H,D].
TEST(AttentionFusionPassTest, FusesMulScaleWithoutMask) {
  GraphMaker m;
  m.Input("q", {2, 3, 6, 8})
      .Input("kr", {2, 6, 3, 8})
      .Input("v", {2, 3, 6, 8})
      .Op("kt", "Transpose", {"kr"}, Perm({0, 2, 3, 1}))
      .Op("qk", "MatMul", {"q", "kt"})
      .Const("c", {0.35f}, {})
      .Op("scaled", "Mul", {"c", "qk"})
      .Op("p", "Softmax", {"scaled"}, {{"axis", MakeIntAttr(3)}})
      .Op("ctx", "MatMul", {"p", "v"})
      .Output("ctx");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx");
  EXPECT_NEAR(*f.attrs().GetFloat("scale"), 0.35f, 1e-7);
  EXPECT_EQ(*f.attrs().GetInt("num_args"), 1);
  // K^T's Transpose became one giving K: [0, 2, 1, 3].
  const Node& k = out.graph->node(f.input(1).node);
  EXPECT_EQ(k.op(), "Transpose");
  EXPECT_EQ(*k.attrs().GetIntList("perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(out.graph->FindNode("kt"), nullptr);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 5));
}

// HF's sdpa export (bert_small.onnx, gpt2_small.onnx): sqrt(scale) on Q
// and on K^T, a Const causal mask of finfo.min, the NaN guard after the
// softmax.
TEST(AttentionFusionPassTest, FusesSdpaExportWithCausalMaskAndNanGuard) {
  GraphMaker m;
  const float c = 1.f / std::sqrt(std::sqrt(8.f));
  m.Input("q", {1, 2, 7, 8})
      .Input("kr", {1, 7, 2, 8})
      .Input("v", {1, 2, 7, 8})
      .Const("c1", {c}, {})
      .Const("c2", {c}, {})
      .Op("qs", "Mul", {"q", "c1"})
      .Op("kt", "Transpose", {"kr"}, Perm({0, 2, 3, 1}))
      .Op("ks", "Mul", {"kt", "c2"})
      .Op("qk", "MatMul", {"qs", "ks"})
      .ConstTensor("mask", CausalMask(7, kMin))
      .Op("masked", "Add", {"qk", "mask"})
      .Op("p", "Softmax", {"masked"})
      .Op("self_equal", "Equal", {"p", "p"})
      .ConstTensor("false", Tensor::Scalar<bool>(false))
      .Op("is_nan", "Equal", {"self_equal", "false"})
      .Const("zero", {0.f}, {})
      .Op("guarded", "Where", {"is_nan", "zero", "p"})
      .Op("ctx", "MatMul", {"guarded", "v"})
      .Output("ctx");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx");
  EXPECT_TRUE(*f.attrs().GetBool("causal"));
  EXPECT_EQ(*f.attrs().GetInt("num_args"), 1);
  EXPECT_NEAR(*f.attrs().GetFloat("scale"), 1 / std::sqrt(8.f), 1e-6);
  std::map<std::string, int> ops = OpCounts(*out.graph);
  EXPECT_EQ(ops["Where"], 0);
  EXPECT_EQ(ops["Equal"], 0);
  EXPECT_EQ(ops["Mul"], 0);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 7));
}

// GPT-2's older export: Where(causal_bool, scores, finfo.min); and the same
// with a bool Const that is no causal mask, which becomes an additive one.
TEST(AttentionFusionPassTest, FusesWhereMasks) {
  for (bool causal : {true, false}) {
    const int64_t s = 6;
    Tensor cond = *Tensor::Create(DT_BOOL, Shape({1, 1, s, s}));
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j) {
        cond.data<bool>()[i * s + j] = causal ? j <= i : (i + j) % 3 != 1;
      }
    }
    GraphMaker m;
    m.Input("q", {2, 2, s, 4})
        .Input("kt", {2, 2, 4, s})
        .Input("v", {2, 2, s, 4})
        .Op("qk", "MatMul", {"q", "kt"})
        .Const("d", {2.f}, {})
        .Op("scaled", "Div", {"qk", "d"})
        .ConstTensor("cond", cond)
        .Const("fill", {kMin}, {})
        .Op("masked", "Where", {"cond", "scaled", "fill"})
        .Op("p", "Softmax", {"masked"})
        .Op("ctx", "MatMul", {"p", "v"})
        .Output("ctx");
    auto g = m.Build();
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node& f = Fused(*out.graph, "ctx");
    EXPECT_EQ(*f.attrs().GetBool("causal"), causal);
    EXPECT_EQ(*f.attrs().GetInt("num_args"), causal ? 1 : 2);
    // K^T had no Transpose: one of its last two axes was added.
    const Node& k = out.graph->node(f.input(1).node);
    EXPECT_EQ(*k.attrs().GetIntList("perm"), (std::vector<int64_t>{0, 1, 3, 2}));
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 11));
  }
}

// The test transformer's form: Where(future, -1e9, scores), future = j > i.
// A mild fill on a mask that is not causal is left alone: adding -1e4 to a
// score is not putting it in the score's place.
TEST(AttentionFusionPassTest, WhereFillsCausalOrAbsorbing) {
  for (float fill : {-1e9f, -1e4f}) {
    for (bool causal : {true, false}) {
      const int64_t s = 5;
      Tensor future = *Tensor::Create(DT_BOOL, Shape({s, s}));
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          future.data<bool>()[i * s + j] = causal ? j > i : j == (i + 1) % s;
        }
      }
      GraphMaker m;
      m.Input("q", {1, 2, s, 4})
          .Input("kt", {1, 2, 4, s})
          .Input("v", {1, 2, s, 4})
          .Op("qk", "MatMul", {"q", "kt"})
          .ConstTensor("future", future)
          .Const("neg", {fill}, {})
          .Op("masked", "Where", {"future", "neg", "qk"})
          .Op("p", "Softmax", {"masked"})
          .Op("ctx", "MatMul", {"p", "v"})
          .Output("ctx");
      auto g = m.Build();
      PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
      SCOPED_TRACE(absl::StrCat("fill ", fill, causal ? " causal" : ""));
      if (!causal && fill > -1e30f) {
        EXPECT_EQ(out.graph, nullptr);
        continue;
      }
      ASSERT_NE(out.graph, nullptr);
      EXPECT_EQ(*Fused(*out.graph, "ctx").attrs().GetBool("causal"), causal);
      ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 19));
    }
  }
}

// examples/transformer_block: MatMul(Q, K, transpose_b), K used as it is.
TEST(AttentionFusionPassTest, FusesTransposeB) {
  GraphMaker m;
  m.Input("q", {1, 2, 6, 4})
      .Input("k", {1, 2, 6, 4})
      .Input("v", {1, 2, 6, 4})
      .Op("qk", "MatMul", {"q", "k"}, {{"transpose_b", MakeBoolAttr(true)}})
      .Const("c", {0.5f}, {})
      .Op("scaled", "Mul", {"qk", "c"})
      .Op("p", "Softmax", {"scaled"})
      .Op("ctx", "MatMul", {"p", "v"})
      .Output("ctx");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx");
  EXPECT_EQ(out.graph->node(f.input(1).node).name(), "k");
  EXPECT_EQ(OpCounts(*out.graph)["Transpose"], 0);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 23));
}

// Sq != Sk (cross attention), a full [B,H,Sq,Sk] mask, batch dims that
// broadcast (K and V shared by the heads).
TEST(AttentionFusionPassTest, FusesCrossAttentionWithBroadcastBatches) {
  GraphMaker m;
  m.Input("q", {2, 3, 4, 8})
      .Input("k", {2, 1, 9, 8})
      .Input("v", {2, 1, 9, 5})
      .Input("mask", {2, 3, 4, 9})
      .Op("kt", "Transpose", {"k"}, Perm({0, 1, 3, 2}))
      .Op("qk", "MatMul", {"q", "kt"})
      .Const("c", {0.3f}, {1})
      .Op("scaled", "Mul", {"qk", "c"})
      .Op("masked", "Add", {"mask", "scaled"})
      .Op("p", "Softmax", {"masked"})
      .Op("ctx", "MatMul", {"p", "v"})
      .Output("ctx");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  Fused(*out.graph, "ctx");
  EXPECT_EQ(out.graph->FindNode("ctx")->output_shape(0), Shape({2, 3, 4, 5}));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 13));
}

// What it must leave: a softmax on another axis, a scale that is not one
// value, scores read elsewhere, probabilities that are a graph output.
TEST(AttentionFusionPassTest, LeavesWhatIsNoAttention) {
  auto build = [](const std::string& variant) {
    GraphMaker m;
    m.Input("q", {1, 2, 4, 4}).Input("kt", {1, 2, 4, 4}).Input("v", {1, 2, 4, 4});
    m.Op("qk", "MatMul", {"q", "kt"});
    if (variant == "vector_scale") {
      m.Const("c", {1, 2, 3, 4}, {4});
    } else {
      m.Const("c", {0.5f}, {});
    }
    m.Op("scaled", "Mul", {"qk", "c"});
    m.Op("p", "Softmax", {"scaled"},
         {{"axis", MakeIntAttr(variant == "axis" ? 2 : -1)}});
    m.Op("ctx", "MatMul", {"p", "v"});
    m.Output("ctx");
    if (variant == "scores_read") m.Output("scores", "qk");
    if (variant == "probs_out") m.Output("probs", "p");
    return m.Build();
  };
  for (const char* variant :
       {"axis", "vector_scale", "scores_read", "probs_out"}) {
    auto g = build(variant);
    ASSERT_NE(g, nullptr) << variant;
    EXPECT_EQ(RunPass(*MakeAttentionFusionPass(), *g).graph, nullptr) << variant;
  }
  // The plain form is fused (the cases above differ from it in one thing).
  auto g = build("plain");
  EXPECT_NE(RunPass(*MakeAttentionFusionPass(), *g).graph, nullptr);
}

// The whole pipeline: the fusion happens before elementwise_fusion takes
// the scale and mask, and optimised and unoptimised graphs agree.
TEST(AttentionFusionPassTest, PipelineFusesBeforeElementwiseFusion) {
  GraphMaker m;
  m.Input("q", {2, 2, 5, 8})
      .Input("k", {2, 2, 5, 8})
      .Input("v", {2, 2, 5, 8})
      .Input("mask", {2, 1, 1, 5})
      .Op("kt", "Transpose", {"k"}, Perm({0, 1, 3, 2}))
      .Op("qk", "MatMul", {"q", "kt"})
      .Const("d", {2.f}, {})
      .Op("scaled", "Div", {"qk", "d"})
      .Op("masked", "Add", {"scaled", "mask"})
      .Op("p", "Softmax", {"masked"})
      .Op("ctx", "MatMul", {"p", "v"})
      .Output("ctx");
  auto g = m.Build();
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(OpOf(*opt->graph, "ctx"), "FusedAttention");
  EXPECT_EQ(OpCounts(*opt->graph)["FusedElementwise"], 0);
  ExpectSameOutputs(*g, *opt->graph, RandomFeeds(*g, 17));
}

// Same outputs over random shapes, scales and mask shapes.
TEST(AttentionFusionPassTest, PropertySameOutputs) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t b = 1 + rng() % 2, h = 1 + rng() % 3, sq = 1 + rng() % 9,
                  sk = 1 + rng() % 9, d = 1 + rng() % 12;
    const int mask_kind = static_cast<int>(rng() % 3);  // none, [B,1,1,Sk], full
    const bool div = rng() % 2 == 0;
    GraphMaker m;
    m.Input("q", {b, h, sq, d}).Input("k", {b, h, sk, d}).Input("v", {b, h, sk, d});
    m.Op("kt", "Transpose", {"k"}, Perm({0, 1, 3, 2}))
        .Op("qk", "MatMul", {"q", "kt"})
        .Const("c", {div ? 1.7f : 0.4f}, {})
        .Op("scaled", div ? "Div" : "Mul", {"qk", "c"});
    std::string scores = "scaled";
    if (mask_kind == 1) m.Input("mask", {b, 1, 1, sk});
    if (mask_kind == 2) m.Input("mask", {b, h, sq, sk});
    if (mask_kind > 0) {
      m.Op("masked", "Add", {"scaled", "mask"});
      scores = "masked";
    }
    m.Op("p", "Softmax", {scores}).Op("ctx", "MatMul", {"p", "v"}).Output("ctx");
    auto g = m.Build();
    ASSERT_NE(g, nullptr);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr) << "trial " << trial;
    EXPECT_EQ(OpOf(*out.graph, "ctx"), "FusedAttention");
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 100 + trial));
  }
}

}  // namespace
}  // namespace sluice::optimizer_test
