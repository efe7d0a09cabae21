// The model checks the importer shares with onnx.checker: attribute names and
// types against the op's schema at the model's opset, single assignment, the
// IR version range; and the file checks: model paths that are not regular
// files (a FIFO must not block) and external data that leaves the model's
// folder through a symbolic link. Models are built here as ONNX protos.
#include "onnx/model_checker.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/test_data.h"
#include "tools/commands.h"
#include "tools/convert_command.h"

namespace sluice::onnx_test::model_checker_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// x[2,3] -> Transpose (node 't') -> y, with no attribute yet.
onnx::ModelProto TransposeModel(int opset = 17) {
  onnx::ModelProto model = NewModel(opset);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2, 3});
  AddNode(g, "Transpose", {"x"}, {"y"}, "t");
  g->add_output()->set_name("y");
  return model;
}

std::string ScratchDir(const std::string& name) {
  std::filesystem::path dir = TestScratchDir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void WriteModel(const onnx::ModelProto& model, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  ASSERT_TRUE(model.SerializeToOstream(&f));
}

TEST(OnnxModelCheckTest, ValidModelPasses) {
  onnx::ModelProto model = TransposeModel();
  onnx::AttributeProto* a =
      model.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(1);
  a->add_ints(0);
  EXPECT_TRUE(Import(model).ok()) << Import(model).status();
}

TEST(OnnxModelCheckTest, AttributeOfTheWrongTypeIsRefusedByName) {
  onnx::ModelProto model = TransposeModel();
  onnx::AttributeProto* a =
      model.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(1);
  a->add_floats(0);
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 't' (Transpose, opset 17, version 13): "
                        "attribute 'perm' is FLOATS, the schema wants INTS"));
}

TEST(OnnxModelCheckTest, ValueInTheFieldOfAnotherTypeIsRefused) {
  onnx::ModelProto model = TransposeModel();
  onnx::AttributeProto* a =
      model.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_floats(1);
  a->add_floats(0);
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("attribute 'perm' is declared INTS but its value is "
                        "FLOATS"));
}

TEST(OnnxModelCheckTest, MisspelledAttributeIsRefusedListingTheSchemas) {
  onnx::ModelProto model = TransposeModel();
  onnx::AttributeProto* a =
      model.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("prem");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(1);
  a->add_ints(0);
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 't' (Transpose, opset 17, version 13): "
                        "attribute 'prem' is not an attribute of Transpose "
                        "version 13 (it has perm)"));
}

// ReduceSum's axes was an attribute until version 13 made it an input: the
// node is checked against the version the model's opset selects.
TEST(OnnxModelCheckTest, AttributesAreThoseOfTheVersionTheOpsetSelects) {
  for (int opset : {11, 13}) {
    onnx::ModelProto model = NewModel(opset);
    onnx::GraphProto* g = model.mutable_graph();
    AddInput(g, "x", {2, 3});
    onnx::AttributeProto* a =
        AddNode(g, "ReduceSum", {"x"}, {"y"}, "sum")->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
    g->add_output()->set_name("y");
    absl::StatusOr<GraphDef> def = Import(model);
    if (opset == 11) {
      EXPECT_TRUE(def.ok()) << def.status();
    } else {
      EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(def.status().message(),
                  HasSubstr("node 'sum' (ReduceSum, opset 13, version 13): "
                            "attribute 'axes' is not an attribute"));
    }
  }
}

TEST(OnnxModelCheckTest, MissingRequiredAttributeIsRefused) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  AddNode(g, "Cast", {"x"}, {"y"}, "cast");
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 'cast' (Cast, opset 17, version 13): required "
                        "attribute 'to' (INT) is missing"));
}

TEST(OnnxModelCheckTest, TwoNodesWritingOneValueAreRefusedNamingBoth) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  AddNode(g, "Relu", {"x"}, {"y"}, "first");
  AddNode(g, "Neg", {"x"}, {"y"}, "second");
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("value 'y' is written by node 'first' (Relu) and by "
                        "node 'second' (Neg)"));
}

TEST(OnnxModelCheckTest, NodeWritingAGraphInputOrInitializerIsRefused) {
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(1);
  w->add_float_data(2);
  AddNode(g, "Relu", {"w"}, {"x"}, "over_input");
  AddNode(g, "Neg", {"x"}, {"w"}, "over_init");
  g->add_output()->set_name("x");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              AllOf(HasSubstr("2 problems"),
                    HasSubstr("value 'x' is written by graph input 'x' and by "
                              "node 'over_input' (Relu)"),
                    HasSubstr("value 'w' is written by initializer 'w' and by "
                              "node 'over_init' (Neg)")));
}

TEST(OnnxModelCheckTest, IrVersionOutsideTheKnownRangeIsRefused) {
  for (int64_t ir : {int64_t{0}, int64_t{2}, int64_t{99}}) {
    onnx::ModelProto model = TransposeModel();
    model.set_ir_version(ir);
    absl::StatusOr<GraphDef> def = Import(model);
    EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(def.status().message(),
                HasSubstr(absl::StrCat("ir_version ", ir,
                                       " is not supported; sluice reads ONNX "
                                       "IR versions 3 to ",
                                       NewestKnownIrVersion())));
  }
  EXPECT_GE(NewestKnownIrVersion(), 10);
}

