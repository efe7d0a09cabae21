// AlgorithmCache (kernels/algorithm_cache.h) with fake algorithms on a fake
// device whose clock each run advances by the algorithm's cost: which
// candidate is kept, how often candidates are timed, and which are skipped.
// No GPU needed.
#include "kernels/algorithm_cache.h"

#include <map>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::algorithm_cache_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What a fake algorithm's runs are counted in.
struct FakeCall {
  mutable std::map<std::string, int> runs;
  mutable float clock_ms = 0;
};

class FakeAlgorithm final : public Algorithm<FakeCall> {
 public:
  FakeAlgorithm(std::string name, float ms, int64_t workspace = 0,
                absl::Status run_status = absl::OkStatus(),
                absl::Status can_implement = absl::OkStatus(), int group = -1)
      : name_(std::move(name)),
        ms_(ms),
        workspace_(workspace),
        run_status_(std::move(run_status)),
        can_implement_(std::move(can_implement)),
        group_(group) {}

  std::string Name(const FakeCall&) const override { return name_; }
  absl::Status CanImplement(const FakeCall&) const override { return can_implement_; }
  int64_t WorkspaceBytes(const FakeCall&) const override { return workspace_; }
  int RankedGroup() const override { return group_; }
  absl::Status Run(const FakeCall& call, void* workspace) const override {
    EXPECT_EQ(workspace == nullptr, workspace_ == 0) << name_;
    ++call.runs[name_];
    if (!run_status_.ok()) return run_status_;
    call.clock_ms += ms_;
    return absl::OkStatus();
  }

 private:
  const std::string name_;
  const float ms_;
  const int64_t workspace_;
  const absl::Status run_status_;
  const absl::Status can_implement_;
  const int group_;
};

// Workspace up to `room` bytes; times a run by the call's clock.
class FakeDevice final : public AlgorithmCache::Device {
 public:
  explicit FakeDevice(const FakeCall* call) : call_(call) {}
  absl::StatusOr<Tensor> Workspace(int64_t bytes) override {
    if (bytes > room) return absl::ResourceExhaustedError("no room");
    return Tensor::Create(DT_UINT8, Shape({bytes}));
  }
  bool CanTime() const override { return can_time; }
  absl::StatusOr<float> Time(const std::function<absl::Status()>& run) override {
    ++timings;
    seen_while_timing = AlgorithmCache::ProcessActivity().timing_now;
    RETURN_IF_ERROR(run());  // untimed, as the GPU's timer does
    const float start = call_->clock_ms;
    RETURN_IF_ERROR(run());
    return call_->clock_ms - start;
  }

  int64_t room = int64_t{1} << 30;
  bool can_time = true;
  int timings = 0;
  std::string seen_while_timing;

 private:
  const FakeCall* const call_;
};

AlgorithmCache::Options Lib() {
  AlgorithmCache::Options o;
  o.library = "fakeLib";
  return o;
}

using Algorithms = std::vector<const Algorithm<FakeCall>*>;

TEST(AlgorithmCacheTest, KeepsTheFastestAndTimesAProblemOnce) {
  const FakeAlgorithm slow("slow", 3), fast("fast", 1), middle("middle", 2);
  const Algorithms algos = {&slow, &fast, &middle};
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  for (int step = 0; step < 3; ++step) {
    absl::StatusOr<AlgorithmCache::Ran> ran = cache.Run<FakeCall>("p", algos, call, Lib(), &device);
    ASSERT_TRUE(ran.ok()) << ran.status();
    EXPECT_EQ(ran->index, 1);
    EXPECT_EQ(ran->timed_now, step == 0);
  }
  EXPECT_EQ(device.timings, 3);  // each candidate once, on the first step
  EXPECT_EQ(call.runs["slow"], 2);  // an untimed and a timed run
  EXPECT_EQ(call.runs["fast"], 2 + 3);
  const AlgorithmCache::Entry e = cache.Find("fakeLib", "p");
  EXPECT_TRUE(e.timed);
  EXPECT_THAT(e.order, ElementsAre(1, 2, 0));
  EXPECT_EQ(e.runs, 3);
  EXPECT_EQ(e.last, "fast");
  EXPECT_THAT(e.timings, HasSubstr("fast 1 ms"));
  EXPECT_THAT(e.timings, HasSubstr(": fast"));
}

