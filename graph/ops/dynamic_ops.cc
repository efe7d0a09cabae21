// Schemas of the ops whose structural parameters are runtime tensors
// (docs/ops.md, "Runtime parameters"): Shape and Size, the Dynamic* forms of
// Reshape, Expand, Squeeze, Unsqueeze, Slice, Split and the reductions, and
// Range, Fill and Tile. Their shape functions give exact shapes when the
// parameter inputs are known at load time and partial ones otherwise.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// A shape of `rank` unknown dimensions, or of unknown rank when rank < 0.
// The number of values a rank-1 parameter input holds, -1 when unknown.
int64_t ParamLength(const Shape& s) {
  if (s.unknown_rank()) return -1;
  if (s.rank() == 0) return 1;
  return s.rank() == 1 ? s.dim(0) : -1;
}

int64_t RankOf(const Shape& s) { return s.unknown_rank() ? -1 : s.rank(); }

// The value of parameter input `i` when known at load time.
absl::StatusOr<std::optional<std::vector<int64_t>>> KnownParam(
    InferenceContext& c, int i, absl::string_view what) {
  const Tensor* v = c.input_value(i);
  if (v == nullptr) return std::nullopt;
  ASSIGN_OR_RETURN(std::vector<int64_t> values, IntParamValues(*v, what));
  return values;
}

absl::Status ShapeOpFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t start, c.attrs().GetInt("start"));
  ASSIGN_OR_RETURN(int64_t end, c.attrs().GetInt("end"));
  const Shape& in = c.input_shape(0);
  if (in.unknown_rank()) {
    c.set_output_shape(0, UnknownDims(1));
    return absl::OkStatus();
  }
  int64_t b = 0, e = 0;
  ShapeSliceBounds(in.rank(), start, end, &b, &e);
  c.set_output_shape(0, Shape({e - b}));
  return absl::OkStatus();
}

absl::Status SizeOpFn(InferenceContext& c) {
  // (A named scalar: GCC 12 at -O3 misreports a temporary rank-0 Shape as
  // uninitialised.)
  static const Shape* const kScalar = new Shape();
  c.set_output_shape(0, *kScalar);
  return absl::OkStatus();
}

absl::Status DynamicReshapeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool allowzero, c.attrs().GetBool("allowzero"));
  ASSIGN_OR_RETURN(auto dims, KnownParam(c, 1, "shape"));
  if (!dims) {
    c.set_output_shape(0, UnknownDims(ParamLength(c.input_shape(1))));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> d,
                   OnnxReshapeDims(c.input_shape(0), *dims, allowzero));
  if (std::find(d.begin(), d.end(), kUnknownDim) != d.end() &&
      std::find(dims->begin(), dims->end(), -1) != dims->end()) {
    c.set_output_shape(0, UnknownDims(d.size()));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Shape out, ReshapeShape(c.input_shape(0), d));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status DynamicExpandFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(auto dims, KnownParam(c, 1, "shape"));
  if (dims) {
    ASSIGN_OR_RETURN(Shape out, ExpandShape(c.input_shape(0), *dims));
    c.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const int64_t n = ParamLength(c.input_shape(1));
  const int64_t r = RankOf(c.input_shape(0));
  c.set_output_shape(0, UnknownDims(n < 0 || r < 0 ? -1 : std::max(n, r)));
  return absl::OkStatus();
}

absl::Status DynamicSqueezeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(auto axes, KnownParam(c, 1, "axes"));
  if (axes) {
    ASSIGN_OR_RETURN(Shape out, SqueezeShape(c.input_shape(0), *axes));
    c.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const int64_t n = ParamLength(c.input_shape(1));
  const int64_t r = RankOf(c.input_shape(0));
  c.set_output_shape(0, UnknownDims(n < 0 || r < 0 ? -1 : r - n));
  return absl::OkStatus();
}

absl::Status DynamicUnsqueezeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(auto axes, KnownParam(c, 1, "axes"));
  if (axes) {
    ASSIGN_OR_RETURN(Shape out, UnsqueezeShape(c.input_shape(0), *axes));
    c.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const int64_t n = ParamLength(c.input_shape(1));
  const int64_t r = RankOf(c.input_shape(0));
  c.set_output_shape(0, UnknownDims(n < 0 || r < 0 ? -1 : r + n));
  return absl::OkStatus();
}

