// Faults injected at the CUDA provider's boundary (StepOptions::faults,
// device/fault_injector.h): the GPU arena's allocations, host/device copies
// (cudaMemcpyAsync), kernel launches, cuBLAS(Lt) and cuDNN calls, on the
// examples placed on /gpu:0; allocations failing while a step is captured
// as a CUDA graph, while a replayed graph's results are copied out, and
// while cuDNN searches for its algorithms. Each run ends with the injected
// error naming the node (or is recovered from), the arena's bytes in use are
// back to their level, and the next step is right. Needs a GPU: elsewhere
// each test skips (SKIP_WITHOUT_GPU, testing/gpu_required.h).
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/npy.h"
#include "executor/fault_sweep.h"
#include "executor/gpu_test_util.h"
#include "executor/session.h"
#include "gtest/gtest.h"
#include "test_data.h"

namespace sluice::gpu_fault_injection_test {
namespace {

using ::sluice::testing::CompareOutputs;
using ::sluice::testing::DeviceBytesInUse;
using ::sluice::testing::SweepFaults;
using ::sluice::testing::SweepPoints;
using ::sluice::testing::SweepReport;

struct GpuModel {
  std::string name;
  std::string path;
  std::string input;  // .npy of the graph's first input
};

void PrintTo(const GpuModel& m, std::ostream* os) { *os << m.name; }

std::vector<GpuModel> GpuModels() {
  return {{"mlp", "examples/mlp.pbtxt", "examples/mlp_input.npy"},
          {"cnn", "examples/cnn.pb", "examples/cnn_input.npy"},
          {"transformer_block", "examples/transformer_block.pb",
           "examples/transformer_block_input.npy"}};
}

// Every node with a GPU kernel on /gpu:0; CUDA graphs as asked.
RuntimeConfig GpuConfig(bool gpu_graphs) {
  RuntimeConfig config;
  config.set_placement_strategy(PLACEMENT_SINGLE);
  config.set_default_device("/gpu:0");
  config.set_gpu_graphs(gpu_graphs);
  return config;
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(const GpuModel& m,
                                                     bool gpu_graphs) {
  return Session::CreateFromFile(TestDataPath(m.path), GpuConfig(gpu_graphs));
}

absl::StatusOr<Feeds> MakeFeeds(const GpuModel& m, const Session& s) {
  absl::StatusOr<Tensor> x = ReadNpy(TestDataPath(m.input));
  if (!x.ok()) return x.status();
  return Feeds{{s.graph().inputs()[0].name, *x}};
}

void ExpectAllSurvived(const SweepReport& report) {
  for (int k = 0; k < kNumFaultKinds; ++k) {
    const auto& c = report.by_kind[k];
    EXPECT_EQ(c.survived, c.injected) << FaultKindName(static_cast<FaultKind>(k));
  }
  EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kAllocation)].injected, 0);
  EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kKernel)].injected, 0);
  EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kCopy)].injected, 0);
}

class GpuFaultSweepTest : public ::testing::TestWithParam<GpuModel> {
 protected:
  // Steps run node by node (no CUDA graph): every kind, every call sampled
  // (every N with `every_n`).
  void SweepOrdinarySteps(bool every_n) {
    SKIP_WITHOUT_GPU();
    absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(GetParam(), false);
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<Feeds> feeds = MakeFeeds(GetParam(), **s);
    ASSERT_TRUE(feeds.ok()) << feeds.status();
    ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
    SweepReport report;
    SweepFaults(**s, *feeds, {}, every_n, &report);
    report.Print("gpu_" + GetParam().name);
    ExpectAllSurvived(report);
    EXPECT_GT(report.by_kind[static_cast<int>(FaultKind::kLibrary)].injected, 0)
        << "no cuBLAS or cuDNN call";
  }
};

TEST_P(GpuFaultSweepTest, SampledNSurvives) { SweepOrdinarySteps(false); }
TEST_P(GpuFaultSweepTest, DISABLED_EveryNSurvives) { SweepOrdinarySteps(true); }

// Steps that replay a CUDA graph: the graph's launch and the copies of its
// results out (the allocations they make) fail.
TEST_P(GpuFaultSweepTest, ReplayedStepsSurvive) {
  SKIP_WITHOUT_GPU();
  absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(GetParam(), true);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Feeds> feeds = MakeFeeds(GetParam(), **s);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
  const int64_t replays = (*s)->stats().gpu_graph_steps;
  ASSERT_GT(replays, 0) << "the plan does not replay a CUDA graph";
  SweepReport report;
  SweepFaults(**s, *feeds, {}, /*every_n=*/true, &report,
              FaultBit(FaultKind::kAllocation) | FaultBit(FaultKind::kCopy) |
                  FaultBit(FaultKind::kKernel));
  report.Print("gpu_replay_" + GetParam().name);
  ExpectAllSurvived(report);
  EXPECT_GT((*s)->stats().gpu_graph_steps, replays);
}

INSTANTIATE_TEST_SUITE_P(
    Models, GpuFaultSweepTest, ::testing::ValuesIn(GpuModels()),
    [](const ::testing::TestParamInfo<GpuModel>& info) { return info.param.name; });

