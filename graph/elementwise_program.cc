// ElementwiseProgram (graph/elementwise_program.h).
#include "graph/elementwise_program.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

constexpr std::array<std::pair<ElementwiseOpcode, std::string_view>, 17>
    kOps = {{
        {ElementwiseOpcode::kNeg, "Neg"},
        {ElementwiseOpcode::kAbs, "Abs"},
        {ElementwiseOpcode::kRelu, "Relu"},
        {ElementwiseOpcode::kExp, "Exp"},
        {ElementwiseOpcode::kLog, "Log"},
        {ElementwiseOpcode::kSqrt, "Sqrt"},
        {ElementwiseOpcode::kRsqrt, "Rsqrt"},
        {ElementwiseOpcode::kTanh, "Tanh"},
        {ElementwiseOpcode::kSigmoid, "Sigmoid"},
        {ElementwiseOpcode::kErf, "Erf"},
        {ElementwiseOpcode::kAdd, "Add"},
        {ElementwiseOpcode::kSub, "Sub"},
        {ElementwiseOpcode::kMul, "Mul"},
        {ElementwiseOpcode::kDiv, "Div"},
        {ElementwiseOpcode::kPow, "Pow"},
        {ElementwiseOpcode::kMaximum, "Maximum"},
        {ElementwiseOpcode::kMinimum, "Minimum"},
    }};

std::string OperandName(int k, int num_inputs) {
  return k < num_inputs ? absl::StrCat("in", k)
                        : absl::StrCat("t", k - num_inputs);
}

}  // namespace

std::optional<ElementwiseOpcode> ElementwiseOpcodeOf(std::string_view op) {
  for (const auto& [code, name] : kOps) {
    if (name == op) return code;
  }
  return std::nullopt;
}

std::string_view ElementwiseOpName(ElementwiseOpcode code) {
  for (const auto& [c, name] : kOps) {
    if (c == code) return name;
  }
  return "?";
}

bool IsBinary(ElementwiseOpcode code) {
  return static_cast<int>(code) >= static_cast<int>(ElementwiseOpcode::kAdd);
}

bool NeedsFloat32Range(ElementwiseOpcode code) {
  return code == ElementwiseOpcode::kExp || code == ElementwiseOpcode::kLog ||
         code == ElementwiseOpcode::kPow;
}

std::string ElementwiseProgram::DebugString() const {
  std::string s;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const ElementwiseInstruction& ins = instructions[i];
    absl::StrAppend(&s, i == 0 ? "" : "; ", "t", i, " = ",
                    std::string(ElementwiseOpName(ins.op)), "(",
                    OperandName(ins.a, num_inputs));
    if (ins.b >= 0) absl::StrAppend(&s, ", ", OperandName(ins.b, num_inputs));
    absl::StrAppend(&s, ")");
  }
  return s;
}

absl::StatusOr<ElementwiseProgram> MakeElementwiseProgram(
    int num_inputs, const std::vector<std::string>& ops,
    const std::vector<int64_t>& operands) {
  if (ops.empty()) {
    return absl::InvalidArgumentError("the program has no instructions (ops)");
  }
  if (ops.size() > static_cast<size_t>(kMaxElementwiseInstructions)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the program has ", ops.size(), " instructions; at most ",
                     kMaxElementwiseInstructions));
  }
  if (num_inputs < 1 || num_inputs > kMaxElementwiseInputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("the program has ", num_inputs,
                     " inputs; it takes 1 to ", kMaxElementwiseInputs));
  }
  if (operands.size() != 2 * ops.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "operands has ", operands.size(), " entries; want two per op (",
        2 * ops.size(), ")"));
  }
  ElementwiseProgram p;
  p.num_inputs = num_inputs;
  std::vector<bool> read(num_inputs, false);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::optional<ElementwiseOpcode> code = ElementwiseOpcodeOf(ops[i]);
    if (!code) {
      return absl::InvalidArgumentError(absl::StrCat(
          "instruction ", i, ": '", ops[i],
          "' is not an op a fused elementwise program can hold"));
    }
    const int64_t limit = num_inputs + static_cast<int64_t>(i);
    ElementwiseInstruction ins;
    ins.op = *code;
    const int64_t a = operands[2 * i], b = operands[2 * i + 1];
    for (int j = 0; j < 2; ++j) {
      const int64_t k = j == 0 ? a : b;
      if (j == 1 && !IsBinary(*code)) {
        if (k != -1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "instruction ", i, ": unary ", ops[i],
              " has a second operand ", k, "; want -1"));
        }
        continue;
      }
      if (k < 0 || k >= limit) {
        return absl::InvalidArgumentError(absl::StrCat(
            "instruction ", i, " (", ops[i], "): operand ", k,
            " is neither an input (0..", num_inputs - 1,
            ") nor an earlier result (", num_inputs, "..", limit - 1, ")"));
      }
      if (k < num_inputs) read[k] = true;
    }
    ins.a = static_cast<int>(a);
    ins.b = static_cast<int>(b);
    p.instructions.push_back(ins);
  }
  for (int k = 0; k < num_inputs; ++k) {
    if (!read[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("no instruction reads input ", k));
    }
  }
  return p;
}

absl::StatusOr<ElementwiseProgram> ParseElementwiseProgram(
    const AttrMap& attrs, int num_inputs) {
  ASSIGN_OR_RETURN(std::vector<std::string> ops, attrs.GetStringList("ops"));
  ASSIGN_OR_RETURN(std::vector<int64_t> operands,
                   attrs.GetIntList("operands"));
  return MakeElementwiseProgram(num_inputs, ops, operands);
}

}  // namespace sluice
