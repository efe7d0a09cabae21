#include "kernels/einsum_loop.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice {

EinsumLoop MakeEinsumLoop(const EinsumEquation& eq,
                          const std::vector<int64_t>& sizes,
                          const std::vector<Shape>& shapes) {
  std::vector<int> where(eq.num_labels, -1);  // label -> loop position
  std::vector<int> loop;
  for (int id : eq.output) {
    where[id] = static_cast<int>(loop.size());
    loop.push_back(id);
  }
  const int n_out = static_cast<int>(loop.size());
  for (const auto& term : eq.inputs) {
    for (int id : term) {
      if (where[id] < 0) {
        where[id] = static_cast<int>(loop.size());
        loop.push_back(id);
      }
    }
  }
  EinsumLoop l;
  for (size_t p = 0; p < loop.size(); ++p) {
    (static_cast<int>(p) < n_out ? l.out_sizes : l.sum_sizes)
        .push_back(sizes[loop[p]]);
  }
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<int64_t> strides(loop.size(), 0);
    const Shape& s = shapes[k];
    std::vector<int64_t> row(s.rank(), 1);  // row-major strides
    for (int d = s.rank() - 2; d >= 0; --d) row[d] = row[d + 1] * s.dim(d + 1);
    for (size_t d = 0; d < eq.inputs[k].size(); ++d) {
      const int id = eq.inputs[k][d];
      if (s.dim(static_cast<int>(d)) == 1 && sizes[id] != 1) continue;  // stretched
      strides[where[id]] += row[d];
    }
    l.out_strides.emplace_back(strides.begin(), strides.begin() + n_out);
    l.sum_strides.emplace_back(strides.begin() + n_out, strides.end());
  }
  return l;
}

absl::StatusOr<EinsumAttrs> ParseEinsumAttrs(const Node& node) {
  EinsumAttrs a;
  ASSIGN_OR_RETURN(a.equation, node.attrs().GetString("equation"));
  return a;
}

absl::StatusOr<EinsumPlan> PlanEinsum(const std::string& equation,
                                      absl::Span<const Tensor* const> inputs) {
  std::vector<int> ranks;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    RETURN_IF_ERROR(cpu::CheckDtype(t, inputs[0]->dtype(),
                                    absl::StrCat("Einsum input ", i)));
    ranks.push_back(t.rank());
    shapes.push_back(t.shape());
  }
  ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(equation, ranks));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, EinsumLabelSizes(eq, shapes));
  EinsumPlan p;
  for (int id : eq.output) p.out_shape.AddDim(sizes[id]);
  p.loop = MakeEinsumLoop(eq, sizes, shapes);
  return p;
}

}  // namespace sluice
