// Schemas of the control-flow ops (docs/ops.md, "Control flow"): If, Loop
// and Scan. Each holds its subgraphs as graph attributes; a subgraph is
// closed (the values it reads from outside are inputs of the node, listed
// after the op's own) and the builder validates it as a graph of its own
// before these shape functions check its signature against the node's.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"
#include "graph/shape_inference.h"

namespace sluice {
namespace {

// a and b where they agree, unknown where they differ: the shape of a value
// that is one or the other.
Shape MergeShapes(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank() || a.rank() != b.rank()) {
    return Shape::UnknownRank();
  }
  Shape out;
  for (int i = 0; i < a.rank(); ++i) {
    out.AddDim(a.dim(i) == b.dim(i) ? a.dim(i) : kUnknownDim);
  }
  return out;
}

// The subgraph of `attr`, checked to take `inputs` and give `outputs`
// (their number and dtypes, in order).
absl::StatusOr<const Graph*> CheckedSubgraph(
    const InferenceContext& c, const std::string& attr,
    const std::vector<DataType>& inputs, const std::vector<DataType>& outputs) {
  const Graph* g = c.subgraph(attr);
  if (g == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("subgraph '", attr, "' is missing"));
  }
  std::vector<DataType> got_in, got_out;
  for (const GraphInput& in : g->inputs()) got_in.push_back(in.dtype);
  for (const GraphOutput& out : g->outputs()) got_out.push_back(out.dtype);
  if (got_in != inputs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subgraph '", attr, "' takes ", got_in.size(), " inputs (",
        DataTypeNames(got_in), "), the node passes ", inputs.size(), " (",
        DataTypeNames(inputs), ")"));
  }
  if (got_out != outputs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subgraph '", attr, "' gives ", got_out.size(), " outputs (",
        DataTypeNames(got_out), "), the node needs ", outputs.size(), " (",
        DataTypeNames(outputs), ")"));
  }
  return g;
}

std::vector<DataType> InputTypes(const InferenceContext& c, int first) {
  std::vector<DataType> out;
  for (int i = first; i < c.num_inputs(); ++i) out.push_back(c.input_dtype(i));
  return out;
}

std::vector<DataType> OutputTypes(const InferenceContext& c) {
  std::vector<DataType> out;
  for (int i = 0; i < c.num_outputs(); ++i) out.push_back(c.output_dtype(i));
  return out;
}

absl::Status IfFn(InferenceContext& c) {
  std::vector<DataType> in = InputTypes(c, 1), out = OutputTypes(c);
  ASSIGN_OR_RETURN(const Graph* then_g,
                   CheckedSubgraph(c, "then_branch", in, out));
  ASSIGN_OR_RETURN(const Graph* else_g,
                   CheckedSubgraph(c, "else_branch", in, out));
  for (int i = 0; i < c.num_outputs(); ++i) {
    c.set_output_shape(i, MergeShapes(then_g->outputs()[i].shape,
                                      else_g->outputs()[i].shape));
  }
  return absl::OkStatus();
}

// The loop-carried count of a Loop or Scan: its inputs (after `first`)
// less the captures, less the scan inputs.
absl::StatusOr<int> CarriedCount(const InferenceContext& c, int first,
                                 int64_t others) {
  int64_t n = c.num_inputs() - first - others;
  if (others < 0 || n < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_captures and num_scan_inputs (", others, ") exceed the ",
        c.num_inputs() - first, " values passed"));
  }
  if (n > c.num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        n, " loop-carried values but only ", c.num_outputs(), " outputs"));
  }
  for (int k = 0; k < n; ++k) {
    if (c.input_dtype(first + k) != c.output_dtype(k)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "loop-carried value ", k, " is ",
          DataTypeName(c.input_dtype(first + k)), " but output ", k, " is ",
          DataTypeName(c.output_dtype(k))));
    }
  }
  return static_cast<int>(n);
}

absl::Status LoopFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t captures, c.attrs().GetInt("num_captures"));
  ASSIGN_OR_RETURN(int n, CarriedCount(c, 2, captures));
  std::vector<DataType> in = {DT_INT64, DT_BOOL};
  std::vector<DataType> out = {DT_BOOL};
  for (DataType t : InputTypes(c, 2)) in.push_back(t);
  for (DataType t : OutputTypes(c)) out.push_back(t);
  ASSIGN_OR_RETURN(const Graph* body, CheckedSubgraph(c, "body", in, out));
  for (int k = 0; k < n; ++k) {
    c.set_output_shape(
        k, MergeShapes(c.input_shape(2 + k), body->outputs()[1 + k].shape));
  }
  for (int s = n; s < c.num_outputs(); ++s) {
    const Shape& each = body->outputs()[1 + s].shape;
    if (each.unknown_rank()) continue;
    Shape stacked({kUnknownDim});
    for (int64_t d : each.dims()) stacked.AddDim(d);
    c.set_output_shape(s, stacked);
  }
  return absl::OkStatus();
}

// A Scan axis attribute (one entry per value, default 0) normalised against
// `rank`, or kUnknownDim when the rank is unknown.
absl::StatusOr<std::vector<int64_t>> ScanAxes(const InferenceContext& c,
                                              const char* attr, int count) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.attrs().GetIntList(attr));
  if (axes.empty()) axes.assign(count, 0);
  if (static_cast<int>(axes.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        attr, " has ", axes.size(), " entries, expected ", count));
  }
  return axes;
}

