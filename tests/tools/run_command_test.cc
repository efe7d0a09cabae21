// Tests for `sluice run` and the top-level `sluice` dispatch.
#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>
#include <vector>
#include <string>

#include "core/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/tools_test_util.h"
#include "tools/commands.h"
#include "onnx/tensor_file.h"
#if SLUICE_HAVE_ONNX
#include "onnx/onnx_pb.h"
#endif

namespace sluice::run_command_test {
namespace {

using ::testing::HasSubstr;

// Whether `path` holds a float32 .npy equal to `expected_path`'s within atol.
::testing::AssertionResult NpyClose(const std::string& path,
                                    const std::string& expected_path,
                                    double atol) {
  absl::StatusOr<Tensor> a = ReadNpy(path);
  absl::StatusOr<Tensor> e = ReadNpy(expected_path);
  if (!a.ok()) return ::testing::AssertionFailure() << a.status();
  if (!e.ok()) return ::testing::AssertionFailure() << e.status();
  if (a->shape() != e->shape() || a->dtype() != DT_FLOAT) {
    return ::testing::AssertionFailure()
           << a->DebugString() << " vs " << e->DebugString();
  }
  for (int64_t i = 0; i < a->NumElements(); ++i) {
    const double d = std::fabs(a->flat<float>()[i] - e->flat<float>()[i]);
    if (!(d <= atol)) {
      return ::testing::AssertionFailure() << "element " << i << " off by " << d;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(RunCommandTest, RunsTheMlpAndMatchesTheNumPyReference) {
  ScratchDir dir;
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--input",
                "x=" + ExampleFile("mlp_input.npy"), "--output-dir",
                dir.Path("out")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("logits: float32[4,10] ["));
  EXPECT_THAT(r.out, HasSubstr("probs: float32[4,10] ["));
  EXPECT_TRUE(NpyClose(dir.Path("out/logits.npy"),
                       ExampleFile("mlp_logits_expected.npy"), 1e-4));
  EXPECT_TRUE(NpyClose(dir.Path("out/probs.npy"),
                       ExampleFile("mlp_probs_expected.npy"), 1e-4));
}

// `run --stats`: memory per GPU, then what was given back. On a GPU the
// default (growth) reserves what the step needed and releasing returns what
// holds no tensor; with no GPU, nothing is reported or released.
TEST(RunCommandTest, StatsReportMemoryAndWhatWasReleased) {
  ScratchDir dir;
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--input",
                "x=" + ExampleFile("mlp_input.npy"), "--output-dir",
                dir.Path("out"), "--stats", "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("memory_released_bytes")) << r.out;
  const int64_t released = j["memory_released_bytes"].get<int64_t>();
  EXPECT_GE(released, 0);
  ASSERT_EQ(j["memory"].size(), j["memory_after_release"].size());
  for (size_t i = 0; i < j["memory"].size(); ++i) {
    EXPECT_LE(j["memory_after_release"][i]["bytes_reserved"].get<int64_t>(),
              j["memory"][i]["bytes_reserved"].get<int64_t>());
  }
  if (j["memory"].empty()) {
    EXPECT_EQ(released, 0);
  }
  CommandResult text = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--input",
                "x=" + ExampleFile("mlp_input.npy"), "--output-dir",
                dir.Path("out2"), "--stats"});
  ASSERT_EQ(text.code, 0) << text.out << text.err;
  EXPECT_THAT(text.out, HasSubstr("memory released after the step: "));
}

// `run --trace`: the step as a Chrome trace. Slices on one row (a host
// thread, a GPU stream) never overlap, all lie inside the
// step, and on a GPU machine the compute and both host copy streams have
// rows.
TEST(RunCommandTest, TraceHasARowPerThreadAndStreamAndSlicesInsideTheStep) {
  ScratchDir dir;
  const std::string trace = dir.Path("step.json");
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("transformer_block.pb"), "--input",
                "x=" + ExampleFile("transformer_block_input.npy"),
                "--output-dir", dir.Path("out"), "--trace", trace});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("trace: " + trace));
  EXPECT_TRUE(NpyClose(dir.Path("out/y.npy"),
                       ExampleFile("transformer_block_expected.npy"), 1e-4));

  std::ifstream in(trace);
  ASSERT_TRUE(in.good());
  const nlohmann::json t = nlohmann::json::parse(in);
  const double step_us = t["otherData"]["step_us"].get<double>();
  const double slack_us = t["otherData"]["gpu_alignment_error_us"].get<double>() + 2;
  ASSERT_GT(step_us, 0);
  std::map<std::pair<int, int>, std::string> rows;
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  for (const auto& e : t["traceEvents"]) {
    const int pid = e["pid"].get<int>(), tid = e["tid"].get<int>();
    const std::string ph = e["ph"].get<std::string>();
    if (ph == "M" && e["name"] == "thread_name") {
      rows[{pid, tid}] = e["args"]["name"].get<std::string>();
    } else if (ph == "M" && e["name"] == "process_name") {
      processes[pid] = e["args"]["name"].get<std::string>();
    } else if (ph == "X") {
      const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
      EXPECT_GE(ts, -slack_us) << e.dump();
      EXPECT_GE(dur, 0) << e.dump();
      EXPECT_LE(ts + dur, step_us + slack_us) << e.dump();
      EXPECT_EQ(rows.count({pid, tid}), 1u) << "slice on an unnamed row: " << e.dump();
      slices[{pid, tid}].push_back({ts, ts + dur});
    }
  }
  for (auto& [row, list] : slices) {
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_LE(list[i - 1].second, list[i].first + 1.0)
          << "overlap on " << processes[row.first] << " " << rows[row];
    }
  }
  std::set<std::string> names;
  for (const auto& [row, name] : rows) names.insert(processes[row.first] + "/" + name);
  EXPECT_EQ(processes[1], "host");
  EXPECT_EQ(names.count("host/host thread 0"), 1u);
  bool gpu = false;
  for (const auto& [pid, name] : processes) gpu |= name == "/gpu:0";
  if (gpu) {
    for (const char* stream : {"compute", "host-to-device", "device-to-host"}) {
      EXPECT_EQ(names.count(std::string("/gpu:0/") + stream), 1u) << stream;
    }
  }
}

