// nhwc_layout (optimizer/nhwc_layout.cc): the structure before and after on
// small graphs (a chain of convolutions gets one Transpose in and one out;
// a residual Add, a channel Concat, pooling, a GlobalAvgPool / ReduceMean
// head, per-channel constants and a computed filter stay channels last),
// what it leaves (3-D convolutions, unknown channels, conv_layout NCHW,
// nodes already NHWC), names (a fetched or output value is NCHW under its
// name), the pipeline's placement of it with the fusions and reduced
// precision, and the same outputs as the NCHW graph on seeded inputs
// throughout.
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::nhwc_layout_test {
namespace {

PassOptions Nhwc() {
  PassOptions o;
  o.conv_layout = DataFormat::kNhwc;
  return o;
}

std::string FormatOf(const Node& n) {
  return n.attrs().GetString("data_format").value_or("NCHW");
}

// The nodes of `op` and how many of them are NHWC.
int CountNhwc(const Graph& g, const std::string& op) {
  int k = 0;
  for (const Node& n : g.nodes()) k += n.op() == op && FormatOf(n) == "NHWC";
  return k;
}

// Transposes something reads (the dead ones dead_nodes would drop are
// not counted).
int LiveTransposes(const Graph& g) {
  int k = 0;
  for (const Node& n : g.nodes()) {
    if (n.op() != "Transpose") continue;
    bool read = !g.consumers(n.id(), 0).empty();
    for (const GraphOutput& o : g.outputs()) read = read || o.tensor.node == n.id();
    k += read;
  }
  return k;
}

// The pass, then dead_nodes (what the pipeline runs after it).
std::unique_ptr<const Graph> RunNhwc(const Graph& g, PassOutput* out = nullptr) {
  PassOutput p = RunPass(*MakeNhwcLayoutPass(), g, Nhwc());
  EXPECT_NE(p.graph, nullptr) << "the pass changed nothing";
  if (p.graph == nullptr) return nullptr;
  PassOutput d = RunPass(*MakeDeadNodePass(), *p.graph);
  std::unique_ptr<const Graph> result =
      d.graph != nullptr ? std::move(d.graph) : std::move(p.graph);
  if (out != nullptr) out->changes = p.changes;
  return result;
}

// RunNhwc, then redundant_nodes and dead_nodes again (the Transposes that
// compose to the identity go).
std::unique_ptr<const Graph> RunNhwcThenClean(const Graph& g) {
  std::unique_ptr<const Graph> out = RunNhwc(g);
  if (out == nullptr) return nullptr;
  PassOutput r = RunPass(*MakeRedundantNodePass(), *out);
  if (r.graph != nullptr) out = std::move(r.graph);
  PassOutput d = RunPass(*MakeDeadNodePass(), *out);
  if (d.graph != nullptr) out = std::move(d.graph);
  return out;
}

// x [2,3,8,8] -> conv a (8) -> Relu -> conv b (8, 3x3, stride 2) -> Relu.
GraphMaker ConvChain() {
  GraphMaker m;
  m.Input("x", {2, 3, 8, 8})
      .Const("wa", Values(8 * 3 * 3 * 3, 1, -1, 1), {8, 3, 3, 3})
      .Const("wb", Values(8 * 8 * 3 * 3, 2, -1, 1), {8, 8, 3, 3})
      .Op("a", "Conv2D", {"x", "wa"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("ra", "Relu", {"a"})
      .Op("b", "Conv2D", {"ra", "wb"},
          {{"pads", Ints({1, 1, 1, 1})}, {"strides", Ints({2, 2})}})
      .Op("y", "Relu", {"b"})
      .Output("y");
  return m;
}

TEST(NhwcLayoutPassTest, AConvChainHasOneTransposeInAndOneOut) {
  auto g = ConvChain().Build();
  PassOutput record;
  auto out = RunNhwc(*g, &record);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(CountNhwc(*out, "Conv2D"), 2);
  EXPECT_EQ(LiveTransposes(*out), 2);
  // x goes in once; y, an output, comes back under its name.
  EXPECT_EQ(OpOf(*out, "y"), "Transpose");
  EXPECT_EQ(out->FindNode("y")->attrs().GetIntList("perm").value(),
            std::vector<int64_t>({0, 3, 1, 2}));
  EXPECT_EQ(OpOf(*out, "ra/nhwc"), "Relu");
  // The filters are Consts of [O, KH, KW, I], made once by the pass.
  const Node* a = out->FindNode("a/nhwc");
  ASSERT_NE(a, nullptr);
  const Node& wa = out->node(a->input(1).node);
  EXPECT_TRUE(wa.is_const());
  EXPECT_EQ(wa.output_shape(0), Shape({8, 3, 3, 3}));
  const Node& wb = out->node(out->FindNode("b/nhwc")->input(1).node);
  EXPECT_TRUE(wb.is_const());
  // The old NCHW nodes are gone (nothing reads them).
  EXPECT_EQ(OpOf(*out, "a"), "(none)");
  EXPECT_EQ(OpOf(*out, "ra"), "(none)");
  EXPECT_FALSE(record.changes.empty());
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 3));
}

TEST(NhwcLayoutPassTest, AOneByOneFilterSharesItsBytesWithTheOriginal) {
  // OIHW -> OHWI moves only the two axes of size 1: the NHWC filter is the
  // original buffer under the new shape; a 3 x 3 one is a new buffer.
  GraphMaker m;
  m.Input("x", {1, 4, 5, 5})
      .Const("w1", Values(6 * 4, 1, -1, 1), {6, 4, 1, 1})
      .Const("w3", Values(6 * 6 * 3 * 3, 2, -1, 1), {6, 6, 3, 3})
      .Op("a", "Conv2D", {"x", "w1"})
      .Op("b", "Conv2D", {"a", "w3"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Output("b");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  const Node& w1 = out->node(out->FindNode("a/nhwc")->input(1).node);
  const Node& w3 = out->node(out->FindNode("b/nhwc")->input(1).node);
  ASSERT_TRUE(w1.is_const());
  ASSERT_TRUE(w3.is_const());
  EXPECT_EQ(w1.output_shape(0), Shape({6, 1, 1, 4}));
  EXPECT_EQ(w1.const_value()->raw_data(),
            g->FindNode("w1")->const_value()->raw_data());
  EXPECT_NE(w3.const_value()->raw_data(),
            g->FindNode("w3")->const_value()->raw_data());
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 5));
}

TEST(NhwcLayoutPassTest, HardSwishAndHardSigmoidStayChannelsLast) {
  // MobileNetV3's activations between convolutions: no Transpose around
  // them (the chain has one in and one out).
  GraphMaker m;
  m.Input("x", {1, 3, 6, 6})
      .Const("wa", Values(4 * 3 * 9, 7, -1, 1), {4, 3, 3, 3})
      .Const("wb", Values(4 * 4, 8, -1, 1), {4, 4, 1, 1})
      .Op("a", "Conv2D", {"x", "wa"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("hs", "HardSwish", {"a"})
      .Op("b", "Conv2D", {"hs", "wb"})
      .Op("y", "HardSigmoid", {"b"},
          {{"alpha", MakeFloatAttr(1.0f / 6)}, {"beta", MakeFloatAttr(0.5f)}})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(OpOf(*out, "hs/nhwc"), "HardSwish");
  EXPECT_EQ(OpOf(*out, "y/nhwc"), "HardSigmoid");
  EXPECT_EQ(LiveTransposes(*out), 2);
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 9));
}

TEST(NhwcLayoutPassTest, TransposedFilterValuesAreOhwi) {
  // One 1x1 output channel over 2 input channels of a 2x1 window.
  GraphMaker m;
  m.Input("x", {1, 2, 3, 3})
      .Const("w", {1, 2, 3, 4}, {1, 2, 2, 1})  // [O=1, I=2, KH=2, KW=1]
      .Op("y", "Conv2D", {"x", "w"})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  const Node& w = out->node(out->FindNode("y/nhwc")->input(1).node);
  ASSERT_NE(w.const_value(), nullptr);
  EXPECT_EQ(w.output_shape(0), Shape({1, 2, 1, 2}));  // [O, KH, KW, I]
  const float* v = w.const_value()->data<float>();
  // OIHW [0][i][h][0] = 1 + 2i + h; OHWI [0][h][0][i] the same value.
  EXPECT_EQ(std::vector<float>(v, v + 4), std::vector<float>({1, 3, 2, 4}));
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 4));
}

