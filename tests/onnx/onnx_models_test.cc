// The generated ONNX models (tests/onnx/make_models.py): each is imported,
// run on sluice's CPU, and compared with the outputs onnxruntime computed.
// Plus what the importer should have done to them: BatchNormalization folded
// into the Conv before it, shape subgraphs folded away, and a conversion that
// round-trips through a .pb file and LoadModel.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/npy.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/importer.h"
#include "model/model_loader.h"
#include "tests/test_data.h"
#include "testing/compare.h"

namespace sluice::onnx_models_test {
namespace {

using ::testing::HasSubstr;

const std::string& DataDir() {
  static const std::string* dir =
      new std::string(TestDataPath("tests/onnx/testdata"));
  return *dir;
}

nlohmann::json Manifest() {
  std::ifstream in(DataDir() + "/manifest.json");
  if (!in) return nlohmann::json::array();
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const auto& entry : Manifest()) {
    std::string model = entry["model"];
    names.push_back(model.substr(0, model.size() - 5));  // drop ".onnx"
  }
  return names;
}

nlohmann::json Entry(const std::string& name) {
  for (const auto& entry : Manifest()) {
    if (entry["model"] == name + ".onnx") return entry;
  }
  return nlohmann::json();
}

OnnxImportOptions OptionsFor(const nlohmann::json& entry) {
  OnnxImportOptions options;
  for (const auto& [dim, value] : entry["dim_values"].items()) {
    options.dim_values[dim] = value.get<int64_t>();
  }
  return options;
}

GraphDef Import(const std::string& name) {
  absl::StatusOr<GraphDef> def =
      ImportOnnx(DataDir() + "/" + name + ".onnx", OptionsFor(Entry(name)));
  EXPECT_TRUE(def.ok()) << def.status();
  return def.ok() ? *def : GraphDef();
}

int CountOps(const GraphDef& def, const std::string& op) {
  int n = 0;
  for (const NodeDef& node : def.node()) n += node.op() == op;
  return n;
}

// Compares within rtol/atol for floats, exactly for the rest.
void ExpectClose(const Tensor& got, const Tensor& want, double rtol,
                 double atol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (want.dtype() == DT_FLOAT) {
    ASSERT_EQ(got.dtype(), DT_FLOAT) << what;
    auto g = got.flat<float>();
    auto w = want.flat<float>();
    // The tests' one comparator (testing/compare.h): NaN only against NaN,
    // infinities by sign, the rest within atol + rtol * |want|.
    EXPECT_EQ(testing::CompareTyped(std::vector<float>(g.begin(), g.end()),
                                    std::vector<float>(w.begin(), w.end()),
                                    testing::Tolerance{atol, rtol}),
              "")
        << what;
    return;
  }
  EXPECT_TRUE(TensorsEqual(got, want)) << what << ": got " << got.DebugString()
                                       << ", want " << want.DebugString();
}

class OnnxModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxModelTest, MatchesOnnxRuntime) {
  const std::string name = GetParam();
  const nlohmann::json entry = Entry(name);
  GraphDef def = Import(name);
  ASSERT_GT(def.node_size(), 0);
  GraphSource source;
  source.base_dir = DataDir();  // external_mlp's weights stay in their file
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      BuildGraph(def, source);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  ASSERT_TRUE(session.ok()) << session.status();

  Feeds feeds;
  for (const auto& [input, file] : entry["inputs"].items()) {
    absl::StatusOr<Tensor> t =
        ReadNpy(DataDir() + "/" + file.get<std::string>());
    ASSERT_TRUE(t.ok()) << t.status();
    feeds.emplace_back(input, *t);
  }
  std::vector<std::string> fetches;
  std::vector<Tensor> expected;
  for (const auto& [output, file] : entry["outputs"].items()) {
    absl::StatusOr<Tensor> t =
        ReadNpy(DataDir() + "/" + file.get<std::string>());
    ASSERT_TRUE(t.ok()) << t.status();
    fetches.push_back(output);
    expected.push_back(*t);
  }
  absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(feeds, fetches);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ExpectClose((*got)[i], expected[i], entry["rtol"].get<double>(),
                entry["atol"].get<double>(),
                absl::StrCat(name, " output '", fetches[i], "'"));
  }
}

INSTANTIATE_TEST_SUITE_P(Generated, OnnxModelTest,
                         ::testing::ValuesIn(ModelNames()),
                         [](const auto& info) { return info.param; });

TEST(OnnxImportTest, ManifestListsEveryModelFamily) {
  std::vector<std::string> names = ModelNames();
  EXPECT_GE(names.size(), 14u);
  EXPECT_THAT(names,
              ::testing::IsSupersetOf(
                  {"cnn", "transformer", "shape_folding", "external_mlp"}));
}

