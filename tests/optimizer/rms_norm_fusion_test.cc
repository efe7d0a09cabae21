// rms_norm_fusion (optimizer/rms_norm_fusion.cc): each form exporters write
// becomes one RMSNorm with the same outputs; patterns it must not touch
// stay as they are.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::rms_norm_fusion_test {
namespace {

enum class Square { kPow, kMul };
enum class Root { kRsqrt, kSqrtDiv, kReciprocal };
enum class ScaleAt { kNone, kRight, kLeft, kLeadingOnes };

struct Form {
  Square square = Square::kPow;
  Root root = Root::kRsqrt;
  bool eps_left = false;    // Add(eps, v) instead of Add(v, eps)
  bool x_left = true;       // Mul(x, inv) instead of Mul(inv, x)
  ScaleAt scale = ScaleAt::kRight;
  bool half_casts = false;  // x and the weight in float16, Casts around
  std::vector<int64_t> axes = {-1};
  std::string read_elsewhere;  // an inside node also made a graph output
  float exponent = 2;
  bool eps_is_input = false;
};

// RMSNorm of x [2, 5, 8] op by op, as PyTorch exports LLaMA's norm; the
// graph's output "out" is y (or n without scale). With half_casts, the
// float32 input is cast to float16 first (the model's activations), then
// to float32 around the statistics and back, as Hugging Face's LlamaRMSNorm
// exports; "out" is cast to float32 again for comparing.
GraphMaker Decomposed(const Form& f) {
  const std::map<std::string, AttrValue> reduce = {
      {"axes", Ints(f.axes)}, {"keepdims", MakeBoolAttr(true)}};
  const bool two_axes = f.axes.size() == 2;
  GraphMaker m;
  m.Input("x_in", {2, 5, 8}).Const("two", {f.exponent}, {});
  if (f.eps_is_input) {
    m.Input("eps", {});
  } else {
    m.Const("eps", {1e-5f}, {});
  }
  if (f.scale == ScaleAt::kLeadingOnes) {
    m.Const("w32", Values(8, 3, 0.5f, 1.5f), {1, 1, 8});
  } else if (two_axes) {
    m.Const("w32", Values(40, 3, 0.5f, 1.5f), {5, 8});
  } else {
    m.Const("w32", Values(8, 3, 0.5f, 1.5f), {8});
  }
  std::string x = "x_in", w = "w32";
  if (f.half_casts) {
    m.Op("x16", "Cast", {"x_in"}, {{"DstT", MakeTypeAttr(DT_FLOAT16)}})
        .Op("w", "Cast", {"w32"}, {{"DstT", MakeTypeAttr(DT_FLOAT16)}})
        .Op("x", "Cast", {"x16"}, {{"DstT", MakeTypeAttr(DT_FLOAT)}});
    x = "x";
    w = "w";
  }
  if (f.square == Square::kPow) {
    m.Op("sq", "Pow", {x, "two"});
  } else {
    m.Op("sq", "Mul", {x, x});
  }
  m.Op("ms", "ReduceMean", {"sq"}, reduce);
  if (f.eps_left) {
    m.Op("plus_eps", "Add", {"eps", "ms"});
  } else {
    m.Op("plus_eps", "Add", {"ms", "eps"});
  }
  auto times_x = [&](const std::string& name, const std::string& inv) {
    m.Op(name, "Mul", f.x_left ? std::vector<std::string>{x, inv}
                               : std::vector<std::string>{inv, x});
  };
  switch (f.root) {
    case Root::kRsqrt:
      m.Op("root", "Rsqrt", {"plus_eps"});
      times_x("n", "root");
      break;
    case Root::kSqrtDiv:
      m.Op("root", "Sqrt", {"plus_eps"}).Op("n", "Div", {x, "root"});
      break;
    case Root::kReciprocal:
      m.Const("one", {1}, {})
          .Op("root", "Sqrt", {"plus_eps"})
          .Op("inv", "Div", {"one", "root"});
      times_x("n", "inv");
      break;
  }
  std::string last = "n";
  if (f.half_casts) {
    m.Op("n16", "Cast", {"n"}, {{"DstT", MakeTypeAttr(DT_FLOAT16)}});
    last = "n16";
  }
  if (f.scale == ScaleAt::kRight || f.scale == ScaleAt::kLeadingOnes) {
    m.Op("y", "Mul", {last, w});
    last = "y";
  } else if (f.scale == ScaleAt::kLeft) {
    m.Op("y", "Mul", {w, last});
    last = "y";
  }
  if (f.half_casts) {
    m.Op("y32", "Cast", {last}, {{"DstT", MakeTypeAttr(DT_FLOAT)}});
    last = "y32";
  }
  m.Output("out", last);
  if (!f.read_elsewhere.empty()) m.Output(f.read_elsewhere);
  return m;
}

TEST(RMSNormFusionPassTest, FusesThePyTorchForm) {
  auto g = Decomposed(Form{}).Build();
  PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "RMSNorm");
  for (const char* gone : {"sq", "ms", "plus_eps", "root", "n"}) {
    EXPECT_EQ(OpOf(*out.graph, gone), "(none)") << gone;
  }
  const Node* rms = out.graph->FindNode("y");
  EXPECT_EQ(*rms->attrs().GetInt("axis"), 2);
  EXPECT_FLOAT_EQ(*rms->attrs().GetFloat("epsilon"), 1e-5f);
  EXPECT_EQ(out.graph->node(rms->input(0).node).name(), "x_in");
  EXPECT_EQ(out.graph->node(rms->input(1).node).name(), "w32");
  EXPECT_EQ(out.graph->outputs()[0].name, "out");
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_NE(out.changes[0].find("fused 6 nodes"), std::string::npos)
      << out.changes[0];
  EXPECT_NE(out.changes[0].find("into RMSNorm 'y'"), std::string::npos);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 11));
}

