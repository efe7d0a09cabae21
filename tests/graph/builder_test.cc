// Tests for BuildGraph / ValidateGraphDef: structure, inference, signature
// and every kind of malformed graph.
#include "graph/builder.h"

#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace sluice::builder_test {
namespace {

using ::sluice::testing_util::ParseGraphDef;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr char kMlp[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: -1 dim: 4 } } } }
  node { name: "w" op: "Const"
         attr { key: "value" value { tensor {
           dtype: DT_FLOAT shape { dim: 4 dim: 3 } float_val: 0.5 } } } }
  node { name: "b" op: "Const"
         attr { key: "value" value { tensor {
           dtype: DT_FLOAT shape { dim: 3 } float_val: [1, 2, 3] } } } }
  node { name: "mm" op: "MatMul" input: "x" input: "w" }
  node { name: "add" op: "Add" input: "mm" input: "b:0" }
  node { name: "y" op: "Relu" input: "add" }
)pb";

absl::Status BuildError(const std::string& text) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(text));
  return g.status();
}

TEST(BuilderTest, BuildsMlpWithInferredTypesAndShapes) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(kMlp));
  ASSERT_TRUE(g.ok()) << g.status();
  const Graph& graph = **g;
  EXPECT_EQ(graph.num_nodes(), 6);
  const Node* y = graph.FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->output_dtype(0), DT_FLOAT);
  EXPECT_EQ(y->output_shape(0), Shape({kUnknownDim, 3}));
  EXPECT_EQ(*graph.FindNode("mm")->attrs().GetType("T"), DT_FLOAT);
  EXPECT_FALSE(*graph.FindNode("mm")->attrs().GetBool("transpose_a"));
  ASSERT_NE(graph.FindNode("w")->const_value(), nullptr);
  EXPECT_EQ(graph.FindNode("w")->const_value()->NumElements(), 12);
  ASSERT_THAT(graph.inputs(), SizeIs(1));
  EXPECT_EQ(graph.inputs()[0].name, "x");
  ASSERT_THAT(graph.outputs(), SizeIs(1));
  EXPECT_EQ(graph.outputs()[0].name, "y");
  EXPECT_EQ(graph.outputs()[0].tensor.node, y->id());
  // Defaults are written back into def().
  EXPECT_EQ(graph.def().node(3).attr().count("transpose_b"), 1u);
}

TEST(BuilderTest, ConstBytesAreHeldOnceByTheValueTensor) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(kMlp));
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* b = (*g)->FindNode("b");
  ASSERT_NE(b->const_value(), nullptr);
  EXPECT_EQ(b->const_value()->flat<float>()[2], 3.0f);
  // The node's attribute and the graph's def() describe the value (dtype,
  // shape) without holding its bytes a second time.
  const TensorProto& attr = b->attrs().Find("value")->tensor();
  EXPECT_EQ(attr.float_val_size(), 0);
  EXPECT_TRUE(attr.content().empty());
  EXPECT_EQ(attr.shape().dim_size(), 1);
  const TensorProto& def = (*g)->def().node(b->id()).attr().at("value").tensor();
  EXPECT_EQ(def.float_val_size(), 0);
  EXPECT_EQ(def.dtype(), DT_FLOAT);
  // Rebuilding from def() needs the values shared; alone it is an error
  // naming the node, not a graph of zeros.
  absl::flat_hash_map<std::string, Tensor> values;
  for (const Node& n : (*g)->nodes()) {
    if (n.const_value() != nullptr) values.emplace(n.name(), *n.const_value());
  }
  absl::StatusOr<std::unique_ptr<const Graph>> again =
      BuildGraphSharingConsts((*g)->def(), GraphSource(), values);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->FindNode("b")->const_value()->raw_data(),
            b->const_value()->raw_data());
  absl::StatusOr<std::unique_ptr<const Graph>> alone = BuildGraph((*g)->def());
  EXPECT_THAT(alone.status().message(),
              HasSubstr("node 'w' (Const): attribute 'value'"));
}

