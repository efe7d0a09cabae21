// ConvActivation's names (kernels/cpu/conv_activation.h).
#include "kernels/cpu/conv_activation.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice::cpu {

absl::StatusOr<ConvActivation> ParseConvActivation(std::string_view name) {
  static constexpr std::pair<std::string_view, ConvActivation> kNames[] = {
      {"none", ConvActivation::kNone},
      {"relu", ConvActivation::kRelu},
      {"relu6", ConvActivation::kRelu6},
      {"hardswish", ConvActivation::kHardSwish},
      {"hardsigmoid", ConvActivation::kHardSigmoid},
      {"sigmoid", ConvActivation::kSigmoid},
      {"silu", ConvActivation::kSilu},
  };
  for (const auto& [n, act] : kNames) {
    if (n == name) return act;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("FusedConv2D: unknown activation \"", std::string(name),
                   "\"; want none, relu, relu6, hardswish, hardsigmoid, "
                   "sigmoid or silu"));
}

}  // namespace sluice::cpu
