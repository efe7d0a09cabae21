#include "kernels/bitwise_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<BitShiftAttrs> ParseBitShiftAttrs(const Node& node) {
  ASSIGN_OR_RETURN(std::string direction, node.attrs().GetString("direction"));
  if (direction != "LEFT" && direction != "RIGHT") {
    return absl::InvalidArgumentError(absl::StrCat(
        "direction must be \"LEFT\" or \"RIGHT\", got \"", direction, "\""));
  }
  return BitShiftAttrs{direction == "LEFT"};
}

absl::Status CheckBitCastWidths(DataType src, DataType dst) {
  if (DataTypeSize(src) != DataTypeSize(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("BitCast from ", DataTypeName(src), " to ",
                     DataTypeName(dst), ": the widths differ"));
  }
  return absl::OkStatus();
}

absl::StatusOr<BitCastAttrs> ParseBitCastAttrs(const Node& node) {
  BitCastAttrs a;
  ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
  return a;
}

absl::StatusOr<BitCastPlan> PlanBitCast(const BitCastAttrs& a, const Tensor& x) {
  RETURN_IF_ERROR(CheckBitCastWidths(x.dtype(), a.dst));
  BitCastPlan p;
  p.out_shape = x.shape();
  p.dst = a.dst;
  p.bytes = static_cast<int64_t>(x.bytes());
  return p;
}

}  // namespace sluice
