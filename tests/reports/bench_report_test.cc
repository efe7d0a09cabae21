// Tests for reports/bench_report.h: timing a session, and the report's JSON
// and text.
#include "reports/bench_report.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_data.h"

namespace sluice::bench_report_test {
namespace {

using ::testing::HasSubstr;

// On the CPU on any machine: the lines these tests expect are a CPU
// session's (a GPU session copies and replays).
RuntimeConfig CpuConfig() {
  RuntimeConfig config;
  config.set_use_gpu(false);
  return config;
}

std::unique_ptr<Session> MlpSession() {
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::CreateFromFile(TestDataPath("examples/mlp.pbtxt"), CpuConfig());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

Feeds MlpFeeds() {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = 0.25f * (i % 7);
  return {{"x", Tensor::FromVector<float>(x, Shape({2, 16}))}};
}

TEST(BenchReportTest, TimesTheRunsAskedForAndProfilesOneStep) {
  std::unique_ptr<Session> session = MlpSession();
  ASSERT_NE(session, nullptr);
  BenchSettings settings;
  settings.model_name = "mlp";
  settings.warmup = 1;
  settings.runs = 5;
  settings.top = 2;
  int progress_calls = 0;
  settings.progress = [&](double) { ++progress_calls; };
  absl::StatusOr<BenchReport> report =
      BenchSession(*session, MlpFeeds(), settings, 0.5, {"given note"});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->latencies_s.size(), 5u);
  EXPECT_EQ(progress_calls, 5);
  EXPECT_LE(report->top_ops.size(), 2u);
  EXPECT_FALSE(report->top_nodes.empty());
  ASSERT_NE(report->profiled_step, nullptr);
  const nlohmann::json j = BenchReportJson(*report);
  EXPECT_EQ(j["runs"], 5);
  EXPECT_EQ(j["session_create_s"], 0.5);
  EXPECT_LE(j["latency_s"]["min"].get<double>(), j["latency_s"]["p50"].get<double>());
  EXPECT_EQ(j["notes"][0], "given note");
  std::ostringstream text;
  PrintBenchReport(*report, text);
  EXPECT_THAT(text.str(), HasSubstr("model: mlp\nsession creation: 500.000 ms\n"));
  EXPECT_THAT(text.str(), HasSubstr("timed runs: 5 in "));
  EXPECT_THAT(text.str(), HasSubstr("bytes copied per link: none"));
  // A CPU session: no GPU waits, no replay reason, and no lines for them.
  EXPECT_EQ(j["gpu_kernel_host_waits_per_step"], 0.0);
  EXPECT_EQ(j["gpu_graph_why_not"], "");
  EXPECT_THAT(text.str(), ::testing::Not(HasSubstr("waits for the GPU")));
  EXPECT_THAT(text.str(), ::testing::Not(HasSubstr("not replayed")));
}

// The first step is bracketed by the hook (a progress line's), and what a
// GPU session's stats say of waits and replays is printed.
TEST(BenchReportTest, TheFirstStepHookAndTheGpuLines) {
  std::unique_ptr<Session> session = MlpSession();
  ASSERT_NE(session, nullptr);
  BenchSettings settings;
  settings.runs = 2;
  std::vector<bool> calls;
  settings.first_step_running = [&](bool running) { calls.push_back(running); };
  absl::StatusOr<BenchReport> report = BenchSession(*session, MlpFeeds(), settings, 0);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(calls, (std::vector<bool>{true, false}));
  report->session_stats.gpu_graph_why_not =
      "nz (NonZero) sizes its output from values on the GPU";
  report->gpu_kernel_host_waits_per_step = 2;
  std::ostringstream text;
  PrintBenchReport(*report, text);
  EXPECT_THAT(text.str(),
              HasSubstr("not replayed as a CUDA graph: nz (NonZero) sizes its output"));
  EXPECT_THAT(text.str(), HasSubstr("waits for the GPU inside a step: 2 ("));
}

TEST(BenchReportTest, AFailedFirstStepGoesThroughTheHook) {
  std::unique_ptr<Session> session = MlpSession();
  ASSERT_NE(session, nullptr);
  BenchSettings settings;
  settings.runs = 1;
  settings.first_step_error = [](const absl::Status& s) {
    return absl::Status(s.code(), std::string(s.message()) + " [hint]");
  };
  absl::StatusOr<BenchReport> report = BenchSession(*session, {}, settings, 0);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(report.status().message()), HasSubstr("[hint]"));
}

}  // namespace
}  // namespace sluice::bench_report_test
