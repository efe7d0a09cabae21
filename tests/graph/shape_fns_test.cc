// Tests for the shape helpers (graph/shape_fns.h) and every op's shape
// function, run through BuildGraph on Input nodes of given shapes.
#include "graph/shape_fns.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/attr_map.h"
#include "test_util.h"

namespace sluice::shape_fns_test {
namespace {

using ::sluice::testing_util::InferOne;
using ::sluice::testing_util::InferOp;
using ::sluice::testing_util::TypedShape;
using ::testing::HasSubstr;

constexpr int64_t U = kUnknownDim;

TypedShape F(Shape s) { return {DT_FLOAT, std::move(s)}; }
TypedShape I32(Shape s) { return {DT_INT32, std::move(s)}; }
TypedShape B(Shape s) { return {DT_BOOL, std::move(s)}; }
Shape R() { return Shape::UnknownRank(); }

#define EXPECT_SHAPE(expr, expected)                     \
  do {                                                   \
    auto result_ = (expr);                               \
    ASSERT_TRUE(result_.ok()) << result_.status();       \
    EXPECT_EQ(*result_, (expected)) << result_->DebugString(); \
  } while (0)

#define EXPECT_INVALID(expr, substr)                                   \
  do {                                                                 \
    auto result_ = (expr);                                             \
    ASSERT_FALSE(result_.ok());                                        \
    EXPECT_EQ(result_.status().code(), absl::StatusCode::kInvalidArgument); \
    EXPECT_THAT(result_.status().message(), HasSubstr(substr));        \
  } while (0)

// --- Helpers -----------------------------------------------------------------

TEST(BroadcastShapesTest, StretchesSizeOneDims) {
  EXPECT_SHAPE(BroadcastShapes(Shape({2, 1, 3}), Shape({4, 1})),
               Shape({2, 4, 3}));
}

TEST(BroadcastShapesTest, ScalarBroadcastsToAnything) {
  EXPECT_SHAPE(BroadcastShapes(Shape(), Shape({5, 6})), Shape({5, 6}));
  EXPECT_SHAPE(BroadcastShapes(Shape(), Shape()), Shape());
}

TEST(BroadcastShapesTest, ZeroSizedDimsBroadcastLikeAnyOther) {
  EXPECT_SHAPE(BroadcastShapes(Shape({0, 3}), Shape({1, 3})), Shape({0, 3}));
  EXPECT_SHAPE(BroadcastShapes(Shape({0}), Shape({1})), Shape({0}));
  EXPECT_INVALID(BroadcastShapes(Shape({0}), Shape({2})), "do not broadcast");
}

TEST(BroadcastShapesTest, RejectsMismatchedDims) {
  EXPECT_INVALID(BroadcastShapes(Shape({2, 3}), Shape({4, 3})),
                 "[2,3] and [4,3] do not broadcast");
}

TEST(BroadcastShapesTest, CarriesUnknowns) {
  EXPECT_SHAPE(BroadcastShapes(Shape({U, 3}), Shape({4, 1})), Shape({4, 3}));
  EXPECT_SHAPE(BroadcastShapes(Shape({U}), Shape({1})), Shape({U}));
  EXPECT_SHAPE(BroadcastShapes(Shape({U}), Shape({U})), Shape({U}));
  EXPECT_SHAPE(BroadcastShapes(R(), Shape({3})), R());
}

TEST(NormalizeAxisTest, MapsNegativeAxesAndRejectsOutOfRange) {
  EXPECT_EQ(*NormalizeAxis(-1, 3), 2);
  EXPECT_EQ(*NormalizeAxis(-3, 3), 0);
  EXPECT_EQ(*NormalizeAxis(2, 3), 2);
  EXPECT_INVALID(NormalizeAxis(3, 3), "axis 3 is out of range for rank 3");
  EXPECT_INVALID(NormalizeAxis(-4, 3), "out of range");
  EXPECT_INVALID(NormalizeAxis(0, 0), "out of range");
}

TEST(NormalizeAxisTest, RejectsDuplicateAxes) {
  EXPECT_INVALID(NormalizeAxes({1, -2}, 3), "appears twice");
}

TEST(ConvOutputSizeTest, FollowsTheFormula) {
  EXPECT_EQ(*ConvOutputSize(5, 3, 1, 0, 0), 3);
  EXPECT_EQ(*ConvOutputSize(5, 3, 2, 1, 1), 3);
  EXPECT_EQ(*ConvOutputSize(7, 3, 1, 0, 0, 2), 3);
  EXPECT_EQ(*ConvOutputSize(U, 3, 1, 0, 0), U);
  EXPECT_INVALID(ConvOutputSize(2, 5, 1, 0, 0), "larger than the padded input");
  EXPECT_INVALID(ConvOutputSize(5, 3, 0, 0, 0), "stride");
}

TEST(NormalizeSliceTest, ClampsAndHandlesNegativeSteps) {
  SliceDim d = *NormalizeSlice(10, 2, 8, 3);
  EXPECT_EQ(d.start, 2);
  EXPECT_EQ(d.size, 2);  // 2, 5
  d = *NormalizeSlice(10, -1, -100, -1);
  EXPECT_EQ(d.start, 9);
  EXPECT_EQ(d.size, 10);
  d = *NormalizeSlice(10, 0, INT64_MAX, 1);
  EXPECT_EQ(d.size, 10);
  d = *NormalizeSlice(10, 5, 2, 1);
  EXPECT_EQ(d.size, 0);
  d = *NormalizeSlice(4, INT64_MIN, INT64_MAX, INT64_MAX);
  EXPECT_EQ(d.size, 1);
  EXPECT_INVALID(NormalizeSlice(4, 0, 4, 0), "step must not be 0");
}

// --- Elementwise ops ---------------------------------------------------------

TEST(OpShapeTest, UnaryOpsKeepTheShape) {
  for (const char* op : {"Identity", "Neg", "Abs", "Relu", "Exp", "Log", "Sqrt",
                         "Rsqrt", "Tanh", "Sigmoid", "Erf", "Gelu"}) {
    SCOPED_TRACE(op);
    EXPECT_SHAPE(InferOne(op, {F(Shape({2, U, 0}))}), Shape({2, U, 0}));
    EXPECT_SHAPE(InferOne(op, {F(R())}), R());
  }
}

TEST(OpShapeTest, GeluRejectsUnknownApproximation) {
  EXPECT_INVALID(InferOne("Gelu", {F(Shape({2}))},
                          {{"approximate", MakeStringAttr("fast")}}),
                 "approximate must be");
  EXPECT_TRUE(InferOne("Gelu", {F(Shape({2}))},
                       {{"approximate", MakeStringAttr("tanh")}}).ok());
}

TEST(OpShapeTest, CastChangesDtypeNotShape) {
  EXPECT_SHAPE(InferOne("Cast", {F(Shape({3}))},
                        {{"DstT", MakeTypeAttr(DT_INT32)}}),
               Shape({3}));
  EXPECT_INVALID(InferOne("Cast", {F(Shape({3}))}),
                 "missing required attribute 'DstT'");
}

TEST(OpShapeTest, BinaryOpsBroadcast) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum",
                         "Minimum", "Equal", "Less", "Greater"}) {
    SCOPED_TRACE(op);
    EXPECT_SHAPE(InferOne(op, {F(Shape({2, 1})), F(Shape({3}))}),
                 Shape({2, 3}));
    EXPECT_SHAPE(InferOne(op, {F(Shape()), F(Shape({0, 4}))}),
                 Shape({0, 4}));
    EXPECT_INVALID(InferOne(op, {F(Shape({2})), F(Shape({3}))}),
                   "do not broadcast");
  }
}

