// Deadlines and cancellation (StepOptions::deadline and ::cancellation,
// executor/step_limits.h) on a long CPU step: a chain of 512 x 512 MatMuls.
// The step stops before a node with DEADLINE_EXCEEDED or CANCELLED naming
// it, and the same session's next step runs whole and right. On a GPU, a
// chain of 4096 x 4096 MatMuls replayed as a CUDA graph: a cancellation or
// deadline that comes while the graph runs stops the step when it ends.
#include "executor/step_limits.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "tests/executor/gpu_test_util.h"

namespace sluice::step_limits_test {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int kWidth = 512;
constexpr int kChain = 40;

// y = x @ w @ w ... (kChain MatMuls), x: float32[?, width],
// w: float32[width, width].
std::string ChainModel(int width) {
  std::string text = absl::StrCat(R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: )pb", width, R"pb( } } } }
    node { name: "w" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: )pb", width, " dim: ", width, R"pb( } } } }
  )pb");
  std::string prev = "x";
  for (int i = 0; i < kChain; ++i) {
    const std::string name = absl::StrCat("mm", i);
    absl::StrAppend(&text, "node { name: \"", name, "\" op: \"MatMul\" input: \"",
                    prev, "\" input: \"w\" }\n");
    prev = name;
  }
  absl::StrAppend(&text, "signature { inputs { name: \"x\" } inputs { name: \"w\" } ",
                  "outputs { name: \"y\" tensor: \"", prev, "\" } }\n");
  return text;
}

// On the CPU (one thread: a long step on any machine), or where the
// placer puts it (`gpu`: every MatMul on the GPU).
std::unique_ptr<Session> ChainSession(bool gpu = false, int width = kWidth) {
  RuntimeConfig config;
  config.set_use_gpu(gpu);
  config.set_intra_op_threads(1);
  config.set_optimization_level(OPTIMIZATION_NONE);
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ChainModel(width), &def));
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// x of `rows` rows (row r, column c: (r + c) % 7 - 3) and the identity:
// y is x exactly, also in TF32 (small integers).
Feeds ChainFeeds(int rows, int width = kWidth) {
  const size_t n = static_cast<size_t>(width);
  std::vector<float> x(static_cast<size_t>(rows) * n), w(n * n, 0.0f);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    for (size_t c = 0; c < n; ++c) x[r * n + c] = static_cast<float>((r + c) % 7) - 3.0f;
  }
  for (size_t i = 0; i < n; ++i) w[i * n + i] = 1.0f;
  return {{"x", Tensor::FromVector<float>(x, Shape({rows, width}))},
          {"w", Tensor::FromVector<float>(w, Shape({width, width}))}};
}

// The session's next step, with no limits, gives x back exactly (x times
// the identity, kChain times).
void ExpectNextStepRunsWhole(Session* s, int width = kWidth) {
  const Feeds feeds = ChainFeeds(2, width);
  absl::StatusOr<std::vector<Tensor>> out = s->Run(feeds, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsEqual((*out)[0], feeds[0].second));
}

// Compiles the plan for `feeds`' shapes (a step stopped at once), so that
// the timed step starts its first node at once.
void WarmUp(Session* s, const Feeds& feeds) {
  StepOptions stop_at_once;
  stop_at_once.deadline = Clock::now();
  EXPECT_EQ(s->Run(feeds, {"y"}, stop_at_once).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(StepLimitsTest, APassedDeadlineStopsBeforeTheFirstNode) {
  std::unique_ptr<Session> s = ChainSession();
  ASSERT_NE(s, nullptr);
  StepOptions options;
  options.deadline = Clock::now() - std::chrono::milliseconds(1);
  absl::StatusOr<std::vector<Tensor>> out = s->Run(ChainFeeds(kWidth), {"y"}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("deadline passed; it stopped before node 'mm0' (MatMul)"));
  ExpectNextStepRunsWhole(s.get());
}

TEST(StepLimitsTest, ADeadlineInsideTheStepStopsItAtANodeBoundary) {
  std::unique_ptr<Session> s = ChainSession();
  ASSERT_NE(s, nullptr);
  const Feeds feeds = ChainFeeds(kWidth);
  WarmUp(s.get(), feeds);
  // 40 MatMuls of 512^3 (11 GFLOP on one thread) take far longer than 5 ms.
  StepOptions options;
  const Clock::time_point start = Clock::now();
  options.deadline = start + std::chrono::milliseconds(5);
  absl::StatusOr<std::vector<Tensor>> out = s->Run(feeds, {"y"}, options);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("(MatMul)"));
  EXPECT_THAT(out.status().message(), ::testing::Not(HasSubstr("'mm0'")));
  // Stopped early: well before the whole chain could have run.
  EXPECT_LT(seconds, 2.0);
  ExpectNextStepRunsWhole(s.get());
}

TEST(StepLimitsTest, CancellingFromAnotherThreadStopsTheStep) {
  std::unique_ptr<Session> s = ChainSession();
  ASSERT_NE(s, nullptr);
  const Feeds feeds = ChainFeeds(kWidth);
  WarmUp(s.get(), feeds);
  StepCancellation cancel;
  StepOptions options;
  options.cancellation = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cancel.Cancel();
  });
  absl::StatusOr<std::vector<Tensor>> out = s->Run(feeds, {"y"}, options);
  stopper.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("the step was cancelled; it stopped before node 'mm"));
  ExpectNextStepRunsWhole(s.get());
  // The flag stays raised for later steps until it is reset.
  out = s->Run(ChainFeeds(2), {"y"}, options);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled);
  cancel.Reset();
  out = s->Run(ChainFeeds(2), {"y"}, options);
  EXPECT_TRUE(out.ok()) << out.status();
}

