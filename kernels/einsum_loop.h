// The loop an Einsum kernel walks, shared by the CPU kernel
// (kernels/cpu/einsum.cc) and the CUDA one (kernels/cuda/einsum_kernels.cc):
// the output labels, then the summed ones, with each input's stride for
// each (summed where a label repeats in one term: a diagonal; 0 where an
// ellipsis dim of 1 stretches). CUDA-free.
//
//   ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(equation, ranks));
//   ASSIGN_OR_RETURN(std::vector<int64_t> sizes, EinsumLabelSizes(eq, shapes));
//   EinsumLoop loop = MakeEinsumLoop(eq, sizes, shapes);
// or, from the kernel's attributes and inputs in one step:
//   ASSIGN_OR_RETURN(EinsumPlan p, PlanEinsum(attrs.equation, inputs));
//
// Value types, thread-compatible; the functions are pure.
#ifndef SLUICE_KERNELS_EINSUM_LOOP_H_
#define SLUICE_KERNELS_EINSUM_LOOP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/einsum_equation.h"
#include "graph/graph.h"

namespace sluice {

struct EinsumLoop {
  std::vector<int64_t> out_sizes;
  std::vector<int64_t> sum_sizes;
  std::vector<std::vector<int64_t>> out_strides;  // [input][output label]
  std::vector<std::vector<int64_t>> sum_strides;  // [input][summed label]
};

// REQUIRES: sizes from EinsumLabelSizes(eq, shapes), all known.
EinsumLoop MakeEinsumLoop(const EinsumEquation& eq,
                          const std::vector<int64_t>& sizes,
                          const std::vector<Shape>& shapes);

struct EinsumAttrs {
  std::string equation;
};
absl::StatusOr<EinsumAttrs> ParseEinsumAttrs(const Node& node);

// The loop and the output's shape of `equation` over `inputs` (not owned,
// non-null); INVALID_ARGUMENT when their dtypes differ or the equation does
// not fit their shapes.
struct EinsumPlan {
  EinsumLoop loop;
  Shape out_shape;
};
absl::StatusOr<EinsumPlan> PlanEinsum(const std::string& equation,
                                      absl::Span<const Tensor* const> inputs);

}  // namespace sluice

#endif  // SLUICE_KERNELS_EINSUM_LOOP_H_
