// FaultInjector (device/fault_injector.h): counts every call, fails only the
// chosen one of the selected kinds, once, with the code of its kind; the
// thread's injector is set by scopes that nest, and InjectedFault without
// one is OK.
#include "device/fault_injector.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::fault_injector_test {
namespace {

using ::testing::HasSubstr;

TEST(FaultInjectorTest, FailsOnlyTheNthCallOfTheSelectedKindsOnce) {
  FaultInjector faults(FaultBit(FaultKind::kAllocation), /*fail_at=*/2);
  EXPECT_TRUE(faults.Check(FaultKind::kCopy, "a copy").ok());
  EXPECT_TRUE(faults.Check(FaultKind::kAllocation, "first").ok());
  EXPECT_FALSE(faults.fired());
  EXPECT_TRUE(faults.Check(FaultKind::kCopy, "another copy").ok());
  absl::Status s = faults.Check(FaultKind::kAllocation, "second");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("injected fault: allocation 2 failed (second)"));
  EXPECT_TRUE(faults.fired());
  EXPECT_EQ(faults.fired_kind(), FaultKind::kAllocation);
  EXPECT_EQ(faults.fired_what(), "second");
  EXPECT_TRUE(faults.Check(FaultKind::kAllocation, "third").ok());
  EXPECT_EQ(faults.calls(FaultKind::kAllocation), 3);
  EXPECT_EQ(faults.calls(FaultKind::kCopy), 2);
  EXPECT_EQ(faults.selected_calls(), 3);
}

TEST(FaultInjectorTest, EachKindFailsWithItsCode) {
  const struct {
    FaultKind kind;
    absl::StatusCode code;
  } cases[] = {{FaultKind::kAllocation, absl::StatusCode::kResourceExhausted},
               {FaultKind::kCopy, absl::StatusCode::kInternal},
               {FaultKind::kKernel, absl::StatusCode::kInternal},
               {FaultKind::kLibrary, absl::StatusCode::kInternal},
               {FaultKind::kSchedule, absl::StatusCode::kResourceExhausted}};
  for (const auto& c : cases) {
    FaultInjector faults(kAllFaultKinds, 1);
    absl::Status s = faults.Check(c.kind, "x");
    EXPECT_EQ(s.code(), c.code) << FaultKindName(c.kind);
    EXPECT_THAT(s.message(), HasSubstr(FaultKindName(c.kind)));
  }
}

TEST(FaultInjectorTest, ZeroOnlyCounts) {
  FaultInjector faults(kAllFaultKinds, 0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(faults.Check(FaultKind::kLibrary, "x").ok());
  }
  EXPECT_FALSE(faults.fired());
  EXPECT_EQ(faults.calls(FaultKind::kLibrary), 100);
}

TEST(FaultInjectorTest, ExactlyOneOfManyConcurrentCallsFails) {
  FaultInjector faults(kAllFaultKinds, 500);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i) {
        if (!faults.Check(FaultKind::kAllocation, "x").ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 1);
  EXPECT_EQ(faults.selected_calls(), 1000);
}

TEST(FaultInjectorTest, ScopesSetTheThreadsInjectorAndNest) {
  EXPECT_EQ(ThreadFaultInjector(), nullptr);
  EXPECT_TRUE(InjectedFault(FaultKind::kAllocation, "no injector").ok());
  FaultInjector outer(kAllFaultKinds, 1), inner(kAllFaultKinds, 0);
  {
    FaultScope a(&outer);
    EXPECT_EQ(ThreadFaultInjector(), &outer);
    {
      FaultScope b(&inner);
      EXPECT_TRUE(InjectedFault(FaultKind::kCopy, "inner counts").ok());
      FaultScope none(nullptr);
      EXPECT_TRUE(InjectedFault(FaultKind::kCopy, "none").ok());
    }
    EXPECT_EQ(ThreadFaultInjector(), &outer);
    // Another thread has no injector.
    std::thread([] { EXPECT_EQ(ThreadFaultInjector(), nullptr); }).join();
    EXPECT_FALSE(InjectedFault(FaultKind::kCopy, "outer fails").ok());
  }
  EXPECT_EQ(ThreadFaultInjector(), nullptr);
  EXPECT_EQ(inner.calls(FaultKind::kCopy), 1);
  EXPECT_EQ(outer.calls(FaultKind::kCopy), 1);
}

}  // namespace
}  // namespace sluice::fault_injector_test