TEST(BuilderTest, TopologicalOrderIsStableAndRespectsEdges) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(ParseGraphDef(R"pb(
    node { name: "c" op: "Relu" input: "a" }
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "d" op: "Add" input: "c" input: "b" input: "^e" }
    node { name: "e" op: "Identity" input: "b" }
  )pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::string> order;
  for (int id : (*g)->topological_order()) {
    order.push_back((*g)->node(id).name());
  }
  EXPECT_THAT(order, ElementsAre("a", "c", "b", "e", "d"));
}

TEST(BuilderTest, RecordsConsumersAndControlConsumers) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(R"pb(
        node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
        node { name: "b" op: "Add" input: "a" input: "a" }
        node { name: "c" op: "Neg" input: "b" input: "^a" }
      )pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  const Graph& graph = **g;
  auto consumers = graph.consumers(0, 0);
  ASSERT_EQ(consumers.size(), 2u);
  EXPECT_EQ(consumers[0].node, 1);
  EXPECT_EQ(consumers[0].input, 0);
  EXPECT_EQ(consumers[1].input, 1);
  EXPECT_THAT(graph.control_consumers(0), ElementsAre(2));
  EXPECT_THAT(graph.node(2).control_inputs(), ElementsAre(0));
}

TEST(BuilderTest, ConcatInfersNFromInputs) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(R"pb(
        node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_INT32 } }
               attr { key: "shape" value { shape { dim: 2 dim: 3 } } } }
        node { name: "c" op: "Concat" input: "a" input: "a" input: "a"
               attr { key: "axis" value { i: -1 } } }
      )pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* c = (*g)->FindNode("c");
  EXPECT_EQ(*c->attrs().GetInt("N"), 3);
  EXPECT_EQ(c->output_shape(0), Shape({2, 9}));
  EXPECT_EQ(c->output_dtype(0), DT_INT32);
}

TEST(BuilderTest, SplitHasNumSplitOutputsAddressableByPort) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(R"pb(
        node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim: 6 } } } }
        node { name: "s" op: "Split" input: "a"
               attr { key: "num_split" value { i: 3 } } }
        node { name: "y" op: "Neg" input: "s:2" }
      )pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* s = (*g)->FindNode("s");
  EXPECT_EQ(s->num_outputs(), 3);
  EXPECT_EQ(s->output_shape(2), Shape({2}));
  // Only nodes nobody consumes give default outputs.
  ASSERT_THAT((*g)->outputs(), SizeIs(1));
  EXPECT_EQ((*g)->outputs()[0].name, "y");
}

TEST(BuilderTest, DefaultOutputsNameEveryPortOfUnconsumedNodes) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(R"pb(
        node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
        node { name: "s" op: "Split" input: "a"
               attr { key: "num_split" value { i: 2 } } }
      )pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::string> names;
  for (const GraphOutput& o : (*g)->outputs()) names.push_back(o.name);
  EXPECT_THAT(names, ElementsAre("s", "s:1"));
  EXPECT_EQ((*g)->FindOutput("s:1")->tensor.port, 1);
}

TEST(BuilderTest, RejectsEmptyGraph) {
  absl::Status s = BuildError("");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("has no nodes"));
}

TEST(BuilderTest, RejectsFormatVersionTooNew) {
  absl::Status s = BuildError(R"pb(format_version: 7
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("format_version 7"));
  EXPECT_THAT(s.message(), HasSubstr("versions 0 to 1"));
}

TEST(BuilderTest, AcceptsFormatVersionOne) {
  EXPECT_TRUE(BuildGraph(ParseGraphDef(R"pb(format_version: 1
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } })pb")).ok());
}

TEST(BuilderTest, RejectsDuplicateNames) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "a" op: "Relu" input: "a" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'a' (Relu): duplicate node name"));
}

TEST(BuilderTest, RejectsEmptyAndMalformedNames) {
  std::vector<absl::Status> errors = ValidateGraphDef(ParseGraphDef(R"pb(
    node { op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "a:1" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } })pb"));
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_THAT(errors[0].message(), HasSubstr("node #0 (Input): node has no name"));
  EXPECT_THAT(errors[1].message(), HasSubstr("must not contain ':'"));
}

TEST(BuilderTest, RejectsMissingInputNode) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Relu" input: "nope" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'a' (Relu): input 0 'nope' refers "
                                     "to a node that does not exist"));
}