// The first steps of a fresh session each time, where the faults land in
// work done once: the recording of a CUDA graph (the second step), cuDNN's
// algorithm search and cuBLASLt's (the first). A fault there must leave no
// broken graph or cached algorithm behind: the failed step's error names
// the node or the step is recovered (a recording that fails is dropped and
// the step runs node by node), and the steps after it are right.
void SweepFirstSteps(const GpuModel& m, int faulted_step, FaultKinds kinds,
                     const std::string& label) {
  absl::StatusOr<std::unique_ptr<Session>> ref = MakeSession(m, true);
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<Feeds> feeds = MakeFeeds(m, **ref);
  ASSERT_TRUE(feeds.ok()) << feeds.status();
  absl::StatusOr<std::vector<Tensor>> want = (*ref)->Run(*feeds, {});
  ASSERT_TRUE(want.ok()) << want.status();
  // How many calls of `kinds` the faulted step makes, unfaulted, and the
  // bytes in use a session keeps after it and after three more steps: these
  // first steps keep what they made once (a recorded CUDA graph's memory,
  // what cuDNN's search keeps), so a step's own level is not the measure.
  int64_t calls = 0;
  int64_t clean_after = 0, clean_final = 0;
  {
    absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(m, true);
    ASSERT_TRUE(s.ok()) << s.status();
    for (int i = 0; i < faulted_step; ++i) ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
    FaultInjector counter(kinds, 0);
    StepOptions options;
    options.faults = &counter;
    ASSERT_TRUE((*s)->Run(*feeds, {}, options).ok());
    calls = counter.selected_calls();
    clean_after = DeviceBytesInUse(**s);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
    clean_final = DeviceBytesInUse(**s);
  }
  ASSERT_GT(calls, 0) << label;
  int64_t injected = 0, survived = 0;
  for (int64_t n : SweepPoints(calls, /*every_n=*/false)) {
    SCOPED_TRACE(absl::StrCat(label, ": call ", n, " of ", calls));
    absl::StatusOr<std::unique_ptr<Session>> s = MakeSession(m, true);
    ASSERT_TRUE(s.ok()) << s.status();
    for (int i = 0; i < faulted_step; ++i) ASSERT_TRUE((*s)->Run(*feeds, {}).ok());
    const int64_t before = DeviceBytesInUse(**s);
    FaultInjector faults(kinds, n);
    StepOptions options;
    options.faults = &faults;
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(*feeds, {}, options);
    bool ok = true;
    if (out.ok()) {
      const std::string why = CompareOutputs(*out, *want, /*rounding=*/true);
      EXPECT_EQ(why, "");
      ok = why.empty();
    } else {
      EXPECT_TRUE(faults.fired()) << out.status();
      EXPECT_THAT(std::string(out.status().message()),
                  ::testing::HasSubstr("injected fault: "));
      ok = faults.fired();
    }
    out = absl::UnknownError("dropped");
    // Nothing leaked: never more than the unfaulted step keeps (a fault may
    // leave less: a failed recording is dropped and the plan's later steps
    // run node by node, executor/gpu_graph_runner.h), exactly that without
    // a fault.
    const int64_t after = DeviceBytesInUse(**s);
    EXPECT_GE(after, before);
    if (faults.fired()) {
      EXPECT_LE(after, clean_after) << "bytes in use after the faulted step";
    } else {
      EXPECT_EQ(after, clean_after) << "bytes in use after the step";
    }
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<std::vector<Tensor>> next = (*s)->Run(*feeds, {});
      ASSERT_TRUE(next.ok()) << next.status();
      const std::string why = CompareOutputs(*next, *want, /*rounding=*/true);
      EXPECT_EQ(why, "") << "step " << i << " after the fault";
      ok = ok && why.empty();
    }
    const int64_t final_bytes = DeviceBytesInUse(**s);
    if (faults.fired()) {
      EXPECT_LE(final_bytes, clean_final) << "bytes in use three steps later";
    } else {
      EXPECT_EQ(final_bytes, clean_final) << "bytes in use three steps later";
    }
    const bool no_leak = before <= after && after <= clean_after &&
                         final_bytes <= clean_final;
    if (faults.fired()) {
      ++injected;
      if (ok && no_leak) ++survived;
    }
  }
  std::printf("fault sweep: model=%s calls=%lld injected=%lld survived=%lld\n",
              label.c_str(), static_cast<long long>(calls),
              static_cast<long long>(injected), static_cast<long long>(survived));
  EXPECT_GT(injected, 0);
  EXPECT_EQ(survived, injected);
}

TEST(GpuFaultInjectionTest, OutOfMemoryWhileRecordingACudaGraph) {
  SKIP_WITHOUT_GPU();
  // The second step records (executor/gpu_graph_runner.h).
  SweepFirstSteps(GpuModels()[2], /*faulted_step=*/1,
                  FaultBit(FaultKind::kAllocation), "gpu_capture_oom");
}

TEST(GpuFaultInjectionTest, LibraryCallsFailWhileRecordingACudaGraph) {
  SKIP_WITHOUT_GPU();
  SweepFirstSteps(GpuModels()[2], /*faulted_step=*/1,
                  FaultBit(FaultKind::kLibrary) | FaultBit(FaultKind::kKernel),
                  "gpu_capture_library");
}

TEST(GpuFaultInjectionTest, OutOfMemoryAndFailuresDuringCudnnsAlgorithmSearch) {
  SKIP_WITHOUT_GPU();
  // The CNN's first step measures cuDNN's algorithms for each convolution.
  SweepFirstSteps(GpuModels()[1], /*faulted_step=*/0,
                  FaultBit(FaultKind::kAllocation) | FaultBit(FaultKind::kLibrary),
                  "gpu_cudnn_search");
}

}  // namespace
}  // namespace sluice::gpu_fault_injection_test
