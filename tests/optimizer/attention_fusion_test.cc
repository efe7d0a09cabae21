#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::attention_fusion_test {
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
GraphMaker SdpaExport() {
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
  return m;
}

TEST(AttentionFusionPassTest, FusesSdpaExportWithCausalMaskAndNanGuard) {
  auto g = SdpaExport().Build();
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

// The scale factors become the scale attribute, the causal mask the causal
// flag, and the NaN guard goes: none of their constants stays.
TEST(AttentionFusionPassTest, PipelineFreesTheScaleMaskAndGuardConstants) {
  auto g = SdpaExport().Build();
  std::map<std::string, std::weak_ptr<Buffer>> constants;
  for (const char* name : {"c1", "c2", "mask", "false", "zero"}) {
    constants[name] = ConstBuffer(*g, name);
    ASSERT_FALSE(constants[name].expired()) << name;
  }
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_TRUE(*Fused(*opt->graph, "ctx").attrs().GetBool("causal"));
  for (const auto& [name, buffer] : constants) {
    EXPECT_TRUE(buffer.expired()) << name;
  }
  auto given = SdpaExport().Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 18));
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

// Multi-head self-attention as exporters write it around the core that
// the tests above cover: x [B, S, H*D] projected (one packed projection
// then Split, as the encoder layer and GPT-2; or three, as BERT), each of
// Q, K, V split into heads by Reshape [B, S, H, D] + Transpose, the output
// merged by Transpose(0,2,1,3) + Reshape [B, S, H*D] into the output
// projection. Weights are seeded.
struct Mha {
  int64_t b = 2, s = 5, h = 3, dh = 4;
  bool dynamic_batch = false;  // x [-1, S, C], Reshape targets -1
  bool dynamic_seq = false;    // x [B, -1, C], Reshape targets [B, -1, ...]
  bool packed = true;
  // How K^T is made: "0231" Transpose(0,2,3,1) of the heads; "0213_t"
  // Transpose(0,2,1,3) then (0,1,3,2); "transpose_b" MatMul(Q, K, transpose_b).
  std::string k_form = "0231";
  int mask = 0;  // 0 none, 1 padding mask input [B,1,1,S], 2 Where causal
  bool merge = true;
  bool merge_flat = false;  // the merge Reshape gives [B*S, H*D] (GPT-2)
  // A reader outside the pattern: "" none, "split" (V's Split output also
  // an output), "k_heads" (K's heads also an output: GPT-2's present),
  // "merged" (the merged heads' Transpose also an output).
  std::string extra;
};

