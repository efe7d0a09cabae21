// Evaluating sluice ops on constants at import time: the constant folder
// behind GraphEmitter. It covers what shape-computing subgraphs and weight
// preprocessing use: Identity, Cast, the elementwise unary and binary ops
// (with broadcasting), comparisons, Where, and the structural ops (Reshape,
// Squeeze, Unsqueeze, Expand, Transpose, Slice, Concat, Split, Gather).
// Everything else is UNIMPLEMENTED, and the node is then emitted as is.
//
//   if (CanEvaluateConst("Concat")) {
//     ASSIGN_OR_RETURN(std::vector<Tensor> out,
//                      EvaluateConst("Concat", attrs, inputs, dtypes, shapes));
//   }
//
// Stateless functions; thread-safe.
#ifndef SLUICE_ONNX_CONST_EVAL_H_
#define SLUICE_ONNX_CONST_EVAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/attr_map.h"

namespace sluice {

// Whether EvaluateConst knows `op` (it may still be UNIMPLEMENTED for some
// dtype).
bool CanEvaluateConst(const std::string& op);

// Computes op's outputs from host tensors. `attrs` is complete (defaults
// filled in, as GraphEmitter makes it); `out_dtypes` and `out_shapes` are
// the op's inferred outputs, fully defined since every input is known.
// Errors: UNIMPLEMENTED for ops or dtypes not covered; INVALID_ARGUMENT for
// values the op rejects (integer division by zero, a bad Gather index).
absl::StatusOr<std::vector<Tensor>> EvaluateConst(
    const std::string& op, const AttrMap& attrs,
    const std::vector<Tensor>& inputs, const std::vector<DataType>& out_dtypes,
    const std::vector<Shape>& out_shapes);

}  // namespace sluice

#endif  // SLUICE_ONNX_CONST_EVAL_H_
