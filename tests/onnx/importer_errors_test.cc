// The importer on bad and unusual input, with models built here as ONNX
// protos: every unsupported node listed at once, files that are not ONNX,
// opsets out of range and op versions sluice does not implement, external data that is missing, short or outside the
// model's folder, initializers in each typed field, values that sluice needs
// at import time but cannot fold, and the command-line option parsers.
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_proto.h"
#include "executor/session.h"
#include "graph/loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/graph_emitter.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "onnx/op_versions.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/test_data.h"

namespace sluice::onnx_test::importer_errors_test {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The value of the Const node a folded graph output points at.
// `base_dir`: the model's folder, for Consts that refer to external data.
Tensor OutputConst(const GraphDef& def, int i,
                   const std::string& base_dir = "") {
  const std::string& ref = def.signature().outputs(i).tensor();
  for (const NodeDef& n : def.node()) {
    if (n.name() == ref && n.op() == "Const") {
      absl::StatusOr<Tensor> t =
          TensorFromProto(n.attr().at("value").tensor(), base_dir);
      if (t.ok()) return *t;
    }
  }
  ADD_FAILURE() << "output " << i << " is not a Const";
  return Tensor();
}

TEST(OnnxImporterErrorTest, ListsEveryUnsupportedNodeAtOnce) {
  onnx::ModelProto model = NewModel(17);
  onnx::OperatorSetIdProto* ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {1, 2, 4, 4, 4});
  AddNode(g, "Relu", {"x"}, {"r"}, "fine");
  onnx::NodeProto* tfidf =
      AddNode(g, "TfIdfVectorizer", {"r"}, {"v"}, "tfidf");
  for (const char* name : {"max_gram_length", "max_skip_count",
                           "min_gram_length"}) {
    onnx::AttributeProto* a = tfidf->add_attribute();  // required attributes
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
  }
  for (const char* name : {"ngram_counts", "ngram_indexes"}) {
    onnx::AttributeProto* a = tfidf->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(0);
  }
  onnx::AttributeProto* mode = tfidf->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("TF");
  AddNode(g, "StringNormalizer", {"r"}, {"m"}, "mod");
  AddNode(g, "FusedGemm", {"r", "r"}, {"f"}, "fused")
      ->set_domain("com.microsoft");
  onnx::NodeProto* bn = AddNode(g, "BatchNormalization",
                                {"x", "s", "b", "m", "v"}, {"y"}, "bn_train");
  onnx::AttributeProto* tm = bn->add_attribute();
  tm->set_name("training_mode");
  tm->set_type(onnx::AttributeProto::INT);
  tm->set_i(1);
  AddOutput(g, "r");

  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              AllOf(HasSubstr("4 nodes"),
                    HasSubstr("node 'tfidf' (TfIdfVectorizer, opset 17): op "
                              "not supported"),
                    HasSubstr("node 'mod' (StringNormalizer, opset 17)"),
                    HasSubstr("node 'fused' (FusedGemm, com.microsoft "
                              "opset 1): domain 'com.microsoft'"),
                    HasSubstr("node 'bn_train' (BatchNormalization, opset "
                              "17): training_mode"),
                    Not(HasSubstr("'fine'"))));
}

TEST(OnnxImporterErrorTest, NotAnOnnxFile) {
  absl::StatusOr<GraphDef> def =
      ImportOnnxBytes("\xff\xff\xff garbage", "", {}, "junk.onnx");
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("junk.onnx"));
}

TEST(OnnxImporterErrorTest, MissingFileIsNotFound) {
  absl::StatusOr<GraphDef> def = ImportOnnx("/nonexistent/model.onnx");
  EXPECT_EQ(def.status().code(), absl::StatusCode::kNotFound);
}

TEST(OnnxImporterErrorTest, OpsetNewerThanTheNewestKnownIsRefused) {
  onnx::ModelProto model = NewModel(NewestKnownOpset() + 1);
  AddInput(model.mutable_graph(), "x", {2});
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr(absl::StrCat("sluice knows opsets 1 to ",
                                     NewestKnownOpset())));
}