std::vector<float> Seeded(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::unique_ptr<const Graph> BuildMha(const Mha& a) {
  const int64_t c = a.h * a.dh;
  const int64_t bd = a.dynamic_batch ? -1 : a.b;
  const float w = 1.f / std::sqrt(static_cast<float>(c));
  GraphMaker m;
  const int64_t sd = a.dynamic_seq ? -1 : a.s;
  m.Input("x", {bd, sd, c});
  std::string q0 = "q0", k0 = "k0", v0 = "v0";
  if (a.packed) {
    m.Const("w_in", Seeded(c * 3 * c, 1, w), {c, 3 * c})
        .Const("b_in", Seeded(3 * c, 2, 0.1f), {3 * c})
        .Op("qkv_mm", "MatMul", {"x", "w_in"})
        .Op("qkv", "Add", {"qkv_mm", "b_in"})
        .Op("split", "Split", {"qkv"},
            {{"axis", MakeIntAttr(2)}, {"num_split", MakeIntAttr(3)},
             {"sizes", Ints({c, c, c})}});
    q0 = "split:0";
    k0 = "split:1";
    v0 = "split:2";
  } else {
    uint32_t seed = 3;
    for (const char* t : {"q", "k", "v"}) {
      seed += 2;
      m.Const(absl::StrCat("w_", t), Seeded(c * c, seed, w), {c, c})
          .Const(absl::StrCat("b_", t), Seeded(c, seed + 1, 0.1f), {c})
          .Op(absl::StrCat(t, "_mm"), "MatMul", {"x", absl::StrCat("w_", t)})
          .Op(absl::StrCat(t, "0"), "Add",
              {absl::StrCat(t, "_mm"), absl::StrCat("b_", t)});
    }
  }
  const std::map<std::string, AttrValue> heads = {
      {"shape", Ints({a.dynamic_batch ? -1 : a.b, sd, a.h, a.dh})}};
  m.Op("q1", "Reshape", {q0}, heads).Op("qh", "Transpose", {"q1"}, Perm({0, 2, 1, 3}));
  m.Op("k1", "Reshape", {k0}, heads);
  m.Op("v1", "Reshape", {v0}, heads).Op("vh", "Transpose", {"v1"}, Perm({0, 2, 1, 3}));
  std::string kt = "kt";
  std::map<std::string, AttrValue> qk_attrs;
  if (a.k_form == "0231") {
    m.Op("kt", "Transpose", {"k1"}, Perm({0, 2, 3, 1}));
  } else {
    m.Op("kh", "Transpose", {"k1"}, Perm({0, 2, 1, 3}));
    if (a.k_form == "0213_t") {
      m.Op("kt", "Transpose", {"kh"}, Perm({0, 1, 3, 2}));
    } else {
      kt = "kh";
      qk_attrs["transpose_b"] = MakeBoolAttr(true);
    }
  }
  m.Op("qk", "MatMul", {"qh", kt}, qk_attrs)
      .Const("d", {std::sqrt(static_cast<float>(a.dh))}, {})
      .Op("scaled", "Div", {"qk", "d"});
  std::string scores = "scaled";
  if (a.mask == 1) {
    m.Input("mask", {bd, 1, 1, sd}).Op("masked", "Add", {"scaled", "mask"});
    scores = "masked";
  } else if (a.mask == 2) {
    Tensor cond = *Tensor::Create(DT_BOOL, Shape({1, 1, a.s, a.s}));
    for (int64_t i = 0; i < a.s; ++i) {
      for (int64_t j = 0; j < a.s; ++j) cond.data<bool>()[i * a.s + j] = j <= i;
    }
    m.ConstTensor("cond", cond)
        .Const("fill", {kMin}, {})
        .Op("masked", "Where", {"cond", "scaled", "fill"});
    scores = "masked";
  }
  m.Op("p", "Softmax", {scores}).Op("ctx0", "MatMul", {"p", "vh"});
  std::string ctx = "ctx0";
  if (a.merge) {
    m.Op("ctx1", "Transpose", {"ctx0"}, Perm({0, 2, 1, 3}))
        .Op("ctx", "Reshape", {"ctx1"},
            {{"shape", a.merge_flat ? Ints({-1, c})
                                    : Ints({a.dynamic_batch ? -1 : a.b, sd, c})}});
    ctx = "ctx";
  } else {
    // The heads merged some other way: [B, H, S, D] -> [B, H, S*D].
    m.Op("ctx", "Reshape", {"ctx0"},
         {{"shape", Ints({a.dynamic_batch ? -1 : a.b, a.h, a.s * a.dh})}});
    ctx = "ctx";
  }
  m.Output("y", ctx);
  if (a.extra == "split") m.Output("v_split", v0);
  if (a.extra == "k_heads") m.Output("present", a.k_form == "0231" ? "kt" : "kh");
  if (a.extra == "merged") m.Output("merged", "ctx1");
  return m.Build();
}

// The encoder layer's attention (bench/models/encoder_layer.py) at its
// real size, batch 1 and 32: the Split, the six head copies and the merge
// go; FusedAttention reads the packed projection at columns 0, 768, 1536
// and writes [B, 128, 768] under the merge Reshape's name.
TEST(AttentionFusionPassTest, EncoderLayerReadsPackedProjectionInPlace) {
  for (int64_t b : {1, 32}) {
    SCOPED_TRACE(absl::StrCat("batch ", b));
    Mha a;
    a.b = b;
    a.s = 128;
    a.h = 12;
    a.dh = 64;
    auto g = BuildMha(a);
    ASSERT_NE(g, nullptr);
    std::map<std::string, int> before = OpCounts(*g);
    EXPECT_EQ(before["Transpose"], 4);
    EXPECT_EQ(before["Reshape"], 4);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node& f = Fused(*out.graph, "ctx");
    std::map<std::string, int> ops = OpCounts(*out.graph);
    EXPECT_EQ(ops["Split"], 0);
    EXPECT_EQ(ops["Transpose"], 0);
    EXPECT_EQ(ops["Reshape"], 0);
    EXPECT_EQ(ops["FusedAttention"], 1);
    EXPECT_EQ(g->num_nodes() - out.graph->num_nodes(), 13 - 1);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(out.graph->node(f.input(i).node).name(), "qkv") << i;
    }
    for (const char* l : {"q_layout", "k_layout", "v_layout", "out_layout"}) {
      EXPECT_EQ(*f.attrs().GetString(l), "BSHD") << l;
    }
    EXPECT_EQ(f.attrs().GetInt("q_offset").value_or(0), 0);
    EXPECT_EQ(*f.attrs().GetInt("k_offset"), 768);
    EXPECT_EQ(*f.attrs().GetInt("v_offset"), 1536);
    EXPECT_EQ(*f.attrs().GetInt("num_heads"), 12);
    EXPECT_EQ(*f.attrs().GetInt("head_dim"), 64);
    EXPECT_EQ(*f.attrs().GetInt("v_head_dim"), 64);
    EXPECT_EQ(f.output_shape(0), Shape({b, 128, 768}));
    ASSERT_EQ(out.changes.size(), 1u);
    EXPECT_THAT(out.changes[0], ::testing::HasSubstr("k from 'qkv' col 768"));
  }
  // The same graph small enough to run: the outputs agree.
  auto g = BuildMha(Mha{});
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpCounts(*out.graph)["Split"], 0);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 31));
}

