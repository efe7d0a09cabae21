#include "kernels/cast_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

absl::StatusOr<E8M0Rounding> ParseRoundMode(const std::string& mode) {
  if (mode == "up") return E8M0Rounding::kUp;
  if (mode == "down") return E8M0Rounding::kDown;
  if (mode == "nearest") return E8M0Rounding::kNearest;
  return absl::InvalidArgumentError(absl::StrCat(
      "Cast round_mode '", mode, "' is not one of up, down, nearest"));
}

}  // namespace

absl::StatusOr<CastAttrs> ParseCastAttrs(const Node& node) {
  CastAttrs a;
  ASSIGN_OR_RETURN(a.src, node.attrs().GetType("SrcT"));
  ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
  if (node.attrs().Has("saturate")) {
    ASSIGN_OR_RETURN(a.saturate, node.attrs().GetBool("saturate"));
  }
  if (node.attrs().Has("round_mode")) {
    ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("round_mode"));
    ASSIGN_OR_RETURN(a.round, ParseRoundMode(mode));
  }
  return a;
}

}  // namespace sluice
