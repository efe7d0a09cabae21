// EscapeForTerminal and FormatCount (see escape.h).
#include "core/escape.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

// The length of the UTF-8 sequence at s[i], or 0 if it is not valid UTF-8
// (or, unless `allow_c1`, is one of the C1 controls).
size_t Utf8Length(absl::string_view s, size_t i, bool allow_c1 = false) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) { n = 2; cp = c & 0x1f; }
  else if ((c & 0xf0) == 0xe0) { n = 3; cp = c & 0x0f; }
  else if ((c & 0xf8) == 0xf0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  // Overlong forms, surrogates, beyond U+10FFFF, and the C1 controls
  // (U+0080..U+009F: CSI and friends) are escaped byte by byte.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
      (!allow_c1 && cp >= 0x80 && cp <= 0x9f)) {
    return 0;
  }
  return n;
}

}  // namespace

bool IsValidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8Length(text, i, /*allow_c1=*/true);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string EscapeForTerminal(absl::string_view text, size_t max_chars) {
  std::string out;
  size_t i = 0;
  for (; i < text.size() && i < max_chars;) {
    const char c = text[i];
    const size_t n = Utf8Length(text, i);
    if (n > 1) {
      out.append(text.data() + i, n);
      i += n;
      continue;
    }
    ++i;
    const auto u = static_cast<unsigned char>(c);
    if (n == 1 && u >= 0x20 && u != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += absl::StrFormat("\\x%02x", u);
    }
  }
  if (i < text.size()) {
    absl::StrAppend(&out, "... (", FormatCount(static_cast<int64_t>(text.size() - i)),
                    " more bytes)");
  }
  return out;
}

std::string FormatCount(int64_t n) {
  const bool negative = n < 0;
  std::string digits = absl::StrCat(n);
  if (negative) digits.erase(0, 1);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

}  // namespace sluice