// BERT (HF export): Q, K, V separate projections, K^T by Transpose(0,2,3,1),
// a padding mask; each projection's output is read in place.
TEST(AttentionFusionPassTest, BertReadsSeparateProjectionsInPlace) {
  Mha a;
  a.packed = false;
  a.mask = 1;
  auto g = BuildMha(a);
  ASSERT_NE(g, nullptr);
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx");
  EXPECT_EQ(out.graph->node(f.input(0).node).name(), "q0");
  EXPECT_EQ(out.graph->node(f.input(1).node).name(), "k0");
  EXPECT_EQ(out.graph->node(f.input(2).node).name(), "v0");
  EXPECT_EQ(f.num_inputs(), 4);  // and the mask
  EXPECT_EQ(*f.attrs().GetString("k_layout"), "BSHD");
  EXPECT_EQ(f.attrs().GetInt("k_offset").value_or(0), 0);
  std::map<std::string, int> ops = OpCounts(*out.graph);
  EXPECT_EQ(ops["Transpose"], 0);
  EXPECT_EQ(ops["Reshape"], 0);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 37));
}

// GPT-2: one c_attn projection, Split, K^T as Transpose(0,2,1,3) then
// (0,1,3,2), a Where causal mask (becomes the causal flag); and the same
// with MatMul(Q, K, transpose_b) and a symbolic batch.
TEST(AttentionFusionPassTest, Gpt2ReadsPackedProjectionInPlace) {
  for (const char* k_form : {"0213_t", "transpose_b"}) {
    SCOPED_TRACE(k_form);
    Mha a;
    a.k_form = k_form;
    a.mask = 2;
    a.s = 6;
    a.dynamic_batch = std::string(k_form) == "transpose_b";
    auto g = BuildMha(a);
    ASSERT_NE(g, nullptr);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node& f = Fused(*out.graph, "ctx");
    EXPECT_TRUE(*f.attrs().GetBool("causal"));
    EXPECT_EQ(*f.attrs().GetInt("v_offset"), 2 * a.h * a.dh);
    std::map<std::string, int> ops = OpCounts(*out.graph);
    EXPECT_EQ(ops["Split"], 0);
    EXPECT_EQ(ops["Transpose"], 0);
    EXPECT_EQ(ops["Reshape"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 41, 2));
  }
}

// A symbolic sequence length (the batch known): the Reshapes still split
// and merge the last axis, so everything is absorbed.
TEST(AttentionFusionPassTest, AbsorbsWithASymbolicSequence) {
  Mha a;
  a.dynamic_seq = true;
  auto g = BuildMha(a);
  ASSERT_NE(g, nullptr);
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx");
  EXPECT_EQ(*f.attrs().GetString("q_layout"), "BSHD");
  std::map<std::string, int> ops = OpCounts(*out.graph);
  EXPECT_EQ(ops["Split"], 0);
  EXPECT_EQ(ops["Transpose"], 0);
  EXPECT_EQ(ops["Reshape"], 0);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 67, 4));
}

// Other readers keep what they read: a Split output read elsewhere keeps
// the Split (Q, K, V still read token-major from its outputs); GPT-2's
// present (K's heads) keeps K's copies; a merged-heads Transpose read
// elsewhere keeps the output BHSD; heads merged some other way are left.
TEST(AttentionFusionPassTest, KeepsLayoutCopiesWithOtherReaders) {
  {
    Mha a;
    a.extra = "split";
    auto g = BuildMha(a);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node& f = Fused(*out.graph, "ctx");
    EXPECT_EQ(OpCounts(*out.graph)["Split"], 1);
    EXPECT_EQ(out.graph->node(f.input(2).node).name(), "split");
    EXPECT_EQ(f.input(2).port, 2);
    EXPECT_EQ(f.attrs().GetInt("v_offset").value_or(0), 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 43));
  }
  for (const char* k_form : {"0231", "0213_t"}) {
    Mha a;
    a.k_form = k_form;
    a.extra = "k_heads";
    auto g = BuildMha(a);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr) << k_form;
    const Node& f = Fused(*out.graph, "ctx");
    EXPECT_EQ(f.attrs().GetString("k_layout").value_or("BHSD"), "BHSD") << k_form;
    EXPECT_EQ(*f.attrs().GetString("q_layout"), "BSHD");
    EXPECT_EQ(OpCounts(*out.graph)["Split"], 1) << k_form;  // K's output stays
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 47));
  }
  {
    Mha a;
    a.extra = "merged";
    auto g = BuildMha(a);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node& f = Fused(*out.graph, "ctx0");
    EXPECT_EQ(f.attrs().GetString("out_layout").value_or("BHSD"), "BHSD");
    EXPECT_EQ(OpOf(*out.graph, "ctx1"), "Transpose");
    EXPECT_EQ(OpOf(*out.graph, "ctx"), "Reshape");
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 53));
  }
  {
    Mha a;
    a.merge = false;
    auto g = BuildMha(a);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    EXPECT_EQ(OpOf(*out.graph, "ctx"), "Reshape");
    Fused(*out.graph, "ctx0");
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 59));
  }
}

