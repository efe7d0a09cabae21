// The property every pass must keep: for every example model (examples/)
// and every ONNX test model (tests/onnx/testdata, imported as the ONNX
// tests import them, again with symbolic dimensions left free, and the
// convolution models with BatchNormalization left unfolded by import), a
// session at optimization level all and one at level none give the same
// outputs on seeded random inputs. Floats: |a - b| <= 1e-5 + 1e-4 |b|
// (fusion changes the order of float operations; a wrong rewrite is off
// by far more); integers and bools exactly. Prints the node counts.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "absl/strings/str_format.h"
#include "core/npy.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "nlohmann/json.hpp"
#include "optimizer/graph_rewriter.h"
#include "kernels/providers.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"
#include "tests/test_data.h"

namespace sluice::optimizer_test::optimized_models_test {
namespace {

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

struct ModelCase {
  std::string name;
  std::string path;
  OnnxImportOptions options;
  // Inputs from files (their shapes and dtypes; float values are replaced
  // by random ones, integer ones kept since they index); empty: from the
  // signature.
  std::map<std::string, std::string> input_files;
};

std::vector<ModelCase> Cases() {
  std::vector<ModelCase> cases;
  for (const char* m : {"mlp.pbtxt", "cnn.pb", "transformer_block.pb"}) {
    cases.push_back({m, TestDataPath(std::string("examples/") + m), {}, {}});
  }
  const std::string dir = TestDataPath("tests/onnx/testdata");
  std::ifstream in(dir + "/manifest.json");
  nlohmann::json manifest =
      nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_array()) return cases;
  for (const auto& entry : manifest) {
    ModelCase c;
    c.name = entry["model"];
    c.path = dir + "/" + c.name;
    for (const auto& [k, v] : entry["inputs"].items()) {
      c.input_files[k] = dir + "/" + v.get<std::string>();
    }
    ModelCase free = c;
    for (const auto& [dim, value] : entry["dim_values"].items()) {
      c.options.dim_values[dim] = value.get<int64_t>();
    }
    cases.push_back(c);
    if (c.name == "cnn.onnx" || c.name == "conv_variants.onnx") {
      // BatchNormalization left as Mul and Add by the importer, for
      // conv_scale_folding to fold.
      ModelCase bn = c;
      bn.name += " (BatchNorm unfolded)";
      bn.options.fold_batch_norm = false;
      cases.push_back(bn);
    }
    if (!c.options.dim_values.empty()) {
      free.name += " (symbolic dims)";
      cases.push_back(free);
    }
  }
  return cases;
}

absl::StatusOr<Feeds> FeedsFor(const ModelCase& c, const Graph& g,
                               uint32_t seed) {
  if (c.input_files.empty()) return RandomFeeds(g, seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  Feeds feeds;
  for (const auto& [name, file] : c.input_files) {
    ASSIGN_OR_RETURN(Tensor t, ReadNpy(file));
    if (t.dtype() == DT_FLOAT) {
      ASSIGN_OR_RETURN(Tensor r, Tensor::Create(DT_FLOAT, t.shape()));
      for (int64_t i = 0; i < r.NumElements(); ++i)
        r.data<float>()[i] = real(rng);
      t = r;
    }
    feeds.emplace_back(name, t);
  }
  return feeds;
}

class OptimizedModelsTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(OptimizedModelsTest, SameOutputsAsUnoptimized) {
  const ModelCase& c = GetParam();
  absl::StatusOr<std::unique_ptr<const Graph>> loaded =
      LoadModelGraph(c.path, c.options);
  if (!loaded.ok() && absl::IsUnimplemented(loaded.status())) {
    GTEST_SKIP() << loaded.status();  // a build without ONNX import
  }
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Graph& g = **loaded;
  // A CPU session's config, and the passes it runs (in float32 on oneDNN,
  // its convolutions channels last).
  RuntimeConfig config;
  config.set_use_gpu(false);
  const PassOptions options = PassOptionsFromConfig(
      config, ProvidersForMachine(config).compute().Target());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(Copy(g), OPTIMIZATION_ALL, options);
  ASSERT_TRUE(opt.ok()) << opt.status();
  for (const PassRecord& r : opt->records) {
    EXPECT_EQ(r.error, "") << r.pass;
  }
  int fused = 0;  // elementwise_fusion's nodes: the new op is exercised
  for (const Node& n : opt->graph->nodes()) {
    fused += n.op() == "FusedElementwise";
  }
  std::cout << absl::StrFormat(
      "[ nodes    ] %-40s %4d -> %4d (%d FusedElementwise)\n", c.name,
      g.num_nodes(), opt->graph->num_nodes(), fused);
  // (Channels last adds a Transpose where a value enters or leaves the
  // convolutions in NCHW: a graph input, an output.)
  if (options.conv_layout == DataFormat::kNchw) {
    EXPECT_LE(opt->graph->num_nodes(), g.num_nodes());
  }
  for (uint32_t seed : {1u, 2u, 3u}) {
    absl::StatusOr<Feeds> feeds = FeedsFor(c, g, seed);
    ASSERT_TRUE(feeds.ok()) << feeds.status();
    absl::StatusOr<std::vector<Tensor>> want = RunAsIs(g, *feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    // The optimised graph through a session at the default level, which
    // runs the pipeline itself.
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(Copy(g), config);
    ASSERT_TRUE(session.ok()) << session.status();
    EXPECT_EQ((*session)->graph().num_nodes(), opt->graph->num_nodes());
    absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(*feeds);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ(Mismatch((*got)[i], (*want)[i], kRtol, kAtol), "")
          << c.name << " output " << g.outputs()[i].name << " seed " << seed;
    }
  }
}

// The same models in float16 and bfloat16 (RuntimeConfig.precision): every
// float32 output stays float32 and within the reduced type's error of the
// float32 run, relative L2 over the output (outputs of other dtypes, an
// argmax or a mask, may flip where two values tie within that error and are
// not compared).
TEST_P(OptimizedModelsTest, ReducedPrecisionStaysClose) {
  const ModelCase& c = GetParam();
  absl::StatusOr<std::unique_ptr<const Graph>> loaded =
      LoadModelGraph(c.path, c.options);
  if (!loaded.ok() && absl::IsUnimplemented(loaded.status())) {
    GTEST_SKIP() << loaded.status();
  }
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Graph& g = **loaded;
  absl::StatusOr<Feeds> feeds = FeedsFor(c, g, 5);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(g, *feeds);
  ASSERT_TRUE(want.ok()) << want.status();
  for (Precision p : {PRECISION_FLOAT16, PRECISION_BFLOAT16}) {
    RuntimeConfig config;
    config.set_use_gpu(false);
    config.set_precision(p);
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(Copy(g), config);
    ASSERT_TRUE(session.ok()) << session.status();
    for (const std::string& line : (*session)->log()) {
      EXPECT_EQ(line.find("failed"), std::string::npos) << line;
    }
    absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(*feeds);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      const Tensor& a = (*got)[i];
      const Tensor& b = (*want)[i];
      ASSERT_EQ(a.dtype(), b.dtype()) << g.outputs()[i].name;
      if (b.dtype() != DT_FLOAT || b.NumElements() == 0) continue;
      const double rel = RelL2(a, b);
      std::cout << absl::StrFormat("[ %-8s ] %-40s %-12s rel L2 %.2e\n",
                                   p == PRECISION_FLOAT16 ? "float16"
                                                          : "bfloat16",
                                   c.name, g.outputs()[i].name, rel);
      EXPECT_LT(rel, p == PRECISION_FLOAT16 ? 1e-2 : 3e-2)
          << c.name << " output " << g.outputs()[i].name;
    }
  }
}

// conv_layout NHWC (nhwc_layout, any device): a session runs every model
// with its convolutions and pooling channels last and gives the outputs of
// the graph as loaded, at levels all and none (where the layout pass runs
// alone).
TEST_P(OptimizedModelsTest, NhwcLayoutSameOutputs) {
  const ModelCase& c = GetParam();
  absl::StatusOr<std::unique_ptr<const Graph>> loaded =
      LoadModelGraph(c.path, c.options);
  if (!loaded.ok() && absl::IsUnimplemented(loaded.status())) {
    GTEST_SKIP() << loaded.status();
  }
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Graph& g = **loaded;
  absl::StatusOr<Feeds> feeds = FeedsFor(c, g, 7);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(g, *feeds);
  ASSERT_TRUE(want.ok()) << want.status();
  for (OptimizationLevel level : {OPTIMIZATION_ALL, OPTIMIZATION_NONE}) {
    SCOPED_TRACE(OptimizationLevelName(level));
    RuntimeConfig config;
    config.set_use_gpu(false);
    config.set_conv_layout(CONV_LAYOUT_NHWC);
    config.set_optimization_level(level);
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(Copy(g), config);
    ASSERT_TRUE(session.ok()) << session.status();
    for (const std::string& line : (*session)->log()) {
      EXPECT_EQ(line.find("failed"), std::string::npos) << line;
    }
    int nhwc = 0;
    for (const Node& n : (*session)->graph().nodes()) {
      nhwc += n.attrs().GetString("data_format").value_or("") == "NHWC";
    }
    if (level == OPTIMIZATION_ALL && nhwc > 0) {
      std::cout << absl::StrFormat("[ nhwc     ] %-40s %d nodes channels last\n",
                                   c.name, nhwc);
    }
    absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(*feeds);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ(Mismatch((*got)[i], (*want)[i], kRtol, kAtol), "")
          << c.name << " output " << g.outputs()[i].name;
    }
  }
}