TEST(BuilderTest, RejectsPortBeyondOutputs) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Relu" input: "a:1" })pb");
  EXPECT_THAT(s.message(), HasSubstr("asks for output 1 of node 'a' (Input), "
                                     "which has 1 output"));
}

TEST(BuilderTest, RejectsMalformedPort) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Relu" input: "a:x" })pb");
  EXPECT_THAT(s.message(), HasSubstr("bad port 'x'"));
}

TEST(BuilderTest, RejectsDataInputAfterControlInput) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Add" input: "a" input: "^a" input: "a" })pb");
  EXPECT_THAT(s.message(), HasSubstr("control inputs must be last"));
}

TEST(BuilderTest, RejectsWrongInputCount) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Add" input: "a" })pb");
  EXPECT_THAT(s.message(),
              HasSubstr("node 'b' (Add): expects 2 inputs (x, y), got 1"));
}

TEST(BuilderTest, RejectsUnknownOp) {
  absl::Status s = BuildError(R"pb(node { name: "a" op: "Frobnicate" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'a' (Frobnicate): unknown op 'Frobnicate'"));
}

TEST(BuilderTest, RejectsMissingRequiredAttr) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "r" op: "Reshape" input: "a" })pb");
  EXPECT_THAT(s.message(), HasSubstr("node 'r' (Reshape): missing required "
                                     "attribute 'shape' (list(int))"));
}

TEST(BuilderTest, RejectsWrongTypedAttr) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "s" op: "Softmax" input: "a" attr { key: "axis" value { f: 1.5 } } })pb");
  EXPECT_THAT(s.message(), HasSubstr("node 's' (Softmax): attribute 'axis' is "
                                     "float, expected int"));
}

TEST(BuilderTest, RejectsUnknownAttr) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "s" op: "Relu" input: "a" attr { key: "alpha" value { f: 0.1 } } })pb");
  EXPECT_THAT(s.message(), HasSubstr("unknown attribute 'alpha' (Relu has T)"));
}

TEST(BuilderTest, RejectsDisagreeingInputDtypes) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Input" attr { key: "dtype" value { type: DT_INT32 } } }
    node { name: "c" op: "Add" input: "a" input: "b" })pb");
  EXPECT_THAT(s.message(), HasSubstr("node 'c' (Add): inputs disagree on T"));
  EXPECT_THAT(s.message(), HasSubstr("is int32"));
}

TEST(BuilderTest, RejectsInputDtypeAgainstExplicitAttr) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "c" op: "Neg" input: "a" attr { key: "T" value { type: DT_INT32 } } })pb");
  EXPECT_THAT(s.message(), HasSubstr("is float32 but T=int32"));
}

TEST(BuilderTest, RejectsDtypeOutsideAllowedSet) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_INT32 } } }
    node { name: "e" op: "Exp" input: "a" })pb");
  EXPECT_THAT(s.message(), HasSubstr("T=int32, which Exp does not allow"));
}

TEST(BuilderTest, RejectsFixedTypeMismatch) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "w" op: "Where" input: "a" input: "a" input: "a" })pb");
  EXPECT_THAT(s.message(), HasSubstr("'condition' ('a') is float32, expected bool"));
}

TEST(BuilderTest, RejectsConstDtypeDisagreeingWithValue) {
  absl::Status s = BuildError(R"pb(
    node { name: "k" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 1 } } } })pb");
  EXPECT_THAT(s.message(), HasSubstr("dtype=int32 does not match the value's "
                                     "dtype float32"));
}

TEST(BuilderTest, RejectsConstWithDataLengthMismatch) {
  absl::Status s = BuildError(R"pb(
    node { name: "k" op: "Const" attr { key: "value" value { tensor {
      dtype: DT_FLOAT shape { dim: 2 } content: "abc" } } } })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'k' (Const): attribute 'value': "));
  EXPECT_THAT(s.message(), HasSubstr("3 bytes of content, expected 8"));
}

TEST(BuilderTest, RejectsHugeConstShapeWithoutAllocating) {
  absl::Status s = BuildError(R"pb(
    node { name: "k" op: "Const" attr { key: "value" value { tensor {
      dtype: DT_FLOAT shape { dim: 4611686018427387904 } float_val: 1 } } } })pb");
  EXPECT_THAT(s.message(), HasSubstr("more than 2^48 elements"));
}

