// Deadlines and cancellation (StepOptions, executor/step_limits.h) inside
// control flow: the bodies of Loop and Scan and the branches of If run
// through CompiledSubgraph::Run with the step's limits, so a long Loop stops
// at the next node boundary inside its body, with DEADLINE_EXCEEDED or
// CANCELLED naming the Loop, the iteration and the body's node; what the
// step held is freed and the same session's next step runs whole.
//
// Each model's full run is made long on purpose: its trip count (or scan
// length) is set from a short timed run so that the whole loop would take
// about a minute on this machine, whatever its speed or load (at least
// 20 s where a scan's fed length caps it), while the limit comes after
// 100 ms; a step that stops within 2 s stopped early.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "executor/fault_sweep.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"

namespace sluice::control_flow_limits_test {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int kWidth = 64;
// How long the whole loop is made to take, and the bound a stopped step
// must keep.
constexpr double kFullLoopSeconds = 60.0;
constexpr double kStoppedWithinSeconds = 2.0;
constexpr auto kLimitAfter = std::chrono::milliseconds(100);

// The Loop node `name`: for i in range(trips): acc = acc @ w, over inputs
// `trips`, `x` (float [64, 64], carried) and `w` (float [64, 64],
// captured). Its body's only kernel is MatMul 'mm'.
std::string LoopNode(const std::string& name, const std::string& trips,
                     const std::string& x, const std::string& w) {
  return absl::StrReplaceAll(R"pb(
    node { name: "go_NAME" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_BOOL shape { }
                                                int_val: 1 } } } }
    node { name: "NAME" op: "Loop"
      input: "TRIPS" input: "go_NAME" input: "X" input: "W"
      attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT] } } }
      attr { key: "num_captures" value { i: 1 } }
      attr { key: "body" value { graph {
        node { name: "i" op: "Input"
               attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "shape" value { shape { } } } }
        node { name: "cond_in" op: "Input"
               attr { key: "dtype" value { type: DT_BOOL } }
               attr { key: "shape" value { shape { } } } }
        node { name: "acc" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim: 64 dim: 64 } } } }
        node { name: "ww" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim: 64 dim: 64 } } } }
        node { name: "more" op: "Identity" input: "cond_in" }
        node { name: "mm" op: "MatMul" input: "acc" input: "ww" }
        signature {
          inputs { name: "i" } inputs { name: "cond_in" }
          inputs { name: "acc" } inputs { name: "ww" }
          outputs { name: "cond" tensor: "more" }
          outputs { name: "acc_out" tensor: "mm" } } } } } }
  )pb",
                             {{"NAME", name}, {"TRIPS", trips}, {"X", x}, {"W", w}});
}

constexpr char kMatrixInputs[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 64 dim: 64 } } } }
  node { name: "w" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 64 dim: 64 } } } }
)pb";

constexpr char kTripsInput[] = R"pb(
  node { name: "trips" op: "Input"
         attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { } } } }
)pb";

// y = x @ w @ w ... (trips times), by a Loop.
std::string LoopModel() {
  return absl::StrCat(kTripsInput, kMatrixInputs, LoopNode("loop", "trips", "x", "w"),
                      R"pb(signature { inputs { name: "trips" } inputs { name: "x" }
                                       inputs { name: "w" }
                                       outputs { name: "y" tensor: "loop" } })pb");
}

// The Loop with a body of no nodes: its outputs are its inputs (y = x).
std::string EmptyBodyLoopModel() {
  std::string text = LoopModel();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {R"(node { name: "more" op: "Identity" input: "cond_in" })", ""},
           {R"(node { name: "mm" op: "MatMul" input: "acc" input: "ww" })", ""},
           {R"(tensor: "more")", R"(tensor: "cond_in")"},
           {R"(tensor: "mm")", R"(tensor: "acc")"}}) {
    const size_t at = text.find(from);
    if (at == std::string::npos) return "the Loop model changed: " + from;
    text.replace(at, from.size(), to);
  }
  return text;
}

// y = cond ? (the Loop above, inside the then-branch) : x.
std::string IfModel() {
  return absl::StrCat(
      kTripsInput, kMatrixInputs, R"pb(
    node { name: "cond" op: "Input"
           attr { key: "dtype" value { type: DT_BOOL } }
           attr { key: "shape" value { shape { } } } }
    node { name: "if" op: "If" input: "cond" input: "trips" input: "x" input: "w"
      attr { key: "Tin" value { list { type: [DT_INT64, DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT] } } }
      attr { key: "then_branch" value { graph {)pb",
      kTripsInput, kMatrixInputs, LoopNode("loop", "trips", "x", "w"), R"pb(
        signature { inputs { name: "trips" } inputs { name: "x" } inputs { name: "w" }
                    outputs { name: "out" tensor: "loop" } } } } }
      attr { key: "else_branch" value { graph {)pb",
      kTripsInput, kMatrixInputs, R"pb(
        node { name: "same" op: "Identity" input: "x" }
        signature { inputs { name: "trips" } inputs { name: "x" } inputs { name: "w" }
                    outputs { name: "out" tensor: "same" } } } } } }
    signature { inputs { name: "cond" } inputs { name: "trips" } inputs { name: "x" }
                inputs { name: "w" } outputs { name: "y" tensor: "if" } })pb");
}

