// EvaluateOnCpu: one node run once on its CPU kernel over host tensors. It
// is the one constant folder: the optimizer's constant_folding pass and the
// ONNX importer's folding of shape subgraphs and weight preprocessing
// (onnx/graph_emitter.cc) both call it, so a value folded at load and one
// computed in a step come from the same kernel.
//
//   ASSIGN_OR_RETURN(std::vector<Tensor> out, EvaluateOnCpu(node, inputs));
//   ASSIGN_OR_RETURN(std::vector<Tensor> out,
//                    EvaluateOpOnCpu("Concat", attrs, inputs));
//
// Stateless functions; thread-safe. The results live in the process-wide
// host allocator (they may share an input's buffer: Reshape is a view).
#ifndef SLUICE_KERNELS_EVALUATE_H_
#define SLUICE_KERNELS_EVALUATE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace sluice {

// Runs `node` (of a validated graph) on `inputs`, one per data input.
// NOT_FOUND when no CPU kernel takes it; the kernel's own error otherwise
// (UNIMPLEMENTED for a dtype it lacks, INVALID_ARGUMENT for values it
// rejects); INTERNAL when it leaves an output unset or off the host.
absl::StatusOr<std::vector<Tensor>> EvaluateOnCpu(
    const Node& node, const std::vector<Tensor>& inputs);

// The same for `op` with `attrs` (type attributes may be left out: they
// are inferred from the inputs) on `inputs`: a one-node graph is built and
// validated first, so its errors are BuildGraph's.
absl::StatusOr<std::vector<Tensor>> EvaluateOpOnCpu(
    const std::string& op, const std::map<std::string, AttrValue>& attrs,
    const std::vector<Tensor>& inputs);

}  // namespace sluice

#endif  // SLUICE_KERNELS_EVALUATE_H_
