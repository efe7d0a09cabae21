// Faults injected at the providers' boundary (StepOptions::faults,
// device/fault_injector.h) on the CPU: every example model and a few ONNX
// models of tests/onnx/testdata, swept by tests/executor/fault_sweep.h.
// CTest runs a sample of N per kind (SampledNSurvives); scripts/fault_sweep.sh
// runs every N (DISABLED_EveryNSurvives, with --gtest_also_run_disabled_tests)
// and adds up the counts each prints. Also: what the error says for each
// kind, and that a session with no injector runs as before.
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/npy.h"
#include "executor/session.h"
#include "executor/fault_sweep.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "test_data.h"

namespace sluice::fault_injection_test {
namespace {

using ::testing::HasSubstr;
using ::sluice::testing::SweepFaults;
using ::sluice::testing::SweepReport;

// One logical CPU with a budget (so its bytes in use are counted), nodes on
// two inter-op threads (so scheduling is one of the calls), kernels on one
// thread each (so a library call's count does not depend on which pool
// thread ran a tile).
RuntimeConfig SweepConfig(int logical_cpus = 1) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  for (int i = 0; i < logical_cpus; ++i) {
    config.add_logical_cpus()->mutable_memory_limit()->set_bytes(int64_t{4} << 30);
  }
  config.set_inter_op_threads(2);
  config.set_intra_op_threads(1);
  return config;
}

struct SweepModel {
  std::string name;   // test name
  std::string path;   // under the data root
  // Feeds: input name -> .npy under the data root; empty: the ONNX
  // testdata convention, <stem>.in.<input>.npy beside the model.
  std::vector<std::pair<std::string, std::string>> inputs;
  // Nodes requested on /cpu:1 of two logical CPUs (copies between them).
  bool split = false;
  // A model written here (path empty), with its feeds.
  std::string (*text)() = nullptr;
  Feeds (*make_feeds)() = nullptr;
};

// If, Loop and Scan in a row, each with kernels in its subgraphs:
//   b = cond ? x @ w + x : x
//   for i in range(trips): a = a @ w + a (a from b), stacking each a
//   for each stacked a_i: s = s + a_i (s from the Loop's last a), stacking s * s
std::string ControlFlowModel() {
  constexpr char kMatrix[] = R"(attr { key: "dtype" value { type: DT_FLOAT } }
                                attr { key: "shape" value { shape { dim: 4 dim: 4 } } })";
  return absl::StrCat(
      R"pb(
    node { name: "cond" op: "Input" attr { key: "dtype" value { type: DT_BOOL } }
           attr { key: "shape" value { shape { } } } }
    node { name: "trips" op: "Input" attr { key: "dtype" value { type: DT_INT64 } }
           attr { key: "shape" value { shape { } } } }
    node { name: "go" op: "Const" attr { key: "value" value { tensor {
           dtype: DT_BOOL shape { } int_val: 1 } } } }
    node { name: "x" op: "Input" )pb", kMatrix, R"pb( }
    node { name: "w" op: "Input" )pb", kMatrix, R"pb( }
    node { name: "branch" op: "If" input: "cond" input: "x" input: "w"
      attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT] } } }
      attr { key: "then_branch" value { graph {
        node { name: "a" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "b" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "ab" op: "MatMul" input: "a" input: "b" }
        node { name: "sum" op: "Add" input: "ab" input: "a" }
        signature { inputs { name: "a" } inputs { name: "b" }
                    outputs { name: "out" tensor: "sum" } } } } }
      attr { key: "else_branch" value { graph {
        node { name: "a" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "b" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "same" op: "Identity" input: "a" }
        signature { inputs { name: "a" } inputs { name: "b" }
                    outputs { name: "out" tensor: "same" } } } } } }
    node { name: "loop" op: "Loop" input: "trips" input: "go" input: "branch" input: "w"
      attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "num_captures" value { i: 1 } }
      attr { key: "body" value { graph {
        node { name: "i" op: "Input" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "shape" value { shape { } } } }
        node { name: "cond_in" op: "Input" attr { key: "dtype" value { type: DT_BOOL } }
               attr { key: "shape" value { shape { } } } }
        node { name: "acc" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "ww" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "more" op: "Identity" input: "cond_in" }
        node { name: "mm" op: "MatMul" input: "acc" input: "ww" }
        node { name: "next" op: "Add" input: "mm" input: "acc" }
        signature { inputs { name: "i" } inputs { name: "cond_in" }
                    inputs { name: "acc" } inputs { name: "ww" }
                    outputs { name: "cond" tensor: "more" }
                    outputs { name: "acc_out" tensor: "next" }
                    outputs { name: "each" tensor: "next" } } } } } }
    node { name: "scan" op: "Scan" input: "loop:0" input: "loop:1"
      attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "num_scan_inputs" value { i: 1 } }
      attr { key: "body" value { graph {
        node { name: "s" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "a" op: "Input" )pb", kMatrix, R"pb( }
        node { name: "next" op: "Add" input: "s" input: "a" }
        node { name: "sq" op: "Mul" input: "next" input: "next" }
        signature { inputs { name: "s" } inputs { name: "a" }
                    outputs { name: "state" tensor: "next" }
                    outputs { name: "each" tensor: "sq" } } } } } }
    signature { inputs { name: "cond" } inputs { name: "trips" } inputs { name: "x" }
                inputs { name: "w" }
                outputs { name: "y" tensor: "scan:0" } outputs { name: "ys" tensor: "scan:1" } }
  )pb");
}

