#include "tools/first_step_progress.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/file_text.h"

namespace sluice::first_step_progress_test {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

using ::sluice::testing::WrittenTo;

TEST(FirstStepProgressTest, TextSaysWhatIsBeingTimed) {
  const AlgorithmCache::Activity start{5, ""};
  EXPECT_EQ(FirstStepProgress::Text(start, {5, ""}), "sluice: first step");
  EXPECT_EQ(FirstStepProgress::Text(start, {5, "cuDNN"}),
            "sluice: first step, timing cuDNN algorithms");
  EXPECT_EQ(FirstStepProgress::Text(start, {17, "cuBLASLt"}),
            "sluice: first step, timing cuBLASLt algorithms (12 problems timed)");
  EXPECT_EQ(FirstStepProgress::Text(start, {6, ""}),
            "sluice: first step (1 problem's algorithms timed)");
}

// A long step: the line is written after the quiet time, rewritten, and
// erased when the step ends.
TEST(FirstStepProgressTest, ALongStepShowsTheLineAndErasesIt) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(f, /*enabled=*/true);
    {
      FirstStepProgress progress(&line, milliseconds(0), milliseconds(5));
      std::this_thread::sleep_for(milliseconds(60));
    }
    const std::string text = WrittenTo(f);
    EXPECT_THAT(text, HasSubstr("\rsluice: first step, 0."));
    EXPECT_EQ(text.back(), '\r');  // erased
    EXPECT_EQ(text.substr(text.rfind("\r", text.size() - 2)).find_first_not_of("\r "),
              std::string::npos);
  }
  std::fclose(f);
}

// A quick step (shorter than the quiet time) writes nothing, and ending it
// does not wait for the quiet time.
TEST(FirstStepProgressTest, AQuickStepLeavesNoTrace) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  {
    ProgressLine line(f, /*enabled=*/true);
    FirstStepProgress progress(&line, std::chrono::seconds(30), milliseconds(5));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(WrittenTo(f), "");
  std::fclose(f);
}

TEST(FirstStepProgressTest, ADisabledLineWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(f, /*enabled=*/false);
    FirstStepProgress progress(&line, milliseconds(0), milliseconds(1));
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(WrittenTo(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace sluice::first_step_progress_test