// Every element of a filter with several output and input channels and a
// non-square window lands at its OHWI place, for 4- and 2-byte elements
// (compared as bits: a half's bits here are its index).
template <typename Bits>
void ExpectOhwiPlaces(DataType dtype) {
  constexpr int64_t kO = 3, kI = 4, kH = 2, kW = 3;
  absl::StatusOr<Tensor> w = Tensor::Create(dtype, Shape({kO, kI, kH, kW}));
  ASSERT_TRUE(w.ok()) << w.status();
  for (int64_t i = 0; i < w->NumElements(); ++i) {
    Bits bits = static_cast<Bits>(i);
    if constexpr (sizeof(Bits) == 4) {
      const float f = static_cast<float>(i);
      std::memcpy(&bits, &f, sizeof f);
    }
    std::memcpy(static_cast<char*>(w->raw_data()) + i * sizeof(Bits), &bits,
                sizeof bits);
  }
  GraphMaker m;
  m.Input("x", {1, kI, 5, 5}, dtype)
      .ConstTensor("w", *w)
      .Op("y", "Conv2D", {"x", "w"})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  const Node& nw = out->node(out->FindNode("y/nhwc")->input(1).node);
  ASSERT_NE(nw.const_value(), nullptr);
  ASSERT_EQ(nw.output_shape(0), Shape({kO, kH, kW, kI}));
  const auto* src = static_cast<const Bits*>(w->raw_data());
  const auto* got = static_cast<const Bits*>(nw.const_value()->raw_data());
  for (int64_t o = 0; o < kO; ++o) {
    for (int64_t h = 0; h < kH; ++h) {
      for (int64_t x = 0; x < kW; ++x) {
        for (int64_t i = 0; i < kI; ++i) {
          EXPECT_EQ(got[((o * kH + h) * kW + x) * kI + i],
                    src[((o * kI + i) * kH + h) * kW + x])
              << o << " " << h << " " << x << " " << i;
        }
      }
    }
  }
}