// What a progress line reads: the library being timed while it is, and
// one more problem timed after, process-wide; nothing for a cached choice.
TEST(AlgorithmCacheTest, ProcessActivityCountsTheProblemsTimed) {
  const FakeAlgorithm a("a", 1), b("b", 2);
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  const int64_t before = AlgorithmCache::ProcessActivity().problems_timed;
  ASSERT_TRUE(cache.Run<FakeCall>("p", Algorithms{&a, &b}, call, Lib(), &device).ok());
  EXPECT_EQ(device.seen_while_timing, "fakeLib");
  AlgorithmCache::Activity after = AlgorithmCache::ProcessActivity();
  EXPECT_EQ(after.problems_timed, before + 1);
  EXPECT_EQ(after.timing_now, "");
  ASSERT_TRUE(cache.Run<FakeCall>("p", Algorithms{&a, &b}, call, Lib(), &device).ok());
  EXPECT_EQ(AlgorithmCache::ProcessActivity().problems_timed, before + 1);
}

TEST(AlgorithmCacheTest, EachProblemAndLibraryIsTimedOnItsOwn) {
  const FakeAlgorithm a("a", 1), b("b", 2);
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  AlgorithmCache::Options other = Lib();
  other.library = "otherLib";
  for (const auto& [key, options] :
       {std::pair{"p", Lib()}, std::pair{"q", Lib()}, std::pair{"p", other}}) {
    absl::StatusOr<AlgorithmCache::Ran> ran =
        cache.Run<FakeCall>(key, Algorithms{&a, &b}, call, options, &device);
    ASSERT_TRUE(ran.ok()) << ran.status();
    EXPECT_TRUE(ran->timed_now) << key << " " << options.library;
  }
  EXPECT_EQ(device.timings, 6);
  EXPECT_TRUE(cache.Find("otherLib", "p").timed);
  EXPECT_FALSE(cache.Find("otherLib", "q").timed);
}

TEST(AlgorithmCacheTest, SkipsCandidatesThatCannotImplementOrFail) {
  const FakeAlgorithm cannot("cannot", 0.1f, 0, absl::OkStatus(),
                             absl::UnimplementedError("wrong dtype"));
  const FakeAlgorithm refuses("refuses", 0.2f, 0, absl::UnimplementedError("no"));
  const FakeAlgorithm breaks("breaks", 0.3f, 0, absl::InternalError("broken"));
  const FakeAlgorithm works("works", 5);
  const FakeAlgorithm also("also", 6);
  const Algorithms algos = {&cannot, &refuses, &breaks, &works, &also};
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  for (int step = 0; step < 2; ++step) {
    absl::StatusOr<AlgorithmCache::Ran> ran = cache.Run<FakeCall>("p", algos, call, Lib(), &device);
    ASSERT_TRUE(ran.ok()) << ran.status();
    EXPECT_EQ(ran->index, 3);
  }
  EXPECT_EQ(call.runs.count("cannot"), 0u);
  EXPECT_EQ(call.runs["refuses"], 1);  // at timing only, then dropped
  EXPECT_EQ(call.runs["breaks"], 1);
  const AlgorithmCache::Entry e = cache.Find("fakeLib", "p");
  EXPECT_THAT(e.order, ElementsAre(3, 4));
  EXPECT_THAT(e.timings, HasSubstr("breaks: broken"));
}

TEST(AlgorithmCacheTest, RespectsTheWorkspaceLimitAndTheRoomLeft) {
  const FakeAlgorithm hungry("hungry", 1, /*workspace=*/4 << 20);
  const FakeAlgorithm modest("modest", 2, /*workspace=*/1 << 20);
  const FakeAlgorithm none("none", 3);
  const Algorithms algos = {&hungry, &modest, &none};
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  AlgorithmCache::Options limited = Lib();
  limited.max_workspace_bytes = 2 << 20;
  absl::StatusOr<AlgorithmCache::Ran> ran = cache.Run<FakeCall>("p", algos, call, limited, &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, 1);
  EXPECT_EQ(ran->workspace_bytes, 1 << 20);
  EXPECT_EQ(call.runs.count("hungry"), 0u);  // over the limit: never run
  // Later the device has no room for the kept one's workspace: the next.
  device.room = 1000;
  ran = cache.Run<FakeCall>("p", algos, call, limited, &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, 2);
  EXPECT_EQ(cache.Find("fakeLib", "p").last_workspace_bytes, 0);
  // No room for any and no zero-workspace candidate: none runs, and why.
  ran = cache.Run<FakeCall>("p", Algorithms{&hungry, &modest}, call, limited, &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, -1);
  EXPECT_THAT(ran->why_not, HasSubstr("no fakeLib algorithm for p fits"));
}