TEST(OpShapeTest, ComparisonsOutputBool) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(
      testing_util::ParseGraphDef(R"pb(
        node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_BOOL } } }
        node { name: "e" op: "Equal" input: "a" input: "a" })pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->FindNode("e")->output_dtype(0), DT_BOOL);
  EXPECT_INVALID(InferOne("Less", {B(Shape()), B(Shape())}), "does not allow");
}

TEST(OpShapeTest, WhereBroadcastsAllThree) {
  EXPECT_SHAPE(InferOne("Where", {B(Shape({2, 1, 1})), F(Shape({1, 3, 1})),
                                  F(Shape({4}))}),
               Shape({2, 3, 4}));
}

// --- MatMul, Softmax, LayerNorm ---------------------------------------------

TEST(OpShapeTest, MatMulMultipliesLastTwoDims) {
  EXPECT_SHAPE(InferOne("MatMul", {F(Shape({2, 3})), F(Shape({3, 5}))}),
               Shape({2, 5}));
  EXPECT_SHAPE(InferOne("MatMul", {F(Shape({3, 2})), F(Shape({5, 3}))},
                        {{"transpose_a", MakeBoolAttr(true)},
                         {"transpose_b", MakeBoolAttr(true)}}),
               Shape({2, 5}));
}

TEST(OpShapeTest, MatMulBroadcastsBatchDims) {
  EXPECT_SHAPE(InferOne("MatMul", {F(Shape({7, 1, 2, 3})),
                                   F(Shape({4, 3, 5}))}),
               Shape({7, 4, 2, 5}));
  EXPECT_SHAPE(InferOne("MatMul", {F(Shape({U, 2, 3})), F(Shape({3, U}))}),
               Shape({U, 2, U}));
}