TEST(OnnxImportTest, FoldsBatchNormIntoThePrecedingConv) {
  GraphDef def = Import("cnn");
  EXPECT_EQ(CountOps(def, "Conv2D"), 3);
  // c1's BN folds into c1 (its output goes to the bias Add named after the
  // BN); c2's BN follows a Relu and becomes one Mul and one Add.
  EXPECT_EQ(CountOps(def, "Mul"), 1);
  EXPECT_EQ(CountOps(def, "Sqrt"), 0);
  bool found = false;
  for (const NodeDef& node : def.node()) {
    if (node.name() == "c1_bn") found = node.op() == "Add";
  }
  EXPECT_TRUE(found);
}

TEST(OnnxImportTest, ImportsRMSNormalizationAsRMSNorm) {
  // Three RMSNormalization nodes, each one RMSNorm; the decomposed forms
  // stay op by op at import (the optimizer's rms_norm_fusion fuses them).
  GraphDef def = Import("rms_norm");
  EXPECT_EQ(CountOps(def, "RMSNorm"), 3);
  EXPECT_EQ(CountOps(def, "Sqrt"), 2);
}

TEST(OnnxImportTest, FoldsShapeSubgraphsToConstants) {
  GraphDef def = Import("transformer");
  for (const char* op : {"Concat", "Range"}) EXPECT_EQ(CountOps(def, op), 0);
  // The token lookup is the only Gather left: the position embeddings read
  // a folded Range and fold themselves.
  EXPECT_EQ(CountOps(def, "Gather"), 1);
  GraphDef folding = Import("shape_folding");
  EXPECT_EQ(CountOps(folding, "Concat"), 0);
  EXPECT_EQ(CountOps(folding, "Gather"), 0);
}

// Without a value for its symbolic batch, shape_folding's Shape, Size,
// Reshape, ConstantOfShape and Range run at run time, and the results match
// onnxruntime's at batch 3.
TEST(OnnxImportTest, SymbolicBatchImportsAsRuntimeOps) {
  absl::StatusOr<GraphDef> def =
      ImportOnnx(DataDir() + "/shape_folding.onnx", OnnxImportOptions());
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_GT(CountOps(*def, "Shape"), 0);
  EXPECT_EQ(CountOps(*def, "Size"), 1);
  EXPECT_EQ(CountOps(*def, "DynamicReshape"), 1);
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(*def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<Tensor> x = ReadNpy(DataDir() + "/shape_folding.in.x.npy");
  ASSERT_TRUE(x.ok()) << x.status();
  for (const char* out : {"flat", "plus", "scaled", "normed"}) {
    absl::StatusOr<std::vector<Tensor>> got = (*session)->Run({{"x", *x}}, {out});
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<Tensor> want =
        ReadNpy(DataDir() + "/shape_folding.out." + out + ".npy");
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ((*got)[0].shape(), want->shape()) << out;
    for (int64_t i = 0; i < want->NumElements(); ++i) {
      EXPECT_NEAR((*got)[0].data<float>()[i], want->data<float>()[i], 1e-5)
          << out << " element " << i;
    }
  }
}

TEST(OnnxImportTest, InputShapesOverrideDynamicDims) {
  OnnxImportOptions options;
  options.input_shapes["x"] = {3, -1, -1};
  absl::StatusOr<GraphDef> def =
      ImportOnnx(DataDir() + "/shape_folding.onnx", options);
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_EQ(def->signature().inputs_size(), 1);
  EXPECT_THAT(def->signature().inputs(0).shape().dim(),
              ::testing::ElementsAre(3, 2, 4));

  options.input_shapes["x"] = {3, 5, 4};  // the model fixes dim 1 to 2
  def = ImportOnnx(DataDir() + "/shape_folding.onnx", options);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("fixes it to 2"));
}

TEST(OnnxImportTest, ConvertedModelRoundTripsThroughPbAndLoadModel) {
  const std::string dir = (TestScratchDir() / "onnx_test_tmp").string();
  std::filesystem::create_directories(dir);
  OnnxImportOptions options = OptionsFor(Entry("cnn"));
  absl::StatusOr<LoadedGraphDef> loaded =
      LoadModel(DataDir() + "/cnn.onnx", options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(SaveGraphDef(loaded->def, dir + "/cnn.pb").ok());
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      LoadModelGraph(dir + "/cnn.pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_NE((*g)->FindInput("x"), nullptr);
  EXPECT_NE((*g)->FindOutput("logits"), nullptr);
  EXPECT_TRUE(IsOnnxPath("a/B.ONNX"));
  EXPECT_FALSE(IsOnnxPath("a/b.pbtxt"));
}

}  // namespace
}  // namespace sluice::onnx_models_test