TEST(OnnxOpVersionTest, TheOpsetSelectsEachOpsNewestVersionNotAfterIt) {
  EXPECT_EQ(OnnxOpVersion("ReduceMean", 17), 13);
  EXPECT_EQ(OnnxOpVersion("ReduceMean", 18), 18);
  EXPECT_EQ(OnnxOpVersion("ReduceMean", 25), 18);
  EXPECT_EQ(OnnxOpVersion("Sin", 22), 22);
  EXPECT_EQ(OnnxOpVersion("Sin", 6), 0);  // Sin is new in opset 7
  EXPECT_EQ(OnnxOpVersion("NoSuchOp", 18), 0);
  EXPECT_GE(NewestKnownOpset(), 22);
  EXPECT_EQ(UnhandledVersionReason("ReduceMean", 21), "");
}

TEST(OnnxImporterOpsetTest, ModelOfANewerOpsetLoadsWhenItsOpsAreHandled) {
  onnx::ModelProto model = NewModel(22);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 3});
  AddNode(g, "Sin", {"x"}, {"s"});
  AddNode(g, "Relu", {"s"}, {"y"});
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  std::vector<std::string> ops;
  for (const NodeDef& n : def->node()) ops.push_back(n.op());
  EXPECT_THAT(ops, ElementsAre("Input", "Sin", "Relu"));
}

TEST(OnnxImporterOpsetTest, ReportsEachOpVersionSluiceDoesNotImplement) {
  onnx::ModelProto model = NewModel(6);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 3});
  AddNode(g, "Relu", {"x"}, {"r"}, "fine");       // version 6: handled
  AddNode(g, "Clip", {"r"}, {"c"}, "clip6");      // min/max attributes
  AddNode(g, "Add", {"c", "r"}, {"a"}, "add6");   // legacy broadcast
  AddNode(g, "Sin", {"a"}, {"y"}, "sin");         // not in opset 6
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(
      def.status().message(),
      AllOf(HasSubstr("3 nodes"),
            HasSubstr("op Clip at opset 6 (version 6): min and max as "
                      "attributes (before version 11) not supported"),
            HasSubstr("op Add at opset 6 (version 6)"),
            HasSubstr("op Sin does not exist at opset 6"),
            Not(HasSubstr("'fine'"))));
}

TEST(OnnxImporterOpsetTest, SoftmaxBeforeOpset13FlattensFromItsAxis) {
  onnx::ModelProto model = NewModel(11);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 3, 4});
  AddNode(g, "Softmax", {"x"}, {"y"});  // axis 1: softmax over 3 * 4
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  std::vector<std::string> ops;
  for (const NodeDef& n : def->node()) {
    ops.push_back(n.op());
    if (n.op() == "Softmax") {
      EXPECT_EQ(n.attr().at("axis").i(), 1);
    }
  }
  EXPECT_THAT(ops, ::testing::Contains("Reshape").Times(2));
  EXPECT_EQ(def->signature().outputs(0).shape().dim_size(), 3);
}

onnx::AttributeProto* AddIntAttr(onnx::NodeProto* n, const std::string& name,
                                 int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return a;
}

TEST(OnnxImporterLoweringTest, AttentionSplitsHeadsAndReturnsThePresentKey) {
  onnx::ModelProto model = NewModel(23);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "q", {2, 3, 8});
  AddInput(g, "k", {2, 5, 4});
  AddInput(g, "v", {2, 5, 4});
  onnx::NodeProto* n =
      AddNode(g, "Attention", {"q", "k", "v"}, {"y", "present_k"}, "attn");
  AddIntAttr(n, "q_num_heads", 4);  // head size 2; grouped: 2 kv heads
  AddIntAttr(n, "kv_num_heads", 2);
  AddIntAttr(n, "is_causal", 1);
  AddOutput(g, "y");
  AddOutput(g, "present_k");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  const auto& outs = def->signature().outputs();
  ASSERT_EQ(outs.size(), 2);
  EXPECT_THAT(outs[0].shape().dim(), ElementsAre(2, 3, 8));
  EXPECT_THAT(outs[1].shape().dim(), ElementsAre(2, 2, 5, 2));
  std::vector<std::string> ops;
  for (const NodeDef& node : def->node()) ops.push_back(node.op());
  EXPECT_THAT(ops, ::testing::Contains("Softmax"));
  EXPECT_THAT(ops, ::testing::Contains("MatMul").Times(2));
}