// A 256 MiB splat read by an Add, and a splat read as a DynamicReshape's
// shape.
constexpr char kLargeSplat[] = R"pb(
  node { name: "big" op: "Const" attr { key: "value" value { tensor {
    dtype: DT_FLOAT shape { dim: 8192 dim: 8192 } float_val: 0.5 } } } }
  node { name: "shape" op: "Const" attr { key: "value" value { tensor {
    dtype: DT_INT64 shape { dim: 2 } int_val: 8192 } } } }
  node { name: "r" op: "DynamicReshape" input: "big" input: "shape" }
  node { name: "y" op: "Add" input: "r" input: "big" }
)pb";

TEST(BuilderTest, DescribingALargeSplatDoesNotMakeIt) {
  GraphDef def = ParseGraphDef(kLargeSplat);
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(def, {}, ConstValues::kDescribeSplats);
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* big = (*g)->FindNode("big");
  EXPECT_TRUE(big->is_const());
  EXPECT_EQ(big->const_value(), nullptr);
  EXPECT_EQ(big->output_dtype(0), DT_FLOAT);
  EXPECT_EQ(big->output_shape(0), Shape({8192, 8192}));
  // The DynamicReshape's shape function read the shape splat: it was made
  // for it.
  EXPECT_EQ((*g)->FindNode("shape")->const_value(), nullptr);
  EXPECT_EQ((*g)->FindNode("r")->output_shape(0), Shape({8192, 8192}));
  EXPECT_EQ((*g)->FindNode("y")->output_shape(0), Shape({8192, 8192}));
  EXPECT_FALSE((*g)->FindNode("y")->is_const());
  // Built to run, the value is made.
  g = BuildGraph(def);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_NE((*g)->FindNode("big")->const_value(), nullptr);
  EXPECT_EQ((*g)->FindNode("big")->const_value()->flat<float>()[12345], 0.5f);
}

TEST(BuilderTest, DescribedSplatsAreCheckedAsMadeOnesAre) {
  // A value out of the dtype's range and a dtype attribute that disagrees
  // are the same errors whether the splat is made or described.
  for (const char* text : {
           R"pb(node { name: "k" op: "Const" attr { key: "value" value {
                tensor { dtype: DT_INT8 shape { dim: 1000000 } int_val: 300 } } } })pb",
           R"pb(node { name: "k" op: "Const"
                attr { key: "dtype" value { type: DT_INT32 } }
                attr { key: "value" value { tensor {
                  dtype: DT_FLOAT shape { dim: 1000000 } float_val: 1 } } } })pb",
           R"pb(node { name: "k" op: "Const" attr { key: "value" value {
                tensor { dtype: DT_FLOAT shape { dim: 1000000 } int_val: 1 } } } })pb",
           // A shape function reading a splat: Gather's index check.
           R"pb(node { name: "p" op: "Const" attr { key: "value" value {
                tensor { dtype: DT_FLOAT shape { dim: 10 } float_val: 1 } } } }
                node { name: "i" op: "Const" attr { key: "value" value {
                tensor { dtype: DT_INT64 shape { dim: 100000 } int_val: 12 } } } }
                node { name: "g" op: "Gather" input: "p" input: "i" })pb"}) {
    GraphDef def = ParseGraphDef(text);
    absl::StatusOr<std::unique_ptr<const Graph>> made = BuildGraph(def);
    absl::StatusOr<std::unique_ptr<const Graph>> described =
        BuildGraph(def, {}, ConstValues::kDescribeSplats);
    ASSERT_FALSE(made.ok()) << text;
    EXPECT_EQ(described.status(), made.status()) << text;
    ASSERT_EQ(ValidateGraphDef(def).size(), 1u) << text;
    EXPECT_EQ(ValidateGraphDef(def)[0].message(), made.status().message());
  }
}

TEST(BuilderTest, RejectsNegativeDimInInputShape) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 2 dim: -5 } } } })pb");
  EXPECT_THAT(s.message(), HasSubstr("node 'a' (Input): "));
  EXPECT_THAT(s.message(), HasSubstr("negative dimension -5"));
}

