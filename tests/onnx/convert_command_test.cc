// `sluice convert` on the generated ONNX models: writes .pb and .pbtxt that
// load as valid graphs, passes --dim and --input-shape through, and reports
// import errors and bad output names with the right exit codes; with
// --optimized, writes a prepared model a session starts from (and falls back
// from to the source, imported with the recorded --dim values).
#include "tools/convert_command.h"

#include <filesystem>
#include <sstream>

#include "gmock/gmock.h"
#include "executor/session.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "tests/test_data.h"
#include "tools/commands.h"

namespace sluice::convert_command_test {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

std::string Model(const std::string& name) {
  return TestDataPath("tests/onnx/testdata/" + name);
}

std::string OutDir() {
  std::string dir = (TestScratchDir() / "convert_test_tmp").string();
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ConvertCommandTest, WritesPbAndPbtxtThatLoad) {
  for (const char* ext : {".pb", ".pbtxt"}) {
    std::ostringstream out, err;
    const std::string path = OutDir() + "/transformer" + ext;
    int code = ConvertMain(
        {Model("transformer.onnx"), path, "--dim", "batch=2", "--dim", "seq=8"},
        out, err);
    ASSERT_EQ(code, kExitOk) << err.str();
    EXPECT_THAT(out.str(), HasSubstr("input  ids: int64[2,8]"));
    absl::StatusOr<std::unique_ptr<const Graph>> g = LoadGraph(path);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_NE((*g)->FindOutput("logits"), nullptr);
  }
}

TEST(ConvertCommandTest, InputShapeFlagFixesDynamicDims) {
  std::ostringstream out, err;
  int code = ConvertMain({Model("shape_folding.onnx"), OutDir() + "/sf.pb",
                          "--input-shape", "x=3,-1,-1"},
                         out, err);
  EXPECT_EQ(code, kExitOk) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("input  x: float32[3,2,4]"));
}

TEST(ConvertCommandTest, ImportErrorsExitOneWithTheMessage) {
  std::ostringstream out, err;
  int code = ConvertMain({Model("shape_folding.onnx"), OutDir() + "/x.pb",
                          "--dim", "bacth=3"},
                         out, err);
  EXPECT_EQ(code, kExitFailure);
  EXPECT_THAT(err.str(), HasSubstr("error: "));
  EXPECT_THAT(err.str(), HasSubstr("'bacth'"));
}

TEST(ConvertCommandTest, BadOutputExtensionOrFlagIsAUsageError) {
  std::ostringstream out, err;
  EXPECT_EQ(ConvertMain({Model("cnn.onnx"), OutDir() + "/x.onnx"}, out, err),
            kExitUsage);
  EXPECT_EQ(ConvertMain({Model("cnn.onnx"), OutDir() + "/x.pb", "--dim", "N"},
                        out, err),
            kExitUsage);
  EXPECT_EQ(ConvertMain({"/nonexistent.onnx", OutDir() + "/x.pb"}, out, err),
            kExitUsage);
}

TEST(ConvertCommandTest, OptimizedWritesAPreparedModelASessionStartsFrom) {
  const std::string path = OutDir() + "/transformer.sluicemodel";
  std::ostringstream out, err;
  // For the CPU, also on a machine with a GPU.
  ASSERT_EQ(ConvertMain({Model("transformer.onnx"), path, "--optimized",
                         "--device", "cpu:0", "--dim", "batch=2", "--dim",
                         "seq=8"},
                        out, err),
            kExitOk)
      << err.str();
  EXPECT_THAT(out.str(), HasSubstr("prepared model"));
  EXPECT_THAT(out.str(), HasSubstr("  provider: cpu"));
  EXPECT_THAT(out.str(), HasSubstr("ms in the passes"));
  RuntimeConfig config;
  config.set_use_gpu(false);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::CreateFromFile(path, config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT((*s)->log(), Contains(HasSubstr("passes not run")));
  // Refused for another level: the source is imported again with the
  // --dim values the file recorded.
  config.set_optimization_level(OPTIMIZATION_BASIC);
  s = Session::CreateFromFile(path, config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT((*s)->log(),
              Contains(HasSubstr("optimization_level: 'all' in the file, "
                                 "'basic' here")));
  EXPECT_EQ((*s)->graph().inputs()[0].shape.DebugString(), "[2,8]");
}

TEST(ConvertCommandTest, OptimizedNeedsASluicemodelOutAndTheFlagsNeedIt) {
  std::ostringstream out, err;
  EXPECT_EQ(ConvertMain({Model("cnn.onnx"), OutDir() + "/x.pb", "--optimized"},
                        out, err),
            kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("OUT must end in .sluicemodel"));
  EXPECT_EQ(ConvertMain({Model("cnn.onnx"), OutDir() + "/x.pb", "--precision",
                         "float16"},
                        out, err),
            kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("apply with --optimized only"));
}

}  // namespace
}  // namespace sluice::convert_command_test