TEST(OnnxImporterLoweringTest, NllLossMeanIsAScalar) {
  onnx::ModelProto model = NewModel(13);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "logp", {3, 5});
  AddInput(g, "target", {3}, onnx::TensorProto::INT64);
  onnx::NodeProto* n = AddNode(g, "NegativeLogLikelihoodLoss",
                               {"logp", "target"}, {"loss"}, "nll");
  AddIntAttr(n, "ignore_index", 1);
  AddOutput(g, "loss");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->signature().outputs(0).shape().dim_size(), 0);
}

TEST(OnnxImporterLoweringTest, BlockedQuantisationIsRefusedByName) {
  onnx::ModelProto model = NewModel(21);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 4});
  AddInput(g, "s", {2, 2});
  AddIntAttr(AddNode(g, "QuantizeLinear", {"x", "s"}, {"y"}, "quant"),
             "block_size", 2);
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 'quant' (QuantizeLinear, opset 21): blocked "
                        "quantisation"));
}

// A model y = x + w where w's data is external at `location`.
onnx::ModelProto ExternalModel(const std::string& location,
                               const std::string& length = "") {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {4});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  if (!length.empty()) {
    auto* len = w->add_external_data();
    len->set_key("length");
    len->set_value(length);
  }
  AddNode(g, "Add", {"x", "w"}, {"y"});
  AddOutput(g, "y");
  return model;
}

class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (TestScratchDir() / "onnx_external_test").string();
    std::filesystem::create_directories(dir_);
  }
  std::string dir_;
};

TEST_F(ExternalDataTest, MissingFileIsNotFoundNamingIt) {
  absl::StatusOr<GraphDef> def = Import(ExternalModel("absent.bin"), dir_);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(def.status().message(),
              AllOf(HasSubstr("'w'"), HasSubstr("absent.bin")));
}

TEST_F(ExternalDataTest, ShortFileIsAnError) {
  std::ofstream(dir_ + "/short.bin", std::ios::binary) << "12345678";
  absl::StatusOr<GraphDef> def = Import(ExternalModel("short.bin"), dir_);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("needs 16"));
  def = Import(ExternalModel("short.bin", "16"), dir_);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("past the end"));
}

TEST_F(ExternalDataTest, PathsMustStayInTheModelFolder) {
  absl::StatusOr<GraphDef> def = Import(ExternalModel("../up.bin"), dir_);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("leaves the model's folder"));
  def = Import(ExternalModel("/etc/passwd"), dir_);
  EXPECT_THAT(def.status().message(), HasSubstr("must be a relative path"));
  def = Import(ExternalModel("w.bin"), "");
  EXPECT_THAT(def.status().message(), HasSubstr("no folder"));
}

TEST_F(ExternalDataTest, ReadsTheByteRange) {
  std::vector<float> values = {9, 1.5f, -2, 3, 4.25f, 7};
  std::ofstream(dir_ + "/w.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()), 24);
  onnx::ModelProto model = ExternalModel("w.bin", "16");
  auto* off =
      model.mutable_graph()->mutable_initializer(0)->add_external_data();
  off->set_key("offset");
  off->set_value("4");
  // Make the output the folded initializer itself.
  model.mutable_graph()->mutable_output(0)->set_name("w");
  absl::StatusOr<GraphDef> def = Import(model, dir_);
  ASSERT_TRUE(def.ok()) << def.status();
  Tensor w = OutputConst(*def, 0, dir_);
  EXPECT_THAT(w.flat<float>(), ElementsAre(1.5f, -2, 3, 4.25f));
  // The Const refers to the range rather than holding a copy.
  for (const NodeDef& c : def->node()) {
    if (c.name() != def->signature().outputs(0).tensor()) continue;
    EXPECT_TRUE(c.attr().at("value").tensor().content().empty());
    EXPECT_EQ(c.attr().at("value").tensor().external().offset(), 4);
    EXPECT_EQ(c.attr().at("value").tensor().external().length(), 16);
  }
}

TEST(OnnxImporterErrorTest, ReadsTypedFieldsAndChecksRawSizes) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  onnx::TensorProto* i8 = g->add_initializer();
  i8->set_name("i8");
  i8->set_data_type(onnx::TensorProto::INT8);
  i8->add_dims(3);
  for (int v : {-3, 0, 7}) i8->add_int32_data(v);
  onnx::TensorProto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::BOOL);
  b->add_dims(2);
  b->add_int32_data(1);
  b->add_int32_data(0);
  onnx::TensorProto* i64 = g->add_initializer();
  i64->set_name("i64");
  i64->set_data_type(onnx::TensorProto::INT64);
  i64->add_int64_data(int64_t{1} << 40);
  AddOutput(g, "i8");
  AddOutput(g, "b");
  AddOutput(g, "i64");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_THAT(OutputConst(*def, 0).flat<int8_t>(), ElementsAre(-3, 0, 7));
  EXPECT_THAT(OutputConst(*def, 1).flat<bool>(), ElementsAre(true, false));
  EXPECT_THAT(OutputConst(*def, 2).flat<int64_t>(),
              ElementsAre(int64_t{1} << 40));

  i64->set_raw_data("1234567");  // 7 bytes for an int64 scalar
  def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              AllOf(HasSubstr("'i64'"), HasSubstr("raw_data holds 7 bytes")));
}

