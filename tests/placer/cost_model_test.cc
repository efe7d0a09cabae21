// CostModel's FLOP estimates where an op's layout changes where its sizes
// are: FusedAttention in the BHSD and BSHD layouts (design decision 29).
#include "placer/cost_model.h"

#include "gtest/gtest.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::cost_model_test {
namespace {

using optimizer_test::GraphMaker;

TEST(CostModelTest, FusedAttentionFlopsAreTheSameInEveryLayout) {
  const int64_t b = 2, h = 3, s = 16, d = 8;
  GraphMaker heads;
  heads.Input("q", {b, h, s, d}).Input("k", {b, h, s, d}).Input("v", {b, h, s, d});
  heads.Op("attn", "FusedAttention", {"q", "k", "v"},
           {{"num_args", MakeIntAttr(1)}, {"scale", MakeFloatAttr(0.5f)}});
  GraphMaker packed;
  packed.Input("qkv", {b, s, 3 * h * d});
  packed.Op("attn", "FusedAttention", {"qkv", "qkv", "qkv"},
            {{"num_args", MakeIntAttr(1)},
             {"scale", MakeFloatAttr(0.5f)},
             {"q_layout", MakeStringAttr("BSHD")},
             {"k_layout", MakeStringAttr("BSHD")},
             {"v_layout", MakeStringAttr("BSHD")},
             {"out_layout", MakeStringAttr("BSHD")},
             {"num_heads", MakeIntAttr(h)},
             {"head_dim", MakeIntAttr(d)},
             {"v_head_dim", MakeIntAttr(d)},
             {"k_offset", MakeIntAttr(h * d)},
             {"v_offset", MakeIntAttr(2 * h * d)}});
  auto g1 = heads.Build();
  auto g2 = packed.Build();
  ASSERT_NE(g1, nullptr);
  ASSERT_NE(g2, nullptr);
  const int n1 = g1->FindNode("attn")->id(), n2 = g2->FindNode("attn")->id();
  EXPECT_EQ(g2->node(n2).output_shape(0), Shape({b, s, h * d}));
  const double want = static_cast<double>(b * h * s) * s * (2 * (d + d) + 5);
  EXPECT_DOUBLE_EQ(CostModel(*g1).flops(n1), want);
  EXPECT_DOUBLE_EQ(CostModel(*g2).flops(n2), want);
}

}  // namespace
}  // namespace sluice::cost_model_test