TEST(OnnxModelCheckTest, OpOfAnotherDomainIsReportedWithThatDomainsOpset) {
  onnx::ModelProto model = NewModel(17);
  AddOpset(&model, "ai.onnx.ml", 3);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  AddNode(g, "SVMRegressor", {"x"}, {"y"}, "svm")->set_domain("ai.onnx.ml");
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 'svm' (SVMRegressor, ai.onnx.ml opset 3): op "
                        "not supported"));
}

TEST(OnnxModelCheckTest, DomainWithoutOpsIsReportedAsUnsupported) {
  onnx::ModelProto model = NewModel(17);
  AddOpset(&model, "com.example", 1);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  AddNode(g, "Frob", {"x"}, {"y"}, "frob")->set_domain("com.example");
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 'frob' (Frob, com.example opset 1): domain "
                        "'com.example' is not supported"));
}

TEST(OnnxModelCheckTest, ModelOfTheMlDomainAloneImports) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  AddOpset(&model, "ai.onnx.ml", 3);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  AddNode(g, "Binarizer", {"x"}, {"y"}, "bin")->set_domain("ai.onnx.ml");
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_TRUE(def.ok()) << def.status();
}

TEST(OnnxModelCheckTest, DefaultDomainNodeWithoutItsOpsetIsRefused) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  AddOpset(&model, "ai.onnx.ml", 3);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  AddNode(g, "Relu", {"x"}, {"y"}, "relu");
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("imports no opset of the default ONNX domain and node "
                        "'relu' (Relu) is of it"));
}

TEST(OnnxModelCheckTest, AttributesOfAnotherDomainAreCheckedAtItsOpset) {
  onnx::ModelProto model = NewModel(17);
  AddOpset(&model, "ai.onnx.ml", 3);
  onnx::GraphProto* g = model.mutable_graph();
  AddInput(g, "x", {2});
  onnx::NodeProto* n = AddNode(g, "Binarizer", {"x"}, {"y"}, "bin");
  n->set_domain("ai.onnx.ml");
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("treshold");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.5f);
  g->add_output()->set_name("y");
  absl::StatusOr<GraphDef> def = Import(model);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("node 'bin' (Binarizer, ai.onnx.ml opset 3, version "
                        "1): attribute 'treshold' is not an attribute of "
                        "Binarizer version 1 (it has threshold)"));
}

TEST(OnnxModelCheckTest, DirectoryIsNotARegularFile) {
  const std::string dir = ScratchDir("onnx_check_dir") + "/model.onnx";
  std::filesystem::create_directories(dir);
  absl::StatusOr<GraphDef> def = ImportOnnx(dir);
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("exists but is not a regular file"));
}

TEST(OnnxModelCheckTest, FifoIsRefusedWithoutBlocking) {
  const std::string path = ScratchDir("onnx_check_fifo") + "/model.onnx";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  absl::StatusOr<GraphDef> def = ImportOnnx(path);  // would block if opened
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("exists but is not a regular file"));
  // The command line checks its file arguments before the importer: a
  // usage error (exit 2), with the same words.
  std::ostringstream out, err;
  EXPECT_EQ(ConvertMain({path, path + ".pb"}, out, err), kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("exists but is not a regular file"));
}

TEST(OnnxModelCheckTest, InvalidModelExitsOneFromTheCommandLine) {
  const std::string dir = ScratchDir("onnx_check_cli");
  onnx::ModelProto model = TransposeModel();
  onnx::AttributeProto* a =
      model.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(1);
  a->add_floats(0);
  WriteModel(model, dir + "/m.onnx");
  std::ostringstream out, err;
  EXPECT_EQ(ConvertMain({dir + "/m.onnx", dir + "/m.pb"}, out, err),
            kExitFailure);
  EXPECT_THAT(err.str(), HasSubstr("attribute 'perm' is FLOATS"));
}

// An external data location without ".." that still leads out of the
// model's folder through a symbolic link is refused, embedded or mapped.
TEST(OnnxModelCheckTest, ExternalDataThroughALinkOutOfTheFolderIsRefused) {
  const std::string root = ScratchDir("onnx_check_link");
  const std::string dir = root + "/model";
  std::filesystem::create_directories(dir);
  const float values[2] = {1, 2};
  {
    std::ofstream f(root + "/secret.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  std::filesystem::create_symlink(root + "/secret.bin", dir + "/w.bin");
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  AddNode(g, "Neg", {"w"}, {"y"}, "neg");
  g->add_output()->set_name("y");
  WriteModel(model, dir + "/m.onnx");
  for (bool embed : {false, true}) {
    OnnxImportOptions options;
    options.embed_external_data = embed;
    absl::StatusOr<GraphDef> def = ImportOnnx(dir + "/m.onnx", options);
    EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument) << embed;
    EXPECT_THAT(def.status().message(),
                AllOf(HasSubstr("'w.bin' resolves to"),
                      HasSubstr("outside the model's folder")))
        << embed;
  }
  // The same file inside the folder loads.
  std::filesystem::remove(dir + "/w.bin");
  std::filesystem::copy_file(root + "/secret.bin", dir + "/w.bin");
  EXPECT_TRUE(ImportOnnx(dir + "/m.onnx").ok());
}

}  // namespace
}  // namespace sluice::onnx_test::model_checker_test
