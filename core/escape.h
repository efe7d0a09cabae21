// Printing text that came from a file: EscapeForTerminal makes it safe for
// a terminal, FormatCount writes the counts of truncated lists.
//
//   LOG(ERROR) << "node '" << EscapeForTerminal(name) << "'";
//   // a name "a\nb\x1b[31m" prints as a\nb\x1b[31m, on one line
//
// Control characters (newline, ESC, DEL, the C1 controls such as CSI) become
// \n, \t, \r or \xHH; bytes that are not UTF-8 become \xHH; valid UTF-8
// is kept; a backslash is kept as it is. Text longer than `max_chars` bytes
// is cut, with "... (N more bytes)". Used for names in error messages
// (graph/) and everything the CLI prints (tools/). Stateless; thread-safe.
#ifndef SLUICE_CORE_ESCAPE_H_
#define SLUICE_CORE_ESCAPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace sluice {

std::string EscapeForTerminal(absl::string_view text, size_t max_chars = 2000);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF), as protobuf requires of string fields.
bool IsValidUtf8(absl::string_view text);

// "1,234,567", for "... and 99,990 more".
std::string FormatCount(int64_t n);

}  // namespace sluice

#endif  // SLUICE_CORE_ESCAPE_H_