TEST(AlgorithmCacheTest, ARefusalAtRunTimeFallsToTheNext) {
  // Fast at timing, then refusing: kept first, so each call tries it.
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  const FakeAlgorithm a("a", 1), b("b", 2);
  ASSERT_TRUE(cache.Run<FakeCall>("p", Algorithms{&a, &b}, call, Lib(), &device).ok());
  const FakeAlgorithm a_refusing("a", 1, 0, absl::FailedPreconditionError("misaligned"));
  absl::StatusOr<AlgorithmCache::Ran> ran =
      cache.Run<FakeCall>("p", Algorithms{&a_refusing, &b}, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, 1);
  EXPECT_FALSE(ran->timed_now);
  const FakeAlgorithm b_refusing("b", 2, 0, absl::UnimplementedError("not today"));
  ran = cache.Run<FakeCall>("p", Algorithms{&a_refusing, &b_refusing}, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, -1);
  EXPECT_THAT(ran->why_not,
              HasSubstr("fakeLib refused every algorithm for p; the last: not today"));
  // A failure that is not a refusal is an error.
  const FakeAlgorithm a_failing("a", 1, 0, absl::InternalError("device lost"));
  ran = cache.Run<FakeCall>("p", Algorithms{&a_failing, &b}, call, Lib(), &device);
  EXPECT_EQ(ran.status().code(), absl::StatusCode::kInternal);
}

TEST(AlgorithmCacheTest, RunsInTheGivenOrderUntilItMayTime) {
  const FakeAlgorithm slow("slow", 3), fast("fast", 1);
  const Algorithms algos = {&slow, &fast};
  FakeCall call;
  FakeDevice device(&call);
  device.can_time = false;  // a CUDA graph being recorded
  AlgorithmCache cache;
  absl::StatusOr<AlgorithmCache::Ran> ran = cache.Run<FakeCall>("p", algos, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, 0);
  EXPECT_FALSE(cache.Find("fakeLib", "p").timed);
  EXPECT_EQ(device.timings, 0);
  device.can_time = true;
  ran = cache.Run<FakeCall>("p", algos, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->timed_now);
  EXPECT_EQ(ran->index, 1);
  // A forced order (Options::time false) is never timed.
  AlgorithmCache::Options forced = Lib();
  forced.time = false;
  ran = cache.Run<FakeCall>("q", algos, call, forced, &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, 0);
  EXPECT_FALSE(cache.Find("fakeLib", "q").timed);
  EXPECT_EQ(device.timings, 2);
}

TEST(AlgorithmCacheTest, TimesOnlyTheFirstOfARankedGroupThatRuns) {
  const FakeAlgorithm broken("ranked0", 1, 0, absl::UnimplementedError("no"),
                             absl::OkStatus(), /*group=*/0);
  const FakeAlgorithm first("ranked1", 4, 0, absl::OkStatus(), absl::OkStatus(), 0);
  const FakeAlgorithm second("ranked2", 0.5f, 0, absl::OkStatus(), absl::OkStatus(), 0);
  const FakeAlgorithm other("other", 2);
  const Algorithms algos = {&broken, &first, &second, &other};
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  absl::StatusOr<AlgorithmCache::Ran> ran = cache.Run<FakeCall>("p", algos, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, 3);
  EXPECT_EQ(call.runs.count("ranked2"), 0u);  // ranked after ranked1: untimed
  // Timed first, then the untimed fallbacks in the given order.
  EXPECT_THAT(cache.Find("fakeLib", "p").order, ElementsAre(3, 1, 2));
  // One group alone is nothing to choose between: not timed.
  ran = cache.Run<FakeCall>("q", Algorithms{&first, &second}, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_FALSE(ran->timed_now);
  EXPECT_EQ(ran->index, 0);
}

TEST(AlgorithmCacheTest, NewCandidatesAreTimedAgain) {
  const FakeAlgorithm a("a", 2), b("b", 1), c("c", 0.5f);
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  ASSERT_TRUE(cache.Run<FakeCall>("p", Algorithms{&a, &b}, call, Lib(), &device).ok());
  absl::StatusOr<AlgorithmCache::Ran> ran =
      cache.Run<FakeCall>("p", Algorithms{&a, &b, &c}, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->timed_now);
  EXPECT_EQ(ran->index, 2);
}

TEST(AlgorithmCacheTest, SaysWhyWhenNothingCanImplement) {
  const FakeAlgorithm cannot("cannot", 1, 0, absl::OkStatus(),
                             absl::UnimplementedError("float64 is not taken"));
  FakeCall call;
  FakeDevice device(&call);
  AlgorithmCache cache;
  absl::StatusOr<AlgorithmCache::Ran> ran =
      cache.Run<FakeCall>("p", Algorithms{&cannot}, call, Lib(), &device);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->index, -1);
  EXPECT_THAT(ran->why_not, HasSubstr("cannot: float64 is not taken"));
}

}  // namespace
}  // namespace sluice::algorithm_cache_test
