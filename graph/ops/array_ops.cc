// Schemas of the source, cast and shape ops (docs/ops.md: Sources,
// Identity/Cast, Shapes and indexing).
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

absl::Status ConstShape(InferenceContext& c) {
  const AttrValue* value = c.attrs().Find("value");
  if (value == nullptr || value->value_case() != AttrValue::kTensor) {
    return absl::InvalidArgumentError("Const needs a tensor 'value'");
  }
  ASSIGN_OR_RETURN(Shape s, ShapeFromProto(value->tensor().shape(),
                                           /*require_defined=*/true));
  c.set_output_shape(0, std::move(s));
  return absl::OkStatus();
}

absl::Status InputShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(Shape s, c.attrs().GetShape("shape"));
  c.set_output_shape(0, std::move(s));
  return absl::OkStatus();
}

absl::Status ReshapeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.attrs().GetIntList("shape"));
  ASSIGN_OR_RETURN(Shape out, ReshapeShape(c.input_shape(0), shape));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status TransposeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, c.attrs().GetIntList("perm"));
  ASSIGN_OR_RETURN(Shape out, TransposeShape(c.input_shape(0), perm));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ConcatFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  std::vector<Shape> shapes;
  for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.input_shape(i));
  ASSIGN_OR_RETURN(Shape out, ConcatShape(shapes, axis));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status SplitFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(int64_t num_split, c.attrs().GetInt("num_split"));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, c.attrs().GetIntList("sizes"));
  ASSIGN_OR_RETURN(std::vector<Shape> outs,
                   SplitShapes(c.input_shape(0), axis, num_split, sizes));
  if (static_cast<int>(outs.size()) != c.num_outputs()) {
    return absl::InvalidArgumentError("num_split does not match the outputs");
  }
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output_shape(i, outs[i]);
  return absl::OkStatus();
}

absl::Status SliceFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> begin, c.attrs().GetIntList("begin"));
  ASSIGN_OR_RETURN(std::vector<int64_t> end, c.attrs().GetIntList("end"));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.attrs().GetIntList("axes"));
  ASSIGN_OR_RETURN(std::vector<int64_t> steps, c.attrs().GetIntList("steps"));
  ASSIGN_OR_RETURN(Shape out,
                   SliceShape(c.input_shape(0), begin, end, axes, steps));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// Indices known at load time (a Const) are checked against the dimension
// they index, so a bad index is a load error rather than a run-time one.
template <typename T>
absl::Status CheckIndices(const Tensor& indices, int64_t dim) {
  for (T v : indices.flat<T>()) {
    int64_t i = static_cast<int64_t>(v);
    if (i < -dim || i >= dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Gather index ", i, " is out of range for a dimension of size ", dim,
          " (valid: [", -dim, ", ", dim, "))"));
    }
  }
  return absl::OkStatus();
}

absl::Status GatherFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  const Shape& params = c.input_shape(0);
  ASSIGN_OR_RETURN(Shape out, GatherShape(params, c.input_shape(1), axis));
  const Tensor* indices = c.input_value(1);
  if (indices != nullptr && !params.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, params.rank()));
    int64_t dim = params.dim(a);
    if (dim >= 0) {
      if (indices->dtype() == DT_INT32) {
        RETURN_IF_ERROR(CheckIndices<int32_t>(*indices, dim));
      } else if (indices->dtype() == DT_INT64) {
        RETURN_IF_ERROR(CheckIndices<int64_t>(*indices, dim));
      }
    }
  }
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ExpandFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.attrs().GetIntList("shape"));
  ASSIGN_OR_RETURN(Shape out, ExpandShape(c.input_shape(0), shape));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status SqueezeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.attrs().GetIntList("axes"));
  ASSIGN_OR_RETURN(Shape out, SqueezeShape(c.input_shape(0), axes));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status UnsqueezeFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.attrs().GetIntList("axes"));
  ASSIGN_OR_RETURN(Shape out, UnsqueezeShape(c.input_shape(0), axes));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

AttrValue EmptyList() {
  AttrValue v;
  v.mutable_list();
  return v;
}

// One op with input "x"-style single input and output of type T (any).
OpDefBuilder UnaryAny(const std::string& op, const std::string& in,
                      const std::string& out) {
  OpDefBuilder b(op);
  b.Input(in, "T").Output(out, "T").TypeAttr("T", kAllTypes);
  return b;
}

}  // namespace

namespace {

// GatherND: indices.shape[:-1] + data.shape[batch_dims + k:], k the
// indices' last dimension.
absl::Status GatherNdFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t b, c.attrs().GetInt("batch_dims"));
  const Shape& data = c.input_shape(0);
  const Shape& idx = c.input_shape(1);
  if (data.unknown_rank() || idx.unknown_rank()) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  if (idx.rank() < 1 || b < 0 || b >= idx.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GatherND: batch_dims ", b, " needs indices of rank > ", b));
  }
  const int64_t k = idx.dim(idx.rank() - 1);
  if (k < 0) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  if (k < 1 || b + k > data.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GatherND: index tuples of ", k, " do not fit data ",
        data.DebugString()));
  }
  std::vector<int64_t> dims(idx.dims().begin(), idx.dims().end() - 1);
  for (int64_t d = b + k; d < data.rank(); ++d) dims.push_back(data.dim(d));
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status IndicesShapeFn(InferenceContext& c) {
  c.set_output_shape(0, c.input_shape(1));
  return absl::OkStatus();
}

}  // namespace

