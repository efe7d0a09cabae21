// Tests for LoadGraphDef / LoadGraph / SaveGraphDef on files, most of them
// malformed models under tests/graph/testdata/.
#include "graph/loader.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "tests/test_data.h"

namespace sluice::loader_test {
namespace {

using ::testing::HasSubstr;

std::string TestData(const std::string& name) {
  return TestDataPath("tests/graph/testdata/" + name);
}

// A fresh scratch folder for files a test writes.
std::string ScratchDir(const std::string& name) {
  std::filesystem::path dir =
      TestScratchDir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

absl::Status LoadError(const std::string& name) {
  return LoadGraph(TestData(name)).status();
}

TEST(LoaderTest, LoadsTextModelWithExternalWeights) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = LoadGraph(TestData("mlp.pbtxt"));
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* w = (*g)->FindNode("w");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(w->const_value(), nullptr);
  EXPECT_FLOAT_EQ(w->const_value()->flat<float>()[11], 0.5f);
  EXPECT_EQ((*g)->FindNode("fc1")->source_line(), 17);
  EXPECT_EQ((*g)->FindNode("fc1")->DebugName(), "node 'fc1' (MatMul) at line 17");
  EXPECT_EQ((*g)->base_dir(), TestData("").substr(0, TestData("").size() - 1));
  EXPECT_EQ((*g)->FindOutput("y")->shape, Shape({kUnknownDim, 3}));
}

TEST(LoaderTest, RecordsNodeLinesAndBaseDir) {
  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(TestData("mlp.pbtxt"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->source.node_lines.at("x"), 4);
  EXPECT_EQ(loaded->source.node_lines_by_index.size(), 4u);
  EXPECT_EQ(loaded->source.path, TestData("mlp.pbtxt"));
}

TEST(LoaderTest, MissingFileIsNotFoundAndNamesThePath) {
  absl::Status s = LoadError("no_such_model.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("no_such_model.pbtxt"));
}

TEST(LoaderTest, TextSyntaxErrorGivesLineAndColumn) {
  absl::Status s = LoadError("syntax_error.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("syntax_error.pbtxt: line 7:1: "));
}

// protobuf's text parser takes a name that is not UTF-8, but no .pb with it
// can be written or read back: the loader refuses it, naming the field.
TEST(LoaderTest, ANameThatIsNotUtf8IsAnErrorNamingIt) {
  const std::string path = ScratchDir("non_utf8") + "/m.pbtxt";
  std::ofstream(path) << "node { name: \"x\" op: \"Input\" attr { key: "
                         "\"dtype\" value { type: DT_FLOAT } } }\n"
                         "node { name: \"y\\377\" op: \"Relu\" input: "
                         "\"x\" }\n";
  absl::Status s = LoadGraphDef(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("NodeDef.name 'y\\xff' is not valid UTF-8"));
  // Valid UTF-8 beyond ASCII is fine.
  std::ofstream(path) << "node { name: \"x\" op: \"Input\" attr { key: "
                         "\"dtype\" value { type: DT_FLOAT } } }\n"
                         "node { name: \"y\\303\\251\" op: \"Relu\" input: "
                         "\"x\" }\n";
  EXPECT_TRUE(LoadGraphDef(path).ok());
}

TEST(LoaderTest, UnknownTextFieldIsAnErrorWithLine) {
  absl::Status s = LoadError("unknown_field.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("line 2:"));
  EXPECT_THAT(s.message(), HasSubstr("nodes"));
}

TEST(LoaderTest, GarbageBinaryIsRejectedCleanly) {
  absl::Status s = LoadError("garbage.pb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("not a valid binary GraphDef"));
}

TEST(LoaderTest, TruncatedBinaryIsRejectedCleanly) {
  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(TestData("mlp.pbtxt"));
  ASSERT_TRUE(loaded.ok());
  std::string dir = ScratchDir("truncated");
  std::string full = dir + "/full.pb";
  ASSERT_TRUE(SaveGraphDef(loaded->def, full).ok());
  std::ifstream in(full, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 20u);
  std::string cut = dir + "/cut.pb";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 7);
  absl::Status s = LoadGraph(cut).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("truncated or corrupt"));
}

TEST(LoaderTest, UnknownExtensionTriesBinaryThenText) {
  std::string dir = ScratchDir("ext");
  std::filesystem::copy_file(TestData("mlp.pbtxt"), dir + "/model.graph");
  std::filesystem::copy_file(TestData("weights.bin"), dir + "/weights.bin");
  EXPECT_TRUE(LoadGraph(dir + "/model.graph").ok());
  std::ofstream(dir + "/junk.graph") << "this is { not a graph";
  absl::Status s = LoadGraph(dir + "/junk.graph").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("neither a binary nor a text GraphDef"));
}

TEST(LoaderTest, SaveAndReloadRoundTripsBothFormats) {
  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(TestData("mlp.pbtxt"));
  ASSERT_TRUE(loaded.ok());
  std::string dir = ScratchDir("roundtrip");
  std::filesystem::copy_file(TestData("weights.bin"), dir + "/weights.bin");
  for (const char* name : {"/m.pb", "/m.pbtxt"}) {
    ASSERT_TRUE(SaveGraphDef(loaded->def, dir + name).ok());
    absl::StatusOr<std::unique_ptr<const Graph>> g = LoadGraph(dir + name);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->num_nodes(), 4);
  }
  EXPECT_EQ(SaveGraphDef(loaded->def, dir + "/no/such/dir/m.pb").code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(LoaderTest, DuplicateNamesNameBothLines) {
  absl::Status s = LoadError("duplicate_names.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'x' (Input) at line 8: duplicate "
                                     "node name; first defined as node #0 at "
                                     "line 2"));
}

TEST(LoaderTest, CycleListsItsNodes) {
  absl::Status s = LoadError("cycle.pbtxt");
  EXPECT_THAT(s.message(), HasSubstr("cycle: a -> b -> a"));
  EXPECT_THAT(s.message(), HasSubstr("(Add) at line 8"));
}

TEST(LoaderTest, ShapeErrorsNameNodeOpAndLine) {
  absl::Status s = LoadError("mismatch.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'fc1' (MatMul) at line 14: MatMul "
                                     "inner dimensions differ"));
  EXPECT_THAT(s.message(), HasSubstr("mismatch.pbtxt:\n"));
}

TEST(LoaderTest, ExternalDataMayNotLeaveTheModelFolder) {
  absl::Status s = LoadError("external_escape.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("leaves the model folder"));
  s = LoadError("external_absolute.pbtxt");
  EXPECT_THAT(s.message(), HasSubstr("must be relative to the model folder"));
}

TEST(LoaderTest, ExternalDataPastFileEndIsAnError) {
  absl::Status s = LoadError("external_past_end.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("runs past the end of the file (48 bytes)"));
}

TEST(LoaderTest, MissingExternalFileIsReported) {
  std::vector<absl::Status> errors;
  absl::StatusOr<LoadedGraphDef> loaded =
      LoadGraphDef(TestData("external_missing.pbtxt"));
  ASSERT_TRUE(loaded.ok());
  errors = ValidateGraphDef(loaded->def, loaded->source);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(errors[0].message(), HasSubstr("no_such_weights.bin"));
}

// A model whose Const 'w' is float32[512, 512] (1 MiB, enough to be mapped)
// at offset 64 of dir/big.weights, holding 0, 1, 2, ...
std::string WriteLargeExternalModel(const std::string& dir) {
  GraphDef def;
  NodeDef* w = def.add_node();
  w->set_name("w");
  w->set_op("Const");
  TensorProto* value = (*w->mutable_attr())["value"].mutable_tensor();
  value->set_dtype(DT_FLOAT);
  value->mutable_shape()->add_dim(512);
  value->mutable_shape()->add_dim(512);
  value->mutable_external()->set_path("big.weights");
  value->mutable_external()->set_offset(64);
  value->mutable_external()->set_length(512 * 512 * 4);
  std::vector<float> data(16 + 512 * 512);
  for (size_t i = 16; i < data.size(); ++i) {
    data[i] = static_cast<float>(i - 16);
  }
  std::ofstream(dir + "/big.weights", std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()),
             static_cast<std::streamsize>(data.size() * sizeof(float)));
  const std::string model = dir + "/big.pb";
  EXPECT_TRUE(SaveGraphDef(def, model).ok());
  return model;
}

TEST(LoaderTest, LargeExternalWeightsAreMappedUnlessReadIsAsked) {
  const std::string model = WriteLargeExternalModel(ScratchDir("large_ext"));
  absl::StatusOr<std::unique_ptr<const Graph>> mapped = LoadGraph(model);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  const Tensor* w = (*mapped)->FindNode("w")->const_value();
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(IsMappedExternalData(*w));
  EXPECT_EQ(w->flat<float>()[0], 0.0f);
  EXPECT_EQ(w->flat<float>()[512 * 512 - 1], 512.0f * 512.0f - 1.0f);

  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(model);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  loaded->source.external_data = ExternalDataMode::kRead;
  absl::StatusOr<std::unique_ptr<const Graph>> read =
      BuildGraph(loaded->def, loaded->source);
  ASSERT_TRUE(read.ok()) << read.status();
  const Tensor* r = (*read)->FindNode("w")->const_value();
  EXPECT_FALSE(IsMappedExternalData(*r));
  EXPECT_TRUE(TensorsEqual(*w, *r));
}

TEST(LoaderTest, TruncatedLargeWeightsFileNamesTheNodeAndTheFile) {
  const std::string dir = ScratchDir("large_ext_truncated");
  const std::string model = WriteLargeExternalModel(dir);
  std::filesystem::resize_file(dir + "/big.weights", 1000000);
  for (ExternalDataMode mode :
       {ExternalDataMode::kMap, ExternalDataMode::kRead}) {
    absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(model);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    loaded->source.external_data = mode;
    absl::Status s = BuildGraph(loaded->def, loaded->source).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("node 'w' (Const)"));
    EXPECT_THAT(s.message(),
                HasSubstr("external data 'big.weights' range [64, +1048576) "
                          "runs past the end of the file (1000000 bytes)"));
  }
  absl::Status s = LoadGraph(model).status();
  EXPECT_THAT(s.message(), HasSubstr(model + ":\n"));
  EXPECT_THAT(s.message(), HasSubstr("runs past the end of the file"));
}

TEST(LoaderTest, TensorDataLengthMismatch) {
  absl::Status s = LoadError("data_length_mismatch.pbtxt");
  EXPECT_THAT(s.message(), HasSubstr("node 'k' (Const) at line 2"));
  EXPECT_THAT(s.message(), HasSubstr("has 3 values in float_val for 4 elements"));
}

TEST(LoaderTest, HugeShapeIsRejectedBeforeAllocation) {
  absl::Status s = LoadError("huge_shape.pbtxt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("more than 2^48 elements"));
}

TEST(LoaderTest, NegativeDimensionIsRejected) {
  absl::Status s = LoadError("negative_dim.pbtxt");
  EXPECT_THAT(s.message(), HasSubstr("negative dimension -3"));
}

TEST(LoaderTest, FormatVersionTooNewSaysWhatIsSupported) {
  absl::Status s = LoadError("format_version_too_new.pbtxt");
  EXPECT_THAT(s.message(), HasSubstr("format_version 99 is not supported; this "
                                     "build reads versions 0 to 1"));
}

TEST(LoaderTest, BadSignatureIsReported) {
  absl::Status s = LoadError("bad_signature.pbtxt");
  EXPECT_THAT(s.message(), HasSubstr("signature input 'y': names node 'y' "
                                     "(Relu) at line 8, which is not an Input "
                                     "node"));
  EXPECT_THAT(s.message(), HasSubstr("signature output 'out': tensor "
                                     "'nothere:0' names no node"));
  EXPECT_THAT(s.message(), HasSubstr("node 'x' (Input) at line 2: Input node "
                                     "is not listed"));
}

TEST(LoaderTest, AttributeErrorsAreAllReported) {
  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(TestData("wrong_attr.pbtxt"));
  ASSERT_TRUE(loaded.ok());
  std::vector<absl::Status> errors = ValidateGraphDef(loaded->def, loaded->source);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_THAT(errors[0].message(), HasSubstr("node 's' (Softmax) at line 8: "
                                             "unknown attribute 'beta'"));
  EXPECT_THAT(errors[1].message(), HasSubstr("attribute 'axis' is string, "
                                             "expected int"));
  EXPECT_THAT(errors[2].message(), HasSubstr("node 'r' (Reshape) at line 15: "
                                             "missing required attribute"));
}

}  // namespace
}  // namespace sluice::loader_test