// A Reshape that does not split the last axis into heads (from a flat
// [B*S, H*D] projection) is no head split: Q, K, V stay [B, H, S, D]. The
// merge Transpose before a Reshape to [B*S, H*D] (GPT-2's) still goes: the
// Reshape reads the BSHD output.
TEST(AttentionFusionPassTest, LeavesReshapesThatSplitNoHeads) {
  const int64_t b = 2, s = 4, h = 2, dh = 3, c = h * dh;
  GraphMaker m;
  m.Input("x", {b * s, c});
  for (const char* t : {"q", "k", "v"}) {
    m.Op(absl::StrCat(t, "1"), "Reshape", {"x"}, {{"shape", Ints({b, s, h, dh})}})
        .Op(absl::StrCat(t, "h"), "Transpose", {absl::StrCat(t, "1")},
            Perm({0, 2, 1, 3}));
  }
  m.Op("kt", "Transpose", {"kh"}, Perm({0, 1, 3, 2}))
      .Op("qk", "MatMul", {"qh", "kt"})
      .Op("p", "Softmax", {"qk"})
      .Op("ctx0", "MatMul", {"p", "vh"})
      .Op("ctx1", "Transpose", {"ctx0"}, Perm({0, 2, 1, 3}))
      .Op("ctx", "Reshape", {"ctx1"}, {{"shape", Ints({b * s, c})}})
      .Output("y", "ctx");
  auto g = m.Build();
  ASSERT_NE(g, nullptr);
  PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node& f = Fused(*out.graph, "ctx1");
  for (const char* l : {"q_layout", "k_layout", "v_layout"}) {
    EXPECT_EQ(f.attrs().GetString(l).value_or("BHSD"), "BHSD") << l;
  }
  EXPECT_EQ(*f.attrs().GetString("out_layout"), "BSHD");
  EXPECT_EQ(f.output_shape(0), Shape({b, s, c}));
  EXPECT_EQ(OpOf(*out.graph, "ctx"), "Reshape");
  EXPECT_EQ(out.graph->node(out.graph->FindNode("ctx")->input(0).node).name(), "ctx1");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 61));
}

// Same outputs over random sizes, projection forms, K^T forms, masks and
// outside readers.
TEST(AttentionFusionPassTest, PropertyLayoutsSameOutputs) {
  std::mt19937 rng(2027);
  const char* k_forms[] = {"0231", "0213_t", "transpose_b"};
  const char* extras[] = {"", "", "split", "k_heads", "merged"};
  for (int trial = 0; trial < 16; ++trial) {
    Mha a;
    a.b = 1 + rng() % 3;
    a.s = 1 + rng() % 9;
    a.h = 1 + rng() % 3;
    a.dh = 1 + rng() % 9;
    a.packed = rng() % 2 == 0;
    a.k_form = k_forms[rng() % 3];
    a.mask = static_cast<int>(rng() % 3);
    a.merge = rng() % 4 != 0;
    a.merge_flat = rng() % 3 == 0;
    a.extra = extras[rng() % 5];
    if (a.extra == "split" && !a.packed) a.extra = "";
    if (a.extra == "merged" && !a.merge) a.extra = "";
    a.dynamic_batch = rng() % 4 == 0;
    a.dynamic_seq = a.mask != 2 && rng() % 4 == 0;  // the Where mask is [S, S]
    SCOPED_TRACE(absl::StrCat("trial ", trial, " k ", a.k_form, " extra ", a.extra));
    auto g = BuildMha(a);
    ASSERT_NE(g, nullptr);
    PassOutput out = RunPass(*MakeAttentionFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    EXPECT_EQ(OpCounts(*out.graph)["FusedAttention"], 1);
    EXPECT_EQ(OpCounts(*out.graph)["Softmax"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 200 + trial, 2));
  }
}

}  // namespace
}  // namespace sluice::optimizer_test::attention_fusion_test
