// Tests for the op registry and the op schemas' declarations.
#include "graph/op_registry.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/attr_map.h"
#include "graph/shape_fns.h"

namespace sluice::op_registry_test {
namespace {

using ::testing::HasSubstr;

TEST(OpRegistryTest, GlobalHoldsEveryOpOfTheContract) {
  const std::vector<std::string> expected = {
      "Abs", "Acos", "Acosh", "Add", "ArgMax", "ArgMin", "Asin", "Asinh",
      "Atan", "Atanh", "AvgPool", "Cast", "Ceil", "Celu", "Concat", "Const",
      "Conv2D", "Cos", "Cosh", "CumSum", "Div", "Elu", "Equal", "Erf", "Exp",
      "Expand", "FMod", "Floor", "Gather", "GatherElements", "GatherND",
      "Gelu", "GlobalAvgPool", "Greater", "HardSigmoid", "HardSwish",
      "Identity", "Input", "LayerNorm", "Less", "Log", "MatMul", "MaxPool",
      "Maximum", "Minimum", "Mish", "Mod", "Mul", "Neg", "Pow", "ReduceMax",
      "ReduceMean", "ReduceSum", "Relu", "Reshape", "Round", "Rsqrt",
      "ScatterElements", "ScatterND", "Selu", "Sigmoid", "Sign", "Sin",
      "Sinh", "Slice", "Softmax", "Softplus", "Softsign", "Split", "Sqrt",
      "Squeeze", "Sub", "Tan", "Tanh", "ThresholdedRelu", "Transpose",
      "Trilu", "Unsqueeze", "Where"};
  // Every op of the original contract is still registered (the ONNX op
  // families add more; docs/ops.md lists them all).
  const std::vector<std::string> names = OpRegistry::Global()->OpNames();
  for (const std::string& op : expected) {
    EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
  }
  EXPECT_GT(names.size(), expected.size());
}

TEST(OpRegistryTest, FindReturnsNullForUnknownOp) {
  EXPECT_EQ(OpRegistry::Global()->Find("NoSuchOp"), nullptr);
  EXPECT_NE(OpRegistry::Global()->Find("MatMul"), nullptr);
}

TEST(OpRegistryTest, RegisterRejectsDuplicateName) {
  OpRegistry r;
  auto make = [] {
    return OpDefBuilder("Foo").Input("x", "T").Output("y", "T")
        .TypeAttr("T", kAllTypes).ShapeFn(UnchangedShapeFn).Build();
  };
  ASSERT_TRUE(r.Register(make()).ok());
  absl::Status s = r.Register(make());
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("Foo"));
}

TEST(OpRegistryTest, RegisterRejectsArgWithUndeclaredTypeAttr) {
  OpRegistry r;
  absl::Status s = r.Register(OpDefBuilder("Bar").Input("x", "T")
                                  .ShapeFn(UnchangedShapeFn).Build());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'T'"));
}

TEST(OpRegistryTest, RegisterRejectsDefaultOfWrongType) {
  OpRegistry r;
  absl::Status s = r.Register(OpDefBuilder("Baz")
                                  .Attr("axis", AttrType::kInt,
                                        MakeFloatAttr(1.0f))
                                  .ShapeFn(UnchangedShapeFn).Build());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("expected int"));
}

TEST(OpDefTest, BuilderParsesFixedTypesAndTypeAttrs) {
  const OpDef* where = OpRegistry::Global()->Find("Where");
  ASSERT_NE(where, nullptr);
  ASSERT_EQ(where->inputs.size(), 3u);
  EXPECT_EQ(where->inputs[0].fixed_type, DT_BOOL);
  EXPECT_EQ(where->inputs[1].type_attr, "T");
  const OpDef* concat = OpRegistry::Global()->Find("Concat");
  EXPECT_EQ(concat->inputs[0].number_attr, "N");
  const OpDef* split = OpRegistry::Global()->Find("Split");
  EXPECT_EQ(split->outputs[0].number_attr, "num_split");
}

TEST(OpDefTest, DefaultsMatchTheContract) {
  const OpDef* gelu = OpRegistry::Global()->Find("Gelu");
  ASSERT_NE(gelu->FindAttr("approximate"), nullptr);
  EXPECT_EQ(gelu->FindAttr("approximate")->default_value->s(), "none");
  const OpDef* ln = OpRegistry::Global()->Find("LayerNorm");
  EXPECT_FLOAT_EQ(ln->FindAttr("epsilon")->default_value->f(), 1e-5f);
  EXPECT_EQ(ln->FindAttr("axis")->default_value->i(), -1);
  const OpDef* conv = OpRegistry::Global()->Find("Conv2D");
  EXPECT_EQ(conv->FindAttr("pads")->default_value->list().i_size(), 4);
  const OpDef* pool = OpRegistry::Global()->Find("MaxPool");
  EXPECT_FALSE(pool->FindAttr("kernel_shape")->default_value.has_value());
  EXPECT_EQ(pool->FindAttr("count_include_pad"), nullptr);
  EXPECT_NE(OpRegistry::Global()->Find("AvgPool")->FindAttr(
                "count_include_pad"), nullptr);
  const OpDef* matmul = OpRegistry::Global()->Find("MatMul");
  EXPECT_EQ(matmul->FindAttr("T")->allowed_types, kFloatTypes);
  const OpDef* hard_sigmoid = OpRegistry::Global()->Find("HardSigmoid");
  EXPECT_FLOAT_EQ(hard_sigmoid->FindAttr("alpha")->default_value->f(), 0.2f);
  EXPECT_FLOAT_EQ(hard_sigmoid->FindAttr("beta")->default_value->f(), 0.5f);
  const OpDef* selu = OpRegistry::Global()->Find("Selu");
  EXPECT_FLOAT_EQ(selu->FindAttr("gamma")->default_value->f(), 1.0507010f);
  EXPECT_EQ(OpRegistry::Global()->Find("Sign")->FindAttr("T")->allowed_types,
            kNumericTypes);
}

TEST(OpDefTest, AttrTypeNames) {
  EXPECT_EQ(AttrTypeName(AttrType::kListInt), "list(int)");
  EXPECT_EQ(AttrTypeName(AttrType::kTensor), "tensor");
  EXPECT_TRUE(CheckAttrType(MakeIntListAttr({}), AttrType::kListFloat).ok());
  EXPECT_FALSE(CheckAttrType(MakeIntAttr(1), AttrType::kFloat).ok());
}

TEST(AttrMapTest, GettersCheckPresenceAndType) {
  std::map<std::string, AttrValue, std::less<>> values;
  values["axis"] = MakeIntAttr(-1);
  values["perm"] = MakeIntListAttr({1, 0});
  values["eps"] = MakeFloatAttr(0.5f);
  AttrMap attrs(values);
  EXPECT_EQ(*attrs.GetInt("axis"), -1);
  EXPECT_EQ(*attrs.GetIntList("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_FLOAT_EQ(*attrs.GetFloat("eps"), 0.5f);
  EXPECT_EQ(attrs.GetInt("missing").status().code(),
            absl::StatusCode::kNotFound);
  absl::Status wrong = attrs.GetInt("eps").status();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("is float, not int"));
  EXPECT_FALSE(attrs.GetFloatList("perm").ok());
}

}  // namespace
}  // namespace sluice::op_registry_test
