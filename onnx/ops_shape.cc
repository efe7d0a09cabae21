// ONNX shape and indexing ops -> sluice. The ops that only compute values
// (Shape, Size, Constant, ConstantOfShape, Range) become constants when
// their inputs fold; the structural ops take their ONNX shape/axes/bounds
// inputs as sluice attributes when those fold to constants, and otherwise
// become the ops that read them at run time (Shape, DynamicReshape,
// DynamicSlice, ..., Range, Fill, Tile: docs/ops.md, "Runtime parameters"),
// so that a model with symbolic dimensions imports once and runs at any
// shape.
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "graph/runtime_params.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

absl::Status SetConst(const onnx::NodeProto& node, ImportContext& ctx,
                      Tensor value) {
  return ctx.SetOutput(node, 0,
                       ctx.em().AddConstant(std::move(value), ctx.Hint(node)));
}

// A constant when the dimensions asked for are known at import time, else a
// Shape node evaluated at run time.
absl::Status ConvertShape(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const int64_t start_attr = AttrInt(node, "start", 0);
  const int64_t end_attr = AttrInt(node, "end", int64_t{1} << 62);
  if (!x->shape.unknown_rank()) {
    int64_t start = 0, end = 0;
    ShapeSliceBounds(x->shape.rank(), start_attr, end_attr, &start, &end);
    std::vector<int64_t> dims;
    for (int64_t i = start; i < end && x->shape.dim(i) >= 0; ++i) {
      dims.push_back(x->shape.dim(i));
    }
    if (static_cast<int64_t>(dims.size()) == end - start) {
      return SetConst(node, ctx, Int64Vector(dims));
    }
  }
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Shape", ctx.Hint(node), {x},
                                              {{"start", MakeIntAttr(start_attr)},
                                               {"end", MakeIntAttr(end_attr)}}));
  return ctx.SetOutput(node, 0, y);
}

// A constant when the input's shape is known at import time, else a Size
// node.
absl::Status ConvertSize(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  absl::StatusOr<int64_t> n = x->shape.NumElements();
  if (!n.ok()) {
    ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Size", ctx.Hint(node), {x}));
    return ctx.SetOutput(node, 0, y);
  }
  return SetConst(node, ctx, Tensor::Scalar<int64_t>(*n));
}

std::string CheckConstant(const onnx::NodeProto& node, int opset) {
  for (const char* attr :
       {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    if (FindAttr(node, attr) != nullptr) return "";
  }
  if (FindAttr(node, "sparse_value") != nullptr) {
    return "sparse_value is not supported";
  }
  return "only value, value_float(s) and value_int(s) are supported";
}

absl::Status ConvertConstant(const onnx::NodeProto& node, ImportContext& ctx) {
  if (const auto* a = FindAttr(node, "value")) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromOnnx(a->t(), ctx.base_dir()));
    return SetConst(node, ctx, std::move(t));
  }
  if (const auto* a = FindAttr(node, "value_float")) {
    return SetConst(node, ctx, Tensor::Scalar<float>(a->f()));
  }
  if (const auto* a = FindAttr(node, "value_int")) {
    return SetConst(node, ctx, Tensor::Scalar<int64_t>(a->i()));
  }
  if (const auto* a = FindAttr(node, "value_floats")) {
    std::vector<float> v(a->floats().begin(), a->floats().end());
    return SetConst(
        node, ctx,
        Tensor::FromVector<float>(v, Shape({static_cast<int64_t>(v.size())})));
  }
  std::optional<std::vector<int64_t>> ints = AttrInts(node, "value_ints");
  return SetConst(node, ctx,
                  Int64Vector(ints.value_or(std::vector<int64_t>{})));
}

