#include "optimizer/pipeline.h"

#include "executor/runtime_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::pipeline_test {
namespace {

using ::testing::HasSubstr;

// A block as an exporter without fused ops writes it: a LayerNorm, a GELU
// (erf) and a softmax spelled out, a shape computed at run time, a
// Transpose pair, an Identity, a duplicated projection and a dead branch.
std::unique_ptr<const Graph> ExporterBlock() {
  const std::map<std::string, AttrValue> last = {
      {"axes", Ints({-1})}, {"keepdims", MakeBoolAttr(true)}};
  GraphMaker m;
  m.Input("x", {2, 4, 8})
      .Const("two", {2}, {})
      .Const("eps", {1e-5f}, {})
      .Const("w", std::vector<float>(64, 0.125f), {8, 8})
      .Const("sqrt2", {1.4142135f}, {})
      .Const("one", {1}, {})
      .Const("half", {0.5f}, {})
      .Op("mean", "ReduceMean", {"x"}, last)
      .Op("d", "Sub", {"x", "mean"})
      .Op("sq", "Pow", {"d", "two"})
      .Op("var", "ReduceMean", {"sq"}, last)
      .Op("ve", "Add", {"var", "eps"})
      .Op("root", "Sqrt", {"ve"})
      .Op("ln", "Div", {"d", "root"})
      .Op("id", "Identity", {"ln"})
      .Op("proj1", "MatMul", {"id", "w"})
      .Op("proj2", "MatMul", {"id", "w"})
      .Op("both", "Add", {"proj1", "proj2"})
      .Op("g_div", "Div", {"both", "sqrt2"})
      .Op("g_erf", "Erf", {"g_div"})
      .Op("g_add", "Add", {"g_erf", "one"})
      .Op("g_mul", "Mul", {"both", "g_add"})
      .Op("gelu", "Mul", {"g_mul", "half"})
      .Op("t1", "Transpose", {"gelu"}, {{"perm", Ints({0, 2, 1})}})
      .Op("t2", "Transpose", {"t1"}, {{"perm", Ints({0, 2, 1})}})
      .Op("shape", "Shape", {"t2"})
      .Op("flat", "DynamicReshape", {"t2", "shape"})
      .Op("mx", "ReduceMax", {"flat"}, last)
      .Op("sh", "Sub", {"flat", "mx"})
      .Op("e", "Exp", {"sh"})
      .Op("s", "ReduceSum", {"e"}, last)
      .Op("probs", "Div", {"e", "s"})
      .Op("unused", "Neg", {"both"})
      .Output("probs");
  return m.Build();
}

TEST(PipelineTest, LevelNoneLeavesTheGraph) {
  auto g = ExporterBlock();
  const Graph* raw = g.get();
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_NONE, {});
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ(opt->graph.get(), raw);
  EXPECT_TRUE(opt->records.empty());
}

TEST(PipelineTest, BasicKeepsOpsAndAllFuses) {
  auto g = ExporterBlock();
  absl::StatusOr<OptimizedGraph> basic =
      OptimizeGraph(Copy(*g), OPTIMIZATION_BASIC, {});
  ASSERT_TRUE(basic.ok());
  auto ops = OpCounts(*basic->graph);
  EXPECT_EQ(ops["Identity"], 0);
  EXPECT_EQ(ops["Transpose"], 0);
  EXPECT_EQ(ops["Shape"], 0);
  EXPECT_EQ(ops["DynamicReshape"], 0);
  EXPECT_EQ(ops["MatMul"], 1);      // the duplicate merged
  EXPECT_EQ(ops["Neg"], 0);         // dead
  EXPECT_EQ(ops["ReduceMean"], 2);  // fusion is level all
  EXPECT_EQ(ops["LayerNorm"], 0);

  absl::StatusOr<OptimizedGraph> all =
      OptimizeGraph(Copy(*g), OPTIMIZATION_DEFAULT, {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->level, OPTIMIZATION_ALL);
  ops = OpCounts(*all->graph);
  EXPECT_EQ(ops["LayerNorm"], 1);
  EXPECT_EQ(ops["Gelu"], 1);
  EXPECT_EQ(ops["Softmax"], 1);
  EXPECT_EQ(ops["ReduceMean"] + ops["Erf"] + ops["Exp"], 0);
  EXPECT_EQ(OpOf(*all->graph, "probs"), "Softmax");
  EXPECT_LT(all->graph->num_nodes(), basic->graph->num_nodes());
  for (const PassRecord& r : all->records) EXPECT_EQ(r.error, "") << r.pass;
  EXPECT_THAT(all->removed_nodes, ::testing::Contains("mean"));
  ExpectSameOutputs(*g, *all->graph,
                                    RandomFeeds(*g, 21));
  ExpectSameOutputs(*g, *basic->graph,
                                    RandomFeeds(*g, 22));

  const std::vector<std::string> lines = DescribeOptimization(*all, 0);
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines[0], HasSubstr("optimization level all: 33 -> "));
  bool fused_line = false;
  for (const std::string& l : lines) {
    fused_line =
        fused_line || l.find("into LayerNorm 'ln'") != std::string::npos;
  }
  EXPECT_TRUE(fused_line);
}

