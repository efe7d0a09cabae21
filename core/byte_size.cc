#include "core/byte_size.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {

bool SplitNumberAndUnit(absl::string_view text, absl::string_view* number,
                        absl::string_view* unit) {
  size_t i = 0;
  while (i < text.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(text[i])) ||
          text[i] == '.')) {
    ++i;
  }
  if (i == 0) return false;
  *number = text.substr(0, i);
  *unit = absl::StripAsciiWhitespace(text.substr(i));
  return true;
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad byte size '", text, "': ", why,
                     " (examples: 4096, 512M, 4GiB, 1.5 GB)"));
  };
  if (!stripped.empty() && stripped[0] == '-') return bad("negative");
  absl::string_view number, unit;
  if (!SplitNumberAndUnit(stripped, &number, &unit)) {
    return bad("no number");
  }
  static const auto* const kUnits = new std::map<std::string, double>{
      {"", 1.0},          {"b", 1.0},
      {"k", 0x1p10},      {"kib", 0x1p10},  {"kb", 1e3},
      {"m", 0x1p20},      {"mib", 0x1p20},  {"mb", 1e6},
      {"g", 0x1p30},      {"gib", 0x1p30},  {"gb", 1e9},
      {"t", 0x1p40},      {"tib", 0x1p40},  {"tb", 1e12},
  };
  auto it = kUnits->find(absl::AsciiStrToLower(unit));
  if (it == kUnits->end()) {
    return bad(absl::StrCat("unknown unit '", unit, "'"));
  }
  if (number.find('.') == absl::string_view::npos) {
    uint64_t whole = 0;
    if (!absl::SimpleAtoi(number, &whole)) return bad("number out of range");
    const long double bytes =
        static_cast<long double>(whole) * static_cast<long double>(it->second);
    if (bytes > static_cast<long double>(std::numeric_limits<int64_t>::max())) {
      return bad("more than 2^63-1 bytes");
    }
    // Exact for integers times powers of two or ten within range.
    if (it->second == 1.0) {
      if (whole > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return bad("more than 2^63-1 bytes");
      }
      return static_cast<int64_t>(whole);
    }
    return static_cast<int64_t>(bytes);
  }
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !std::isfinite(value)) {
    return bad("not a number");
  }
  const double bytes = std::floor(value * it->second);
  if (bytes >= 0x1p63) return bad("more than 2^63-1 bytes");
  return static_cast<int64_t>(bytes);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024 && bytes > -1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes);
  int unit = -1;
  while ((value >= 1024.0 || value <= -1024.0) && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace sluice
