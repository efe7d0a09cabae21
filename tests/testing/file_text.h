// What has been written to a stdio stream (a std::tmpfile a test hands to
// the code under test), read back from its start.
//
//   std::FILE* f = std::tmpfile();
//   ProgressLine line(f, /*enabled=*/true);  ...
//   EXPECT_EQ(WrittenTo(f), "");
#ifndef SLUICE_TESTS_TESTING_FILE_TEXT_H_
#define SLUICE_TESTS_TESTING_FILE_TEXT_H_

#include <cstdio>
#include <string>

namespace sluice::testing {

inline std::string WrittenTo(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) {
    text.push_back(static_cast<char>(c));
  }
  return text;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_FILE_TEXT_H_
