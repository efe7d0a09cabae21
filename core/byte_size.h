// Byte sizes as people write and read them: "4GiB", "512M", "1.5 GB" in,
// "1.5 GiB" out. Used by the config, the device limits and the placer.
//
//   ASSIGN_OR_RETURN(int64_t bytes, ParseByteSize("4GiB"));   // 4294967296
//   FormatBytes(bytes);                                       // "4.0 GiB"
//
// Pure functions; thread-safe.
#ifndef SLUICE_CORE_BYTE_SIZE_H_
#define SLUICE_CORE_BYTE_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// "4096", "4K", "4KiB" (x1024), "4KB" (x1000), likewise M/MiB/MB, G/GiB/GB,
// T/TiB/TB; "B" for bytes; a space before the unit and a decimal number
// ("1.5GiB") are allowed; the result is rounded down to whole bytes. Errors:
// negative, no number, unknown unit, or more than 2^63-1 bytes.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

// "1.5 GiB", "512.0 MiB", "100 B": binary units, one decimal.
std::string FormatBytes(int64_t bytes);

// Splits "1.5 GiB" into "1.5" and "GiB" (the unit stripped of spaces).
// False when the text does not start with a digit or '.'.
bool SplitNumberAndUnit(absl::string_view text, absl::string_view* number,
                        absl::string_view* unit);

}  // namespace sluice

#endif  // SLUICE_CORE_BYTE_SIZE_H_