TEST(RunCommandTest, UnwritableTraceIsAnError) {
  ScratchDir dir;
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--random-inputs", "--output-dir",
                dir.Path("out"), "--trace", dir.Path("no/such/dir/t.json")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot write trace"));
}

TEST(RunCommandTest, PrintsJson) {
  ScratchDir dir;
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--input",
                "x=" + ExampleFile("mlp_input.npy"), "--output-dir",
                dir.Path("out"), "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["name"], "logits");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({4, 10}));
  EXPECT_EQ(j["outputs"][0]["first_values"].size(), 8u);
}

TEST(RunCommandTest, RandomInputsAreSeededAndResolveUnknownDims) {
  ScratchDir dir;
  auto run = [&](const std::string& out, const std::string& seed) {
    return RunCommand(RunMain, {ExampleFile("mlp.pbtxt"), "--random-inputs",
                                "--seed", seed, "--output-dir", dir.Path(out)});
  };
  CommandResult a = run("a", "7");
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_THAT(a.err, HasSubstr("unknown dimensions become 1"));
  EXPECT_THAT(a.out, HasSubstr("logits: float32[1,10]"));
  CommandResult b = run("b", "7");
  CommandResult c = run("c", "8");
  ASSERT_EQ(b.code, 0);
  ASSERT_EQ(c.code, 0);
  // The same inputs; the outputs to rounding, since a GPU session picks its
  // GEMM algorithm by timing (kernels/algorithm_cache.h), and two sessions
  // may pick two.
  EXPECT_TRUE(NpyClose(dir.Path("a/logits.npy"), dir.Path("b/logits.npy"), 1e-6));
  EXPECT_FALSE(NpyClose(dir.Path("a/logits.npy"), dir.Path("c/logits.npy"), 0));
}

TEST(RunCommandTest, MissingInputShowsTheSignature) {
  ScratchDir dir;
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--output-dir", dir.Path("out")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("x"));
  EXPECT_THAT(r.err, HasSubstr("float32[?,16]"));
}