TEST(OpShapeTest, FusedMatMulKeepsXsBatchDimsAndChecksItsArgs) {
  const std::map<std::string, AttrValue> one = {{"num_args", MakeIntAttr(1)}};
  const std::map<std::string, AttrValue> two = {{"num_args", MakeIntAttr(2)}};
  EXPECT_SHAPE(InferOne("FusedMatMul", {F(Shape({U, 4, 3})), F(Shape({3, 5})),
                                        F(Shape({5}))}, one),
               Shape({U, 4, 5}));
  EXPECT_SHAPE(InferOne("FusedMatMul",
                        {F(Shape({4, 3})), F(Shape({5, 3})), F(Shape({5})),
                         F(Shape({4, 5}))},
                        {{"num_args", MakeIntAttr(2)},
                         {"transpose_b", MakeBoolAttr(true)},
                         {"activation", MakeStringAttr("gelu_tanh")}}),
               Shape({4, 5}));
  EXPECT_INVALID(InferOne("FusedMatMul", {F(Shape({4, 3})), F(Shape({3, 5})),
                                          F(Shape({4}))}, one),
                 "one value per output column");
  EXPECT_INVALID(InferOne("FusedMatMul", {F(Shape({4, 3})), F(Shape({3, 5})),
                                          F(Shape({5})), F(Shape({1, 5}))}, two),
                 "residual");
  EXPECT_INVALID(InferOne("FusedMatMul", {F(Shape({4, 3})), F(Shape({2, 3, 5})),
                                          F(Shape({5}))}, one),
                 "must be a matrix");
  EXPECT_INVALID(InferOne("FusedMatMul", {F(Shape({4, 3})), F(Shape({3, 5})),
                                          F(Shape({5}))},
                          {{"num_args", MakeIntAttr(1)},
                           {"activation", MakeStringAttr("gelu")}}),
                 "activation must be");
}

TEST(OpShapeTest, MatMulRejectsInnerMismatchAndLowRank) {
  EXPECT_INVALID(InferOne("MatMul", {F(Shape({2, 3})), F(Shape({4, 5}))}),
                 "inner dimensions differ");
  EXPECT_INVALID(InferOne("MatMul", {F(Shape({3})), F(Shape({3, 5}))}),
                 "rank >= 2");
  EXPECT_INVALID(InferOne("MatMul", {I32(Shape({2, 2})), I32(Shape({2, 2}))}),
                 "does not allow");
}

TEST(OpShapeTest, SoftmaxChecksAxis) {
  EXPECT_SHAPE(InferOne("Softmax", {F(Shape({2, 3}))},
                        {{"axis", MakeIntAttr(-2)}}),
               Shape({2, 3}));
  EXPECT_INVALID(InferOne("Softmax", {F(Shape({2, 3}))},
                          {{"axis", MakeIntAttr(2)}}),
                 "axis 2 is out of range");
}

TEST(OpShapeTest, LayerNormChecksScaleAndBias) {
  EXPECT_SHAPE(InferOne("LayerNorm", {F(Shape({2, 3, 4})), F(Shape({3, 4})),
                                      F(Shape({3, 4}))},
                        {{"axis", MakeIntAttr(1)}}),
               Shape({2, 3, 4}));
  EXPECT_INVALID(InferOne("LayerNorm", {F(Shape({2, 3, 4})), F(Shape({3})),
                                        F(Shape({4}))}),
                 "scale [3] must have shape x.shape[axis:] = [4]");
  EXPECT_INVALID(InferOne("LayerNorm", {F(Shape({2, 4})), F(Shape({4})),
                                        F(Shape({4}))},
                          {{"epsilon", MakeFloatAttr(-1.0f)}}),
                 "epsilon must be >= 0");
}