// A shape given as a graph input is read at run time (DynamicReshape); a
// shape that does not fit is then an error naming the node.
TEST(OnnxImporterErrorTest, RuntimeShapeInputIsReadAtRunTime) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 3});
  AddInput(g, "shape", {2}, onnx::TensorProto::INT64);
  AddNode(g, "Reshape", {"x", "shape"}, {"y"}, "reshape_me");
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(*def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  ASSERT_TRUE(session.ok()) << session.status();
  Tensor x = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, Shape({2, 3}));
  absl::StatusOr<std::vector<Tensor>> y = (*session)->Run(
      {{"x", x}, {"shape", Tensor::FromVector<int64_t>({3, -1}, Shape({2}))}},
      {"y"});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), Shape({3, 2}));
  y = (*session)->Run(
      {{"x", x}, {"shape", Tensor::FromVector<int64_t>({4, 4}, Shape({2}))}},
      {"y"});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("reshape_me")) << y.status();
}

TEST(OnnxImporterErrorTest, UnknownInputNameIsNotFound) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddNode(g, "Relu", {"nowhere"}, {"y"}, "r");
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(def.status().message(), HasSubstr("'nowhere'"));
}

TEST(OnnxImporterErrorTest, SanitisesNamesWithColons) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "input:0", {2});
  AddNode(g, "Relu", {"input:0"}, {"onnx::Relu_1"});
  AddOutput(g, "onnx::Relu_1");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->signature().inputs(0).name(), "input_0");
  EXPECT_EQ(def->signature().outputs(0).name(), "onnx::Relu_1");
  EXPECT_EQ(def->signature().outputs(0).tensor(), "onnx__Relu_1");
}

TEST(OnnxImporterErrorTest, ParsesCommandLineOptions) {
  OnnxImportOptions options;
  ASSERT_TRUE(ParseInputShapeFlag("x=1,3,-1", &options).ok());
  EXPECT_THAT(options.input_shapes["x"], ElementsAre(1, 3, -1));
  ASSERT_TRUE(ParseDimValueFlag("batch=4", &options).ok());
  EXPECT_EQ(options.dim_values["batch"], 4);
  EXPECT_FALSE(ParseInputShapeFlag("x", &options).ok());
  EXPECT_FALSE(ParseInputShapeFlag("x=1,a", &options).ok());
  EXPECT_FALSE(ParseDimValueFlag("batch=", &options).ok());
}