Feeds ControlFlowFeeds() {
  std::vector<float> x(16), w(16);
  for (int i = 0; i < 16; ++i) {
    x[i] = 0.25f * static_cast<float>(i % 5 - 2);
    w[i] = (i % 5 == 0 ? 0.5f : 0.0f) + 0.125f;
  }
  return {{"cond", Tensor::Scalar<bool>(true)},
          {"trips", Tensor::Scalar<int64_t>(3)},
          {"x", Tensor::FromVector<float>(x, Shape({4, 4}))},
          {"w", Tensor::FromVector<float>(w, Shape({4, 4}))}};
}

// Test names and CTest's list show the model's name.
void PrintTo(const SweepModel& m, std::ostream* os) { *os << m.name; }

std::vector<SweepModel> Models() {
  return {
      {"mlp", "examples/mlp.pbtxt", {{"x", "examples/mlp_input.npy"}}},
      {"mlp_over_two_cpus", "examples/mlp.pbtxt", {{"x", "examples/mlp_input.npy"}},
       /*split=*/true},
      {"cnn", "examples/cnn.pb", {{"", "examples/cnn_input.npy"}}},
      {"transformer_block", "examples/transformer_block.pb",
       {{"", "examples/transformer_block_input.npy"}}},
      {"onnx_cnn", "tests/onnx/testdata/cnn.onnx", {}},
      {"onnx_transformer", "tests/onnx/testdata/transformer.onnx", {}},
      {"onnx_conv_variants", "tests/onnx/testdata/conv_variants.onnx", {}},
      // Shapes that depend on values (NonZero, TopK, NMS).
      {"onnx_tiny_detector", "tests/onnx/testdata/tiny_detector.onnx",
       {{"x", "tests/onnx/testdata/tiny_detector.a.in.x.npy"},
        {"feat", "tests/onnx/testdata/tiny_detector.in.feat.npy"}}},
      {"onnx_matmul_gemm", "tests/onnx/testdata/matmul_gemm.onnx", {}},
      {"onnx_softmax_layernorm", "tests/onnx/testdata/softmax_layernorm.onnx", {}},
      // Faults inside If's branch, Loop's and Scan's bodies.
      {"control_flow", "", {}, false, ControlFlowModel, ControlFlowFeeds},
  };
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(const SweepModel& m) {
  if (m.text != nullptr) {
    GraphDef def;
    if (!google::protobuf::TextFormat::ParseFromString(m.text(), &def)) {
      return absl::InvalidArgumentError(absl::StrCat(m.name, ": the text does not parse"));
    }
    absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
    if (!graph.ok()) return graph.status();
    return Session::Create(*std::move(graph), SweepConfig());
  }
  const std::string path = TestDataPath(m.path);
  if (!m.split) return Session::CreateFromFile(path, SweepConfig());
  // Every other node that is not a Const or an Input on /cpu:1.
  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(path);
  if (!loaded.ok()) return loaded.status();
  int i = 0;
  for (NodeDef& node : *loaded->def.mutable_node()) {
    if (node.op() == "Const" || node.op() == "Input") continue;
    node.set_device(i++ % 2 == 1 ? "/cpu:1" : "/cpu:0");
  }
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      BuildGraph(loaded->def, loaded->source);
  if (!graph.ok()) return graph.status();
  RuntimeConfig config = SweepConfig(/*logical_cpus=*/2);
  config.set_optimization_level(OPTIMIZATION_NONE);  // keep the split nodes
  return Session::Create(*std::move(graph), config);
}

absl::StatusOr<Feeds> MakeFeeds(const SweepModel& m, const Session& s) {
  if (m.make_feeds != nullptr) return m.make_feeds();
  Feeds feeds;
  if (!m.inputs.empty()) {
    for (const auto& [name, file] : m.inputs) {
      absl::StatusOr<Tensor> t = ReadNpy(TestDataPath(file));
      if (!t.ok()) return t.status();
      feeds.emplace_back(name.empty() ? s.graph().inputs()[0].name : name, *t);
    }
    return feeds;
  }
  const std::filesystem::path model(TestDataPath(m.path));
  const std::string prefix = absl::StrCat(model.stem().string(), ".in.");
  for (const auto& entry : std::filesystem::directory_iterator(model.parent_path())) {
    const std::string file = entry.path().filename().string();
    if (!absl::StartsWith(file, prefix) || !absl::EndsWith(file, ".npy")) continue;
    absl::StatusOr<Tensor> t = ReadNpy(entry.path().string());
    if (!t.ok()) return t.status();
    feeds.emplace_back(file.substr(prefix.size(), file.size() - prefix.size() - 4), *t);
  }
  if (feeds.empty()) return absl::NotFoundError(absl::StrCat("no ", prefix, "*.npy"));
  return feeds;
}

class FaultSweepTest : public ::testing::TestWithParam<SweepModel> {
 protected:
  void Sweep(bool every_n) {
    const SweepModel& m = GetParam();
    absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(m);
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<Feeds> feeds = MakeFeeds(m, **s);
    ASSERT_TRUE(feeds.ok()) << feeds.status();
    // The plan is compiled by this first step, outside the sweep.
    absl::StatusOr<std::vector<Tensor>> first = (*s)->Run(*feeds, {});
    ASSERT_TRUE(first.ok()) << first.status();
    SweepReport report;
    SweepFaults(**s, *feeds, {}, every_n, &report);
    report.Print(m.name);
    for (int k = 0; k < kNumFaultKinds; ++k) {
      const auto& c = report.by_kind[k];
      EXPECT_EQ(c.survived, c.injected) << FaultKindName(static_cast<FaultKind>(k));
    }
    // Every model allocates and launches kernels; the split one copies.
    EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kAllocation)].injected, 0);
    EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kKernel)].injected, 0);
    if (m.split) {
      EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kCopy)].injected, 0);
    }
    // Models with control flow: allocations and launches inside the
    // subgraphs fail too, and the error says where (the sample of N may
    // miss the tiny detector's one small Loop).
    if (m.text == ControlFlowModel || (every_n && m.name == "onnx_tiny_detector")) {
      EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kAllocation)].in_subgraph, 0);
      EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kKernel)].in_subgraph, 0);
    }
  }
};

