// Device names: printing and parsing "/cpu:0", "/gpu:*", "/device:GPU:1".
#include "device/device.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace sluice {

std::string DeviceTypeName(DeviceType type) {
  return type == DeviceType::kGpu ? "gpu" : "cpu";
}

std::string DeviceName::ToString() const {
  return absl::StrCat("/", DeviceTypeName(type), ":",
                      index < 0 ? std::string("*") : absl::StrCat(index));
}

absl::StatusOr<DeviceName> ParseDeviceName(std::string_view std_name) {
  // Abseil here is built with its own string_view type.
  const absl::string_view name(std_name.data(), std_name.size());
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad device name '", name, "': ", why,
        " (expected \"/cpu:0\", \"/gpu:1\", \"/gpu:*\" or \"/device:GPU:1\")"));
  };
  std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  absl::string_view rest = lower;
  absl::ConsumePrefix(&rest, "/");
  absl::ConsumePrefix(&rest, "device:");
  std::vector<absl::string_view> parts = absl::StrSplit(rest, ':');
  if (parts.empty() || parts.size() > 2) return bad("too many ':'");
  DeviceName out;
  if (parts[0] == "cpu") {
    out.type = DeviceType::kCpu;
  } else if (parts[0] == "gpu" || parts[0] == "cuda") {
    out.type = DeviceType::kGpu;
  } else {
    return bad("unknown device type");
  }
  if (parts.size() == 1 || parts[1] == "*") return out;
  int index = -1;
  if (!absl::SimpleAtoi(parts[1], &index) || index < 0) {
    return bad("index must be a non-negative integer or '*'");
  }
  out.index = index;
  return out;
}

}  // namespace sluice
