// Deadlines and cancellation (StepOptions::deadline and ::cancellation,
// executor/step_limits.h) on a long CPU step: a chain of 512 x 512 MatMuls.
// The step stops before a node with DEADLINE_EXCEEDED or CANCELLED naming
// it, and the same session's next step runs whole and right.
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

namespace sluice {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int kWidth = 512;
constexpr int kChain = 40;

// y = x @ w @ w ... (kChain MatMuls), x: float32[?, 512], w: float32[512, 512].
std::string ChainModel() {
  std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 512 } } } }
    node { name: "w" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: 512 dim: 512 } } } }
  )pb";
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

std::unique_ptr<Session> ChainSession() {
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_intra_op_threads(1);  // a long step on any machine
  config.set_optimization_level(OPTIMIZATION_NONE);
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ChainModel(), &def));
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// x of `rows` rows (row r, column c: (r + c) % 7 - 3) and the identity.
Feeds ChainFeeds(int rows) {
  std::vector<float> x(static_cast<size_t>(rows) * kWidth), w(kWidth * kWidth, 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < kWidth; ++c) x[r * kWidth + c] = static_cast<float>((r + c) % 7 - 3);
  }
  for (int i = 0; i < kWidth; ++i) w[i * kWidth + i] = 1.0f;
  return {{"x", Tensor::FromVector<float>(x, Shape({rows, kWidth}))},
          {"w", Tensor::FromVector<float>(w, Shape({kWidth, kWidth}))}};
}

// The session's next step, with no limits, gives x back exactly (x times
// the identity, kChain times).
void ExpectNextStepRunsWhole(Session* s) {
  const Feeds feeds = ChainFeeds(2);
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
}  // namespace sluice