// A GPU session of 40 MatMuls of 4096 x 4096 (5.5 TFLOP: some 100 ms on an
// H100 in float32), its plan replayed as a CUDA graph from the third step:
// runs the three steps and returns how long the third took (0: a step
// failed).
constexpr int kGpuWidth = 4096;

double ReplayedStepSeconds(Session* s, const Feeds& feeds) {
  double seconds = 0;
  for (int step = 0; step < 3; ++step) {  // warm-up, recording, replay
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> out = s->Run(feeds, {"y"});
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return 0;
    EXPECT_TRUE(TensorsEqual((*out)[0], feeds[0].second));
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return seconds;
}

TEST(StepLimitsTest, ACancellationDuringAReplayedCudaGraphStopsTheStepWhenItEnds) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Session> s = ChainSession(/*gpu=*/true, kGpuWidth);
  ASSERT_NE(s, nullptr);
  const Feeds feeds = ChainFeeds(kGpuWidth, kGpuWidth);
  const double replay = ReplayedStepSeconds(s.get(), feeds);
  ASSERT_GT(replay, 0.0);
  // The cancellation comes a quarter of the way into the replay, after the
  // check before it: the graph runs to its end, then the step stops.
  StepCancellation cancel;
  StepOptions options;
  options.cancellation = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(replay / 4));
    cancel.Cancel();
  });
  absl::StatusOr<std::vector<Tensor>> out = s->Run(feeds, {"y"}, options);
  stopper.join();
  ASSERT_FALSE(out.ok()) << "the step ran whole in " << replay << " s before";
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("the step was cancelled; it stopped after the step's CUDA graph ("));
  EXPECT_THAT(out.status().message(), HasSubstr("mm39"));
  // The session goes on: the same plan replays whole and right.
  cancel.Reset();
  out = s->Run(feeds, {"y"}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsEqual((*out)[0], feeds[0].second));
  ExpectNextStepRunsWhole(s.get(), kGpuWidth);
}

TEST(StepLimitsTest, ADeadlineThatPassesDuringAReplayedCudaGraphStopsTheStepWhenItEnds) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Session> s = ChainSession(/*gpu=*/true, kGpuWidth);
  ASSERT_NE(s, nullptr);
  const Feeds feeds = ChainFeeds(kGpuWidth, kGpuWidth);
  const double replay = ReplayedStepSeconds(s.get(), feeds);
  ASSERT_GT(replay, 0.0);
  StepOptions options;
  options.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(replay / 4));
  absl::StatusOr<std::vector<Tensor>> out = s->Run(feeds, {"y"}, options);
  ASSERT_FALSE(out.ok()) << "the step ran whole in " << replay << " s before";
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("the step's deadline passed; it stopped after the step's CUDA graph"));
  out = s->Run(feeds, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsEqual((*out)[0], feeds[0].second));
}

TEST(StepLimitsTest, NoLimitsCheckNothing) {
  StepLimits limits;
  EXPECT_FALSE(limits.active());
  EXPECT_TRUE(limits.CheckBeforeStep().ok());
  StepCancellation cancel;
  limits.cancellation = &cancel;
  EXPECT_TRUE(limits.active());
  EXPECT_TRUE(limits.CheckBeforeStep().ok());
  cancel.Cancel();
  EXPECT_EQ(limits.CheckBeforeStep().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace sluice::step_limits_test