// The property above exercises nhwc_layout only where a model has
// convolutions it converts: the CNN examples and ONNX models must.
TEST(OptimizedModelsCoverageTest, NhwcLayoutConvertsTheConvolutionModels) {
  int models = 0;
  PassOptions nhwc;
  nhwc.conv_layout = DataFormat::kNhwc;
  for (const ModelCase& c : Cases()) {
    absl::StatusOr<std::unique_ptr<const Graph>> loaded =
        LoadModelGraph(c.path, c.options);
    if (!loaded.ok()) continue;  // the property test reports it
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(std::move(*loaded), OPTIMIZATION_ALL, nhwc);
    ASSERT_TRUE(opt.ok()) << opt.status();
    for (const Node& n : opt->graph->nodes()) {
      if (n.attrs().GetString("data_format").value_or("") == "NHWC") {
        ++models;
        break;
      }
    }
  }
  EXPECT_GE(models, 3);  // cnn.pb, cnn.onnx, conv_variants.onnx at least
}

// The property above covers elementwise_fusion only where a model has a
// chain it fuses: some must (the examples' bias + Relu, the ONNX models'
// decomposed activations), or the comparison would not exercise the
// FusedElementwise kernel at all.
TEST(OptimizedModelsCoverageTest, ElementwiseFusionFusesInSeveralModels) {
  int models = 0;
  for (const ModelCase& c : Cases()) {
    absl::StatusOr<std::unique_ptr<const Graph>> loaded =
        LoadModelGraph(c.path, c.options);
    if (!loaded.ok()) continue;  // the property test reports it
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(std::move(*loaded), OPTIMIZATION_ALL, PassOptions{});
    ASSERT_TRUE(opt.ok()) << opt.status();
    for (const Node& n : opt->graph->nodes()) {
      if (n.op() == "FusedElementwise") {
        ++models;
        break;
      }
    }
  }
  EXPECT_GE(models, 2);
}