TEST(RunCommandTest, WrongShapeNamesTheInput) {
  ScratchDir dir;
  Tensor bad = Tensor::FromVector<float>({1, 2, 3}, Shape({1, 3}));
  ASSERT_TRUE(WriteNpy(bad, dir.Path("bad.npy")).ok());
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--input", "x=" + dir.Path("bad.npy"),
                "--output-dir", dir.Path("out")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("'x'"));
  EXPECT_THAT(r.err, HasSubstr("[?,16]"));
}

TEST(RunCommandTest, BadNpyNamesTheInputAndFile) {
  ScratchDir dir;
  const std::string path = dir.Write("junk.npy", "not an npy file");
  CommandResult r = RunCommand(
      RunMain, {ExampleFile("mlp.pbtxt"), "--input", "x=" + path,
                "--output-dir", dir.Path("out")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x'"));
  EXPECT_THAT(r.err, HasSubstr("junk.npy"));
}

// A bfloat16 input, which .npy cannot name, given as an ONNX TensorProto.
TEST(RunCommandTest, FeedsABfloat16InputFromAnOnnxTensorProto) {
#if SLUICE_HAVE_ONNX
  ScratchDir dir;
  const std::string model = dir.Write("bf16.pbtxt", R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_BFLOAT16 } }
           attr { key: "shape" value { shape { dim: 3 } } } }
    node { name: "y" op: "Cast" input: "x"
           attr { key: "DstT" value { type: DT_FLOAT } } }
  )pb");
  onnx::TensorProto proto;
  proto.add_dims(3);
  proto.set_data_type(onnx::TensorProto::BFLOAT16);
  // 1.5, -2 and 0.1015625 as bfloat16 (the high halves of their float32
  // bits), little-endian.
  const uint16_t bits[] = {0x3fc0, 0xc000, 0x3dd0};
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(bits),
                                 sizeof(bits)));
  const std::string pb = dir.Write("x.pb", proto.SerializeAsString());
  CommandResult r = RunCommand(
      RunMain, {model, "--input", "x=" + pb, "--output-dir", dir.Path("out")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  absl::StatusOr<Tensor> y = ReadNpy(dir.Path("out/y.npy"));
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), Shape({3}));
  EXPECT_EQ(y->flat<float>()[0], 1.5f);
  EXPECT_EQ(y->flat<float>()[1], -2.0f);
  EXPECT_EQ(y->flat<float>()[2], 0.1015625f);
  // A bfloat16 output: NAME.npy widened to float32, NAME.pb exact.
  const std::string same = dir.Write("bf16_out.pbtxt", R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_BFLOAT16 } }
           attr { key: "shape" value { shape { dim: 3 } } } }
    node { name: "y" op: "Neg" input: "x" }
  )pb");
  r = RunCommand(RunMain, {same, "--input", "x=" + pb, "--output-dir",
                           dir.Path("out2")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.err + r.out, HasSubstr("y.pb"));
  absl::StatusOr<Tensor> exact = ReadOnnxTensorFile(dir.Path("out2/y.pb"));
  ASSERT_TRUE(exact.ok()) << exact.status();
  ASSERT_EQ(exact->dtype(), DT_BFLOAT16);
  ASSERT_EQ(exact->shape(), Shape({3}));
  EXPECT_EQ(static_cast<float>(exact->flat<bfloat16>()[0]), -1.5f);
  EXPECT_EQ(static_cast<float>(exact->flat<bfloat16>()[2]), -0.1015625f);
  // A .pb that is no TensorProto names the input and the file.
  const std::string junk = dir.Write("junk.pb", "\xff\xff not a proto");
  r = RunCommand(RunMain, {model, "--input", "x=" + junk, "--output-dir",
                           dir.Path("out")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x'"));
  EXPECT_THAT(r.err, HasSubstr("junk.pb"));
#else
  GTEST_SKIP() << "built without libonnx";
#endif
}

// Several inputs in one np.savez archive, each by its name.
TEST(RunCommandTest, FeedsEveryArrayOfAnNpzArchive) {
  ScratchDir dir;
  const std::string model = dir.Write("add.pbtxt", R"pb(
    node { name: "a" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 2 dim: 3 } } } }
    node { name: "b" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 3 } } } }
    node { name: "y" op: "Add" input: "a" input: "b" }
  )pb");
  // testdata/add_inputs.npz: np.savez(a=[[1,2,3],[4,5,6]], b=[0.5,-1,10]).
  CommandResult r = RunCommand(
      RunMain, {model, "--input",
                TestDataPath("tests/tools/testdata/add_inputs.npz"),
                "--output-dir", dir.Path("out")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  absl::StatusOr<Tensor> y = ReadNpy(dir.Path("out/y.npy"));
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), Shape({2, 3}));
  const std::vector<float> want = {1.5f, 1, 13, 4.5f, 4, 16};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y->flat<float>()[i], want[i]) << i;
  // An archive naming an input twice with --input is refused.
  r = RunCommand(RunMain,
                 {model, "--input",
                  TestDataPath("tests/tools/testdata/add_inputs.npz"),
                  "--input", "b=" + dir.Path("out/y.npy"), "--output-dir",
                  dir.Path("out")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("more than once"));
}