absl::Status DynamicSliceFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(auto begin, KnownParam(c, 1, "starts"));
  ASSIGN_OR_RETURN(auto end, KnownParam(c, 2, "ends"));
  ASSIGN_OR_RETURN(auto axes, KnownParam(c, 3, "axes"));
  ASSIGN_OR_RETURN(auto steps, KnownParam(c, 4, "steps"));
  if (begin && end && axes && steps) {
    ASSIGN_OR_RETURN(Shape out, SliceShape(c.input_shape(0), *begin, *end,
                                           *axes, *steps));
    c.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  c.set_output_shape(0, UnknownDims(RankOf(c.input_shape(0))));
  return absl::OkStatus();
}

absl::Status DynamicSplitFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(int64_t num_split, c.attrs().GetInt("num_split"));
  ASSIGN_OR_RETURN(auto sizes, KnownParam(c, 1, "split"));
  if (sizes) {
    ASSIGN_OR_RETURN(std::vector<Shape> outs,
                     SplitShapes(c.input_shape(0), axis, num_split, *sizes));
    if (static_cast<int>(outs.size()) != c.num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "split has ", sizes->size(), " sizes for ", c.num_outputs(),
          " outputs"));
    }
    for (int i = 0; i < c.num_outputs(); ++i) c.set_output_shape(i, outs[i]);
    return absl::OkStatus();
  }
  Shape out = c.input_shape(0);
  if (!out.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, out.rank()));
    std::vector<int64_t> dims(out.dims().begin(), out.dims().end());
    dims[a] = kUnknownDim;
    out = Shape(dims);
  }
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output_shape(i, out);
  return absl::OkStatus();
}

absl::Status DynamicReduceFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool keepdims, c.attrs().GetBool("keepdims"));
  ASSIGN_OR_RETURN(bool noop, c.attrs().GetBool("noop_with_empty_axes"));
  ASSIGN_OR_RETURN(auto axes, KnownParam(c, 1, "axes"));
  const Shape& in = c.input_shape(0);
  if (axes) {
    if (axes->empty() && noop) {
      c.set_output_shape(0, in);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Shape out, ReduceShape(in, *axes, keepdims));
    c.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  c.set_output_shape(0, UnknownDims(keepdims ? RankOf(in) : -1));
  return absl::OkStatus();
}

absl::Status RangeFn(InferenceContext& c) {
  for (int i = 0; i < 3; ++i) {
    const Shape& s = c.input_shape(i);
    if (!s.unknown_rank() && s.rank() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Range's start, limit and delta must be scalars; input ", i,
          " is ", s.DebugString()));
    }
  }
  c.set_output_shape(0, UnknownDims(1));
  return absl::OkStatus();
}

absl::Status FillFn(InferenceContext& c) {
  const AttrValue* value = c.attrs().Find("value");
  if (value == nullptr || value->value_case() != AttrValue::kTensor) {
    return absl::InvalidArgumentError("Fill needs a tensor 'value'");
  }
  ASSIGN_OR_RETURN(auto dims, KnownParam(c, 0, "shape"));
  if (dims) {
    for (int64_t d : *dims) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Fill: shape has a negative dimension ", d));
      }
    }
    c.set_output_shape(0, Shape(*dims));
    return absl::OkStatus();
  }
  c.set_output_shape(0, UnknownDims(ParamLength(c.input_shape(0))));
  return absl::OkStatus();
}

absl::Status TileFn(InferenceContext& c) {
  const Shape& in = c.input_shape(0);
  ASSIGN_OR_RETURN(auto repeats, KnownParam(c, 1, "repeats"));
  if (repeats && !in.unknown_rank()) {
    if (static_cast<int>(repeats->size()) != in.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Tile: ", repeats->size(), " repeats for an input of "
                       "rank ", in.rank()));
    }
    std::vector<int64_t> dims;
    for (int d = 0; d < in.rank(); ++d) {
      if ((*repeats)[d] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Tile: repeat ", (*repeats)[d], " is negative"));
      }
      dims.push_back(in.dim(d) < 0 ? kUnknownDim : in.dim(d) * (*repeats)[d]);
    }
    c.set_output_shape(0, Shape(dims));
    return absl::OkStatus();
  }
  c.set_output_shape(0, UnknownDims(RankOf(in)));
  return absl::OkStatus();
}

OpDefBuilder WithParam(const std::string& op, const std::string& param,
                       const std::string& doc) {
  OpDefBuilder b(op);
  b.Input("input", "T").Input(param, "int64").Output("output", "T");
  b.TypeAttr("T", kAllTypes).Doc(doc);
  return b;
}

}  // namespace

