// Tests for `sluice inspect`.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_data.h"
#include "tests/tools/tools_test_util.h"
#include "tools/commands.h"
#include "tools/convert_command.h"

namespace sluice::inspect_command_test {
namespace {

using ::testing::HasSubstr;

constexpr char kInputNode[] =
    "node { name: \"x\" op: \"Input\" attr { key: \"dtype\" value { type: "
    "DT_FLOAT } } attr { key: \"shape\" value { shape { dim: [-1, 4] } } } }\n";

int CountLines(const std::string& text, const std::string& prefix) {
  int n = 0;
  size_t pos = 0;
  while ((pos = text.find("\n" + prefix, pos)) != std::string::npos) {
    ++n;
    ++pos;
  }
  return n;
}

TEST(InspectCommandTest, DescribesTheMlpExample) {
  CommandResult r = RunCommand(InspectMain, {ExampleFile("mlp.pbtxt")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("x: float32[?,16]"));
  EXPECT_THAT(r.out, HasSubstr("logits: float32[?,10]"));
  EXPECT_THAT(r.out, HasSubstr("probs: float32[?,10]"));
  EXPECT_THAT(r.out, HasSubstr("MatMul         2"));
  EXPECT_THAT(r.out, HasSubstr("parameters: 874 in 4 Const tensors, 3.4 KiB"));
  EXPECT_THAT(r.out, HasSubstr("\nvalid\n"));
}

TEST(InspectCommandTest, PrintsJson) {
  CommandResult r =
      RunCommand(InspectMain, {ExampleFile("mlp.pbtxt"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json::array({-1, 16}));
  EXPECT_EQ(j["ops"]["MatMul"], 2);
  EXPECT_EQ(j["parameters"]["count"], 874);
  EXPECT_EQ(j["parameters"]["bytes"], 874 * 4);
  EXPECT_TRUE(j["errors"].empty());
}

// A graph with a constant subexpression, an Identity and a softmax spelled
// out: --optimized shows the graph after the passes and what each did.
constexpr char kUnoptimized[] = R"(
node { name: "x" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim: [2, 4] } } } }
node { name: "a" op: "Const" attr { key: "value" value { tensor {
       dtype: DT_FLOAT shape { dim: [4] } float_val: [1, 2, 3, 4] } } } }
node { name: "a2" op: "Add" input: "a" input: "a" }
node { name: "id" op: "Identity" input: "x" }
node { name: "shifted" op: "Add" input: "id" input: "a2" }
node { name: "e" op: "Exp" input: "shifted" }
node { name: "s" op: "ReduceSum" input: "e"
       attr { key: "axes" value { list { i: [-1] } } }
       attr { key: "keepdims" value { b: true } } }
node { name: "probs" op: "Div" input: "e" input: "s" }
)";

TEST(InspectCommandTest, OptimizedShowsTheGraphAfterThePasses) {
  ScratchDir dir;
  const std::string path = dir.Write("softmax.pbtxt", kUnoptimized);
  CommandResult plain = RunCommand(InspectMain, {path});
  ASSERT_EQ(plain.code, 0) << plain.out << plain.err;
  EXPECT_THAT(plain.out, HasSubstr("8 nodes"));
  EXPECT_THAT(plain.out, ::testing::Not(HasSubstr("optimization")));

  CommandResult r = RunCommand(InspectMain, {path, "--optimized"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("(format version 0, 4 nodes)"));
  EXPECT_THAT(r.out, HasSubstr("Softmax        1"));
  EXPECT_THAT(r.out, HasSubstr("optimization level all: 8 -> 4 nodes, "));
  // Each pass's time.
  EXPECT_THAT(r.out,
              ::testing::ContainsRegex(
                  "constant_folding +[0-9]+ -> [0-9]+ nodes +[0-9.]+ ms"));
  EXPECT_THAT(r.out, HasSubstr("folded node 'a2' (Add)"));
  EXPECT_THAT(r.out, HasSubstr("removed node 'id' (Identity)"));
  EXPECT_THAT(r.out, HasSubstr("into Softmax 'probs'"));

  CommandResult basic = RunCommand(
      InspectMain, {path, "--optimized", "--optimization-level", "basic",
                    "--json"});
  ASSERT_EQ(basic.code, 0) << basic.out << basic.err;
  nlohmann::json j = nlohmann::json::parse(basic.out);
  EXPECT_EQ(j["optimization"]["level"], "basic");
  EXPECT_EQ(j["optimization"]["nodes_before"], 8);
  EXPECT_EQ(j["num_nodes"], 6);  // a2 folded (a goes dead), Identity gone
  EXPECT_EQ(j["ops"]["Exp"], 1);

  CommandResult bad = RunCommand(
      InspectMain, {path, "--optimized", "--optimization-level", "extended"});
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
}

TEST(InspectCommandTest, OptimizedWithPrecisionShowsTheReducedGraph) {
  ScratchDir dir;
  const std::string path = dir.Write("softmax.pbtxt", kUnoptimized);
  CommandResult r = RunCommand(
      InspectMain, {path, "--optimized", "--precision", "bfloat16"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // The fused Softmax runs in bfloat16 between two Casts.
  EXPECT_THAT(r.out, HasSubstr("reduced_precision"));
  EXPECT_THAT(r.out, HasSubstr("'probs' (Softmax) in bfloat16"));
  EXPECT_THAT(r.out, HasSubstr("Cast           2"));
  CommandResult bad = RunCommand(
      InspectMain, {path, "--optimized", "--precision", "int8"});
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
}

TEST(InspectCommandTest, APreparedModelShowsItsKeyPassesAndWhetherItFits) {
  ScratchDir dir;
  const std::string path = dir.Path("cnn.sluicemodel");
  CommandResult c = RunCommand(ConvertMain, {ExampleFile("cnn.pb"), path,
                                             "--optimized", "--conv-layout",
                                             "nhwc"});
  ASSERT_EQ(c.code, 0) << c.out << c.err;
  CommandResult r =
      RunCommand(InspectMain, {path, "--conv-layout", "nhwc"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("prepared model: " + path));
  EXPECT_THAT(r.out, HasSubstr("  conv_layout: NHWC"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "nhwc_layout +[0-9]+ -> [0-9]+ nodes +[0-9.]+ ms"));
  EXPECT_THAT(r.out, HasSubstr("this machine and config: used as it is"));
  CommandResult other =
      RunCommand(InspectMain, {path, "--conv-layout", "nchw", "--json"});
  EXPECT_EQ(other.code, 1) << other.out << other.err;
  nlohmann::json j = nlohmann::json::parse(other.out);
  EXPECT_EQ(j["prepared"]["key"]["conv_layout"], "NHWC");
  EXPECT_THAT(j["here"].get<std::string>(),
              HasSubstr("conv_layout: 'NHWC' in the file, 'NCHW' here"));
}

TEST(InspectCommandTest, EveryShippedExampleIsValid) {
  for (const char* model : {"mlp.pbtxt", "cnn.pb", "transformer_block.pb"}) {
    CommandResult r = RunCommand(InspectMain, {ExampleFile(model)});
    EXPECT_EQ(r.code, 0) << model << "\n" << r.out << r.err;
  }
}

#ifdef SLUICE_HAVE_ONNX
TEST(InspectCommandTest, ReadsOnnxModels) {
  CommandResult r = RunCommand(
      InspectMain,
      {TestDataPath("tests/onnx/testdata/binary.onnx")});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("inputs:"));
}
#endif  // SLUICE_HAVE_ONNX

TEST(InspectCommandTest, ListsEveryErrorOnItsOwnLine) {
  ScratchDir dir;
  const std::string model = dir.Write(
      "bad.pbtxt",
      std::string(kInputNode) +
          "node { name: \"a\" op: \"NoSuchOp\" input: \"x\" }\n"
          "node { name: \"b\" op: \"Relu\" input: \"missing\" }\n");
  CommandResult r = RunCommand(InspectMain, {model});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("NoSuchOp"));
  EXPECT_THAT(r.out, HasSubstr("missing"));
  EXPECT_GE(CountLines(r.out, "error: "), 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("invalid: "));
  EXPECT_THAT(r.out, HasSubstr("NoSuchOp       1"));  // still summarised
}

TEST(InspectCommandTest, ReportsACycle) {
  ScratchDir dir;
  const std::string model = dir.Write(
      "cycle.pbtxt", std::string(kInputNode) +
                         "node { name: \"a\" op: \"Add\" input: [\"x\", \"b\"] }\n"
                         "node { name: \"b\" op: \"Relu\" input: \"a\" }\n");
  CommandResult r = RunCommand(InspectMain, {model, "--json"});
  EXPECT_EQ(r.code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["valid"].get<bool>());
  ASSERT_FALSE(j["errors"].empty());
  EXPECT_THAT(j["errors"].dump(), HasSubstr("cycle"));
}

TEST(InspectCommandTest, MalformedTextFailsWithTheLine) {
  ScratchDir dir;
  const std::string model =
      dir.Write("broken.pbtxt", "node {\n  name: \"a\"\n  op: \n}\n");
  CommandResult r = RunCommand(InspectMain, {model});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("error: "));
  EXPECT_THAT(r.err, HasSubstr("4"));
}

TEST(InspectCommandTest, GarbageBinaryFailsCleanly) {
  ScratchDir dir;
  const std::string model =
      dir.Write("garbage.pb", std::string("\xff\xff\xff\xff\x0f\x01\x02", 7));
  CommandResult r = RunCommand(InspectMain, {model});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("error: "));
}

TEST(InspectCommandTest, UsageErrorsExitTwo) {
  CommandResult missing = RunCommand(InspectMain, {});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("MODEL"));
  EXPECT_EQ(RunCommand(InspectMain, {"/no/such/model.pbtxt"}).code, 2);
  EXPECT_EQ(RunCommand(InspectMain, {ExampleFile("mlp.pbtxt"), "--bogus"}).code,
            2);
}

TEST(InspectCommandTest, HelpExitsZero) {
  CommandResult r = RunCommand(InspectMain, {"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("MODEL"));
}

}  // namespace
}  // namespace sluice::inspect_command_test