TEST(OpShapeTest, RMSNormChecksScale) {
  EXPECT_SHAPE(InferOne("RMSNorm", {F(Shape({2, 3, 4})), F(Shape({3, 4}))},
                        {{"axis", MakeIntAttr(1)}}),
               Shape({2, 3, 4}));
  EXPECT_INVALID(InferOne("RMSNorm", {F(Shape({2, 3, 4})), F(Shape({3}))}),
                 "scale [3] must have shape x.shape[axis:] = [4]");
  EXPECT_INVALID(InferOne("RMSNorm", {F(Shape({2, 4})), F(Shape({4}))},
                          {{"axis", MakeIntAttr(2)}}),
                 "axis 2 is out of range");
  EXPECT_INVALID(InferOne("RMSNorm", {F(Shape({2, 4})), F(Shape({4}))},
                          {{"epsilon", MakeFloatAttr(-1.0f)}}),
                 "epsilon must be >= 0");
}

// --- Reductions ----------------------------------------------------------------

TEST(OpShapeTest, ReductionsDropOrKeepAxes) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    SCOPED_TRACE(op);
    EXPECT_SHAPE(InferOne(op, {F(Shape({2, 3, 4}))},
                          {{"axes", MakeIntListAttr({-1, 0})}}),
                 Shape({3}));
    EXPECT_SHAPE(InferOne(op, {F(Shape({2, 3, 4}))},
                          {{"axes", MakeIntListAttr({1})},
                           {"keepdims", MakeBoolAttr(true)}}),
                 Shape({2, 1, 4}));
    EXPECT_SHAPE(InferOne(op, {F(Shape({2, 3}))}), Shape());
    EXPECT_SHAPE(InferOne(op, {F(R())}), Shape());
    EXPECT_SHAPE(InferOne(op, {F(R())}, {{"keepdims", MakeBoolAttr(true)}}),
                 R());
    EXPECT_INVALID(InferOne(op, {F(Shape({2}))},
                            {{"axes", MakeIntListAttr({1})}}),
                   "out of range");
  }
}

// ONNX (18 on): a max over an empty set is the dtype's lowest value.
TEST(OpShapeTest, ReduceMaxOverEmptyAxisHasAShape) {
  EXPECT_SHAPE(InferOne("ReduceMax", {F(Shape({0, 3}))},
                        {{"axes", MakeIntListAttr({0})}}),
               Shape({3}));
  EXPECT_SHAPE(InferOne("ReduceSum", {F(Shape({0, 3}))},
                        {{"axes", MakeIntListAttr({0})}}),
               Shape({3}));
  EXPECT_INVALID(InferOne("ReduceMean", {I32(Shape({0}))}),
                 "integer ReduceMean");
}

// --- Shapes and indexing -----------------------------------------------------

TEST(OpShapeTest, ReshapeInfersMinusOneAndChecksCount) {
  EXPECT_SHAPE(InferOne("Reshape", {F(Shape({2, 3, 4}))},
                        {{"shape", MakeIntListAttr({4, -1})}}),
               Shape({4, 6}));
  EXPECT_SHAPE(InferOne("Reshape", {F(Shape({U, 4}))},
                        {{"shape", MakeIntListAttr({-1, 2})}}),
               Shape({U, 2}));
  EXPECT_SHAPE(InferOne("Reshape", {F(Shape({0, 4}))},
                        {{"shape", MakeIntListAttr({0, 7})}}),
               Shape({0, 7}));
  EXPECT_INVALID(InferOne("Reshape", {F(Shape({2, 3}))},
                          {{"shape", MakeIntListAttr({4})}}),
                 "cannot reshape [2,3] (6 elements) to [4] (4 elements)");
  EXPECT_INVALID(InferOne("Reshape", {F(Shape({2, 3}))},
                          {{"shape", MakeIntListAttr({-1, -1})}}),
                 "more than one -1");
  EXPECT_INVALID(InferOne("Reshape", {F(Shape({2, 3}))},
                          {{"shape", MakeIntListAttr({-2, 3})}}),
                 "negative dimension -2");
}

TEST(OpShapeTest, TransposePermutesOrReverses) {
  EXPECT_SHAPE(InferOne("Transpose", {F(Shape({2, 3, 4}))}),
               Shape({4, 3, 2}));
  EXPECT_SHAPE(InferOne("Transpose", {F(Shape({2, 3, 4}))},
                        {{"perm", MakeIntListAttr({1, 0, 2})}}),
               Shape({3, 2, 4}));
  EXPECT_SHAPE(InferOne("Transpose", {F(R())},
                        {{"perm", MakeIntListAttr({1, 0})}}),
               Shape({U, U}));
  EXPECT_INVALID(InferOne("Transpose", {F(Shape({2, 3}))},
                          {{"perm", MakeIntListAttr({0, 0})}}),
                 "not a permutation");
}

