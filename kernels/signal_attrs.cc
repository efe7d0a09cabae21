#include "kernels/signal_attrs.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/host_params.h"

namespace sluice {

absl::StatusOr<DftAttrs> ParseDftAttrs(const Node& node) {
  DftAttrs a;
  ASSIGN_OR_RETURN(a.inverse, node.attrs().GetBool("inverse"));
  ASSIGN_OR_RETURN(a.onesided, node.attrs().GetBool("onesided"));
  return a;
}

absl::StatusOr<StftAttrs> ParseStftAttrs(const Node& node) {
  StftAttrs a;
  ASSIGN_OR_RETURN(a.onesided, node.attrs().GetBool("onesided"));
  return a;
}

absl::StatusOr<WindowAttrs> ParseWindowAttrs(const Node& node) {
  WindowAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  ASSIGN_OR_RETURN(std::string window, node.attrs().GetString("window"));
  ASSIGN_OR_RETURN(a.periodic, node.attrs().GetBool("periodic"));
  if (window == "hann") {
    a.function = WindowFunction::kHann;
  } else if (window == "hamming") {
    a.function = WindowFunction::kHamming;
  } else if (window == "blackman") {
    a.function = WindowFunction::kBlackman;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "window must be hann, hamming or blackman, got ", window));
  }
  return a;
}

absl::StatusOr<int64_t> WindowSize(const Tensor& size) {
  ASSIGN_OR_RETURN(int64_t n, HostScalarInt(size, "the window size"));
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the window size must be >= 0, got ", n));
  }
  return n;
}

absl::StatusOr<MelWeightMatrixAttrs> ParseMelWeightMatrixAttrs(
    const Node& node) {
  MelWeightMatrixAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  return a;
}

}  // namespace sluice