void RegisterArrayOps(OpRegistry* r) {
  RegisterOrDie(r, OpDefBuilder("Const")
                       .Output("output", "dtype")
                       .Attr("value", AttrType::kTensor)
                       .TypeAttr("dtype", kAllTypes)
                       .ShapeFn(ConstShape)
                       .Doc("A constant tensor. `dtype` defaults to the "
                            "value's dtype and must match it when given.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Input")
                       .Output("output", "dtype")
                       .TypeAttr("dtype", kAllTypes)
                       .Attr("shape", AttrType::kShape,
                             MakeShapeAttr(Shape::UnknownRank()))
                       .ShapeFn(InputShape)
                       .Doc("A graph input, fed by the caller.")
                       .Build());
  RegisterOrDie(r, UnaryAny("Identity", "x", "y")
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("y = x.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Cast")
                       .Input("x", "SrcT")
                       .Output("y", "DstT")
                       .TypeAttr("SrcT", kAllTypes)
                       .TypeAttr("DstT", kAllTypes)
                       .Attr("saturate", AttrType::kBool, MakeBoolAttr(true))
                       .Attr("round_mode", AttrType::kString,
                             MakeStringAttr("up"))
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("Converts x to DstT; float to int truncates toward "
                            "zero, to bool is x != 0. To float8: round to "
                            "nearest even; saturate clamps out-of-range values "
                            "(else NaN / Inf); round_mode (up, down, nearest) "
                            "is for float8 E8M0.")
                       .Build());
  RegisterOrDie(r, UnaryAny("Reshape", "tensor", "output")
                       .Attr("shape", AttrType::kListInt)
                       .ShapeFn(ReshapeFn)
                       .Doc("Same elements, new shape; at most one -1, 0 is a "
                            "literal zero.")
                       .Build());
  RegisterOrDie(r, UnaryAny("Transpose", "x", "y")
                       .Attr("perm", AttrType::kListInt, EmptyList())
                       .ShapeFn(TransposeFn)
                       .Doc("Permutes dimensions; empty perm reverses them.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Concat")
                       .InputList("values", "T", "N")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("N", AttrType::kInt)
                       .Attr("axis", AttrType::kInt)
                       .ShapeFn(ConcatFn)
                       .Doc("Joins N tensors along axis; N comes from the "
                            "inputs when absent.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Split")
                       .Input("value", "T")
                       .OutputList("output", "T", "num_split")
                       .TypeAttr("T", kAllTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(0))
                       .Attr("num_split", AttrType::kInt)
                       .Attr("sizes", AttrType::kListInt, EmptyList())
                       .ShapeFn(SplitFn)
                       .Doc("Splits along axis into num_split parts, equal or "
                            "of the given sizes.")
                       .Build());
  RegisterOrDie(r, UnaryAny("Slice", "input", "output")
                       .Attr("begin", AttrType::kListInt)
                       .Attr("end", AttrType::kListInt)
                       .Attr("axes", AttrType::kListInt, EmptyList())
                       .Attr("steps", AttrType::kListInt, EmptyList())
                       .ShapeFn(SliceFn)
                       .Doc("NumPy / ONNX slicing with clamped bounds.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Gather")
                       .Input("params", "T")
                       .Input("indices", "Tindices")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .TypeAttr("Tindices", kIndexTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(0))
                       .ShapeFn(GatherFn)
                       .Doc("Takes slices of params along axis at indices in "
                            "[-n, n).")
                       .Build());
  RegisterOrDie(r, UnaryAny("Expand", "input", "output")
                       .Attr("shape", AttrType::kListInt)
                       .ShapeFn(ExpandFn)
                       .Doc("Broadcasts input and shape against each other.")
                       .Build());
  RegisterOrDie(r, UnaryAny("Squeeze", "input", "output")
                       .Attr("axes", AttrType::kListInt, EmptyList())
                       .ShapeFn(SqueezeFn)
                       .Doc("Removes size-1 dimensions (all when axes is "
                            "empty).")
                       .Build());
  RegisterOrDie(r, UnaryAny("Unsqueeze", "input", "output")
                       .Attr("axes", AttrType::kListInt)
                       .ShapeFn(UnsqueezeFn)
                       .Doc("Inserts size-1 dimensions at output positions.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("GatherElements")
                       .Input("data", "T")
                       .Input("indices", "Tindices")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .TypeAttr("Tindices", kIndexTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(0))
                       .ShapeFn(IndicesShapeFn)
                       .Doc("output[p] = data[p with p[axis] = indices[p]]; "
                            "output is shaped like indices.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("ScatterElements")
                       .Input("data", "T")
                       .Input("indices", "Tindices")
                       .Input("updates", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .TypeAttr("Tindices", kIndexTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(0))
                       .Attr("reduction", AttrType::kString,
                             MakeStringAttr("none"))
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("A copy of data with output[p with p[axis] = "
                            "indices[p]] replaced by (or combined with) "
                            "updates[p].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("GatherND")
                       .Input("data", "T")
                       .Input("indices", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("batch_dims", AttrType::kInt, MakeIntAttr(0))
                       .ShapeFn(GatherNdFn)
                       .Doc("Slices of data addressed by the index tuples in "
                            "the last dimension of indices.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("ScatterND")
                       .Input("data", "T")
                       .Input("indices", "int64")
                       .Input("updates", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("reduction", AttrType::kString,
                             MakeStringAttr("none"))
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("A copy of data with the slices addressed by "
                            "indices replaced by (or combined with) updates.")
                       .Build());
}

}  // namespace sluice