absl::Status ConvertConstantOfShape(const onnx::NodeProto& node,
                                    ImportContext& ctx) {
  Tensor fill = Tensor::Scalar<float>(0.0f);
  if (const auto* a = FindAttr(node, "value")) {
    ASSIGN_OR_RETURN(fill, TensorFromOnnx(a->t(), ctx.base_dir()));
    if (fill.NumElements() != 1) {
      return Bad(node, "value must hold exactly one element");
    }
    fill = fill.Reshaped(Shape({}));
  }
  if (ctx.IsRuntime(node, 0)) {
    ASSIGN_OR_RETURN(ValuePtr shape, ctx.ParamInput(node, 0));
    const DataType dtype = fill.dtype();
    ASSIGN_OR_RETURN(
        ValuePtr y,
        ctx.em().Emit1("Fill", ctx.Hint(node), {shape},
                       {{"dtype", MakeTypeAttr(dtype)},
                        {"value", MakeTensorAttr(TensorToProto(fill))}}));
    return ctx.SetOutput(node, 0, y);
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims,
                   ctx.ConstInts(node, 0, "shape"));
  if (!dims) return Bad(node, "needs its shape input");
  Shape shape(*dims);
  absl::StatusOr<int64_t> n = shape.NumElements();
  if (!n.ok()) return Bad(node, n.status().message());
  ASSIGN_OR_RETURN(
      ValuePtr folded,
      ctx.em().FoldConstant(
          fill.dtype(), shape,
          [&](Tensor& out) { FillWith(fill, out); },
          ctx.Hint(node)));
  if (folded != nullptr) return ctx.SetOutput(node, 0, folded);
  // Past the fold limits: filled at run time by a Fill node instead of held
  // in the model.
  ValuePtr shape_value =
      ctx.em().AddConstant(Int64Vector(*dims), ctx.Hint(node, "shape"));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Fill", ctx.Hint(node), {shape_value},
                     {{"dtype", MakeTypeAttr(fill.dtype())},
                      {"value", MakeTensorAttr(TensorToProto(fill))}}));
  return ctx.SetOutput(node, 0, y);
}

// Range: folded into a constant when start, limit and delta are constants
// and the result is within the fold limits (GraphEmitter::FoldConstant),
// else a Range node that makes it at run time.
absl::Status ConvertRange(const onnx::NodeProto& node, ImportContext& ctx) {
  const bool runtime = ctx.IsRuntime(node, 0) || ctx.IsRuntime(node, 1) ||
                       ctx.IsRuntime(node, 2);
  if (!runtime) {
    ASSIGN_OR_RETURN(Tensor start, ctx.ConstInput(node, 0, "start"));
    ASSIGN_OR_RETURN(Tensor limit, ctx.ConstInput(node, 1, "limit"));
    ASSIGN_OR_RETURN(Tensor delta, ctx.ConstInput(node, 2, "delta"));
    ASSIGN_OR_RETURN(std::vector<double> s, ToDoubles(start));
    ASSIGN_OR_RETURN(std::vector<double> l, ToDoubles(limit));
    ASSIGN_OR_RETURN(std::vector<double> d, ToDoubles(delta));
    if (s.size() != 1 || l.size() != 1 || d.size() != 1) {
      return Bad(node, "start, limit and delta must be scalars");
    }
    if (d[0] == 0) return Bad(node, "delta is 0");
    const double count = std::ceil((l[0] - s[0]) / d[0]);
    // Compared as a double: an infinite or huge count has no int64 value.
    if (count > static_cast<double>(kMaxElements)) {
      return Bad(node, "the range is too long");
    }
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    bool supported = true;
    ASSIGN_OR_RETURN(
        ValuePtr folded,
        ctx.em().FoldConstant(
            start.dtype(), Shape({n}),
            [&](Tensor& out) {
              SLUICE_SWITCH_DTYPE(
                  start.dtype(),
                  {
                    T first = start.data<T>()[0];
                    T step = delta.data<T>()[0];
                    for (int64_t i = 0; i < n; ++i) {
                      out.data<T>()[i] =
                          static_cast<T>(first + static_cast<T>(i) * step);
                    }
                  },
                  supported = false);
            },
            ctx.Hint(node)));
    if (!supported) return Bad(node, "unsupported dtype");
    if (folded != nullptr) return ctx.SetOutput(node, 0, folded);
  }
  std::vector<ValuePtr> in;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(ValuePtr v, ctx.Input(node, i));
    ASSIGN_OR_RETURN(v, EmitReshape(ctx, ctx.Hint(node, absl::StrCat("s", i)),
                                    v, {}));
    in.push_back(v);
  }
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Range", ctx.Hint(node), in));
  return ctx.SetOutput(node, 0, y);
}