TEST(BuilderTest, ReportsCycleWithItsNodes) {
  absl::Status s = BuildError(R"pb(
    node { name: "x" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "a" op: "Add" input: "x" input: "c" }
    node { name: "b" op: "Relu" input: "a" }
    node { name: "c" op: "Neg" input: "b" }
    node { name: "d" op: "Neg" input: "c" })pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle: a -> b -> c -> a"));
  // One error for the cycle; d, downstream of it, adds none.
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("'d'")));
}

TEST(BuilderTest, LongCycleNamesItsFirstNodesAndCountsTheRest) {
  std::string text;
  for (int i = 0; i < 25; ++i) {
    absl::StrAppend(&text, "node { name: \"n", i, "\" op: \"Neg\" input: \"n",
                    (i + 1) % 25, "\" }\n");
  }
  std::vector<absl::Status> errors = ValidateGraphDef(ParseGraphDef(text));
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_THAT(errors[0].message(),
              HasSubstr("cycle: n0 -> n24 -> n23 -> n22 -> n21 -> n20 -> n19 "
                        "-> n18 -> n17 -> n16 -> ... and 15 more -> n0"));
}

TEST(BuilderTest, EscapesControlCharactersInNodeNames) {
  absl::Status s = BuildError("node { name: \"a\\nb\\033\" op: \"NoSuchOp\" }");
  EXPECT_THAT(s.message(), HasSubstr("node 'a\\nb\\x1b'"));
}

TEST(BuilderTest, ReportsSelfLoopAndControlCycle) {
  std::vector<absl::Status> errors = ValidateGraphDef(ParseGraphDef(R"pb(
    node { name: "s" op: "Neg" input: "s" }
    node { name: "p" op: "Input" input: "^q" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "q" op: "Neg" input: "p" })pb"));
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_THAT(errors[0].message(), HasSubstr("cycle: s -> s"));
  EXPECT_THAT(errors[1].message(), HasSubstr("cycle: p -> q -> p"));
}

TEST(BuilderTest, CollectsAllIndependentErrors) {
  std::vector<absl::Status> errors = ValidateGraphDef(ParseGraphDef(R"pb(
    node { name: "a" op: "Nope" }
    node { name: "b" op: "Relu" input: "missing" }
    node { name: "c" op: "Input" }
    node { name: "d" op: "Relu" input: "a" })pb"));
  // a: unknown op; b: missing input; c: missing dtype. d depends on a and
  // reports nothing of its own.
  ASSERT_THAT(errors, SizeIs(3));
  absl::Status joined = BuildError(R"pb(
    node { name: "a" op: "Nope" }
    node { name: "b" op: "Relu" input: "missing" })pb");
  EXPECT_THAT(joined.message(), HasSubstr("\n"));
}

TEST(BuilderTest, ErrorsNameTheLineWhenKnown) {
  GraphSource source;
  source.node_lines["b"] = 12;
  std::vector<absl::Status> errors = ValidateGraphDef(ParseGraphDef(R"pb(
    node { name: "b" op: "Relu" input: "missing" })pb"), source);
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_THAT(errors[0].message(), HasSubstr("node 'b' (Relu) at line 12: "));
}

TEST(BuilderTest, ShapeFunctionErrorsNameTheNode) {
  absl::Status s = BuildError(R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 2 dim: 3 } } } }
    node { name: "fc1" op: "MatMul" input: "a" input: "a" })pb");
  EXPECT_THAT(s.message(), HasSubstr("node 'fc1' (MatMul): MatMul inner "
                                     "dimensions differ"));
}

TEST(BuilderTest, GatherChecksConstIndicesAtLoadTime) {
  absl::Status s = BuildError(R"pb(
    node { name: "p" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 4 dim: 2 } } } }
    node { name: "i" op: "Const" attr { key: "value" value { tensor {
      dtype: DT_INT64 shape { dim: 2 } int_val: [1, 4] } } } }
    node { name: "g" op: "Gather" input: "p" input: "i" })pb");
  EXPECT_THAT(s.message(), HasSubstr("Gather index 4 is out of range"));
}

// --- Signature --------------------------------------------------------------

constexpr char kTwoInputs[] = R"pb(
  node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 2 } } } }
  node { name: "b" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "c" op: "Add" input: "a" input: "b" }
)pb";

