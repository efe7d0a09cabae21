// The loop an Einsum kernel walks, shared by the CPU kernel
// (kernels/cpu/einsum.cc) and the CUDA one (kernels/cuda/einsum_kernels.cc):
// the output labels, then the summed ones, with each input's stride for
// each (summed where a label repeats in one term: a diagonal; 0 where an
// ellipsis dim of 1 stretches). CUDA-free.
//
//   ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(equation, ranks));
//   ASSIGN_OR_RETURN(std::vector<int64_t> sizes, EinsumLabelSizes(eq, shapes));
//   EinsumLoop loop = MakeEinsumLoop(eq, sizes, shapes);
//
// Value type; thread-compatible.
#ifndef SLUICE_KERNELS_EINSUM_LOOP_H_
#define SLUICE_KERNELS_EINSUM_LOOP_H_

#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "graph/einsum_equation.h"

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

}  // namespace sluice

#endif  // SLUICE_KERNELS_EINSUM_LOOP_H_
