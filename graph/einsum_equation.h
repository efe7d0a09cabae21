// EinsumEquation: an Einsum equation ("bij,bjk->bik", "...ii->...i",
// "ij,jk") parsed against the ranks of its operands into label ids, which
// the Einsum schema (output shape) and the CPU kernel (strides) share.
//
//   ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum("ij,jk->ik", {2, 2}));
//   ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
//                    EinsumLabelSizes(eq, {a.shape(), b.shape()}));
//
// Letters are labels 0-51 ('a'-'z', 'A'-'Z'); the dimensions an ellipsis
// stands for are labels 52 on, aligned on the right across operands (NumPy
// broadcasting: a size of 1 stretches). Without "->" the output is the
// ellipsis dimensions, then the letters used once, in alphabetical order.
//
// Value type; pure functions; thread-safe.
#ifndef SLUICE_GRAPH_EINSUM_EQUATION_H_
#define SLUICE_GRAPH_EINSUM_EQUATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/shape.h"

namespace sluice {

struct EinsumEquation {
  int num_labels = 0;                  // letters and ellipsis dims
  std::vector<std::vector<int>> inputs;  // each operand's label per dim
  std::vector<int> output;               // the output's label per dim
};

// INVALID_ARGUMENT naming the problem for a malformed equation or one whose
// terms do not match `ranks` (one per operand).
absl::StatusOr<EinsumEquation> ParseEinsum(absl::string_view equation,
                                           const std::vector<int>& ranks);

// The size of each label (num_labels entries) from the operands' shapes;
// -1 where unknown (an unknown dim and no known one for the label), 0 for
// labels no operand uses. INVALID_ARGUMENT when a label has two sizes
// (other than an ellipsis dim of 1).
absl::StatusOr<std::vector<int64_t>> EinsumLabelSizes(
    const EinsumEquation& eq, const std::vector<Shape>& shapes);

}  // namespace sluice

#endif  // SLUICE_GRAPH_EINSUM_EQUATION_H_
