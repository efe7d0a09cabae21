// RMSNormalization's import (onnx/ops_norm.cc): one RMSNorm where the op can
// say it, the composed form where it cannot. Its values against
// onnxruntime's are checked by onnx_models_test.cc (rms_norm.onnx) and by
// the ONNX node suite (tests/onnx/run_node_suite.sh).
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"

namespace sluice::onnx_test::ops_norm_test {
namespace {

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void SetFloat(onnx::NodeProto* n, const std::string& name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

std::map<std::string, int> OpCounts(const GraphDef& def) {
  std::map<std::string, int> counts;
  for (const NodeDef& n : def.node()) ++counts[n.op()];
  return counts;
}

const NodeDef* FindNode(const GraphDef& def, const std::string& name) {
  for (const NodeDef& n : def.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

// x [2, 3, 8] and scale `scale_dims`, both of `elem`, into
// RMSNormalization "rms" -> y.
onnx::ModelProto RmsModel(std::vector<int64_t> scale_dims, int64_t axis,
                          int elem = onnx::TensorProto::FLOAT,
                          int64_t stash_type = 1) {
  onnx::ModelProto model = NewModel(23);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 3, 8}, elem);
  AddInput(g, "scale", std::move(scale_dims), elem);
  onnx::NodeProto* n =
      AddNode(g, "RMSNormalization", {"x", "scale"}, {"y"}, "rms");
  SetInt(n, "axis", axis);
  SetFloat(n, "epsilon", 1e-6f);
  SetInt(n, "stash_type", stash_type);
  AddOutput(g, "y");
  return model;
}

TEST(OnnxRmsNormTest, ImportsAsOneRMSNorm) {
  absl::StatusOr<GraphDef> def = Import(RmsModel({8}, -1));
  ASSERT_TRUE(def.ok()) << def.status();
  std::map<std::string, int> ops = OpCounts(*def);
  EXPECT_EQ(ops["RMSNorm"], 1);
  EXPECT_EQ(ops["ReduceMean"], 0);
  EXPECT_EQ(ops["Mul"], 0);
  const NodeDef* rms = FindNode(*def, "rms");
  ASSERT_NE(rms, nullptr);
  EXPECT_EQ(rms->op(), "RMSNorm");
  EXPECT_EQ(rms->attr().at("axis").i(), 2);
  EXPECT_FLOAT_EQ(rms->attr().at("epsilon").f(), 1e-6f);
  ASSERT_EQ(rms->input_size(), 2);
  EXPECT_EQ(rms->input(0), "x");
  EXPECT_EQ(rms->input(1), "scale");
}

TEST(OnnxRmsNormTest, Float16WithFloat32StatisticsIsOneRMSNorm) {
  for (int elem : {onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16}) {
    absl::StatusOr<GraphDef> def = Import(RmsModel({3, 8}, 1, elem));
    ASSERT_TRUE(def.ok()) << def.status();
    std::map<std::string, int> ops = OpCounts(*def);
    EXPECT_EQ(ops["RMSNorm"], 1) << elem;
    EXPECT_EQ(ops["Cast"], 0) << elem;
  }
}

TEST(OnnxRmsNormTest, ExpandsAScaleThatBroadcasts) {
  // axis -2 normalises [3, 8]; a scale of [1, 8] broadcasts to it.
  absl::StatusOr<GraphDef> def = Import(RmsModel({1, 8}, -2));
  ASSERT_TRUE(def.ok()) << def.status();
  std::map<std::string, int> ops = OpCounts(*def);
  EXPECT_EQ(ops["RMSNorm"], 1);
  EXPECT_EQ(ops["Expand"], 1);
}

TEST(OnnxRmsNormTest, ComposesFloat16StatisticsInFloat16) {
  // stash_type 0: statistics in float16, which RMSNorm (float32 statistics)
  // does not do; the composed form does.
  absl::StatusOr<GraphDef> def =
      Import(RmsModel({8}, -1, onnx::TensorProto::FLOAT16, /*stash_type=*/0));
  ASSERT_TRUE(def.ok()) << def.status();
  std::map<std::string, int> ops = OpCounts(*def);
  EXPECT_EQ(ops["RMSNorm"], 0);
  EXPECT_EQ(ops["ReduceMean"], 1);
  EXPECT_EQ(ops["Rsqrt"], 1);
}

TEST(OnnxRmsNormTest, ComposesWhenTheNormalisedDimsAreSymbolic) {
  // x [2, 3, H], scale [H]: at run time scale could be [1] and broadcast,
  // which RMSNorm's scale (exactly x.shape[axis:]) cannot.
  onnx::ModelProto model = RmsModel({8}, -1);
  for (int i = 0; i < 2; ++i) {
    auto* shape = model.mutable_graph()->mutable_input(i)->mutable_type()
                      ->mutable_tensor_type()->mutable_shape();
    shape->mutable_dim(shape->dim_size() - 1)->set_dim_param("H");
  }
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  std::map<std::string, int> ops = OpCounts(*def);
  EXPECT_EQ(ops["RMSNorm"], 0);
  EXPECT_EQ(ops["ReduceMean"], 1);
}

TEST(OnnxRmsNormTest, AxisOutOfRangeIsAnError) {
  absl::StatusOr<GraphDef> def = Import(RmsModel({8}, 3));
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(def.status().message().find("axis 3 out of range for rank 3"),
            std::string::npos)
      << def.status();
}

}  // namespace
}  // namespace sluice::onnx_test::ops_norm_test