// GatherElements on constants (what BERT's export does with its
// token-type buffer): evaluated here, like Range. A non-constant input is
// an error naming the node: sluice has no GatherElements kernel.
absl::Status ConvertGatherElements(const onnx::NodeProto& node,
                                   ImportContext& ctx) {
  ASSIGN_OR_RETURN(Tensor data, ctx.ConstInput(node, 0, "data"));
  ASSIGN_OR_RETURN(Tensor indices, ctx.ConstInput(node, 1, "indices"));
  const int rank = data.rank();
  if (indices.rank() != rank || rank == 0) {
    return Bad(node, "data and indices must have the same rank (at least 1)");
  }
  int64_t axis = AttrInt(node, "axis", 0);
  if (axis < -rank || axis >= rank) return Bad(node, "axis out of range");
  if (axis < 0) axis += rank;
  // As integers: through a double, an index such as 2^63 - 1 has no int64
  // value again (undefined behaviour, found by onnx_fuzz) and indices above
  // 2^53 lose precision.
  absl::StatusOr<std::vector<int64_t>> idx_or = ToInt64s(indices);
  if (!idx_or.ok()) return Bad(node, idx_or.status().message());
  const std::vector<int64_t>& idx = *idx_or;
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(data.dtype(), indices.shape()));
  const size_t size = DataTypeSize(data.dtype());
  const char* src = static_cast<const char*>(data.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  std::vector<int64_t> pos(rank, 0);  // index into `indices`, row-major
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t k = idx[i];
    const int64_t dim = data.dim(axis);
    if (k < -dim || k >= dim) {
      return Bad(node, absl::StrCat("index ", k, " is out of range for axis ",
                                    axis, " of size ", dim));
    }
    if (k < 0) k += dim;
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) {
      const int64_t p = d == axis ? k : pos[d];
      if (p >= data.dim(d)) return Bad(node, "indices larger than data");
      offset = offset * data.dim(d) + p;
    }
    std::memcpy(dst + i * size, src + offset * size, size);
    for (int d = rank - 1; d >= 0; --d) {  // next position in `indices`
      if (++pos[d] < indices.dim(d)) break;
      pos[d] = 0;
    }
  }
  return SetConst(node, ctx, std::move(out));
}

// The shape is a sluice attribute when it is a constant whose entries do
// not copy more than one unknown input dimension (ONNX's 0); otherwise the
// node becomes a DynamicReshape that applies ONNX's rules at run time.
absl::Status ConvertReshape(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const bool allow_zero = AttrInt(node, "allowzero", 0) != 0;
  auto dynamic = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ValuePtr shape, ctx.ParamInput(node, 1));
    ASSIGN_OR_RETURN(
        ValuePtr y,
        ctx.em().Emit1("DynamicReshape", ctx.Hint(node), {x, shape},
                       {{"allowzero", MakeBoolAttr(allow_zero)}}));
    return ctx.SetOutput(node, 0, y);
  };
  if (ctx.IsRuntime(node, 1)) return dynamic();
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape,
                   ctx.ConstInts(node, 1, "shape"));
  if (!shape) return Bad(node, "needs its shape input");
  bool has_minus_one = false;
  for (int64_t d : *shape) has_minus_one = has_minus_one || d == -1;
  for (size_t i = 0; i < shape->size() && !allow_zero; ++i) {
    if ((*shape)[i] != 0) continue;
    // ONNX: 0 copies the input's dimension; sluice: 0 is a literal zero.
    int64_t dim =
        x->shape.unknown_rank() || static_cast<int>(i) >= x->shape.rank()
            ? kUnknownDim
            : x->shape.dim(i);
    if (dim < 0 && has_minus_one) return dynamic();
    if (dim < 0) has_minus_one = true;
    (*shape)[i] = dim < 0 ? -1 : dim;
  }
  ASSIGN_OR_RETURN(ValuePtr y, EmitReshape(ctx, ctx.Hint(node), x, *shape));
  return ctx.SetOutput(node, 0, y);
}

// Flatten when x's dims on both sides of `axis` are known only at run time:
// [prod(shape[:axis]), prod(shape[axis:])] computed by Shape and
// ReduceProd, then a DynamicReshape. Both products are computed rather
// than one left as -1, so that an empty x (no detections) flattens too; a
// negative axis counts from the end at run time, as Shape's bounds do.
absl::StatusOr<ValuePtr> EmitDynamicFlatten(const onnx::NodeProto& node,
                                            ImportContext& ctx, ValuePtr x,
                                            int64_t axis) {
  GraphEmitter& em = ctx.em();
  ValuePtr side[2];
  for (int i = 0; i < 2; ++i) {
    const char* what = i == 0 ? "outer" : "inner";
    AttrList bounds = {{"start", MakeIntAttr(i == 0 ? 0 : axis)}};
    if (i == 0) bounds["end"] = MakeIntAttr(axis);
    const std::string hint = ctx.Hint(node, absl::StrCat(what, "_dims"));
    ASSIGN_OR_RETURN(ValuePtr dims, em.Emit1("Shape", hint, {x}, bounds));
    // ReduceProd of no dims is 1 (axis 0 flattens to [1, n]).
    ASSIGN_OR_RETURN(side[i], em.Emit1("ReduceProd", ctx.Hint(node, what),
                                       {dims},
                                       {{"axes", MakeIntListAttr({0})},
                                        {"keepdims", MakeBoolAttr(true)}}));
  }
  ASSIGN_OR_RETURN(ValuePtr shape,
                   em.Emit1("Concat", ctx.Hint(node, "shape"),
                            {side[0], side[1]}, {{"axis", MakeIntAttr(0)}}));
  return em.Emit1("DynamicReshape", ctx.Hint(node), {x, shape},
                  {{"allowzero", MakeBoolAttr(true)}});
}