// Declared output types and shapes are checked against what the import
// infers, as onnx.checker's full check does.
TEST(OnnxImporterErrorTest, DeclaredOutputsMustMatchWhatTheGraphMakes) {
  auto model_with_output = [](int elem, std::vector<int64_t> dims,
                              bool symbolic_last = false) {
    onnx::ModelProto model = NewModel();
    onnx::GraphProto* g = model.mutable_graph();
    AddInput(g, "x", {2, 3});
    AddNode(g, "Relu", {"x"}, {"y"}, "relu");
    onnx::ValueInfoProto* out = g->add_output();
    out->set_name("y");
    auto* tt = out->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = tt->mutable_shape()->add_dim();
      if (symbolic_last && i + 1 == dims.size()) {
        d->set_dim_param("n");
      } else {
        d->set_dim_value(dims[i]);
      }
    }
    return model;
  };
  EXPECT_TRUE(Import(model_with_output(onnx::TensorProto::FLOAT, {2, 3})).ok());
  EXPECT_TRUE(
      Import(model_with_output(onnx::TensorProto::FLOAT, {2, 3}, true)).ok());

  absl::StatusOr<GraphDef> def =
      Import(model_with_output(onnx::TensorProto::FLOAT, {2, 4}));
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("graph output 'y' is declared with dimension 1 = 4 "
                        "but its producer makes [2,3]"));
  def = Import(model_with_output(onnx::TensorProto::FLOAT, {6}));
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("declared with rank 1"));
  def = Import(model_with_output(onnx::TensorProto::INT64, {2, 3}));
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(),
              HasSubstr("'y' is declared int64 but its producer makes float32"));
}

// --- Resource limits: what a small file may make the import create --------

void AddIntsConstant(onnx::GraphProto* g, const std::string& out,
                     const std::vector<int64_t>& values) {
  onnx::NodeProto* c = AddNode(g, "Constant", {}, {out}, out);
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

bool HasOp(const GraphDef& def, const std::string& op) {
  for (const NodeDef& n : def.node()) {
    if (n.op() == op) return true;
  }
  return false;
}

onnx::ModelProto ConstantOfShapeModel(const std::vector<int64_t>& dims) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddIntsConstant(g, "shape", dims);
  AddNode(g, "ConstantOfShape", {"shape"}, {"y"}, "fill_me");
  AddOutput(g, "y");
  return model;
}

// A 100 000 x 100 000 ConstantOfShape (37 GiB) in a file of a few bytes is
// not made at import: it becomes a Fill node, and the GraphDef stays small.
TEST(OnnxImporterLimitsTest, AHugeConstantOfShapeIsFilledAtRunTime) {
  absl::StatusOr<GraphDef> def =
      Import(ConstantOfShapeModel({100000, 100000}));
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_TRUE(HasOp(*def, "Fill"));
  EXPECT_LT(def->ByteSizeLong(), 4096u);
  // A small one is still folded into a constant.
  def = Import(ConstantOfShapeModel({2, 3}));
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_FALSE(HasOp(*def, "Fill"));
  EXPECT_EQ(OutputConst(*def, 0).NumElements(), 6);
}

// Past the import's fold budget the rest runs at run time, with the same
// values.
TEST(OnnxImporterLimitsTest, TheFoldBudgetLeavesTheRestToRunTime) {
  OnnxImportOptions options;
  options.limits.max_folded_bytes = 100;  // 10x10 float32 is 400
  absl::StatusOr<GraphDef> def =
      Import(ConstantOfShapeModel({10, 10}), "", options);
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_TRUE(HasOp(*def, "Fill"));
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(*def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<Tensor>> y = (*session)->Run({}, {"y"});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsEqual((*y)[0], *Tensor::Zeros(DT_FLOAT, Shape({10, 10}))));
}

// The per-constant fold cap is the optimizer's (resource_limits.
// max_folded_constant_bytes): over it, a ConstantOfShape is a Fill node.
TEST(OnnxImporterLimitsTest, TheFoldedConstantCapIsTheOptimizersToo) {
  OnnxImportOptions options;
  options.limits.max_folded_constant_bytes = 399;  // 10x10 float32 is 400
  absl::StatusOr<GraphDef> def =
      Import(ConstantOfShapeModel({10, 10}), "", options);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_TRUE(HasOp(*def, "Fill"));
  options.limits.max_folded_constant_bytes = 400;
  def = Import(ConstantOfShapeModel({10, 10}), "", options);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_FALSE(HasOp(*def, "Fill"));
}

