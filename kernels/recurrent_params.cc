#include "kernels/recurrent_params.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// The activation with ONNX's default alpha and beta (the RNN activation
// table).
absl::StatusOr<Activation> MakeActivation(const std::string& name) {
  Activation a;
  if (name == "Sigmoid") a.kind = ActivationKind::kSigmoid;
  else if (name == "Tanh") a.kind = ActivationKind::kTanh;
  else if (name == "Relu") a.kind = ActivationKind::kRelu;
  else if (name == "Softsign") a.kind = ActivationKind::kSoftsign;
  else if (name == "Softplus") a.kind = ActivationKind::kSoftplus;
  else if (name == "LeakyRelu") { a.kind = ActivationKind::kLeakyRelu; a.alpha = 0.01f; }
  else if (name == "ThresholdedRelu") { a.kind = ActivationKind::kThresholdedRelu; a.alpha = 1.0f; }
  else if (name == "Elu") { a.kind = ActivationKind::kElu; a.alpha = 1.0f; }
  else if (name == "HardSigmoid") { a.kind = ActivationKind::kHardSigmoid; a.alpha = 0.2f; a.beta = 0.5f; }
  else if (name == "ScaledTanh") { a.kind = ActivationKind::kScaledTanh; a.alpha = 1.0f; }
  else if (name == "Affine") { a.kind = ActivationKind::kAffine; a.alpha = 1.0f; }
  else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown recurrent activation '", name, "'"));
  }
  return a;
}

}  // namespace

absl::StatusOr<RecurrentAttrs> ParseRecurrentAttrs(const Node& node) {
  RecurrentAttrs a;
  ASSIGN_OR_RETURN(std::string cell, node.attrs().GetString("cell"));
  int slots;
  if (cell == "rnn") { a.cell = RecurrentCell::kRnn; a.gates = 1; slots = 1; }
  else if (cell == "gru") { a.cell = RecurrentCell::kGru; a.gates = 3; slots = 2; }
  else if (cell == "lstm") { a.cell = RecurrentCell::kLstm; a.gates = 4; slots = 3; }
  else {
    return absl::InvalidArgumentError(
        absl::StrCat("cell must be rnn, gru or lstm, got ", cell));
  }
  ASSIGN_OR_RETURN(std::string direction, node.attrs().GetString("direction"));
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown direction '", direction, "'"));
  }
  a.dirs = direction == "bidirectional" ? 2 : 1;
  a.reverse = direction == "reverse";
  ASSIGN_OR_RETURN(std::string names, node.attrs().GetString("activations"));
  ASSIGN_OR_RETURN(std::vector<float> alpha,
                   node.attrs().GetFloatList("activation_alpha"));
  ASSIGN_OR_RETURN(std::vector<float> beta,
                   node.attrs().GetFloatList("activation_beta"));
  std::vector<std::string> list = absl::StrSplit(names, ',', absl::SkipEmpty());
  if (list.empty()) {
    const char* defaults[] = {"Sigmoid", "Tanh", "Tanh"};
    for (int d = 0; d < a.dirs; ++d) {
      for (int i = 0; i < slots; ++i) {
        list.push_back(a.cell == RecurrentCell::kRnn ? "Tanh" : defaults[i]);
      }
    }
  }
  if (static_cast<int64_t>(list.size()) != slots * a.dirs) {
    return absl::InvalidArgumentError(absl::StrCat(
        cell, " with ", a.dirs, " direction(s) needs ", slots * a.dirs,
        " activations, got ", list.size()));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    ASSIGN_OR_RETURN(Activation act, MakeActivation(list[i]));
    if (i < alpha.size()) act.alpha = alpha[i];
    if (i < beta.size()) act.beta = beta[i];
    a.acts.push_back(act);
  }
  ASSIGN_OR_RETURN(a.clip, node.attrs().GetFloat("clip"));
  ASSIGN_OR_RETURN(a.linear_before_reset,
                   node.attrs().GetBool("linear_before_reset"));
  ASSIGN_OR_RETURN(a.input_forget, node.attrs().GetBool("input_forget"));
  return a;
}

absl::StatusOr<RecurrentSizes> CheckRecurrentShapes(
    const RecurrentAttrs& attrs, const std::vector<Shape>& shapes,
    const int32_t* lens) {
  if (shapes.size() != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("Recurrent takes 8 inputs, got ", shapes.size()));
  }
  const Shape& x = shapes[0];
  const Shape& r = shapes[2];
  if (x.rank() != 3 || r.rank() != 3) {
    return absl::InvalidArgumentError("x and r must be 3-D");
  }
  RecurrentSizes z{x.dim(0), x.dim(1), x.dim(2), r.dim(2), attrs.dirs,
                   attrs.gates};
  auto want = [&](int i, Shape s, const char* what) -> absl::Status {
    if (shapes[i] != s) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " is ", shapes[i].DebugString(), ", expected ",
          s.DebugString()));
    }
    return absl::OkStatus();
  };
  const int64_t gh = z.g * z.h;
  RETURN_IF_ERROR(want(1, Shape({z.d, gh, z.in}), "w"));
  RETURN_IF_ERROR(want(2, Shape({z.d, gh, z.h}), "r"));
  RETURN_IF_ERROR(want(3, Shape({z.d, 2 * gh}), "b"));
  RETURN_IF_ERROR(want(4, Shape({z.b}), "sequence_lens"));
  RETURN_IF_ERROR(want(5, Shape({z.d, z.b, z.h}), "initial_h"));
  RETURN_IF_ERROR(want(6, Shape({z.d, z.b, z.h}), "initial_c"));
  RETURN_IF_ERROR(want(7, Shape({z.d, 3 * z.h}), "p"));
  for (int64_t i = 0; i < z.b; ++i) {
    if (lens[i] < 0 || lens[i] > z.s) {
      return absl::OutOfRangeError(absl::StrCat(
          "sequence_lens[", i, "] = ", lens[i], " is outside [0, ", z.s, "]"));
    }
  }
  return z;
}

}  // namespace sluice