// y = x, then for each element s of `steps` (float [T]): y = y @ w + s.
std::string ScanModel() {
  return absl::StrCat(kMatrixInputs, R"pb(
    node { name: "steps" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 } } } }
    node { name: "scan" op: "Scan" input: "x" input: "steps" input: "w"
      attr { key: "Tin" value { list { type: [DT_FLOAT, DT_FLOAT, DT_FLOAT] } } }
      attr { key: "Tout" value { list { type: [DT_FLOAT] } } }
      attr { key: "num_scan_inputs" value { i: 1 } }
      attr { key: "num_captures" value { i: 1 } }
      attr { key: "body" value { graph {
        node { name: "state" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim: 64 dim: 64 } } } }
        node { name: "s" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { } } } }
        node { name: "ww" op: "Input"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim: 64 dim: 64 } } } }
        node { name: "mm" op: "MatMul" input: "state" input: "ww" }
        node { name: "next" op: "Add" input: "mm" input: "s" }
        signature { inputs { name: "state" } inputs { name: "s" } inputs { name: "ww" }
                    outputs { name: "state_out" tensor: "next" } } } } } }
    signature { inputs { name: "x" } inputs { name: "steps" } inputs { name: "w" }
                outputs { name: "y" tensor: "scan" } })pb");
}

// One logical CPU with a budget, so that its bytes in use are counted.
std::unique_ptr<Session> MakeSession(const std::string& text) {
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def)) << text;
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(int64_t{1} << 30);
  config.set_intra_op_threads(1);
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// x: row r, column c is (r + c) % 7 - 3; w: the identity (so y = x for any
// number of trips, exactly).
Tensor X() {
  std::vector<float> x(kWidth * kWidth);
  for (int r = 0; r < kWidth; ++r) {
    for (int c = 0; c < kWidth; ++c) x[r * kWidth + c] = static_cast<float>((r + c) % 7 - 3);
  }
  return Tensor::FromVector<float>(x, Shape({kWidth, kWidth}));
}
Tensor W() {
  std::vector<float> w(kWidth * kWidth, 0.0f);
  for (int i = 0; i < kWidth; ++i) w[i * kWidth + i] = 1.0f;
  return Tensor::FromVector<float>(w, Shape({kWidth, kWidth}));
}

Feeds LoopFeeds(int64_t trips) {
  return {{"trips", Tensor::Scalar<int64_t>(trips)}, {"x", X()}, {"w", W()}};
}

// A model under test: its text, its feeds for `trips` iterations, and what
// an error stopped inside its loop says.
struct LimitsCase {
  std::string name;
  std::string (*model)();
  Feeds (*feeds)(int64_t trips);
  int64_t max_trips;  // a bound on the long run's size (memory)
  const char* where;  // what the message says before the body's node
  // Where the step stopped (a regular expression): one of the body's nodes.
  const char* before = "node '(more|mm)'";
};

void PrintTo(const LimitsCase& c, std::ostream* os) { *os << c.name; }

std::vector<LimitsCase> Cases() {
  return {
      {"loop", LoopModel, LoopFeeds, int64_t{1} << 40, "node 'loop' (Loop): body, iteration "},
      // No node boundary in the body: the check comes before its outputs.
      {"loop_of_an_empty_body", EmptyBodyLoopModel, LoopFeeds, int64_t{1} << 40,
       "node 'loop' (Loop): body, iteration ", "the outputs of a subgraph with no nodes"},
      {"loop_inside_if", IfModel,
       [](int64_t trips) -> Feeds {
         return {{"cond", Tensor::Scalar<bool>(true)},
                 {"trips", Tensor::Scalar<int64_t>(trips)},
                 {"x", X()},
                 {"w", W()}};
       },
       int64_t{1} << 40, "node 'if' (If): then_branch: node 'loop' (Loop): body, iteration "},
      // The steps are fed: at most 8M of them (32 MB).
      {"scan", ScanModel,
       [](int64_t trips) -> Feeds {
         return {{"x", X()},
                 {"steps", Tensor::FromVector<float>(std::vector<float>(trips, 0.0f),
                                                     Shape({trips}))},
                 {"w", W()}};
       },
       int64_t{8} << 20, "node 'scan' (Scan): body, step ", "node '(mm|next)'"},
  };
}