TEST(NhwcLayoutPassTest, EveryFilterElementLandsAtItsOhwiPlace) {
  ExpectOhwiPlaces<uint32_t>(DT_FLOAT);
  ExpectOhwiPlaces<uint16_t>(DT_FLOAT16);
}

// The NCHW filter the pass replaced is freed once the pipeline's graph no
// longer reads it: the optimised graph holds the OHWI copy alone.
TEST(NhwcLayoutPipelineTest, TheReplacedNchwFilterIsFreed) {
  GraphMaker m;
  m.Input("x", {1, 2, 4, 4})
      .Const("w", std::vector<float>(3 * 2 * 3 * 3, 0.5f), {3, 2, 3, 3})
      .Op("y", "Conv2D", {"x", "w"})
      .Output("y");
  auto g = m.Build();
  const Node* w = g->FindNode("w");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(w->const_value(), nullptr);
  std::weak_ptr<Buffer> nchw = w->const_value()->buffer();
  ASSERT_FALSE(nchw.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, Nhwc());
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(CountNhwc(*opt->graph, "Conv2D"), 1);
  EXPECT_TRUE(nchw.expired());
}

TEST(NhwcLayoutPassTest, AResidualAddStaysChannelsLast) {
  GraphMaker m;
  m.Input("x", {1, 4, 6, 6})
      .Const("wa", Values(4 * 4 * 9, 5, -1, 1), {4, 4, 3, 3})
      .Const("wb", Values(4 * 4 * 9, 6, -1, 1), {4, 4, 3, 3})
      .Op("a", "Conv2D", {"x", "wa"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("ra", "Relu", {"a"})
      .Op("b", "Conv2D", {"ra", "wb"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("sum", "Add", {"b", "ra"})
      .Op("y", "Relu", {"sum"})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(OpOf(*out, "sum/nhwc"), "Add");
  EXPECT_EQ(LiveTransposes(*out), 2);
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 5));
}

TEST(NhwcLayoutPassTest, AChannelConcatBecomesAConcatOnAxis3) {
  GraphMaker m;
  m.Input("x", {2, 3, 5, 5})
      .Const("wa", Values(4 * 3 * 9, 7, -1, 1), {4, 3, 3, 3})
      .Const("wb", Values(6 * 3, 8, -1, 1), {6, 3, 1, 1})
      .Const("wc", Values(2 * 10 * 9, 9, -1, 1), {2, 10, 3, 3})
      .Op("a", "Conv2D", {"x", "wa"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("b", "Conv2D", {"x", "wb"})
      .Op("cat", "Concat", {"a", "b"}, {{"axis", MakeIntAttr(1)}})
      .Op("y", "Conv2D", {"cat", "wc"})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  const Node* cat = out->FindNode("cat/nhwc");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->attrs().GetInt("axis").value(), 3);
  EXPECT_EQ(LiveTransposes(*out), 2);  // x once (read by two convs), y
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 6));
}

TEST(NhwcLayoutPassTest, PoolingAndPerChannelConstantsStayChannelsLast) {
  GraphMaker m;
  m.Input("x", {2, 3, 9, 9})
      .Const("w", Values(5 * 3 * 9, 10, -1, 1), {5, 3, 3, 3})
      .Const("bias", Values(5, 11, -1, 1), {1, 5, 1, 1})
      .Const("scale", Values(5, 12, 0.5f, 2), {5, 1, 1})
      .Const("half", {0.5f}, {})
      .Op("c", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("biased", "Add", {"c", "bias"})
      .Op("scaled", "Mul", {"scale", "biased"})
      .Op("halved", "Mul", {"scaled", "half"})
      .Op("mp", "MaxPool", {"halved"},
          {{"kernel_shape", Ints({3, 3})}, {"strides", Ints({2, 2})},
           {"pads", Ints({1, 1, 1, 1})}})
      .Op("y", "AvgPool", {"mp"}, {{"kernel_shape", Ints({2, 2})}})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(CountNhwc(*out, "MaxPool"), 1);
  EXPECT_EQ(CountNhwc(*out, "AvgPool"), 1);
  EXPECT_EQ(LiveTransposes(*out), 2);
  // [1,5,1,1] and [5,1,1] become [1,1,1,5]; the scalar stays as it is.
  const Node* biased = out->FindNode("biased/nhwc");
  ASSERT_NE(biased, nullptr);
  EXPECT_EQ(out->node(biased->input(1).node).output_shape(0), Shape({1, 1, 1, 5}));
  const Node* scaled = out->FindNode("scaled/nhwc");
  ASSERT_NE(scaled, nullptr);
  EXPECT_EQ(out->node(scaled->input(0).node).output_shape(0), Shape({1, 1, 1, 5}));
  const Node* halved = out->FindNode("halved/nhwc");
  ASSERT_NE(halved, nullptr);
  EXPECT_EQ(out->node(halved->input(1).node).name(), "half");
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 7));
}

