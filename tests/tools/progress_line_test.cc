#include "tools/progress_line.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/file_text.h"

namespace sluice::progress_line_test {
namespace {

using ::testing::HasSubstr;

using ::sluice::testing::WrittenTo;

TEST(ProgressLineTest, StageTextNamesThePassAndItsNumber) {
  EXPECT_EQ(ProgressLine::StageText({"optimizing", "constant_folding", 2, 21}),
            "sluice: optimizing: pass 3 of 21 (constant_folding)");
  EXPECT_EQ(ProgressLine::StageText({"placing", "", 0, 0}), "sluice: placing");
}

TEST(ProgressLineTest, RewritesOneLineAndErasesIt) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(f, /*enabled=*/true);
    line.CreationCallback()({"optimizing", "cse", 0, 4});
    line.Stage({"placing", "", 0, 0});
    line.Fraction(0.5);
  }
  const std::string text = WrittenTo(f);
  std::fclose(f);
  EXPECT_THAT(text, HasSubstr("\rsluice: optimizing: pass 1 of 4 (cse), "));
  EXPECT_THAT(text, HasSubstr("\rsluice: placing, "));
  EXPECT_THAT(text, HasSubstr("\r[###############               ]  50%"));
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line, no newline";
  // Erased at the end: spaces over the last line, the cursor back at 0.
  EXPECT_EQ(text.back(), '\r');
  EXPECT_THAT(text, HasSubstr(std::string(20, ' ') + "\r"));
}

TEST(ProgressLineTest, DisabledWritesNothingAndGivesNoCallback) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(f, /*enabled=*/false);
    EXPECT_FALSE(line.enabled());
    EXPECT_EQ(line.CreationCallback(), nullptr);
    line.Stage({"placing", "", 0, 0});
    line.Fraction(1);
  }
  EXPECT_EQ(WrittenTo(f), "");
  std::fclose(f);
  // Not a terminal (the tests' stderr is a pipe or a file under CTest).
  if (!isatty(STDERR_FILENO)) {
    EXPECT_FALSE(ProgressLine::ForStderr(true).enabled());
  }
  EXPECT_FALSE(ProgressLine::ForStderr(false).enabled());
}

}  // namespace
}  // namespace sluice::progress_line_test