absl::Status ConvertFlatten(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  int64_t axis = AttrInt(node, "axis", 1);
  if (x->shape.unknown_rank()) {
    ASSIGN_OR_RETURN(ValuePtr y, EmitDynamicFlatten(node, ctx, x, axis));
    return ctx.SetOutput(node, 0, y);
  }
  const int rank = x->shape.rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return Bad(node, "axis out of range");
  int64_t outer = 1, inner = 1;
  bool outer_known = true, inner_known = true;
  for (int i = 0; i < rank; ++i) {
    int64_t d = x->shape.dim(i);
    bool& known = i < axis ? outer_known : inner_known;
    int64_t& prod = i < axis ? outer : inner;
    if (d < 0)
      known = false;
    else
      prod *= d;
  }
  if (!outer_known && !inner_known) {
    ASSIGN_OR_RETURN(ValuePtr y, EmitDynamicFlatten(node, ctx, x, axis));
    return ctx.SetOutput(node, 0, y);
  }
  ASSIGN_OR_RETURN(ValuePtr y, EmitReshape(ctx, ctx.Hint(node), x,
                                           {outer_known ? outer : -1,
                                            inner_known ? inner : -1}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertTranspose(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  std::vector<int64_t> perm =
      AttrInts(node, "perm").value_or(std::vector<int64_t>{});
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Transpose", ctx.Hint(node), {x},
                                  {{"perm", MakeIntListAttr(perm)}}));
  return ctx.SetOutput(node, 0, y);
}

// Axes from input 1 (opset 13 on) or the attribute (older forms).
absl::StatusOr<std::optional<std::vector<int64_t>>> Axes(
    const onnx::NodeProto& node, ImportContext& ctx, int input) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                   ctx.ConstInts(node, input, "axes"));
  if (!axes) axes = AttrInts(node, "axes");
  return axes;
}

