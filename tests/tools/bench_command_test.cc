// `sluice bench`: timings as JSON and text, and its errors.
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/tools_test_util.h"
#include "tools/commands.h"

namespace sluice::bench_command_test {
namespace {

using ::testing::HasSubstr;

TEST(BenchCommandTest, ReportsLatencyPercentilesAsJson) {
  CommandResult r = RunCommand(
      BenchMain, {ExampleFile("mlp.pbtxt"), "--input",
                  "x=" + ExampleFile("mlp_input.npy"), "--runs", "7",
                  "--warmup", "1", "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["runs"].get<int>(), 7);
  const nlohmann::json& l = j["latency_s"];
  EXPECT_GT(l["min"].get<double>(), 0.0);
  EXPECT_LE(l["min"].get<double>(), l["p50"].get<double>());
  EXPECT_LE(l["p50"].get<double>(), l["p90"].get<double>());
  EXPECT_LE(l["p90"].get<double>(), l["p99"].get<double>());
  EXPECT_LE(l["p99"].get<double>(), l["max"].get<double>());
  EXPECT_GT(j["session_create_s"].get<double>(), 0.0);
  EXPECT_GT(j["first_run_s"].get<double>(), 0.0);
  EXPECT_GT(j["steps_per_s"].get<double>(), 0.0);
}

// --timeout gives each step its deadline: one no step can meet (a
// microsecond) stops the first step and bench with it; a generous one
// times every run.
TEST(BenchCommandTest, TimeoutIsEachStepsDeadline) {
  const std::vector<std::string> args = {ExampleFile("mlp.pbtxt"), "--input",
                                         "x=" + ExampleFile("mlp_input.npy"),
                                         "--runs", "3", "--warmup", "0"};
  std::vector<std::string> tight = args;
  tight.insert(tight.end(), {"--timeout", "0.000001"});
  CommandResult r = RunCommand(BenchMain, tight);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("the step's deadline passed; it stopped before "));
  std::vector<std::string> loose = args;
  loose.insert(loose.end(), {"--timeout", "600", "--json"});
  r = RunCommand(BenchMain, loose);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["runs"].get<int>(), 3);
}

TEST(BenchCommandTest, PrintsTextWithRandomInputs) {
  CommandResult r = RunCommand(
      BenchMain, {ExampleFile("cnn.pb"), "--random-inputs", "--runs", "2"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("session creation: "));
  EXPECT_THAT(r.out, HasSubstr("timed runs: 2"));
  EXPECT_THAT(r.out, HasSubstr("latency: min "));
  EXPECT_THAT(r.out, HasSubstr("throughput: "));
  EXPECT_THAT(r.out, HasSubstr("bytes copied per link:"));
}

TEST(BenchCommandTest, MissingInputNamesItAndSuggestsTheFlags) {
  CommandResult r = RunCommand(BenchMain, {ExampleFile("mlp.pbtxt")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing input 'x'"));
  EXPECT_THAT(r.err, HasSubstr("--random-inputs"));
}

// --io-device keeps feeds and results on a device; on the host it changes
// nothing, and a device the session does not have is named.
TEST(BenchCommandTest, IoDeviceKeepsDataThereAndNamesADeviceItLacks) {
  CommandResult r = RunCommand(
      BenchMain, {ExampleFile("mlp.pbtxt"), "--random-inputs", "--runs", "2",
                  "--device", "cpu:0", "--io-device", "cpu:0", "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"].get<int>(), 2);
  EXPECT_THAT(j["notes"].dump(), HasSubstr("feeds and results stay on cpu:0"));
  r = RunCommand(BenchMain, {ExampleFile("mlp.pbtxt"), "--random-inputs",
                             "--runs", "1", "--device", "cpu:0",
                             "--io-device", "gpu:3"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("--io-device: CopyTo: device 'gpu:3' is not a "
                               "device of this session"));
}

// --pinned feeds from page-locked buffers and fetches into page-locked
// memory; a session with no GPU (placed on cpu:0) says it uses ordinary
// memory instead and runs the same. It cannot be combined with --io-device.
TEST(BenchCommandTest, PinnedRunsOnTheHostPathAndExcludesIoDevice) {
  CommandResult r = RunCommand(
      BenchMain, {ExampleFile("mlp.pbtxt"), "--random-inputs", "--runs", "2",
                  "--device", "cpu:0", "--pinned", "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"].get<int>(), 2);
  EXPECT_THAT(j["notes"].dump(), HasSubstr("--pinned: the session has no GPU"));
  EXPECT_EQ(j["host_copies"]["direct"].get<int64_t>(), 0);
  EXPECT_EQ(j["host_copies"]["staged"].get<int64_t>(), 0);
  r = RunCommand(BenchMain, {ExampleFile("mlp.pbtxt"), "--random-inputs",
                             "--runs", "1", "--pinned", "--io-device", "gpu:0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("excludes"));
}

TEST(BenchCommandTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand(BenchMain, {}).code, 2);
  EXPECT_EQ(RunCommand(BenchMain, {ExampleFile("mlp.pbtxt"), "--runs", "0"}).code, 2);
  EXPECT_EQ(RunCommand(BenchMain, {ExampleFile("mlp.pbtxt"), "--runs", "3",
                                   "--seconds", "1"}).code,
            2);
}

}  // namespace
}  // namespace sluice::bench_command_test

namespace sluice::bench_command_test {
namespace {

TEST(BenchCommandTest, ProfilesOpsAndWritesAChromeTrace) {
  ScratchDir dir;
  const std::string trace = dir.Path("trace.json");
  CommandResult r = RunCommand(
      BenchMain, {ExampleFile("mlp.pbtxt"), "--random-inputs", "--runs", "2",
                  "--top", "3", "--trace", trace, "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& ops = j["profile"]["top_ops"];
  // The MLP runs FusedMatMul (each layer's MatMul and bias Add, the first
  // with its Relu) and Softmax: two ops, fewer than --top. On a GPU the
  // feed's and fetches' copies are a third entry, "(copy)".
  size_t kernel_ops = 0;
  for (const auto& op : ops) kernel_ops += op["op"] != "(copy)" ? 1 : 0;
  ASSERT_EQ(kernel_ops, 2u) << ops.dump();
  ASSERT_LE(ops.size(), 3u) << ops.dump();
  double share = 0;
  for (const auto& op : ops) {
    EXPECT_GT(op["seconds"].get<double>(), 0.0);
    share += op["share"].get<double>();
  }
  EXPECT_LE(share, 1.0 + 1e-9);
  EXPECT_GE(ops[0]["seconds"].get<double>(), ops[1]["seconds"].get<double>());

  // Bytes per link: every copy the step made, by link. The MLP's feed and
  // fetches cross devices only where it runs on a GPU.
  int64_t copied = 0;
  for (const auto& link : j["profile"]["links"]) {
    EXPECT_GT(link["bytes"].get<int64_t>(), 0);
    EXPECT_GE(link["copies"].get<int>(), 1);
    copied += link["bytes"].get<int64_t>();
  }
  const bool on_gpu = !j["peak_memory"].empty();
  // Random input x: float32[1,16] (the unknown batch becomes 1) in; logits
  // and probs, float32[1,10] each, out.
  EXPECT_EQ(copied, on_gpu ? 64 + 80 : 0);

  std::ifstream in(trace);
  ASSERT_TRUE(in.good());
  nlohmann::json t = nlohmann::json::parse(in);
  // Each kernel (2 FusedMatMul, Softmax) has a slice on its host
  // thread's row and, on a GPU, one on the stream that ran it, in the GPU's
  // process. Copies (on a GPU machine) come on top.
  std::set<std::string> row_names, devices;
  int kernel_slices = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M") row_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") {
      if (e["cat"] != "copy") {
        ++kernel_slices;
        if (e["args"].contains("stream")) {
          devices.insert(e["args"]["device"].get<std::string>());
        }
      }
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_FALSE(e["args"]["shapes"].get<std::string>().empty());
    }
  }
  EXPECT_EQ(kernel_slices, on_gpu ? 6 : 3);
  EXPECT_EQ(devices.empty(), !on_gpu);
  for (const std::string& d : devices) {
    EXPECT_EQ(row_names.count(d), 1u) << "no row for " << d;
  }
  EXPECT_EQ(row_names.count(on_gpu ? "compute" : "host thread 0"), 1u);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("bytes copied")));  // JSON only
}

}  // namespace
}  // namespace sluice::bench_command_test
