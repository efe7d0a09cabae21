// Tests of the CLI's input checks and escaping (tools/cli_util.h).
#include "tools/cli_util.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/tools/tools_test_util.h"

namespace sluice::cli_util_test {
namespace {

TEST(CliUtilTest, EscapesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(EscapeForTerminal("a\nb\x1b[31m\t\r\x7f"), "a\\nb\\x1b[31m\\t\\r\\x7f");
  EXPECT_EQ(EscapeForTerminal("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(EscapeForTerminal("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"), "\\xc2\\x9b");  // C1 CSI
  EXPECT_EQ(EscapeForTerminal(std::string(10, 'x'), 4), "xxxx... (6 more bytes)");
}

TEST(CliUtilTest, FormatsCountsWithThousandsSeparators) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(99990), "99,990");
  EXPECT_EQ(FormatCount(-1234567), "-1,234,567");
}

TEST(CliUtilTest, RegularFileCheckNamesWhatThePathIs) {
  ScratchDir dir;
  const std::string file = dir.Write("f.pb", "x");
  EXPECT_TRUE(CheckRegularFile(file).ok());
  const absl::Status missing = CheckRegularFile(dir.Path("nope"));
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos);
  const absl::Status directory = CheckRegularFile(dir.Path(""));
  EXPECT_NE(directory.message().find("exists but is not a regular file (a directory)"),
            std::string::npos);
  ASSERT_EQ(mkfifo(dir.Path("fifo").c_str(), 0600), 0);
  const absl::Status fifo = CheckRegularFile(dir.Path("fifo"));
  EXPECT_NE(fifo.message().find("(a FIFO)"), std::string::npos);
  EXPECT_TRUE(CheckOutputFile(dir.Path("new.json"), "--trace").ok());
  EXPECT_NE(CheckOutputFile(dir.Path("fifo"), "--trace").message().find("--trace: "),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::cli_util_test