class ControlFlowLimitsTest : public ::testing::TestWithParam<LimitsCase> {
 protected:
  void SetUp() override {
    s_ = MakeSession(GetParam().model());
    ASSERT_NE(s_, nullptr);
    // A short run (its plan compiled by the first) sets the long run's
    // size, and checks the model.
    constexpr int64_t kShort = 20;
    const Feeds short_feeds = GetParam().feeds(kShort);
    ASSERT_TRUE(s_->Run(short_feeds, {"y"}).ok());
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> out = s_->Run(short_feeds, {"y"});
    const double per_trip =
        std::chrono::duration<double>(Clock::now() - start).count() / kShort;
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(TensorsEqual((*out)[0], X()));
    out = absl::UnknownError("dropped");  // its output is not the step's
    trips_ = std::clamp(static_cast<int64_t>(kFullLoopSeconds / per_trip), int64_t{1000},
                        GetParam().max_trips);
    full_seconds_ = per_trip * static_cast<double>(trips_);
    feeds_ = GetParam().feeds(trips_);
    // Compile the long run's plan (the scan's input shape is new) with a
    // step stopped at once, so the timed step starts its first node at once.
    StepOptions stop_at_once;
    stop_at_once.deadline = Clock::now();
    ASSERT_EQ(s_->Run(feeds_, {"y"}, stop_at_once).status().code(),
              absl::StatusCode::kDeadlineExceeded);
    bytes_before_ = testing::DeviceBytesInUse(*s_);
  }

  // The step stopped inside the body, quickly; it left nothing behind; the
  // next step runs whole.
  void ExpectStoppedInsideTheBody(const absl::StatusOr<std::vector<Tensor>>& out,
                                  absl::StatusCode code, const std::string& says,
                                  double seconds) {
    ASSERT_FALSE(out.ok()) << "ran whole (" << trips_ << " trips)";
    EXPECT_EQ(out.status().code(), code) << out.status();
    EXPECT_THAT(out.status().message(), HasSubstr(GetParam().where));
    EXPECT_THAT(std::string(out.status().message()),
                ContainsRegex("(iteration|step) [0-9]+: "));
    EXPECT_THAT(std::string(out.status().message()),
                ContainsRegex(absl::StrCat(says, "; it stopped before ", GetParam().before)))
        << out.status();
    EXPECT_LT(seconds, kStoppedWithinSeconds)
        << "the whole run would take about " << full_seconds_ << " s";
    EXPECT_GT(full_seconds_, 10 * kStoppedWithinSeconds) << trips_ << " trips";
    EXPECT_EQ(testing::DeviceBytesInUse(*s_), bytes_before_);
    absl::StatusOr<std::vector<Tensor>> next = s_->Run(GetParam().feeds(3), {"y"});
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_TRUE(TensorsEqual((*next)[0], X()));
  }

  std::unique_ptr<Session> s_;
  int64_t trips_ = 0;
  double full_seconds_ = 0;
  Feeds feeds_;
  int64_t bytes_before_ = 0;
};

TEST_P(ControlFlowLimitsTest, ADeadlineStopsTheLoopInsideItsBody) {
  StepOptions options;
  const Clock::time_point start = Clock::now();
  options.deadline = start + kLimitAfter;
  absl::StatusOr<std::vector<Tensor>> out = s_->Run(feeds_, {"y"}, options);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ExpectStoppedInsideTheBody(out, absl::StatusCode::kDeadlineExceeded,
                             "the step's deadline passed", seconds);
}

TEST_P(ControlFlowLimitsTest, CancellingFromAnotherThreadStopsTheLoopInsideItsBody) {
  StepCancellation cancel;
  // The step counts its calls (fails none), so that the other thread can
  // wait until the body has run a few times (allocated three outputs; a
  // body of no nodes allocates none: 100 ms) before it cancels.
  FaultInjector counter(kAllFaultKinds, /*fail_at=*/0);
  StepOptions options;
  options.cancellation = &cancel;
  options.faults = &counter;
  Clock::time_point start;
  std::thread stopper([&] {
    const Clock::time_point give_up = Clock::now() + kLimitAfter;
    while (counter.calls(FaultKind::kAllocation) < 3 && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    start = Clock::now();
    cancel.Cancel();
  });
  absl::StatusOr<std::vector<Tensor>> out = s_->Run(feeds_, {"y"}, options);
  const Clock::time_point end = Clock::now();
  stopper.join();
  ExpectStoppedInsideTheBody(out, absl::StatusCode::kCancelled, "the step was cancelled",
                             std::chrono::duration<double>(end - start).count());
}

INSTANTIATE_TEST_SUITE_P(
    Models, ControlFlowLimitsTest, ::testing::ValuesIn(Cases()),
    [](const ::testing::TestParamInfo<LimitsCase>& info) { return info.param.name; });

}  // namespace
}  // namespace sluice::control_flow_limits_test
