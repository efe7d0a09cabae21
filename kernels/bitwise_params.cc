#include "kernels/bitwise_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<bool> ParseBitShiftLeft(const Node& node) {
  ASSIGN_OR_RETURN(std::string direction, node.attrs().GetString("direction"));
  if (direction != "LEFT" && direction != "RIGHT") {
    return absl::InvalidArgumentError(absl::StrCat(
        "direction must be \"LEFT\" or \"RIGHT\", got \"", direction, "\""));
  }
  return direction == "LEFT";
}

absl::Status CheckBitCastWidths(DataType src, DataType dst) {
  if (DataTypeSize(src) != DataTypeSize(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("BitCast from ", DataTypeName(src), " to ",
                     DataTypeName(dst), ": the widths differ"));
  }
  return absl::OkStatus();
}

}  // namespace sluice