void RegisterDynamicOps(OpRegistry* r) {
  RegisterOrDie(r, OpDefBuilder("Shape")
                       .Input("input", "T")
                       .Output("shape", "int64")
                       .TypeAttr("T", kAllTypes)
                       .Attr("start", AttrType::kInt, MakeIntAttr(0))
                       .Attr("end", AttrType::kInt,
                             MakeIntAttr(int64_t{1} << 62))
                       .ShapeFn(ShapeOpFn)
                       .Doc("The input's dimensions [start, end) as int64 "
                            "(ONNX Shape).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Size")
                       .Input("input", "T")
                       .Output("size", "int64")
                       .TypeAttr("T", kAllTypes)
                       .ShapeFn(SizeOpFn)
                       .Doc("The input's number of elements, an int64 scalar "
                            "(ONNX Size).")
                       .Build());
  RegisterOrDie(r, WithParam("DynamicReshape", "shape",
                             "Reshape to a runtime shape; 0 copies the input "
                             "dimension unless allowzero (ONNX Reshape).")
                       .Attr("allowzero", AttrType::kBool, MakeBoolAttr(false))
                       .ShapeFn(DynamicReshapeFn)
                       .Build());
  RegisterOrDie(r, WithParam("DynamicExpand", "shape",
                             "Expand to a runtime shape (ONNX Expand).")
                       .ShapeFn(DynamicExpandFn)
                       .Build());
  RegisterOrDie(r, WithParam("DynamicSqueeze", "axes",
                             "Squeeze runtime axes (empty: all size-1 dims).")
                       .ShapeFn(DynamicSqueezeFn)
                       .Build());
  RegisterOrDie(r, WithParam("DynamicUnsqueeze", "axes",
                             "Unsqueeze at runtime axes (output positions).")
                       .ShapeFn(DynamicUnsqueezeFn)
                       .Build());
  RegisterOrDie(r, OpDefBuilder("DynamicSlice")
                       .Input("input", "T")
                       .Input("begin", "int64")
                       .Input("end", "int64")
                       .Input("axes", "int64")
                       .Input("steps", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .ShapeFn(DynamicSliceFn)
                       .Doc("Slice with runtime bounds; empty axes: 0..n-1, "
                            "empty steps: all 1 (ONNX Slice).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("DynamicSplit")
                       .Input("value", "T")
                       .Input("split", "int64")
                       .OutputList("output", "T", "num_split")
                       .TypeAttr("T", kAllTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(0))
                       .Attr("num_split", AttrType::kInt)
                       .ShapeFn(DynamicSplitFn)
                       .Doc("Split along axis into parts of runtime sizes.")
                       .Build());
  std::vector<DataType> with_bool = kNumericTypes;
  with_bool.push_back(DT_BOOL);
  for (const char* op :
       {"DynamicReduceSum", "DynamicReduceMean", "DynamicReduceMax",
        "DynamicReduceMin", "DynamicReduceProd"}) {
    const bool any_all = absl::string_view(op) == "DynamicReduceMax" ||
                         absl::string_view(op) == "DynamicReduceMin";
    OpDefBuilder b(op);
    b.Input("input", "T")
        .Input("axes", "int64")
        .Output("output", "T")
        .TypeAttr("T", any_all ? with_bool : kNumericTypes)
        .Attr("keepdims", AttrType::kBool, MakeBoolAttr(true))
        .Attr("noop_with_empty_axes", AttrType::kBool, MakeBoolAttr(false))
        .ShapeFn(DynamicReduceFn)
        .Doc(absl::StrCat(std::string(op).substr(7),
                          " over runtime axes; empty axes: all of them, or "
                          "none with noop_with_empty_axes (ONNX)."));
    RegisterOrDie(r, b.Build());
  }
  RegisterOrDie(r, OpDefBuilder("Range")
                       .Input("start", "T")
                       .Input("limit", "T")
                       .Input("delta", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kNumericTypes)
                       .ShapeFn(RangeFn)
                       .Doc("start, start + delta, ... while < limit (> for a "
                            "negative delta); scalars in.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Fill")
                       .Input("shape", "int64")
                       .Output("output", "dtype")
                       .TypeAttr("dtype", kAllTypes)
                       .Attr("value", AttrType::kTensor)
                       .ShapeFn(FillFn)
                       .Doc("A tensor of a runtime shape filled with the one "
                            "element of value (ONNX ConstantOfShape).")
                       .Build());
  RegisterOrDie(r, WithParam("Tile", "repeats",
                             "Repeats the input repeats[d] times along each "
                             "dimension d.")
                       .ShapeFn(TileFn)
                       .Build());
}

}  // namespace sluice
