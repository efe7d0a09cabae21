// ElementwiseProgram: what a FusedElementwise node computes (docs/ops.md,
// "Fused elementwise"), parsed from its attributes and checked. A program
// is a sequence of elementwise instructions over the node's inputs: each
// applies one unary or binary op to inputs or to the results of earlier
// instructions, with NumPy broadcasting to the output shape (the broadcast
// of all inputs); the last instruction's result is the node's output.
// Attributes: `ops` (one op name per instruction) and `operands` (two ints
// per instruction; operand k < N is input k, k >= N the result of
// instruction k - N; a unary op's second operand is -1).
//
//   ASSIGN_OR_RETURN(ElementwiseProgram p,
//                    ParseElementwiseProgram(node.attrs(), node.num_inputs()));
//   for (const ElementwiseInstruction& ins : p.instructions) ...
//
// The op's shape function, the optimizer's elementwise_fusion, the CPU
// kernel and the CUDA kernel's code generator all read programs through
// this, so an invalid program is an error when the graph is built.
// A program is immutable once parsed; thread-safe to read.
#ifndef SLUICE_GRAPH_ELEMENTWISE_PROGRAM_H_
#define SLUICE_GRAPH_ELEMENTWISE_PROGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/attr_map.h"

namespace sluice {

// The ops a program may hold. Each has the meaning of the graph op of the
// same name on float values (docs/ops.md).
enum class ElementwiseOpcode {
  // Unary.
  kNeg, kAbs, kRelu, kExp, kLog, kSqrt, kRsqrt, kTanh, kSigmoid, kErf,
  // Binary.
  kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum,
};

// The opcode of a graph op's name ("Add"), or nullopt when the op is not
// one a program can hold.
std::optional<ElementwiseOpcode> ElementwiseOpcodeOf(std::string_view op);
// The graph op's name of an opcode.
std::string_view ElementwiseOpName(ElementwiseOpcode code);
bool IsBinary(ElementwiseOpcode code);
// Exp, Log and Pow: the ops reduced_precision keeps in float32 (they lose
// range in 16 bits).
bool NeedsFloat32Range(ElementwiseOpcode code);

struct ElementwiseInstruction {
  ElementwiseOpcode op = ElementwiseOpcode::kNeg;
  // Operands: k < num_inputs is input k, otherwise the result of
  // instruction k - num_inputs; b is -1 for unary ops.
  int a = 0;
  int b = -1;
};

struct ElementwiseProgram {
  int num_inputs = 0;
  std::vector<ElementwiseInstruction> instructions;

  // One line: "t0 = Add(in0, in1); t1 = Relu(t0)" (errors, logs, the
  // CUDA kernel cache's key).
  std::string DebugString() const;
};

// Most instructions and inputs a program may have: bounds the CUDA
// kernel's parameter block and what a file can make a kernel allocate.
inline constexpr int kMaxElementwiseInstructions = 64;
inline constexpr int kMaxElementwiseInputs = 16;

// Checks and builds a program. INVALID_ARGUMENT naming the instruction: no
// instructions or too many, more than kMaxElementwiseInputs inputs,
// `operands` not two per instruction, an unknown op, an operand that is
// neither an input nor an earlier result, a unary op with a second operand
// or a binary one without, or an input no instruction reads.
absl::StatusOr<ElementwiseProgram> MakeElementwiseProgram(
    int num_inputs, const std::vector<std::string>& ops,
    const std::vector<int64_t>& operands);

// MakeElementwiseProgram on a FusedElementwise node's `ops` and
// `operands` attributes.
absl::StatusOr<ElementwiseProgram> ParseElementwiseProgram(
    const AttrMap& attrs, int num_inputs);

}  // namespace sluice

#endif  // SLUICE_GRAPH_ELEMENTWISE_PROGRAM_H_