TEST(NhwcLayoutPassTest, AGlobalAvgPoolHeadReducesHAndWAndReshapesBack) {
  GraphMaker m;
  m.Input("x", {2, 3, 6, 6})
      .Const("w", Values(8 * 3 * 9, 13, -1, 1), {8, 3, 3, 3})
      .Const("fc", Values(8 * 4, 14, -1, 1), {8, 4})
      .Op("c", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("r", "Relu", {"c"})
      .Op("gap", "GlobalAvgPool", {"r"})
      .Op("flat", "Reshape", {"gap"}, {{"shape", Ints({2, 8})}})
      .Op("y", "MatMul", {"flat", "fc"})
      .Op("m", "ReduceMean", {"r"},
          {{"axes", Ints({2, 3})}, {"keepdims", MakeBoolAttr(false)}})
      .Output("y")
      .Output("m");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  // GlobalAvgPool: a ReduceMean over 1, 2, then [N,1,1,C] -> [N,C,1,1] as a
  // Reshape under its name; no Transpose out.
  const Node* gap = out->FindNode("gap/nhwc");
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->op(), "ReduceMean");
  EXPECT_EQ(gap->attrs().GetIntList("axes").value(), std::vector<int64_t>({1, 2}));
  EXPECT_EQ(OpOf(*out, "gap"), "Reshape");
  // ReduceMean without keepdims: [N, C] either way, in place.
  EXPECT_EQ(OpOf(*out, "m"), "ReduceMean");
  EXPECT_EQ(out->FindNode("m")->attrs().GetIntList("axes").value(),
            std::vector<int64_t>({1, 2}));
  EXPECT_EQ(LiveTransposes(*out), 1);  // x in
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 8));
}

TEST(NhwcLayoutPassTest, ASqueezeExcitationGateIsTransposedNotTheImage) {
  // x * sigmoid(fc(mean(x))) with the gate [N, C, 1, 1] computed in NCHW:
  // the gate goes channels last, the image stays so.
  GraphMaker m;
  m.Input("x", {2, 3, 6, 6})
      .Const("w", Values(4 * 3 * 9, 26, -1, 1), {4, 3, 3, 3})
      .Const("w2", Values(4 * 4 * 9, 27, -1, 1), {4, 4, 3, 3})
      .Const("fc", Values(4 * 4, 28, -1, 1), {4, 4})
      .Op("c", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("m", "ReduceMean", {"c"},
          {{"axes", Ints({2, 3})}, {"keepdims", MakeBoolAttr(false)}})
      .Op("fcm", "MatMul", {"m", "fc"})
      .Op("gate4", "Reshape", {"fcm"}, {{"shape", Ints({2, 4, 1, 1})}})
      .Op("gate", "Sigmoid", {"gate4"})
      .Op("se", "Mul", {"c", "gate"})
      .Op("y", "Conv2D", {"se", "w2"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  const Node* se = out->FindNode("se/nhwc");
  ASSERT_NE(se, nullptr);
  EXPECT_EQ(out->node(se->input(1).node).op(), "Transpose");
  EXPECT_EQ(out->node(se->input(1).node).output_shape(0), Shape({2, 1, 1, 4}));
  EXPECT_EQ(OpOf(*out, "c"), "(none)");  // c is never needed in NCHW
  EXPECT_EQ(LiveTransposes(*out), 3);     // x in, the gate, y out
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 29));
}

TEST(NhwcLayoutPassTest, AComputedFilterGetsATransposeNode) {
  GraphMaker m;
  m.Input("x", {1, 3, 5, 5})
      .Input("w", {4, 3, 3, 3})
      .Op("y", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  const Node* y = out->FindNode("y/nhwc");
  ASSERT_NE(y, nullptr);
  const Node& w = out->node(y->input(1).node);
  EXPECT_EQ(w.op(), "Transpose");
  EXPECT_EQ(w.attrs().GetIntList("perm").value(), std::vector<int64_t>({0, 2, 3, 1}));
  EXPECT_EQ(LiveTransposes(*out), 3);  // x, w in; y out
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 9));
}