TEST_P(FaultSweepTest, SampledNSurvives) { Sweep(/*every_n=*/false); }

// scripts/fault_sweep.sh: every N of every kind.
TEST_P(FaultSweepTest, DISABLED_EveryNSurvives) { Sweep(/*every_n=*/true); }

INSTANTIATE_TEST_SUITE_P(
    Models, FaultSweepTest, ::testing::ValuesIn(Models()),
    [](const ::testing::TestParamInfo<SweepModel>& info) { return info.param.name; });

// The first call of each kind, on the split MLP: the error says which node
// and what failed.
TEST(FaultInjectionTest, EachKindsErrorNamesTheNodeAndTheCall) {
  SweepModel m = Models()[1];
  ASSERT_TRUE(m.split);
  absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(m);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Feeds> feeds = MakeFeeds(m, **s);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
  const struct {
    FaultKind kind;
    absl::StatusCode code;
    const char* says;
  } cases[] = {
      {FaultKind::kAllocation, absl::StatusCode::kResourceExhausted,
       "injected fault: allocation 1 failed (output allocation)"},
      {FaultKind::kCopy, absl::StatusCode::kInternal,
       "copy from /cpu:0 to /cpu:1: injected fault: copy 1 failed (host to host)"},
      {FaultKind::kKernel, absl::StatusCode::kInternal,
       "injected fault: kernel launch 1 failed (kernel launch)"},
  };
  for (const auto& c : cases) {
    FaultInjector faults(FaultBit(c.kind), 1);
    StepOptions options;
    options.faults = &faults;
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(*feeds, {}, options);
    ASSERT_FALSE(out.ok()) << FaultKindName(c.kind);
    EXPECT_EQ(out.status().code(), c.code) << out.status();
    EXPECT_THAT(out.status().message(), HasSubstr("node '"));
    EXPECT_THAT(out.status().message(), HasSubstr(c.says));
  }
}

