// The ai.onnx.ml handlers (onnx/ops_ml.cc, onnx/ops_ml_trees.cc): what the
// onnxruntime comparisons (onnx_models_test.cc's ml, trees and
// tree_classifiers models) cannot show: integer inputs onnxruntime does not
// take, and the forms sluice refuses, with their reasons.
#include <memory>
#include <string>
#include <vector>

#include "executor/session.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "onnx_test_util.h"

namespace sluice::onnx_test::ops_ml_test {
namespace {

using ::testing::HasSubstr;

// A model of ai.onnx.ml opset 3 alone, with input x [4] of `elem`.
onnx::ModelProto MlModel(int elem = onnx::TensorProto::FLOAT) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* ml = model.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  AddInput(model.mutable_graph(), "x", {4}, elem);
  return model;
}

onnx::NodeProto* MlNode(onnx::ModelProto* model, const std::string& op,
                        std::vector<std::string> outputs) {
  onnx::NodeProto* n =
      AddNode(model->mutable_graph(), op, {"x"}, outputs, "ml");
  n->set_domain("ai.onnx.ml");
  for (const std::string& o : outputs) AddOutput(model->mutable_graph(), o);
  return n;
}

onnx::AttributeProto* Attr(onnx::NodeProto* n, const std::string& name,
                           onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

TEST(OnnxMlTest, BinarizerComparesIntegersWithAFractionalThreshold) {
  onnx::ModelProto model = MlModel(onnx::TensorProto::INT64);
  onnx::NodeProto* n = MlNode(&model, "Binarizer", {"y"});
  Attr(n, "threshold", onnx::AttributeProto::FLOAT)->set_f(-0.5f);
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(*def, {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<Tensor>> y = (*session)->Run(
      {{"x", Tensor::FromVector<int64_t>({-2, -1, 0, 3}, Shape({4}))}}, {"y"});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dtype(), DT_INT64);
  const int64_t* v = (*y)[0].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(v, v + 4), (std::vector<int64_t>{0, 0, 1, 1}));
}

TEST(OnnxMlTest, StringClassLabelsAreRefusedWithTheReason) {
  onnx::ModelProto model = MlModel();
  onnx::NodeProto* n = MlNode(&model, "LinearClassifier", {"label", "scores"});
  Attr(n, "coefficients", onnx::AttributeProto::FLOATS)->add_floats(1);
  onnx::AttributeProto* labels =
      Attr(n, "classlabels_strings", onnx::AttributeProto::STRINGS);
  labels->add_strings("a");
  labels->add_strings("b");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 'ml' (LinearClassifier, ai.onnx.ml opset 3): "
                        "string class labels are not supported"));
}

TEST(OnnxMlTest, TwoClassTreesWithClassOneOnlyAreRefused) {
  onnx::ModelProto model = MlModel();
  onnx::NodeProto* n =
      MlNode(&model, "TreeEnsembleClassifier", {"label", "scores"});
  onnx::AttributeProto* labels =
      Attr(n, "classlabels_int64s", onnx::AttributeProto::INTS);
  labels->add_ints(0);
  labels->add_ints(1);
  Attr(n, "class_ids", onnx::AttributeProto::INTS)->add_ints(1);
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr("a two-class model with weights for class 1 needs "
                        "weights for class 0 and no base_values"));
}

TEST(OnnxMlTest, ProbitIsRefused) {
  onnx::ModelProto model = MlModel();
  onnx::NodeProto* n = MlNode(&model, "LinearRegressor", {"y"});
  Attr(n, "coefficients", onnx::AttributeProto::FLOATS)->add_floats(1);
  Attr(n, "post_transform", onnx::AttributeProto::STRING)->set_s("PROBIT");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr("post_transform PROBIT is not supported"));
}

}  // namespace
}  // namespace sluice::onnx_test::ops_ml_test
