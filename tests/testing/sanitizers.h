// Which sanitizer the test binary was built with, for the few tests whose
// measure the sanitizer itself changes: ThreadSanitizer's shadow memory is
// part of the process's RSS (several bytes of shadow per byte the program
// writes), so no bound on RSS growth holds in scripts/tsan.sh's build.
//
//   if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kTsanRssReason;
//
// Compile-time constants; thread-safe.
#ifndef SLUICE_TESTS_TESTING_SANITIZERS_H_
#define SLUICE_TESTS_TESTING_SANITIZERS_H_

namespace sluice::testing {

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLUICE_TESTS_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)  // GCC
#define SLUICE_TESTS_UNDER_TSAN 1
#endif

#ifdef SLUICE_TESTS_UNDER_TSAN
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline constexpr char kTsanRssReason[] =
    "ThreadSanitizer's shadow memory counts in the RSS: no RSS bound holds "
    "in this build";

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_SANITIZERS_H_
