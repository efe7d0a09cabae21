// ONNX QuantizeLinear and DequantizeLinear, lowered to sluice ops for the
// per-tensor and per-axis forms with 8-, 16-, 32-, 4- and 2-bit integers and
// the float8 / float4 types:
//   Dequantize: y = (float(x) - float(zero_point)) * scale
//   Quantize:   y = saturate(round_half_even(x / scale) + zero_point)
//   to float8:  y = Cast(x / scale + zero_point), saturating per `saturate`
// Blocked quantisation (block_size > 0) and float8 E8M0 outputs are refused.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

std::string CheckQuant(const onnx::NodeProto& node, int opset) {
  if (AttrInt(node, "block_size", 0) != 0) {
    return "blocked quantisation (block_size > 0) is not supported";
  }
  return "";
}

// A 1-D per-axis parameter reshaped to broadcast along `axis` of x; a
// scalar or one-element parameter as it is.
absl::StatusOr<ValuePtr> AlongAxis(const onnx::NodeProto& node,
                                   ImportContext& ctx, ValuePtr x, ValuePtr p,
                                   absl::string_view name) {
  if (p->shape.unknown_rank() || p->shape.rank() == 0 ||
      (p->shape.rank() == 1 && p->shape.dim(0) == 1)) {
    return p;
  }
  if (x->shape.unknown_rank() || p->shape.rank() != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "a per-axis ", name, " needs the input's rank known and a 1-D ",
        name));
  }
  const int rank = x->shape.rank();
  int64_t axis = AttrInt(node, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis out of range for rank ", rank));
  }
  std::vector<int64_t> dims(rank, 1);
  dims[axis] = p->shape.dim(0);
  return EmitReshape(ctx, ctx.Hint(node, absl::StrCat(name, "_axis")), p,
                     dims);
}

absl::Status ConvertDequantize(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr scale, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr zp, ctx.OptionalInput(node, 2));
  DataType out = scale->dtype;
  if (FindAttr(node, "output_dtype") != nullptr &&
      AttrInt(node, "output_dtype", 0) != 0) {
    ASSIGN_OR_RETURN(out, DataTypeFromOnnx(static_cast<int32_t>(
                              AttrInt(node, "output_dtype", 0))));
  }
  auto& em = ctx.em();
  ASSIGN_OR_RETURN(ValuePtr xf, EmitCastTo(ctx, ctx.Hint(node, "x_f"), x, out));
  ASSIGN_OR_RETURN(scale, EmitCastTo(ctx, ctx.Hint(node, "scale_f"), scale, out));
  ASSIGN_OR_RETURN(scale, AlongAxis(node, ctx, x, scale, "scale"));
  if (zp != nullptr) {
    ASSIGN_OR_RETURN(ValuePtr zf,
                     EmitCastTo(ctx, ctx.Hint(node, "zero_point_f"), zp, out));
    ASSIGN_OR_RETURN(zf, AlongAxis(node, ctx, x, zf, "zero_point"));
    ASSIGN_OR_RETURN(xf, em.Emit1("Sub", ctx.Hint(node, "centred"), {xf, zf}));
  }
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Mul", ctx.Hint(node), {xf, scale}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertQuantize(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr scale, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr zp, ctx.OptionalInput(node, 2));
  DataType out = zp != nullptr ? zp->dtype : DT_UINT8;
  if (FindAttr(node, "output_dtype") != nullptr &&
      AttrInt(node, "output_dtype", 0) != 0) {
    ASSIGN_OR_RETURN(out, DataTypeFromOnnx(static_cast<int32_t>(
                              AttrInt(node, "output_dtype", 0))));
  }
  // Small floats: no rounding step and no clamp; the Cast rounds to nearest
  // even and saturates per the `saturate` attribute.
  const bool to_float = IsSmallFloat(out);
  double lo = 0, hi = 0;
  switch (out) {
    case DT_UINT8: lo = 0; hi = 255; break;
    case DT_INT8: lo = -128; hi = 127; break;
    case DT_UINT16: lo = 0; hi = 65535; break;
    case DT_INT16: lo = -32768; hi = 32767; break;
    case DT_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    case DT_UINT4: lo = 0; hi = 15; break;
    case DT_INT4: lo = -8; hi = 7; break;
    case DT_UINT2: lo = 0; hi = 3; break;
    case DT_INT2: lo = -2; hi = 1; break;
    default:
      if (to_float && out != DT_FLOAT8_E8M0) break;
      return absl::UnimplementedError(absl::StrCat(
          "quantising to ", DataTypeName(out), " is not supported"));
  }
  auto& em = ctx.em();
  const DataType t = x->dtype;
  ASSIGN_OR_RETURN(scale, EmitCastTo(ctx, ctx.Hint(node, "scale_t"), scale, t));
  ASSIGN_OR_RETURN(scale, AlongAxis(node, ctx, x, scale, "scale"));
  ASSIGN_OR_RETURN(ValuePtr q, em.Emit1("Div", ctx.Hint(node, "scaled"),
                                        {x, scale}));
  if (!to_float) {
    ASSIGN_OR_RETURN(q, em.Emit1("Round", ctx.Hint(node, "rounded"), {q}));
  }
  if (zp != nullptr) {
    ASSIGN_OR_RETURN(ValuePtr zf,
                     EmitCastTo(ctx, ctx.Hint(node, "zero_point_t"), zp, t));
    ASSIGN_OR_RETURN(zf, AlongAxis(node, ctx, x, zf, "zero_point"));
    ASSIGN_OR_RETURN(q, em.Emit1("Add", ctx.Hint(node, "shifted"), {q, zf}));
  }
  if (to_float) {
    const bool saturate = AttrInt(node, "saturate", 1) != 0;
    ASSIGN_OR_RETURN(ValuePtr y,
                     em.Emit1("Cast", ctx.Hint(node), {q},
                              {{"DstT", MakeTypeAttr(out)},
                               {"saturate", MakeBoolAttr(saturate)}}));
    return ctx.SetOutput(node, 0, y);
  }
  ValuePtr lo_v = em.AddConstant(ScalarTensor(t, lo), ctx.Hint(node, "qmin"));
  ValuePtr hi_v = em.AddConstant(ScalarTensor(t, hi), ctx.Hint(node, "qmax"));
  ASSIGN_OR_RETURN(q, em.Emit1("Maximum", ctx.Hint(node, "above_min"),
                               {q, lo_v}));
  ASSIGN_OR_RETURN(q, em.Emit1("Minimum", ctx.Hint(node, "saturated"),
                               {q, hi_v}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Cast", ctx.Hint(node), {q},
                                        {{"DstT", MakeTypeAttr(out)}}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddQuantOps(OnnxOpTable* table) {
  (*table)["DequantizeLinear"] = {ConvertDequantize, CheckQuant};
  (*table)["QuantizeLinear"] = {ConvertQuantize, CheckQuant};
}

}  // namespace sluice