TEST(PipelineTest, SessionSaysAFetchedNodeWasOptimisedAway) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ExporterBlock(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  Feeds feeds = RandomFeeds((*s)->graph(), 1);
  absl::StatusOr<std::vector<Tensor>> r = (*s)->Run(feeds, {"g_erf"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("node 'g_erf' is not in the optimised graph"));
  EXPECT_THAT(r.status().message(), HasSubstr("OPTIMIZATION_NONE"));
  // Outputs and surviving nodes are fetchable.
  EXPECT_TRUE((*s)->Run(feeds, {"probs", "both"}).ok());

  config.set_optimization_level(OPTIMIZATION_NONE);
  s = Session::Create(ExporterBlock(), config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE((*s)->Run(feeds, {"g_erf"}).ok());
}

TEST(PipelineTest, ConfigRejectsANegativeFoldingCap) {
  RuntimeConfig config;
  config.mutable_resource_limits()->set_max_folded_constant_bytes(-1);
  absl::Status s = ValidateRuntimeConfig(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("resource_limits.max_folded_constant_bytes: must be 0 "
                        "(the default, 16.0 MiB)"));
  config.mutable_resource_limits()->set_max_folded_constant_bytes(1024);
  config.mutable_resource_limits()->set_max_folded_bytes(4096);
  EXPECT_TRUE(ValidateRuntimeConfig(config).ok());
  EXPECT_EQ(PassOptionsFromConfig(config, OptimizationTarget()).limits.max_folded_constant_bytes,
            1024);
  EXPECT_EQ(PassOptionsFromConfig(config, OptimizationTarget()).limits.max_folded_bytes, 4096);
}

// RuntimeConfig.max_folded_constant_bytes (field 18) moved into
// resource_limits: still read, noted as deprecated, and an error beside the
// field that replaced it.
TEST(PipelineTest, TheDeprecatedFoldingCapIsReadAndNoted) {
  RuntimeConfig config;
  config.set_max_folded_constant_bytes(1024);
  ASSERT_TRUE(ValidateRuntimeConfig(config).ok());
  EXPECT_EQ(PassOptionsFromConfig(config, OptimizationTarget()).limits.max_folded_constant_bytes,
            1024);
  std::vector<std::string> log;
  NoteDeprecatedFields(config, &log);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("max_folded_constant_bytes is deprecated; "
                                "read as "
                                "resource_limits.max_folded_constant_bytes"));
  config.set_max_folded_constant_bytes(-1);
  EXPECT_THAT(ValidateRuntimeConfig(config).message(),
              HasSubstr("max_folded_constant_bytes: must be 0"));
  config.set_max_folded_constant_bytes(1024);
  config.mutable_resource_limits()->set_max_folded_constant_bytes(2048);
  absl::Status s = ValidateRuntimeConfig(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("max_folded_constant_bytes: is deprecated and replaced "
                        "by resource_limits.max_folded_constant_bytes, which "
                        "is also set"));
  config = RuntimeConfig();
  config.mutable_resource_limits()->set_max_import_folded_bytes(4096);
  log.clear();
  NoteDeprecatedFields(config, &log);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("read as resource_limits.max_folded_bytes"));
  EXPECT_EQ(PassOptionsFromConfig(config, OptimizationTarget()).limits.max_folded_bytes, 4096);
  config.mutable_resource_limits()->set_max_folded_bytes(4096);
  EXPECT_THAT(ValidateRuntimeConfig(config).message(),
              HasSubstr("resource_limits.max_import_folded_bytes: is "
                        "deprecated"));
}

}  // namespace
}  // namespace sluice::optimizer_test::pipeline_test
