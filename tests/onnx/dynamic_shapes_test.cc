// A model with symbolic dimensions imports once and runs at any shape: the
// importer keeps the shape arithmetic it cannot fold as runtime ops (Shape,
// DynamicReshape, Range, ...) and the session compiles one plan per input
// shape. Checked against onnxruntime at three shapes
// (tests/onnx/make_dynamic_refs.py, make_models.py).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/discovery.h"
#include "executor/session.h"
#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "sluice/npy.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/test_data.h"
#include "testing/gpu_required.h"

namespace sluice::dynamic_shapes_test {
namespace {

std::string Data(const std::string& file) {
  return TestDataPath("tests/onnx/testdata/" + file);
}

int CountOps(const GraphDef& def, const std::string& prefix) {
  return static_cast<int>(std::count_if(
      def.node().begin(), def.node().end(),
      [&](const NodeDef& n) { return n.op().rfind(prefix, 0) == 0; }));
}

void ExpectNear(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), DT_FLOAT);
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], tol)
        << "element " << i;
  }
}

TEST(DynamicShapesTest, TransformerImportsOnceAndRunsAtThreeShapes) {
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      LoadModelGraph(Data("transformer.onnx"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Nothing was frozen: the head reshapes read their shape at run time.
  EXPECT_GT(CountOps((*graph)->def(), "Dynamic"), 0);
  EXPECT_GT(CountOps((*graph)->def(), "Shape"), 0);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  ASSERT_TRUE(session.ok()) << session.status();
  for (const std::string& tag :
       {std::string("transformer"), std::string("transformer.dyn1"),
        std::string("transformer.dyn2")}) {
    SCOPED_TRACE(tag);
    absl::StatusOr<Tensor> ids = ReadNpy(Data(tag + ".in.ids.npy"));
    absl::StatusOr<Tensor> want = ReadNpy(Data(tag + ".out.logits.npy"));
    ASSERT_TRUE(ids.ok() && want.ok());
    absl::StatusOr<std::vector<Tensor>> out =
        (*session)->Run({{"ids", *ids}}, {"logits"});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], *want, 1e-4);
  }
  EXPECT_EQ((*session)->stats().plans_compiled, 3);
}

// On a GPU, with manual placement there: every runtime-parameter op has a
// CUDA kernel (their parameters arrive in host memory), and the results
// match onnxruntime at each shape.
TEST(DynamicShapesTest, TransformerRunsItsDynamicOpsOnTheGpu) {
  const std::string no_gpu = ::sluice::testing::NoUsableGpuReason();
  if (!no_gpu.empty()) SLUICE_GPU_UNAVAILABLE(no_gpu);
  RuntimeConfig config;
  config.set_default_device("gpu:0");
  config.set_placement_strategy(PLACEMENT_MANUAL);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::CreateFromFile(Data("transformer.onnx"), config);
  ASSERT_TRUE(session.ok()) << session.status();
  const Graph& g = (*session)->graph();
  int dynamic_on_gpu = 0;
  for (const Node& n : g.nodes()) {
    if (n.op().rfind("Dynamic", 0) != 0 && n.op() != "Shape" &&
        n.op() != "Range") {
      continue;
    }
    const Device* d = (*session)->assignment()[n.id()];
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->type(), DeviceType::kGpu) << n.name() << " (" << n.op() << ")";
    ++dynamic_on_gpu;
  }
  EXPECT_GT(dynamic_on_gpu, 0);
  for (const std::string& tag :
       {std::string("transformer.dyn1"), std::string("transformer"),
        std::string("transformer.dyn2")}) {
    SCOPED_TRACE(tag);
    absl::StatusOr<Tensor> ids = ReadNpy(Data(tag + ".in.ids.npy"));
    absl::StatusOr<Tensor> want = ReadNpy(Data(tag + ".out.logits.npy"));
    ASSERT_TRUE(ids.ok() && want.ok());
    for (int step = 0; step < 3; ++step) {  // later steps may replay a graph
      absl::StatusOr<std::vector<Tensor>> out =
          (*session)->Run({{"ids", *ids}}, {"logits"});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectNear((*out)[0], *want, 1e-3);
    }
  }
}

TEST(DynamicShapesTest, SignatureKeepsTheSymbolicDimensionNames) {
  absl::StatusOr<LoadedGraphDef> model = LoadModel(Data("transformer.onnx"));
  ASSERT_TRUE(model.ok()) << model.status();
  const TensorInfo& ids = model->def.signature().inputs(0);
  ASSERT_EQ(ids.dim_names_size(), 2);
  EXPECT_EQ(ids.dim_names(0), "batch");
  EXPECT_EQ(ids.dim_names(1), "seq");
}

TEST(DynamicShapesTest, OutputsNameTheSymbolicDimensionsTheyDeclare) {
  // x: [N, 3] -> Relu -> y declared [N, 3]: the signature names y's first
  // dim as it does x's (what onnxruntime's get_outputs() prints).
  onnx::ModelProto model = onnx_test::NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  onnx_test::AddInput(g, "x", {-1, 3});
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
      ->mutable_dim(0)->set_dim_param("N");
  onnx_test::AddNode(g, "Relu", {"x"}, {"y"}, "relu");
  onnx_test::AddOutput(g, "y");
  auto* shape = g->mutable_output(0)->mutable_type()->mutable_tensor_type();
  shape->set_elem_type(onnx::TensorProto::FLOAT);
  shape->mutable_shape()->add_dim()->set_dim_param("N");
  shape->mutable_shape()->add_dim()->set_dim_value(3);
  absl::StatusOr<GraphDef> def = onnx_test::Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  const TensorInfo& y = def->signature().outputs(0);
  ASSERT_EQ(y.dim_names_size(), 2);
  EXPECT_EQ(y.dim_names(0), "N");
  EXPECT_EQ(y.dim_names(1), "");
}

TEST(DynamicShapesTest, FixedDimensionsFoldBackToAttributes) {
  OnnxImportOptions options;
  options.dim_values = {{"batch", 2}, {"seq", 8}};
  absl::StatusOr<LoadedGraphDef> model =
      LoadModel(Data("transformer.onnx"), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(CountOps(model->def, "Dynamic"), 0);
  EXPECT_EQ(CountOps(model->def, "Shape"), 0);
}

TEST(DynamicShapesTest, AnUnknownDimensionNameIsAnError) {
  OnnxImportOptions options;
  options.dim_values = {{"bacth", 2}};
  absl::StatusOr<LoadedGraphDef> model =
      LoadModel(Data("transformer.onnx"), options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("'bacth'"), std::string::npos)
      << model.status();
}

TEST(DynamicShapesTest, AWrongRuntimeShapeIsAnErrorNamingTheNode) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::CreateFromFile(Data("transformer.onnx"));
  ASSERT_TRUE(session.ok()) << session.status();
  // 17 positions: past the 16-row position table, so the position Gather
  // (a runtime Range of the sequence length) must refuse, not read past it.
  std::vector<int64_t> v(17, 1);
  Tensor ids = Tensor::FromVector<int64_t>(v, Shape({1, 17}));
  absl::StatusOr<std::vector<Tensor>> out =
      (*session)->Run({{"ids", ids}}, {"logits"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
}

}  // namespace
}  // namespace sluice::dynamic_shapes_test