TEST(NhwcLayoutPassTest, AValueReadInNchwComesBackUnderItsName) {
  // a is an output and feeds a Reshape (no NHWC rule): it comes back once.
  GraphMaker m;
  m.Input("x", {1, 3, 4, 4})
      .Const("w", Values(2 * 3 * 9, 15, -1, 1), {2, 3, 3, 3})
      .Op("a", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("flat", "Reshape", {"a"}, {{"shape", Ints({1, 32})}})
      .Output("a")
      .Output("flat");
  auto g = m.Build();
  auto out = RunNhwc(*g);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(OpOf(*out, "a"), "Transpose");
  EXPECT_EQ(out->FindNode("a")->output_shape(0), Shape({1, 2, 4, 4}));
  EXPECT_EQ(LiveTransposes(*out), 2);
  ExpectSameOutputs(*g, *out, RandomFeeds(*g, 10));
}

TEST(NhwcLayoutPassTest, AModelTransposeComposesWithTheLayout) {
  // A TensorFlow export: NHWC input, Transpose to NCHW, conv, Transpose
  // back to NHWC. After the pass and redundant_nodes no Transpose is left.
  GraphMaker m;
  m.Input("x", {1, 5, 5, 3})
      .Const("w", Values(4 * 3 * 9, 16, -1, 1), {4, 3, 3, 3})
      .Op("to_nchw", "Transpose", {"x"}, {{"perm", Ints({0, 3, 1, 2})}})
      .Op("c", "Conv2D", {"to_nchw", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("y", "Transpose", {"c"}, {{"perm", Ints({0, 2, 3, 1})}})
      .Output("y");
  auto g = m.Build();
  auto out = RunNhwcThenClean(*g);
  ASSERT_NE(out, nullptr);
  const Graph& clean = *out;
  EXPECT_EQ(LiveTransposes(clean), 0);
  EXPECT_EQ(CountNhwc(clean, "Conv2D"), 1);
  ExpectSameOutputs(*g, clean, RandomFeeds(*g, 11));
}

TEST(NhwcLayoutPassTest, AModelsPermuteBackFeedsTheResidualAddChannelsLast) {
  // ConvNeXt's block: depthwise conv, permute to channels last, a Linear
  // layer over C, permute back, residual Add; then the next conv. The Add
  // reads the Linear layer's output as its NHWC form: one Transpose in,
  // one out, none around the block.
  GraphMaker m;
  m.Input("x", {1, 4, 6, 6})
      .Const("w0", Values(4 * 4 * 9, 21, -1, 1), {4, 4, 3, 3})
      .Const("wd", Values(4 * 9, 22, -1, 1), {4, 1, 3, 3})
      .Const("lin", Values(4 * 4, 23, -1, 1), {4, 4})
      .Const("w1", Values(4 * 4 * 9, 24, -1, 1), {4, 4, 3, 3})
      .Op("c0", "Conv2D", {"x", "w0"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("dw", "Conv2D", {"c0", "wd"},
          {{"pads", Ints({1, 1, 1, 1})}, {"group", MakeIntAttr(4)}})
      .Op("to_last", "Transpose", {"dw"}, {{"perm", Ints({0, 2, 3, 1})}})
      .Op("mm", "MatMul", {"to_last", "lin"})
      .Op("back", "Transpose", {"mm"}, {{"perm", Ints({0, 3, 1, 2})}})
      .Op("sum", "Add", {"back", "c0"})
      .Op("c1", "Conv2D", {"sum", "w1"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Output("c1");
  auto g = m.Build();
  auto out = RunNhwcThenClean(*g);
  ASSERT_NE(out, nullptr);
  const Graph& clean = *out;
  EXPECT_EQ(OpOf(clean, "sum/nhwc"), "Add");
  EXPECT_EQ(LiveTransposes(clean), 2);
  EXPECT_EQ(CountNhwc(clean, "Conv2D"), 3);
  ExpectSameOutputs(*g, clean, RandomFeeds(*g, 25));
}

TEST(NhwcLayoutPassTest, LeavesWhatItCannotOrNeedNotConvert) {
  // Unknown channels, a 3-D ConvND, and a Conv2D already NHWC.
  GraphMaker m;
  m.Input("x", {-1, -1, 6, 6})
      .Input("v", {1, 2, 4, 4, 4})
      .Input("z", {1, 6, 6, 3})
      .Const("w", Values(2 * 3 * 9, 17, -1, 1), {2, 3, 3, 3})
      .Const("w3", Values(2 * 2 * 8, 18, -1, 1), {2, 2, 2, 2, 2})
      .Const("wz", Values(4 * 9 * 3, 19, -1, 1), {4, 3, 3, 3})
      .Op("a", "Conv2D", {"x", "w"})
      .Op("b", "ConvND", {"v", "w3"},
          {{"strides", Ints({1, 1, 1})}, {"pads", Ints({0, 0, 0, 0, 0, 0})},
           {"dilations", Ints({1, 1, 1})}})
      .Op("c", "Conv2D", {"z", "wz"}, {{"data_format", MakeStringAttr("NHWC")}})
      .Output("a")
      .Output("b")
      .Output("c");
  auto g = m.Build();
  absl::StatusOr<PassOutput> out = MakeNhwcLayoutPass()->Run(*g, Nhwc());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->graph, nullptr);
  EXPECT_TRUE(out->changes.empty());
}

// AUTO's NHWC leaves a model with a depthwise convolution in NCHW (and says
// why); CONV_LAYOUT_NHWC asked for by the config converts it.
TEST(NhwcLayoutPassTest, AutoKeepsAModelWithGroupedConvolutionsInNchw) {
  GraphMaker m;
  m.Input("x", {1, 8, 6, 6})
      .Const("wd", Values(8 * 9, 21, -1, 1), {8, 1, 3, 3})
      .Const("wp", Values(16 * 8, 22, -1, 1), {16, 8, 1, 1})
      .Op("dw", "Conv2D", {"x", "wd"},
          {{"pads", Ints({1, 1, 1, 1})}, {"group", MakeIntAttr(8)}})
      .Op("pw", "Conv2D", {"dw", "wp"})
      .Output("pw");
  auto g = m.Build();
  PassOptions automatic = Nhwc();
  automatic.keep_grouped_convs_nchw = true;
  absl::StatusOr<PassOutput> kept = MakeNhwcLayoutPass()->Run(*g, automatic);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->graph, nullptr);
  ASSERT_EQ(kept->changes.size(), 1u);
  EXPECT_NE(kept->changes[0].find("'dw' is a grouped convolution (group 8)"),
            std::string::npos)
      << kept->changes[0];
  std::unique_ptr<const Graph> asked = RunNhwc(*g);
  ASSERT_NE(asked, nullptr);
  EXPECT_EQ(CountNhwc(*asked, "Conv2D"), 2);
  // An ungrouped model is converted under AUTO as well.
  auto chain = ConvChain().Build();
  absl::StatusOr<PassOutput> converted =
      MakeNhwcLayoutPass()->Run(*chain, automatic);
  ASSERT_TRUE(converted.ok()) << converted.status();
  ASSERT_NE(converted->graph, nullptr);
  EXPECT_EQ(CountNhwc(*converted->graph, "Conv2D"), 2);
}

GraphMaker ResidualBlock();

// A ConvNeXt block: a depthwise 7 x 7 convolution, then the model permutes
// to channels last itself for LayerNorm and the pointwise Linears, and back
// for the residual Add: two Transposes a block in NCHW.
GraphMaker ConvNextBlocks() {
  GraphMaker m;
  m.Input("x", {1, 8, 6, 6})
      .Const("w1", Values(8 * 49, 31, -1, 1), {8, 1, 7, 7})
      .Const("fc1", Values(8 * 8, 32, -1, 1), {8, 8})
      .Const("w2", Values(8 * 49, 33, -1, 1), {8, 1, 7, 7})
      .Const("fc2", Values(8 * 8, 34, -1, 1), {8, 8})
      .Op("dw1", "Conv2D", {"x", "w1"}, {{"pads", Ints({3, 3, 3, 3})}, {"group", MakeIntAttr(8)}})
      .Op("p1", "Transpose", {"dw1"}, {{"perm", Ints({0, 2, 3, 1})}})
      .Op("l1", "MatMul", {"p1", "fc1"})
      .Op("g1", "Relu", {"l1"})
      .Op("q1", "Transpose", {"g1"}, {{"perm", Ints({0, 3, 1, 2})}})
      .Op("r1", "Add", {"q1", "x"})
      .Op("dw2", "Conv2D", {"r1", "w2"}, {{"pads", Ints({3, 3, 3, 3})}, {"group", MakeIntAttr(8)}})
      .Op("p2", "Transpose", {"dw2"}, {{"perm", Ints({0, 2, 3, 1})}})
      .Op("l2", "MatMul", {"p2", "fc2"})
      .Op("q2", "Transpose", {"l2"}, {{"perm", Ints({0, 3, 1, 2})}})
      .Op("y", "Add", {"q2", "r1"})
      .Output("y");
  return m;
}

PassOptions NchwUnlessFewerTransposes() {
  PassOptions o;
  o.nhwc_where_fewer_transposes = true;
  return o;
}

TEST(NhwcLayoutPassTest, AutoGoesChannelsLastWhereTheModelsPermutesCancel) {
  auto g = ConvNextBlocks().Build();
  ASSERT_EQ(LiveTransposes(*g), 4);
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, NchwUnlessFewerTransposes());
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(CountNhwc(*opt->graph, "Conv2D"), 2);
  EXPECT_LT(LiveTransposes(*opt->graph), 4);
  bool said = false;
  for (const PassRecord& r : opt->records) {
    EXPECT_EQ(r.error, "") << r.pass;
    if (r.pass == "nhwc_layout" && !r.changes.empty()) {
      said = r.changes[0].find("channels last (conv_layout auto): 4 Transposes in the "
                               "model") != std::string::npos;
    }
  }
  EXPECT_TRUE(said);
  ExpectSameOutputs(*g, *opt->graph, RandomFeeds(*g, 35));
}

// A conv chain whose output the model transposes H and W: one Transpose of
// its own, which channels last cannot cancel (it adds the one in).
GraphMaker ConvChainTransposedHw() {
  GraphMaker m = ConvChain();
  m.Op("t", "Transpose", {"y"}, {{"perm", Ints({0, 1, 3, 2})}}).Output("t");
  return m;
}

TEST(NhwcLayoutPassTest, AutoKeepsNchwWhereChannelsLastAddsTransposes) {
  // A conv chain and a ResNet-like block have no Transpose of their own:
  // channels last would add one in (and one out); the trial is not run.
  // The chain that transposes H and W: tried, and kept NCHW.
  struct Case {
    GraphMaker model;
    std::string said;
  };
  for (const Case& c :
       {Case{ConvChain(), "the model has no Transposes for channels last to cancel"},
        Case{ResidualBlock(), "the model has no Transposes for channels last to cancel"},
        Case{ConvChainTransposedHw(), "channels last would leave"}}) {
    auto g = c.model.Build();
    absl::StatusOr<PassOutput> out =
        MakeNhwcLayoutPass()->Run(*g, NchwUnlessFewerTransposes());
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->graph, nullptr);
    ASSERT_EQ(out->changes.size(), 1u);
    EXPECT_NE(out->changes[0].find("kept NCHW (conv_layout auto): " + c.said),
              std::string::npos)
        << out->changes[0];
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, NchwUnlessFewerTransposes());
    ASSERT_TRUE(opt.ok()) << opt.status();
    EXPECT_EQ(LiveTransposes(*opt->graph), LiveTransposes(*g));
  }
}

TEST(NhwcLayoutPassTest, DoesNothingWhenTheLayoutIsNchw) {
  auto g = ConvChain().Build();
  absl::StatusOr<PassOutput> out = MakeNhwcLayoutPass()->Run(*g, PassOptions{});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->graph, nullptr);
}

// A ResNet-like block through the whole pipeline: conv_activation_fusion
// makes FusedConv2D, which nhwc_layout converts.
GraphMaker ResidualBlock() {
  GraphMaker m;
  m.Input("x", {2, 4, 6, 6})
      .Const("wa", Values(4 * 4 * 9, 20, -1, 1), {4, 4, 3, 3})
      .Const("ba", Values(4, 21, -1, 1), {1, 4, 1, 1})
      .Const("wb", Values(4 * 4 * 9, 22, -1, 1), {4, 4, 3, 3})
      .Const("bb", Values(4, 23, -1, 1), {1, 4, 1, 1})
      .Const("fc", Values(4 * 3, 24, -1, 1), {4, 3})
      .Op("stem", "Relu", {"x"})
      .Op("a", "Conv2D", {"stem", "wa"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("a_b", "Add", {"a", "ba"})
      .Op("a_r", "Relu", {"a_b"})
      .Op("b", "Conv2D", {"a_r", "wb"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("b_b", "Add", {"b", "bb"})
      .Op("sum", "Add", {"b_b", "stem"})
      .Op("out", "Relu", {"sum"})
      .Op("gap", "GlobalAvgPool", {"out"})
      .Op("flat", "Reshape", {"gap"}, {{"shape", Ints({2, 4})}})
      .Op("y", "MatMul", {"flat", "fc"})
      .Output("y");
  return m;
}

TEST(NhwcLayoutPipelineTest, ConvertsFusedConvolutionsAtEveryLevel) {
  auto g = ResidualBlock().Build();
  for (OptimizationLevel level : {OPTIMIZATION_NONE, OPTIMIZATION_BASIC, OPTIMIZATION_ALL}) {
    SCOPED_TRACE(OptimizationLevelName(level));
    absl::StatusOr<OptimizedGraph> opt = OptimizeGraph(Copy(*g), level, Nhwc());
    ASSERT_TRUE(opt.ok()) << opt.status();
    bool ran = false;
    for (const PassRecord& r : opt->records) {
      EXPECT_EQ(r.error, "") << r.pass;
      if (r.pass == "nhwc_layout") ran = !r.changes.empty();
    }
    EXPECT_TRUE(ran);
    const std::string conv = level == OPTIMIZATION_ALL ? "FusedConv2D" : "Conv2D";
    EXPECT_EQ(CountNhwc(*opt->graph, conv), 2);
    EXPECT_EQ(LiveTransposes(*opt->graph), 1);  // x in; the head reshapes
    ExpectSameOutputs(*g, *opt->graph, RandomFeeds(*g, 25));
  }
  // The default layout: no nhwc_layout at all.
  absl::StatusOr<OptimizedGraph> plain =
      OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(plain.ok());
  for (const PassRecord& r : plain->records) EXPECT_NE(r.pass, "nhwc_layout");
}

// reduced_precision after nhwc_layout: the Transposes (data movement) carry
// 16-bit values, so the layout adds no Cast: as many as in NCHW.
TEST(NhwcLayoutPipelineTest, ReducedPrecisionConvertsTheTransposesToo) {
  auto g = ResidualBlock().Build();
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(t));
    PassOptions nchw;
    nchw.reduced_precision = t;
    PassOptions nhwc = Nhwc();
    nhwc.reduced_precision = t;
    absl::StatusOr<OptimizedGraph> a = OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, nchw);
    absl::StatusOr<OptimizedGraph> b = OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, nhwc);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(OpCounts(*a->graph)["Cast"], OpCounts(*b->graph)["Cast"]);
    for (const Node& n : b->graph->nodes()) {
      if (n.op() == "Transpose" || n.op() == "FusedConv2D" || n.op() == "ReduceMean") {
        EXPECT_EQ(n.output_dtype(0), t) << n.name();
      }
    }
    EXPECT_EQ(CountNhwc(*b->graph, "FusedConv2D"), 2);
  }
}

// The optimizer is told its target (kernels/execution_provider.h); these
// are the two shapes of target the providers give (their own rules:
// tests/kernels/providers_test.cc).
OptimizationTarget CudnnTarget() {
  OptimizationTarget t;
  t.provider = "cuda";
  t.conv_layout_reduced = DataFormat::kNhwc;
  t.grouped_convs_stay_nchw = true;
  t.nhwc_where_fewer_transposes = true;
  return t;
}

OptimizationTarget OneDnnTarget() {
  OptimizationTarget t;
  t.provider = "cpu";
  t.conv_layout_float32 = DataFormat::kNhwc;
  t.convs_apply_smooth_activations = true;
  return t;
}

TEST(NhwcLayoutPipelineTest, ConvLayoutAutoIsTheTargetsLayoutForThePrecision) {
  RuntimeConfig config;
  EXPECT_EQ(ResolveConvLayout(config, CudnnTarget()), DataFormat::kNchw);
  EXPECT_EQ(ResolveConvLayout(config, OneDnnTarget()), DataFormat::kNhwc);
  EXPECT_EQ(ResolveConvLayout(config, OptimizationTarget()), DataFormat::kNchw);
  config.set_precision(PRECISION_BFLOAT16);
  EXPECT_EQ(ResolveConvLayout(config, CudnnTarget()), DataFormat::kNhwc);
  EXPECT_EQ(ResolveConvLayout(config, OneDnnTarget()), DataFormat::kNchw);
  // An explicit layout is the config's, whatever the target.
  config.set_conv_layout(CONV_LAYOUT_NCHW);
  EXPECT_EQ(ResolveConvLayout(config, CudnnTarget()), DataFormat::kNchw);
  config.set_conv_layout(CONV_LAYOUT_NHWC);
  config.set_precision(PRECISION_MODEL);
  EXPECT_EQ(ResolveConvLayout(config, OptimizationTarget()), DataFormat::kNhwc);
}

// Grouped convolutions stay NCHW only where AUTO chose NHWC for a target
// that runs them slower so (cuDNN); the CPU's oneDNN converts them, and an
// explicit NHWC converts them everywhere.
TEST(NhwcLayoutPipelineTest, GroupedConvolutionsStayNchwOnlyForCudnnsAuto) {
  RuntimeConfig config;
  config.set_precision(PRECISION_FLOAT16);
  EXPECT_TRUE(PassOptionsFromConfig(config, CudnnTarget()).keep_grouped_convs_nchw);
  config.set_conv_layout(CONV_LAYOUT_NHWC);
  EXPECT_FALSE(PassOptionsFromConfig(config, CudnnTarget()).keep_grouped_convs_nchw);
  RuntimeConfig cpu;
  EXPECT_EQ(PassOptionsFromConfig(cpu, OneDnnTarget()).conv_layout, DataFormat::kNhwc);
  EXPECT_FALSE(PassOptionsFromConfig(cpu, OneDnnTarget()).keep_grouped_convs_nchw);
  // Smooth activations fold into convolutions only for a target whose
  // FusedConv2D applies them (the CPU's), whatever its name.
  EXPECT_TRUE(PassOptionsFromConfig(cpu, OneDnnTarget()).fuse_conv_smooth_activations);
  EXPECT_FALSE(PassOptionsFromConfig(cpu, CudnnTarget()).fuse_conv_smooth_activations);
  // float32 on cuDNN: NCHW, so nothing to keep.
  EXPECT_EQ(PassOptionsFromConfig(cpu, CudnnTarget()).conv_layout, DataFormat::kNchw);
  EXPECT_FALSE(PassOptionsFromConfig(cpu, CudnnTarget()).keep_grouped_convs_nchw);
}

TEST(NhwcLayoutPipelineTest, ChannelsLastWhereFewerTransposesOnlyForAutosNchw) {
  RuntimeConfig config;
  EXPECT_TRUE(PassOptionsFromConfig(config, CudnnTarget()).nhwc_where_fewer_transposes);
  EXPECT_FALSE(PassOptionsFromConfig(config, OneDnnTarget()).nhwc_where_fewer_transposes);
  config.set_conv_layout(CONV_LAYOUT_NCHW);  // asked for: kept
  EXPECT_FALSE(PassOptionsFromConfig(config, CudnnTarget()).nhwc_where_fewer_transposes);
  RuntimeConfig half;
  half.set_precision(PRECISION_FLOAT16);  // AUTO's choice is NHWC already
  EXPECT_FALSE(PassOptionsFromConfig(half, CudnnTarget()).nhwc_where_fewer_transposes);
}

}  // namespace
}  // namespace sluice::optimizer_test::nhwc_layout_test