TEST(RMSNormFusionPassTest, FusesEveryExportedForm) {
  for (Square square : {Square::kPow, Square::kMul}) {
    for (Root root : {Root::kRsqrt, Root::kSqrtDiv, Root::kReciprocal}) {
      for (bool eps_left : {false, true}) {
        for (ScaleAt scale : {ScaleAt::kRight, ScaleAt::kLeft}) {
          for (bool x_left : {true, false}) {
            if (root == Root::kSqrtDiv && !x_left) continue;  // Div: x first
            Form f;
            f.square = square;
            f.root = root;
            f.eps_left = eps_left;
            f.scale = scale;
            f.x_left = x_left;
            SCOPED_TRACE(::testing::Message()
                         << "square " << static_cast<int>(square) << " root "
                         << static_cast<int>(root) << " eps_left " << eps_left
                         << " scale " << static_cast<int>(scale) << " x_left "
                         << x_left);
            auto g = Decomposed(f).Build();
            PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
            ASSERT_NE(out.graph, nullptr);
            std::map<std::string, int> ops = OpCounts(*out.graph);
            EXPECT_EQ(ops["RMSNorm"], 1);
            EXPECT_EQ(ops["ReduceMean"], 0);
            EXPECT_EQ(ops["Mul"] + ops["Div"] + ops["Pow"], 0);
            EXPECT_EQ(OpOf(*out.graph, "y"), "RMSNorm");
            ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 12));
          }
        }
      }
    }
  }
}

TEST(RMSNormFusionPassTest, MakesAScaleOfOnesWithoutTheScaleMul) {
  Form f;
  f.scale = ScaleAt::kNone;
  auto g = Decomposed(f).Build();
  PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "n"), "RMSNorm");
  EXPECT_EQ(OpOf(*out.graph, "n/scale"), "Const");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 13));
}

TEST(RMSNormFusionPassTest, ReshapesAScaleWithLeadingOnes) {
  Form f;
  f.scale = ScaleAt::kLeadingOnes;  // w [1, 1, 8]
  auto g = Decomposed(f).Build();
  PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* rms = out.graph->FindNode("y");
  ASSERT_NE(rms, nullptr);
  EXPECT_EQ(rms->op(), "RMSNorm");
  EXPECT_EQ(rms->input_shape(1), Shape({8}));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 14));
}

TEST(RMSNormFusionPipelineTest, TheExponentAndEpsilonConstantsAreFreed) {
  // The scale [1, 1, 8] goes in as [8] over the same bytes.
  Form f;
  f.scale = ScaleAt::kLeadingOnes;
  auto g = Decomposed(f).Build();
  std::weak_ptr<Buffer> two = ConstBuffer(*g, "two");
  std::weak_ptr<Buffer> eps = ConstBuffer(*g, "eps");
  std::weak_ptr<Buffer> scale = ConstBuffer(*g, "w32");
  ASSERT_FALSE(two.expired());
  ASSERT_FALSE(eps.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  const Node* rms = opt->graph->FindNode("y");
  ASSERT_NE(rms, nullptr);
  ASSERT_EQ(rms->op(), "RMSNorm");
  EXPECT_TRUE(two.expired());
  EXPECT_TRUE(eps.expired());
  EXPECT_EQ(ConstValueOf(*opt->graph, rms->input(1))->buffer().get(),
            scale.lock().get());
  auto given = Decomposed(f).Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 16));
}