absl::Status ConvertSqueeze(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (ctx.IsRuntime(node, 1)) {
    ASSIGN_OR_RETURN(ValuePtr axes, ctx.ParamInput(node, 1));
    ASSIGN_OR_RETURN(ValuePtr y,
                     ctx.em().Emit1(absl::StrCat("Dynamic", node.op_type()),
                                    ctx.Hint(node), {x, axes}));
    return ctx.SetOutput(node, 0, y);
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                   Axes(node, ctx, 1));
  const std::string op = node.op_type();
  if (op == "Unsqueeze" && !axes) return Bad(node, "needs axes");
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          op, ctx.Hint(node), {x},
          {{"axes", MakeIntListAttr(axes.value_or(std::vector<int64_t>{}))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertConcat(const onnx::NodeProto& node, ImportContext& ctx) {
  std::vector<ValuePtr> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr v, ctx.Input(node, i));
    inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Concat", ctx.Hint(node), inputs,
                     {{"axis", MakeIntAttr(AttrInt(node, "axis", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertSplit(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const int64_t axis = AttrInt(node, "axis", 0);
  if (ctx.IsRuntime(node, 1)) {
    ASSIGN_OR_RETURN(ValuePtr split, ctx.ParamInput(node, 1));
    ASSIGN_OR_RETURN(
        std::vector<ValuePtr> outs,
        ctx.em().Emit("DynamicSplit", ctx.Hint(node), {x, split},
                      {{"axis", MakeIntAttr(axis)},
                       {"num_split", MakeIntAttr(node.output_size())}}));
    for (size_t i = 0; i < outs.size(); ++i) {
      RETURN_IF_ERROR(ctx.SetOutput(node, static_cast<int>(i), outs[i]));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> sizes,
                   ctx.ConstInts(node, 1, "split sizes"));
  if (!sizes) sizes = AttrInts(node, "split");
  const int64_t n = AttrInt(node, "num_outputs", node.output_size());
  if (!sizes && !x->shape.unknown_rank()) {
    // Uneven parts (opset 18): ceil-sized chunks, the last one smaller.
    int a = static_cast<int>(axis < 0 ? axis + x->shape.rank() : axis);
    if (a >= 0 && a < x->shape.rank() && x->shape.dim(a) >= 0 && n > 0 &&
        x->shape.dim(a) % n != 0) {
      int64_t dim = x->shape.dim(a), chunk = (dim + n - 1) / n;
      sizes.emplace();
      for (int64_t i = 0; i < n; ++i) {
        sizes->push_back(
            std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
      }
    }
  }
  AttrList attrs = {{"axis", MakeIntAttr(axis)},
                    {"num_split", MakeIntAttr(sizes ? sizes->size() : n)}};
  if (sizes) attrs["sizes"] = MakeIntListAttr(*sizes);
  ASSIGN_OR_RETURN(std::vector<ValuePtr> outs,
                   ctx.em().Emit("Split", ctx.Hint(node), {x}, attrs));
  for (size_t i = 0; i < outs.size(); ++i) {
    RETURN_IF_ERROR(ctx.SetOutput(node, static_cast<int>(i), outs[i]));
  }
  return absl::OkStatus();
}

absl::Status ConvertSlice(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (ctx.IsRuntime(node, 1) || ctx.IsRuntime(node, 2) ||
      ctx.IsRuntime(node, 3) || ctx.IsRuntime(node, 4)) {
    std::vector<ValuePtr> in = {x};
    for (int i = 1; i <= 4; ++i) {
      ASSIGN_OR_RETURN(ValuePtr p, ctx.ParamInput(node, i));
      in.push_back(p);
    }
    ASSIGN_OR_RETURN(ValuePtr y,
                     ctx.em().Emit1("DynamicSlice", ctx.Hint(node), in));
    return ctx.SetOutput(node, 0, y);
  }
  ASSIGN_OR_RETURN(auto starts, ctx.ConstInts(node, 1, "starts"));
  ASSIGN_OR_RETURN(auto ends, ctx.ConstInts(node, 2, "ends"));
  ASSIGN_OR_RETURN(auto axes, ctx.ConstInts(node, 3, "axes"));
  ASSIGN_OR_RETURN(auto steps, ctx.ConstInts(node, 4, "steps"));
  if (!starts || !ends) return Bad(node, "needs starts and ends");
  AttrList attrs = {{"begin", MakeIntListAttr(*starts)},
                    {"end", MakeIntListAttr(*ends)}};
  if (axes) attrs["axes"] = MakeIntListAttr(*axes);
  if (steps) attrs["steps"] = MakeIntListAttr(*steps);
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Slice", ctx.Hint(node), {x}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertGather(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr params, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr indices, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Gather", ctx.Hint(node), {params, indices},
                     {{"axis", MakeIntAttr(AttrInt(node, "axis", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertExpand(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (ctx.IsRuntime(node, 1)) {
    ASSIGN_OR_RETURN(ValuePtr shape, ctx.ParamInput(node, 1));
    ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("DynamicExpand",
                                                ctx.Hint(node), {x, shape}));
    return ctx.SetOutput(node, 0, y);
  }
  ASSIGN_OR_RETURN(auto shape, ctx.ConstInts(node, 1, "shape"));
  if (!shape) return Bad(node, "needs its shape input");
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Expand", ctx.Hint(node), {x},
                                  {{"shape", MakeIntListAttr(*shape)}}));
  return ctx.SetOutput(node, 0, y);
}

// Tile, with its repeats (a constant or a runtime value) as an input.
absl::Status ConvertTile(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr repeats, ctx.ParamInput(node, 1));
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Tile", ctx.Hint(node), {x, repeats}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddShapeOps(OnnxOpTable* table) {
  (*table)["Tile"] = {ConvertTile, nullptr};
  (*table)["Shape"] = {ConvertShape, nullptr};
  (*table)["Size"] = {ConvertSize, nullptr};
  (*table)["Constant"] = {ConvertConstant, CheckConstant};
  (*table)["ConstantOfShape"] = {ConvertConstantOfShape, nullptr};
  (*table)["Range"] = {ConvertRange, nullptr};
  (*table)["GatherElements"] = {ConvertGatherElements, nullptr};
  (*table)["Reshape"] = {ConvertReshape, nullptr};
  (*table)["Flatten"] = {ConvertFlatten, nullptr};
  (*table)["Transpose"] = {ConvertTranspose, nullptr};
  (*table)["Squeeze"] = {ConvertSqueeze, nullptr};
  (*table)["Unsqueeze"] = {ConvertSqueeze, nullptr};
  (*table)["Concat"] = {ConvertConcat, nullptr};
  (*table)["Split"] = {ConvertSplit, nullptr};
  (*table)["Slice"] = {ConvertSlice, nullptr};
  (*table)["Gather"] = {ConvertGather, nullptr};
  (*table)["Expand"] = {ConvertExpand, nullptr};
}

}  // namespace sluice