TEST(SignatureTest, ExplicitInputsAndOutputsAreUsed) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(ParseGraphDef(absl::StrCat(kTwoInputs, R"pb(
        signature { inputs { name: "b" } inputs { name: "a" }
                    outputs { name: "sum" tensor: "c:0" dtype: DT_FLOAT } })pb")));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_THAT((*g)->inputs(), SizeIs(2));
  EXPECT_EQ((*g)->inputs()[0].name, "b");
  ASSERT_NE((*g)->FindOutput("sum"), nullptr);
  EXPECT_EQ((*g)->FindOutput("sum")->tensor.node, 2);
}

TEST(SignatureTest, RejectsInputNodeMissingFromSignature) {
  absl::Status s = BuildError(absl::StrCat(kTwoInputs, R"pb(
    signature { inputs { name: "a" } })pb"));
  EXPECT_THAT(s.message(), HasSubstr("node 'b' (Input): Input node is not "
                                     "listed in signature.inputs"));
}

TEST(SignatureTest, RejectsInputThatIsNotAnInputNode) {
  absl::Status s = BuildError(absl::StrCat(kTwoInputs, R"pb(
    signature { inputs { name: "a" } inputs { name: "b" } inputs { name: "c" } })pb"));
  EXPECT_THAT(s.message(), HasSubstr("signature input 'c': names node 'c' "
                                     "(Add), which is not an Input node"));
}

TEST(SignatureTest, RejectsOutputOfUnknownNodeOrBadPort) {
  std::vector<absl::Status> errors =
      ValidateGraphDef(ParseGraphDef(absl::StrCat(kTwoInputs, R"pb(
        signature { outputs { name: "y" tensor: "zz" }
                    outputs { name: "z" tensor: "c:3" } })pb")));
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_THAT(errors[0].message(), HasSubstr("signature output 'y': tensor "
                                             "'zz' names no node"));
  EXPECT_THAT(errors[1].message(), HasSubstr("asks for output 3"));
}

TEST(SignatureTest, RejectsOutputDtypeOrShapeDisagreeingWithInference) {
  std::vector<absl::Status> errors =
      ValidateGraphDef(ParseGraphDef(absl::StrCat(kTwoInputs, R"pb(
        signature { outputs { name: "y" tensor: "c" dtype: DT_INT32 }
                    outputs { name: "z" tensor: "a" shape { dim: 3 } } })pb")));
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_THAT(errors[0].message(), HasSubstr("dtype int32 does not match the "
                                             "inferred float32"));
  EXPECT_THAT(errors[1].message(), HasSubstr("shape [3] does not match the "
                                             "inferred [2]"));
}

TEST(SignatureTest, RejectsDuplicateOutputNames) {
  absl::Status s = BuildError(absl::StrCat(kTwoInputs, R"pb(
    signature { outputs { name: "c" } outputs { name: "c" } })pb"));
  EXPECT_THAT(s.message(), HasSubstr("signature output 'c': is listed twice"));
}

TEST(ParseInputStringTest, ParsesAllForms) {
  EXPECT_EQ(ParseInputString("a")->node, "a");
  EXPECT_EQ(ParseInputString("a:2")->port, 2);
  EXPECT_TRUE(ParseInputString("^a")->control);
  EXPECT_FALSE(ParseInputString("").ok());
  EXPECT_FALSE(ParseInputString("a:").ok());
  EXPECT_FALSE(ParseInputString("a:-1").ok());
  EXPECT_FALSE(ParseInputString("^a:1").ok());
  EXPECT_FALSE(ParseInputString("a:99999999999").ok());
}

}  // namespace
}  // namespace sluice::builder_test

namespace sluice::builder_test {
namespace {

TEST(GraphBuilderRuntimeAttrTest, KeepsAttributesStartingWithUnderscore) {
  GraphDef def;
  NodeDef* x = def.add_node();
  x->set_name("x");
  x->set_op("Input");
  (*x->mutable_attr())["dtype"].set_type(DT_FLOAT);
  (*x->mutable_attr())["_colocate"].set_s("g");
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::string> group = (*g)->node(0).attrs().GetString("_colocate");
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(*group, "g");
}

}  // namespace
}  // namespace sluice::builder_test