TEST(RMSNormFusionPassTest, FusesTwoTrailingAxes) {
  Form f;
  f.axes = {-2, -1};
  auto g = Decomposed(f).Build();
  PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* rms = out.graph->FindNode("y");
  ASSERT_NE(rms, nullptr);
  EXPECT_EQ(rms->op(), "RMSNorm");
  EXPECT_EQ(*rms->attrs().GetInt("axis"), 1);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 15));
}

TEST(RMSNormFusionPassTest, TakesTheCastsOfAHalfExportIn) {
  Form f;
  f.half_casts = true;
  auto g = Decomposed(f).Build();
  PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* rms = out.graph->FindNode("y");
  ASSERT_NE(rms, nullptr);
  EXPECT_EQ(rms->op(), "RMSNorm");
  EXPECT_EQ(rms->output_dtype(0), DT_FLOAT16);
  // Its input is the float16 x itself; the Cast back ("n16") is gone. The
  // Cast up ("x") has no reader left (dead_nodes takes it).
  EXPECT_EQ(out.graph->node(rms->input(0).node).name(), "x16");
  EXPECT_EQ(out.graph->node(rms->input(1).node).name(), "w");
  EXPECT_EQ(OpOf(*out.graph, "n16"), "(none)");
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_NE(out.changes[0].find("fused 7 nodes"), std::string::npos)
      << out.changes[0];
  // One float16 rounding instead of two: within a float16 ulp or so.
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 16), 2e-3, 2e-3);
}

TEST(RMSNormFusionPassTest, LeavesANonTrailingAxis) {
  Form f;
  f.axes = {1};
  f.scale = ScaleAt::kNone;
  auto g = Decomposed(f).Build();
  EXPECT_EQ(RunPass(*MakeRMSNormFusionPass(), *g).graph, nullptr);
}

TEST(RMSNormFusionPassTest, LeavesAPatternWhoseInsideIsRead) {
  for (const char* inside : {"sq", "ms", "plus_eps", "root"}) {
    Form f;
    f.read_elsewhere = inside;
    auto g = Decomposed(f).Build();
    EXPECT_EQ(RunPass(*MakeRMSNormFusionPass(), *g).graph, nullptr) << inside;
  }
}

TEST(RMSNormFusionPassTest, StopsBeforeTheScaleWhenNIsReadElsewhere) {
  Form f;
  f.read_elsewhere = "n";
  auto g = Decomposed(f).Build();
  PassOutput out = RunPass(*MakeRMSNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  // n itself becomes the RMSNorm (scale of ones); the Mul by w stays.
  EXPECT_EQ(OpOf(*out.graph, "n"), "RMSNorm");
  EXPECT_EQ(OpOf(*out.graph, "y"), "Mul");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 17));
}

TEST(RMSNormFusionPassTest, LeavesANonConstantEpsilon) {
  Form f;
  f.eps_is_input = true;
  auto g = Decomposed(f).Build();
  EXPECT_EQ(RunPass(*MakeRMSNormFusionPass(), *g).graph, nullptr);
}

TEST(RMSNormFusionPassTest, LeavesAnotherExponent) {
  Form f;
  f.exponent = 3;
  auto g = Decomposed(f).Build();
  EXPECT_EQ(RunPass(*MakeRMSNormFusionPass(), *g).graph, nullptr);
}

TEST(RMSNormFusionPassTest, LeavesAMulByAnotherTensor) {
  // x * rsqrt(mean(z^2) + eps) with z != x is no RMSNorm of either.
  GraphMaker m;
  m.Input("x", {2, 8})
      .Input("z", {2, 8})
      .Const("eps", {1e-5f}, {})
      .Op("sq", "Mul", {"z", "z"})
      .Op("ms", "ReduceMean", {"sq"},
          {{"axes", Ints({-1})}, {"keepdims", MakeBoolAttr(true)}})
      .Op("plus_eps", "Add", {"ms", "eps"})
      .Op("root", "Rsqrt", {"plus_eps"})
      .Op("n", "Mul", {"x", "root"});
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeRMSNormFusionPass(), *g).graph, nullptr);
}

}  // namespace
}  // namespace sluice::optimizer_test::rms_norm_fusion_test
