// SweepFaults: SQLite-style fault injection over one session's step. For
// each kind of call at the providers' boundary (device/fault_injector.h), an
// unfaulted step counts the calls; then for N from 1 to that count plus one
// (every N, or a sample of them), the step runs with the Nth call of that
// kind failing, and:
//   - a step whose fault fired ends with the injected error, naming the
//     node ("node '...'"), or, where the provider recovers (a failed
//     dnnl_sgemm is redone on Eigen), succeeds with outputs within float32
//     rounding of the unfaulted ones;
//   - a step whose Nth call never came (N past the count) completes with
//     outputs equal to the unfaulted run;
//   - the devices' bytes in use (a logical CPU's budget, a GPU's arena) are
//     back to their level before the step;
//   - the same session's next step, unfaulted, succeeds with outputs equal,
//     bit for bit, to the unfaulted run.
// Leaks are left to the ASan build's leak checker.
//
//   SweepReport report;
//   SweepFaults(*session, feeds, /*every_n=*/false, &report);
//   report.Print("mlp");
//
// Not thread-safe: one sweep per session at a time.
#ifndef SLUICE_TESTS_EXECUTOR_FAULT_SWEEP_H_
#define SLUICE_TESTS_EXECUTOR_FAULT_SWEEP_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "device/fault_injector.h"
#include "device/gpu_device.h"
#include "device/limited_allocator.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/compare.h"

namespace sluice::testing {

// What a sweep did, per kind of call.
struct SweepCounts {
  int64_t calls = 0;      // calls in one unfaulted step
  int64_t tried = 0;      // values of N tried
  int64_t injected = 0;   // steps whose fault fired
  int64_t failed = 0;     // ... that ended with the injected error
  int64_t recovered = 0;  // ... that the provider recovered from
  int64_t survived = 0;   // fired steps that passed every check
  int64_t not_reached = 0;  // N <= calls that did not fire (a count that varies)
  // Failed steps whose fault was inside a control-flow subgraph (If's
  // branch, Loop's or Scan's body: the error names it).
  int64_t in_subgraph = 0;
};

// Whether an error names a control-flow subgraph it came from
// (kernels/control_flow_kernels.cc: "body, iteration 3: node ...").
inline bool InsideSubgraph(absl::string_view message) {
  for (absl::string_view where :
       {"body, iteration ", "body, step ", "then_branch: ", "else_branch: "}) {
    if (absl::StrContains(message, where)) return true;
  }
  return false;
}

struct SweepReport {
  std::array<SweepCounts, kNumFaultKinds> by_kind{};