TEST(RunCommandTest, MalformedInputFlagIsAnError) {
  CommandResult r =
      RunCommand(RunMain, {ExampleFile("mlp.pbtxt"), "--input", "x"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("NAME=FILE.npy"));
}

// --timeout: a deadline the step cannot meet (a microsecond, spent before
// the first node on planning) stops it there; a generous one changes nothing.
TEST(RunCommandTest, TimeoutStopsTheStepBeforeANode) {
  ScratchDir dir;
  const std::vector<std::string> args = {ExampleFile("mlp.pbtxt"), "--input",
                                         "x=" + ExampleFile("mlp_input.npy"),
                                         "--output-dir", dir.Path("out")};
  std::vector<std::string> tight = args;
  tight.insert(tight.end(), {"--timeout", "0.000001"});
  CommandResult r = RunCommand(RunMain, tight);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("the step's deadline passed; it stopped before "));
  std::vector<std::string> loose = args;
  loose.insert(loose.end(), {"--timeout", "600"});
  r = RunCommand(RunMain, loose);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(RunCommand(RunMain, {ExampleFile("mlp.pbtxt"), "--timeout", "0"}).code, 2);
  EXPECT_EQ(RunCommand(RunMain, {ExampleFile("mlp.pbtxt"), "--timeout", "-1"}).code, 2);
}

TEST(RunCommandTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand(RunMain, {}).code, 2);
  EXPECT_EQ(RunCommand(RunMain, {"/no/such/model.pbtxt"}).code, 2);
  // --seed needs --random-inputs.
  EXPECT_EQ(RunCommand(RunMain, {ExampleFile("mlp.pbtxt"), "--seed", "3"}).code,
            2);
  EXPECT_EQ(
      RunCommand(RunMain, {ExampleFile("mlp.pbtxt"), "--random-inputs",
                           "--seed", "minus one"})
          .code,
      2);
}

TEST(SluiceMainTest, DispatchesToSubcommands) {
  CommandResult r =
      RunCommand(SluiceMain, {"inspect", ExampleFile("mlp.pbtxt")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("x: float32[?,16]"));
  EXPECT_EQ(RunCommand(SluiceMain, {"devices"}).code, 0);
}

TEST(SluiceMainTest, HelpEverywhere) {
  CommandResult top = RunCommand(SluiceMain, {"--help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_THAT(top.out, HasSubstr("devices"));
  EXPECT_THAT(top.out, HasSubstr("inspect"));
  EXPECT_THAT(top.out, HasSubstr("run"));
  for (const char* sub : {"devices", "inspect", "run"}) {
    CommandResult r = RunCommand(SluiceMain, {sub, "--help"});
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_THAT(r.out, HasSubstr(std::string("sluice ") + sub)) << r.out;
  }
}

TEST(SluiceMainTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand(SluiceMain, {}).code, 2);
  EXPECT_EQ(RunCommand(SluiceMain, {"frobnicate"}).code, 2);
  EXPECT_EQ(RunCommand(SluiceMain, {"inspect"}).code, 2);
}

}  // namespace
}  // namespace sluice::run_command_test
