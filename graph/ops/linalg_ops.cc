// Schemas of Einsum and Det (docs/ops.md, "Linear algebra").
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/einsum_equation.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

absl::Status EinsumFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::string equation, c.attrs().GetString("equation"));
  std::vector<int> ranks;
  std::vector<Shape> shapes;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const Shape& s = c.input_shape(i);
    if (s.unknown_rank()) {
      c.set_output_shape(0, Shape::UnknownRank());
      return absl::OkStatus();
    }
    ranks.push_back(s.rank());
    shapes.push_back(s);
  }
  ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(equation, ranks));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, EinsumLabelSizes(eq, shapes));
  std::vector<int64_t> dims;
  for (int id : eq.output) dims.push_back(sizes[id]);
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status DetFn(InferenceContext& c) {
  const Shape& in = c.input_shape(0);
  if (in.unknown_rank()) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  const int r = in.rank();
  if (r < 2 || (in.dim(r - 1) >= 0 && in.dim(r - 2) >= 0 &&
                in.dim(r - 1) != in.dim(r - 2))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Det needs square matrices [..., M, M], got ", in.DebugString()));
  }
  c.set_output_shape(0, Shape(std::vector<int64_t>(in.dims().begin(),
                                                   in.dims().end() - 2)));
  return absl::OkStatus();
}

}  // namespace

void RegisterLinalgOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("Einsum")
             .InputList("inputs", "T", "N")
             .Output("output", "T")
             .TypeAttr("T", kNumericTypes)
             .Attr("N", AttrType::kInt)
             .Attr("equation", AttrType::kString)
             .ShapeFn(EinsumFn)
             .Doc("Einstein summation over the N inputs as the equation says "
                  "(NumPy's einsum: letters, one ellipsis per term, implicit "
                  "output without \"->\").")
             .Build());
  RegisterOrDie(r, OpDefBuilder("Det")
                       .Input("x", "T")
                       .Output("y", "T")
                       .TypeAttr("T", kFloatTypes)
                       .ShapeFn(DetFn)
                       .Doc("The determinant of each innermost square matrix "
                            "of x [..., M, M] (LU with partial pivoting).")
                       .Build());
}

}  // namespace sluice