  // One line per kind with calls, for scripts/fault_sweep.sh:
  // "fault sweep: model=mlp kind=allocation calls=12 tried=13 injected=12 ...
  // in_subgraph=0"
  void Print(const std::string& model) const {
    for (int k = 0; k < kNumFaultKinds; ++k) {
      const SweepCounts& c = by_kind[k];
      if (c.tried == 0) continue;
      std::string kind = FaultKindName(static_cast<FaultKind>(k));
      std::replace(kind.begin(), kind.end(), ' ', '_');
      std::printf(
          "fault sweep: model=%s kind=%s calls=%lld tried=%lld injected=%lld "
          "failed=%lld recovered=%lld survived=%lld not_reached=%lld "
          "in_subgraph=%lld\n",
          model.c_str(), kind.c_str(), static_cast<long long>(c.calls),
          static_cast<long long>(c.tried), static_cast<long long>(c.injected),
          static_cast<long long>(c.failed), static_cast<long long>(c.recovered),
          static_cast<long long>(c.survived),
          static_cast<long long>(c.not_reached),
          static_cast<long long>(c.in_subgraph));
    }
    std::fflush(stdout);
  }
};

// Bytes the session's devices hold for tensors: each logical CPU with a
// budget (LimitedAllocator) and each GPU's arena.
inline int64_t DeviceBytesInUse(Session& s) {
  int64_t bytes = 0;
  for (Device* d : s.devices()) {
    if (d->type() == DeviceType::kGpu) {
      if (ArenaAllocator* arena = static_cast<GpuDevice*>(d)->arena()) {
        bytes += arena->GetStats().bytes_in_use;
      }
    } else if (auto* limited = dynamic_cast<LimitedAllocator*>(d->allocator())) {
      bytes += limited->bytes_in_use();
    }
  }
  return bytes;
}

// The values of N a sweep tries for a kind with `calls` calls: 1 to calls+1,
// or, sampled, the first two, the middle, the last and the one past it.
inline std::vector<int64_t> SweepPoints(int64_t calls, bool every_n) {
  std::vector<int64_t> points;
  if (every_n) {
    for (int64_t n = 1; n <= calls + 1; ++n) points.push_back(n);
    return points;
  }
  for (int64_t n : {int64_t{1}, int64_t{2}, (calls + 1) / 2, calls, calls + 1}) {
    if (n >= 1 && n <= calls + 1 &&
        std::find(points.begin(), points.end(), n) == points.end()) {
      points.push_back(n);
    }
  }
  std::sort(points.begin(), points.end());
  return points;
}

// "" when every output equals (bit for bit) or, with `rounding`, matches
// within float32 rounding of a long computation: 2 ulps per term of a
// 4096-term sum, relative to 1 + |want| (a dnnl_sgemm redone on Eigen sums
// in another order); other dtypes exactly.
inline std::string CompareOutputs(const std::vector<Tensor>& got,
                                  const std::vector<Tensor>& want,
                                  bool rounding) {
  if (got.size() != want.size()) {
    return absl::StrCat(got.size(), " outputs, expected ", want.size());
  }
  std::string why;
  for (size_t i = 0; i < want.size(); ++i) {
    if (TensorsEqual(got[i], want[i])) continue;
    if (!rounding || want[i].dtype() != DT_FLOAT ||
        got[i].dtype() != DT_FLOAT || got[i].shape() != want[i].shape()) {
      absl::StrAppend(&why, "output ", i, " differs\n");
      continue;
    }
    const float* g = got[i].data<float>();
    const float* w = want[i].data<float>();
    std::vector<float> gv(g, g + got[i].NumElements());
    std::vector<float> wv(w, w + want[i].NumElements());
    const Tolerance tol = DtypeTolerance(DT_FLOAT, /*reduction_length=*/4096,
                                         /*scale=*/1.0);
    const std::string m = CompareTyped<float>(gv, wv, tol);
    if (!m.empty()) absl::StrAppend(&why, "output ", i, ":\n", m);
  }
  return why;
}

// Sweeps `kinds` over steps of `s` on `feeds` (fetching `fetches`, every
// graph output when empty), with `base` as every step's options (its
// `faults` is set per step). The session must have run these feeds before
// (the plan compiled), so that the unfaulted step is the steady state.
inline void SweepFaults(Session& s, const Feeds& feeds,
                        const std::vector<std::string>& fetches, bool every_n,
                        SweepReport* report,
                        FaultKinds kinds = kAllFaultKinds,
                        const StepOptions& base = StepOptions()) {
  absl::StatusOr<std::vector<Tensor>> want = s.Run(feeds, fetches, base);
  ASSERT_TRUE(want.ok()) << want.status();
  FaultInjector counter(kAllFaultKinds, 0);
  StepOptions counted = base;
  counted.faults = &counter;
  absl::StatusOr<std::vector<Tensor>> again = s.Run(feeds, fetches, counted);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(CompareOutputs(*again, *want, /*rounding=*/false), "");
  for (int k = 0; k < kNumFaultKinds; ++k) {
    const FaultKind kind = static_cast<FaultKind>(k);
    if ((kinds & FaultBit(kind)) == 0) continue;
    SweepCounts& counts = report->by_kind[k];
    const int64_t calls = counter.calls(kind);
    counts.calls += calls;
    bool recovered_here = false;  // a fault of this kind recovered from
    for (int64_t n : SweepPoints(calls, every_n)) {
      SCOPED_TRACE(absl::StrCat(FaultKindName(kind), " ", n, " of ", calls));
      ++counts.tried;
      const int64_t before = DeviceBytesInUse(s);
      FaultInjector faults(FaultBit(kind), n);
      StepOptions options = base;
      options.faults = &faults;
      absl::StatusOr<std::vector<Tensor>> out = s.Run(feeds, fetches, options);
      bool ok = true;
      if (!faults.fired()) {
        // A count that varies from step to step (which node a thread hands
        // to the pool depends on which predecessor finished last).
        if (n <= calls) ++counts.not_reached;
        // Also once a fault of this kind was recovered from: the session
        // then runs another way (an algorithm that failed is dropped, and
        // the next one makes other calls).
        EXPECT_TRUE(kind == FaultKind::kSchedule || n > calls || recovered_here)
            << "call " << n << " of " << calls << " never came";
        ok = out.ok() && CompareOutputs(*out, *want, false).empty();
        EXPECT_TRUE(out.ok()) << out.status();
      } else {
        ++counts.injected;
        if (out.ok()) {
          ++counts.recovered;
          recovered_here = true;
          const std::string why = CompareOutputs(*out, *want, /*rounding=*/true);
          EXPECT_EQ(why, "") << faults.fired_what();
          ok = why.empty();
        } else {
          ++counts.failed;
          const std::string message(out.status().message());
          if (InsideSubgraph(message)) ++counts.in_subgraph;
          EXPECT_THAT(message, ::testing::HasSubstr("injected fault: "));
          EXPECT_THAT(message, ::testing::HasSubstr("node '"));
          ok = absl::StrContains(message, "injected fault: ") &&
               absl::StrContains(message, "node '");
        }
      }
      out = absl::UnknownError("dropped");  // let go of the results
      const int64_t after = DeviceBytesInUse(s);
      EXPECT_EQ(after, before) << "bytes in use before and after the step";
      absl::StatusOr<std::vector<Tensor>> next = s.Run(feeds, fetches, base);
      EXPECT_TRUE(next.ok()) << next.status();
      const std::string why =
          next.ok() ? CompareOutputs(*next, *want, /*rounding=*/false) : "failed";
      EXPECT_EQ(why, "") << "the next step";
      if (faults.fired() && ok && after == before && why.empty()) {
        ++counts.survived;
      }
    }
  }
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_EXECUTOR_FAULT_SWEEP_H_