TEST(OpShapeTest, ConcatSumsAxisAndChecksOthers) {
  EXPECT_SHAPE(InferOne("Concat", {F(Shape({2, 3})), F(Shape({2, 0})),
                                   F(Shape({U, 4}))},
                        {{"axis", MakeIntAttr(-1)}}),
               Shape({2, 7}));
  EXPECT_SHAPE(InferOne("Concat", {F(Shape({2, U})), F(Shape({2, 1}))},
                        {{"axis", MakeIntAttr(1)}}),
               Shape({2, U}));
  EXPECT_INVALID(InferOne("Concat", {F(Shape({2, 3})), F(Shape({3, 3}))},
                          {{"axis", MakeIntAttr(1)}}),
                 "differs in dimension 0");
  EXPECT_INVALID(InferOne("Concat", {F(Shape({2})), F(Shape({2, 3}))},
                          {{"axis", MakeIntAttr(0)}}),
                 "different ranks");
  EXPECT_INVALID(InferOne("Concat", {F(Shape()), F(Shape())},
                          {{"axis", MakeIntAttr(0)}}),
                 "out of range for rank 0");
}

TEST(OpShapeTest, SplitEqualOrBySizes) {
  absl::StatusOr<std::vector<Shape>> parts =
      InferOp("Split", {F(Shape({6, 2}))}, {{"num_split", MakeIntAttr(3)}});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(*parts, std::vector<Shape>(3, Shape({2, 2})));
  parts = InferOp("Split", {F(Shape({2, 5}))},
                  {{"num_split", MakeIntAttr(2)},
                   {"axis", MakeIntAttr(-1)},
                   {"sizes", MakeIntListAttr({1, 4})}});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ((*parts)[1], Shape({2, 4}));
  EXPECT_INVALID(InferOp("Split", {F(Shape({5}))},
                         {{"num_split", MakeIntAttr(2)}}),
                 "does not split into 2 equal parts");
  EXPECT_INVALID(InferOp("Split", {F(Shape({5}))},
                         {{"num_split", MakeIntAttr(2)},
                          {"sizes", MakeIntListAttr({1, 1})}}),
                 "do not add up to 5");
  EXPECT_INVALID(InferOp("Split", {F(Shape({5}))},
                         {{"num_split", MakeIntAttr(1) /* ok */},
                          {"sizes", MakeIntListAttr({1, 4})}}),
                 "num_split is 1");
  EXPECT_INVALID(InferOp("Split", {F(Shape({5}))},
                         {{"num_split", MakeIntAttr(int64_t{1} << 40)}}),
                 "must be in [1, 65536]");
}

TEST(OpShapeTest, SliceFollowsNumpy) {
  EXPECT_SHAPE(InferOne("Slice", {F(Shape({10, 4}))},
                        {{"begin", MakeIntListAttr({1})},
                         {"end", MakeIntListAttr({-1})}}),
               Shape({8, 4}));
  EXPECT_SHAPE(InferOne("Slice", {F(Shape({10, 4}))},
                        {{"begin", MakeIntListAttr({-1})},
                         {"end", MakeIntListAttr({INT64_MIN})},
                         {"axes", MakeIntListAttr({-1})},
                         {"steps", MakeIntListAttr({-2})}}),
               Shape({10, 2}));
  EXPECT_SHAPE(InferOne("Slice", {F(Shape({U, 4}))},
                        {{"begin", MakeIntListAttr({0, 0})},
                         {"end", MakeIntListAttr({2, 2})}}),
               Shape({U, 2}));
  EXPECT_INVALID(InferOne("Slice", {F(Shape({4}))},
                          {{"begin", MakeIntListAttr({0})},
                           {"end", MakeIntListAttr({2})},
                           {"steps", MakeIntListAttr({0})}}),
                 "step must not be 0");
  EXPECT_INVALID(InferOne("Slice", {F(Shape({4}))},
                          {{"begin", MakeIntListAttr({0})},
                           {"end", MakeIntListAttr({2, 3})}}),
                 "differ in length");
}

TEST(OpShapeTest, GatherReplacesAxisWithIndicesShape) {
  EXPECT_SHAPE(InferOne("Gather", {F(Shape({5, 6, 7})), I32(Shape({2, 3}))},
                        {{"axis", MakeIntAttr(-2)}}),
               Shape({5, 2, 3, 7}));
  EXPECT_SHAPE(InferOne("Gather", {F(Shape({5})), I32(Shape())}), Shape());
  EXPECT_INVALID(InferOne("Gather", {F(Shape({5})), F(Shape({2}))}),
                 "does not allow");
}