// Constants the importer makes go through GraphEmitter: CreateConstant
// checks max_created_tensor_bytes, FoldConstant the fold budget, both
// before allocating.
TEST(GraphEmitterTest, MakesConstantsWithinTheLimits) {
  GraphDef def;
  ResourceLimits limits;
  limits.max_created_tensor_bytes = 400;
  limits.max_folded_constant_bytes = 400;
  limits.max_folded_bytes = 600;
  GraphEmitter em(&def, limits);
  auto fill = [](Tensor& t) { FillWith(ScalarTensor(DT_FLOAT, 2), t); };
  absl::StatusOr<ValuePtr> c =
      em.CreateConstant("mask of 'n'", DT_FLOAT, Shape({10, 10}), fill, "m");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->constant->flat<float>()[99], 2.0f);
  c = em.CreateConstant("mask of 'n'", DT_FLOAT, Shape({10, 11}), fill, "m");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("mask of 'n'"));
  absl::StatusOr<ValuePtr> f =
      em.FoldConstant(DT_FLOAT, Shape({100}), fill, "f");  // 400 of 600
  ASSERT_TRUE(f.ok() && *f != nullptr);
  f = em.FoldConstant(DT_FLOAT, Shape({100}), fill, "f");  // past the total
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, nullptr);
  EXPECT_EQ(em.fold_budget()->bytes_left(), 200);
}

// A Range of 10^9 elements is a Range node, not an 8 GB constant.
TEST(OnnxImporterLimitsTest, ALongRangeRunsAtRunTime) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddIntsConstant(g, "start", {0});
  AddIntsConstant(g, "limit", {1000000000});
  AddIntsConstant(g, "delta", {1});
  for (const char* s : {"start", "limit", "delta"}) {
    AddNode(g, "Squeeze", {s}, {absl::StrCat(s, "_s")});
  }
  AddNode(g, "Range", {"start_s", "limit_s", "delta_s"}, {"y"}, "long_range");
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_TRUE(HasOp(*def, "Range"));
  EXPECT_LT(def->ByteSizeLong(), 4096u);
}

// A constant the importer itself must make (here NegativeLogLikelihoodLoss's
// class index table for 2^28 classes: 2 GiB of int64) is refused before it
// is allocated, naming the node and the config field that raises the limit.
TEST(OnnxImporterLimitsTest, AnImporterConstantOverTheLimitIsRefusedByName) {
  onnx::ModelProto model = NewModel(13);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "logp", {1, int64_t{1} << 28});
  AddInput(g, "target", {1}, onnx::TensorProto::INT64);
  AddNode(g, "NegativeLogLikelihoodLoss", {"logp", "target"}, {"loss"},
          "nll");
  AddOutput(g, "loss");
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(def.status().message(),
              AllOf(HasSubstr("'nll'"), HasSubstr("2.0 GiB"),
                    HasSubstr("resource_limits.max_created_tensor_bytes")));
}

// Found by onnx_fuzz (docs/fuzzing.md): constant GatherElements read its
// int64 indices through doubles, so 2^63 - 1 became 2^63, whose conversion
// back to int64 is undefined (UBSan stopped the fuzzer). The index is now
// compared as an integer and is out of range, as it should be.
TEST(OnnxImporterErrorTest, GatherElementsWithTheLargestInt64IndexIsOutOfRange) {
  onnx::ModelProto model = NewModel(17);
  onnx::GraphProto* g = model.mutable_graph();
  onnx::TensorProto* data = g->add_initializer();
  data->set_name("data");
  data->set_data_type(onnx::TensorProto::FLOAT);
  data->add_dims(2);
  data->add_float_data(1.0f);
  data->add_float_data(2.0f);
  onnx::TensorProto* index = g->add_initializer();
  index->set_name("index");
  index->set_data_type(onnx::TensorProto::INT64);
  index->add_dims(1);
  index->add_int64_data(std::numeric_limits<int64_t>::max());
  AddNode(g, "GatherElements", {"data", "index"}, {"y"}, "ge");
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("index 9223372036854775807 is out of range"));
}

// A constant Range whose count (3e76) has no int64 value is "too long", not
// an undefined conversion of that double to int64.
TEST(OnnxImporterErrorTest, RangeWithAHugeCountIsTooLong) {
  onnx::ModelProto model = NewModel(17);
  onnx::GraphProto* g = model.mutable_graph();
  const std::vector<std::pair<std::string, float>> scalars = {
      {"start", 0.0f}, {"limit", 3e38f}, {"delta", 1e-38f}};
  for (const auto& [name, value] : scalars) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }
  AddNode(g, "Range", {"start", "limit", "delta"}, {"y"}, "r");
  AddOutput(g, "y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("the range is too long"));
}

}  // namespace
}  // namespace sluice::onnx_test::importer_errors_test