INSTANTIATE_TEST_SUITE_P(Models, OptimizedModelsTest,
                         ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           std::string name;
                           for (char ch : info.param.name) {
                             name +=
                                 std::isalnum(static_cast<unsigned char>(ch))
                                     ? ch
                                     : '_';
                           }
                           return name;
                         });

// The comparison above can fail: a pass that changes a value is caught.
class BreakingPass final : public Pass {
 public:
  std::string_view name() const override { return "breaking"; }
  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    GraphRewriter rw(g);
    PassOutput out;
    for (const Node& n : g.nodes()) {
      if (n.op() != "Relu") continue;
      NewNode neg;
      neg.name = n.name();
      neg.op = "Abs";
      neg.inputs.push_back(n.input(0));
      rw.Replace(n.id(), std::move(neg));
      out.changes.push_back("Relu became Abs");
    }
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

TEST(OptimizedModelsComparisonTest, CatchesAPassThatChangesValues) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      LoadModelGraph(TestDataPath("examples/mlp.pbtxt"));
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<PassOutput> broken = BreakingPass().Run(**g, {});
  ASSERT_TRUE(broken.ok()) << broken.status();
  Feeds feeds = RandomFeeds(**g, 1);
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(**g, feeds);
  absl::StatusOr<std::vector<Tensor>> got = RunAsIs(*broken->graph, feeds);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_NE(Mismatch((*got)[0], (*want)[0], kRtol, kAtol), "");
}

}  // namespace
}  // namespace sluice::optimizer_test::optimized_models_test