absl::Status ScanFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t m, c.attrs().GetInt("num_scan_inputs"));
  ASSIGN_OR_RETURN(int64_t captures, c.attrs().GetInt("num_captures"));
  if (m < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_scan_inputs must be at least 1, got ", m));
  }
  ASSIGN_OR_RETURN(int n, CarriedCount(c, 0, m + captures));
  const int scan_outputs = c.num_outputs() - n;
  ASSIGN_OR_RETURN(std::vector<int64_t> in_axes,
                   ScanAxes(c, "scan_input_axes", static_cast<int>(m)));
  ASSIGN_OR_RETURN(std::vector<int64_t> out_axes,
                   ScanAxes(c, "scan_output_axes", scan_outputs));
  ASSIGN_OR_RETURN(const Graph* body,
                   CheckedSubgraph(c, "body", InputTypes(c, 0),
                                   OutputTypes(c)));
  // The sequence length: the scanned dimension of the scan inputs.
  int64_t length = kUnknownDim;
  for (int j = 0; j < m; ++j) {
    const Shape& s = c.input_shape(n + j);
    if (s.unknown_rank()) continue;
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(in_axes[j], s.rank()));
    int64_t d = s.dim(axis);
    if (d >= 0 && length >= 0 && d != length) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scan inputs disagree on the sequence length: ", length, " and ", d,
          " (scan input ", j, ")"));
    }
    if (d >= 0) length = d;
  }
  for (int k = 0; k < n; ++k) {
    c.set_output_shape(
        k, MergeShapes(c.input_shape(k), body->outputs()[k].shape));
  }
  for (int s = 0; s < scan_outputs; ++s) {
    const Shape& each = body->outputs()[n + s].shape;
    if (each.unknown_rank()) continue;
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(out_axes[s], each.rank() + 1));
    Shape stacked;
    for (int d = 0; d <= each.rank(); ++d) {
      if (d == axis) stacked.AddDim(length);
      if (d < each.rank()) stacked.AddDim(each.dim(d));
    }
    c.set_output_shape(n + s, stacked);
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterControlFlowOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("If")
             .Input("cond", "bool")
             .InputTypeList("inputs", "Tin")
             .OutputTypeList("outputs", "Tout")
             .Attr("Tin", AttrType::kListType)
             .Attr("Tout", AttrType::kListType)
             .Attr("then_branch", AttrType::kGraph)
             .Attr("else_branch", AttrType::kGraph)
             .ShapeFn(IfFn)
             .Doc("Runs then_branch when cond (one element) is true, else "
                  "else_branch, on `inputs`; both take inputs Tin and give "
                  "outputs Tout.")
             .Build());
  RegisterOrDie(
      r, OpDefBuilder("Loop")
             .Input("max_trip_count", "int64")
             .Input("cond", "bool")
             .InputTypeList("inputs", "Tin")
             .OutputTypeList("outputs", "Tout")
             .Attr("Tin", AttrType::kListType)
             .Attr("Tout", AttrType::kListType)
             .Attr("body", AttrType::kGraph)
             .Attr("num_captures", AttrType::kInt, MakeIntAttr(0))
             .Attr("has_cond", AttrType::kBool, MakeBoolAttr(true))
             .ShapeFn(LoopFn)
             .Doc("ONNX Loop: inputs are N loop-carried values, then "
                  "num_captures values the body reads unchanged. The body "
                  "takes (iteration, cond, carried..., captures...) and "
                  "gives (cond, carried..., scan outputs...); outputs are "
                  "the final carried values, then each scan output stacked "
                  "over the iterations. has_cond false: cond and the body's "
                  "cond are ignored (a for loop over max_trip_count).")
             .Build());
  RegisterOrDie(
      r, OpDefBuilder("Scan")
             .InputTypeList("inputs", "Tin")
             .OutputTypeList("outputs", "Tout")
             .Attr("Tin", AttrType::kListType)
             .Attr("Tout", AttrType::kListType)
             .Attr("body", AttrType::kGraph)
             .Attr("num_scan_inputs", AttrType::kInt)
             .Attr("num_captures", AttrType::kInt, MakeIntAttr(0))
             .Attr("scan_input_axes", AttrType::kListInt, MakeIntListAttr({}))
             .Attr("scan_input_directions", AttrType::kListInt,
                   MakeIntListAttr({}))
             .Attr("scan_output_axes", AttrType::kListInt,
                   MakeIntListAttr({}))
             .Attr("scan_output_directions", AttrType::kListInt,
                   MakeIntListAttr({}))
             .ShapeFn(ScanFn)
             .Doc("ONNX Scan (opset 9 on): inputs are N states, "
                  "num_scan_inputs sequences and num_captures values the "
                  "body reads unchanged; the body runs once per slice of "
                  "the sequences along their scan axes, taking (states..., "
                  "slices..., captures...) and giving (states..., scan "
                  "outputs...); outputs are the final states and the scan "
                  "outputs stacked along their axes.")
             .Build());
}

}  // namespace sluice
