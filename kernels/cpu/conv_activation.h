// ConvActivation: the activation a CPU FusedConv2D applies as its output is
// written (its "activation" attribute, graph/ops/nn_ops.cc), parsed once
// when the kernel is made, and the scalar form sluice's loops apply (the
// reference oneDNN's post-ops are checked against).
//
//   ASSIGN_OR_RETURN(ConvActivation act, ParseConvActivation("hardswish"));
//   float y = ApplyConvActivation(act, v);  // v * clamp(v / 6 + 0.5, 0, 1)
//
// Pure functions; thread-safe.
#ifndef SLUICE_KERNELS_CPU_CONV_ACTIVATION_H_
#define SLUICE_KERNELS_CPU_CONV_ACTIVATION_H_

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/status/statusor.h"

namespace sluice::cpu {

enum class ConvActivation {
  kNone,
  kRelu,         // max(v, 0)
  kRelu6,        // min(max(v, 0), 6)
  kHardSwish,    // v * clamp(v / 6 + 0.5, 0, 1) (ONNX HardSwish)
  kHardSigmoid,  // clamp(v / 6 + 0.5, 0, 1) (HardSigmoid as PyTorch exports it)
  kSigmoid,      // 1 / (1 + e^-v)
  kSilu,         // v / (1 + e^-v) (SiLU, Swish)
};

// The activation named `name` ("none", "relu", "relu6", "hardswish",
// "hardsigmoid", "sigmoid", "silu"); INVALID_ARGUMENT naming it otherwise.
absl::StatusOr<ConvActivation> ParseConvActivation(std::string_view name);

inline float ApplyConvActivation(ConvActivation act, float v) {
  switch (act) {
    case ConvActivation::kNone:
      return v;
    case ConvActivation::kRelu:
      return std::max(v, 0.0f);
    case ConvActivation::kRelu6:
      return std::min(std::max(v, 0.0f), 6.0f);
    case ConvActivation::kHardSwish:
      return v * std::min(std::max(v / 6.0f + 0.5f, 0.0f), 1.0f);
    case ConvActivation::kHardSigmoid:
      return std::min(std::max(v / 6.0f + 0.5f, 0.0f), 1.0f);
    case ConvActivation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-v));
    case ConvActivation::kSilu:
      return v / (1.0f + std::exp(-v));
  }
  return v;
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_CONV_ACTIVATION_H_