TEST(OpShapeTest, ExpandBroadcastsBothWays) {
  EXPECT_SHAPE(InferOne("Expand", {F(Shape({3, 1}))},
                        {{"shape", MakeIntListAttr({2, 1, 4})}}),
               Shape({2, 3, 4}));
  EXPECT_INVALID(InferOne("Expand", {F(Shape({3}))},
                          {{"shape", MakeIntListAttr({2})}}),
                 "do not broadcast");
}

TEST(OpShapeTest, SqueezeAndUnsqueeze) {
  EXPECT_SHAPE(InferOne("Squeeze", {F(Shape({1, 3, 1}))}), Shape({3}));
  EXPECT_SHAPE(InferOne("Squeeze", {F(Shape({1, 3, 1}))},
                        {{"axes", MakeIntListAttr({-1})}}),
               Shape({1, 3}));
  EXPECT_SHAPE(InferOne("Squeeze", {F(Shape({1, U}))}), R());
  EXPECT_INVALID(InferOne("Squeeze", {F(Shape({1, 3}))},
                          {{"axes", MakeIntListAttr({1})}}),
                 "size is not 1");
  EXPECT_SHAPE(InferOne("Unsqueeze", {F(Shape({3, 4}))},
                        {{"axes", MakeIntListAttr({0, -1})}}),
               Shape({1, 3, 4, 1}));
  EXPECT_INVALID(InferOne("Unsqueeze", {F(Shape({3}))},
                          {{"axes", MakeIntListAttr({2})}}),
                 "out of range");
}

// --- Convolution and pooling -------------------------------------------------

TEST(OpShapeTest, Conv2DComputesOutputSize) {
  EXPECT_SHAPE(InferOne("Conv2D", {F(Shape({1, 3, 32, 32})),
                                   F(Shape({8, 3, 3, 3}))},
                        {{"pads", MakeIntListAttr({1, 1, 1, 1})},
                         {"strides", MakeIntListAttr({2, 2})}}),
               Shape({1, 8, 16, 16}));
  EXPECT_SHAPE(InferOne("Conv2D", {F(Shape({U, 4, U, 9})),
                                   F(Shape({6, 2, 3, 3}))},
                        {{"group", MakeIntAttr(2)},
                         {"dilations", MakeIntListAttr({1, 2})}}),
               Shape({U, 6, U, 5}));
}

TEST(OpShapeTest, Conv2DRejectsBadChannelsAndParams) {
  EXPECT_INVALID(InferOne("Conv2D", {F(Shape({1, 3, 8, 8})),
                                     F(Shape({8, 2, 3, 3}))}),
                 "input channels");
  EXPECT_INVALID(InferOne("Conv2D", {F(Shape({1, 3, 8, 8})),
                                     F(Shape({8, 3, 3, 3}))},
                          {{"pads", MakeIntListAttr({1, 1})}}),
                 "pads 4");
  EXPECT_INVALID(InferOne("Conv2D", {F(Shape({1, 3, 2, 2})),
                                     F(Shape({8, 3, 3, 3}))}),
                 "larger than the padded input");
  EXPECT_INVALID(InferOne("Conv2D", {F(Shape({3, 8, 8})),
                                     F(Shape({8, 3, 3, 3}))}),
                 "rank 4");
}

TEST(OpShapeTest, PoolsNeedKernelShape) {
  for (const char* op : {"MaxPool", "AvgPool"}) {
    SCOPED_TRACE(op);
    EXPECT_SHAPE(InferOne(op, {F(Shape({2, 3, 8, 8}))},
                          {{"kernel_shape", MakeIntListAttr({2, 2})},
                           {"strides", MakeIntListAttr({2, 2})}}),
                 Shape({2, 3, 4, 4}));
    EXPECT_INVALID(InferOne(op, {F(Shape({2, 3, 8, 8}))}),
                   "missing required attribute 'kernel_shape'");
  }
  EXPECT_SHAPE(InferOne("GlobalAvgPool", {F(Shape({2, 3, 8, U}))}),
               Shape({2, 3, 1, 1}));
  EXPECT_INVALID(InferOne("GlobalAvgPool", {F(Shape({2, 3}))}), "rank 4");
}

}  // namespace
}  // namespace sluice::shape_fns_test