// A scheduling that fails names the node that was not handed to the pool,
// and the step drains (every node after it is skipped) without hanging.
TEST(FaultInjectionTest, AFailedSchedulingNamesTheNodeAndTheStepDrains) {
  SweepModel m = Models()[3];  // the transformer block: parallel branches
  absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(m);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Feeds> feeds = MakeFeeds(m, **s);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
  FaultInjector faults(FaultBit(FaultKind::kSchedule), 1);
  StepOptions options;
  options.faults = &faults;
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(*feeds, {}, options);
  ASSERT_TRUE(faults.fired()) << "the block's plan schedules nothing";
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(),
              HasSubstr("injected fault: scheduling 1 failed (inter-op thread pool)"));
  EXPECT_THAT(out.status().message(), HasSubstr("node '"));
}

// An injector belongs to its step: steps of the same session running at
// the same time on other threads see none of its faults.
TEST(FaultInjectionTest, ConcurrentStepsOfTheSessionAreUntouched) {
  SweepModel m = Models()[3];  // the transformer block
  absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(m);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Feeds> feeds = MakeFeeds(m, **s);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  absl::StatusOr<std::vector<Tensor>> want = (*s)->Run(*feeds, {});
  ASSERT_TRUE(want.ok()) << want.status();
  constexpr int kSteps = 20;
  int clean_ok = 0, faulted_failed = 0;
  std::thread clean([&] {
    for (int i = 0; i < kSteps; ++i) {
      absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(*feeds, {});
      if (out.ok() && testing::CompareOutputs(*out, *want, false).empty()) ++clean_ok;
    }
  });
  for (int i = 0; i < kSteps; ++i) {
    // The first to fifth allocation of the step fails, in turn.
    FaultInjector faults(FaultBit(FaultKind::kAllocation), 1 + i % 5);
    StepOptions options;
    options.faults = &faults;
    if (!(*s)->Run(*feeds, {}, options).ok()) ++faulted_failed;
  }
  clean.join();
  EXPECT_EQ(clean_ok, kSteps);
  EXPECT_EQ(faulted_failed, kSteps);
}

}  // namespace
}  // namespace sluice::fault_injection_test
