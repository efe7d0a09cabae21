// ONNX integer and quantised linear algebra, lowered to sluice ops the way
// the ONNX reference computes them (onnx/reference/ops/op_*.py):
//   MatMulInteger:  int32 (A - a_zp) x (B - b_zp)
//   QLinearMatMul:  saturate(rint(C * (a_scale * b_scale / y_scale)) + y_zp)
//                   with C the integer product above
//   ConvInteger, QLinearConv: the same around a 2-D convolution
//   DynamicQuantizeLinear: uint8 quantisation with the scale and zero point
//                   from the input's range (extended to include 0)
// The integer products run as float64 MatMul (exact: every partial sum of
// 8-bit products stays far below 2^53). Conv2D runs in float32 only, so
// ConvInteger and QLinearConv are refused where a sum of
// C/group*KH*KW products of 8-bit values could pass 2^24 (and be rounded).
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

constexpr double kExactFloat = 16777216.0;  // 2^24
constexpr double kMaxProduct = 255.0 * 255.0;

absl::StatusOr<std::pair<double, double>> IntRange(DataType t) {
  switch (t) {
    case DT_UINT8: return std::make_pair(0.0, 255.0);
    case DT_INT8: return std::make_pair(-128.0, 127.0);
    default:
      return absl::UnimplementedError(absl::StrCat(
          "quantised type ", DataTypeName(t), " (int8 or uint8 only)"));
  }
}

// float(x) - float(zp) in `wide`; zp (optional) per-tensor, or per-row of
// A (`row_axis` >= 0: a 1-D zp reshaped to [M, 1]).
absl::StatusOr<ValuePtr> Centred(const onnx::NodeProto& node,
                                 ImportContext& ctx, ValuePtr x, ValuePtr zp,
                                 DataType wide, absl::string_view name,
                                 std::vector<int64_t> zp_shape = {}) {
  ASSIGN_OR_RETURN(ValuePtr xf, EmitCastTo(ctx, ctx.Hint(node, name), x, wide));
  if (zp == nullptr) return xf;
  ASSIGN_OR_RETURN(ValuePtr zf,
                   EmitCastTo(ctx, ctx.Hint(node, absl::StrCat(name, "_zp")),
                              zp, wide));
  if (!zp_shape.empty() && zf->shape.IsFullyDefined() &&
      zf->shape.num_elements() > 1) {
    ASSIGN_OR_RETURN(zf, EmitReshape(ctx,
                                     ctx.Hint(node, absl::StrCat(name, "_zpr")),
                                     zf, zp_shape));
  }
  return ctx.em().Emit1("Sub", ctx.Hint(node, absl::StrCat(name, "_c")),
                        {xf, zf});
}

// The integer product (A - a_zp)(B - b_zp) in float64. A 1-D a_zp is per
// row of A ([M] -> [M, 1]); a 1-D b_zp is per column of B (broadcasts).
absl::StatusOr<ValuePtr> IntMatMul(const onnx::NodeProto& node,
                                   ImportContext& ctx, ValuePtr a, ValuePtr azp,
                                   ValuePtr b, ValuePtr bzp) {
  ASSIGN_OR_RETURN(ValuePtr ac, Centred(node, ctx, a, azp, DT_DOUBLE, "a",
                                        {-1, 1}));
  ASSIGN_OR_RETURN(ValuePtr bc, Centred(node, ctx, b, bzp, DT_DOUBLE, "b"));
  return ctx.em().Emit1("MatMul", ctx.Hint(node, "int_product"), {ac, bc});
}

absl::Status ConvertMatMulInteger(const onnx::NodeProto& node,
                                  ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr a, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr azp, ctx.OptionalInput(node, 2));
  ASSIGN_OR_RETURN(ValuePtr bzp, ctx.OptionalInput(node, 3));
  RETURN_IF_ERROR(IntRange(a->dtype).status());
  RETURN_IF_ERROR(IntRange(b->dtype).status());
  ASSIGN_OR_RETURN(ValuePtr c, IntMatMul(node, ctx, a, azp, b, bzp));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Cast", ctx.Hint(node), {c},
                                              {{"DstT", MakeTypeAttr(DT_INT32)}}));
  return ctx.SetOutput(node, 0, y);
}

// y = saturate(rint(acc * (x_scale * w_scale / y_scale)) + y_zp) of y_zp's
// type (else `fallback`); acc is float64, the scale factor is computed in
// the scales' dtype, as the reference does. `w_scale_shape` reshapes a
// per-channel w_scale.
absl::StatusOr<ValuePtr> Requantize(const onnx::NodeProto& node,
                                    ImportContext& ctx, ValuePtr acc,
                                    ValuePtr x_scale, ValuePtr w_scale,
                                    ValuePtr y_scale, ValuePtr y_zp,
                                    DataType fallback,
                                    std::vector<int64_t> w_scale_shape = {}) {
  auto& em = ctx.em();
  const DataType out = y_zp != nullptr ? y_zp->dtype : fallback;
  ASSIGN_OR_RETURN(auto range, IntRange(out));
  if (!w_scale_shape.empty() && w_scale->shape.IsFullyDefined() &&
      w_scale->shape.num_elements() > 1) {
    ASSIGN_OR_RETURN(w_scale, EmitReshape(ctx, ctx.Hint(node, "w_scale_c"),
                                          w_scale, w_scale_shape));
  }
  ASSIGN_OR_RETURN(ValuePtr f, em.Emit1("Mul", ctx.Hint(node, "scale_xw"),
                                        {x_scale, w_scale}));
  ASSIGN_OR_RETURN(f, em.Emit1("Div", ctx.Hint(node, "scale"), {f, y_scale}));
  ASSIGN_OR_RETURN(f, EmitCastTo(ctx, ctx.Hint(node, "scale64"), f, DT_DOUBLE));
  ASSIGN_OR_RETURN(ValuePtr d, em.Emit1("Mul", ctx.Hint(node, "scaled"),
                                        {acc, f}));
  if (y_zp != nullptr) {
    ASSIGN_OR_RETURN(ValuePtr z, EmitCastTo(ctx, ctx.Hint(node, "y_zp64"),
                                            y_zp, DT_DOUBLE));
    ASSIGN_OR_RETURN(d, em.Emit1("Add", ctx.Hint(node, "shifted"), {d, z}));
  }
  ASSIGN_OR_RETURN(d, em.Emit1("Round", ctx.Hint(node, "rounded"), {d}));
  ASSIGN_OR_RETURN(d, em.Emit1("Maximum", ctx.Hint(node, "above_min"),
                               {d, Scalar(ctx, DT_DOUBLE, range.first,
                                          ctx.Hint(node, "qmin"))}));
  ASSIGN_OR_RETURN(d, em.Emit1("Minimum", ctx.Hint(node, "saturated"),
                               {d, Scalar(ctx, DT_DOUBLE, range.second,
                                          ctx.Hint(node, "qmax"))}));
  return em.Emit1("Cast", ctx.Hint(node), {d}, {{"DstT", MakeTypeAttr(out)}});
}

absl::Status ConvertQLinearMatMul(const onnx::NodeProto& node,
                                  ImportContext& ctx) {
  std::vector<ValuePtr> in(8);
  for (int i = 0; i < 8; ++i) {
    ASSIGN_OR_RETURN(in[i], ctx.OptionalInput(node, i));
  }
  for (int i : {0, 1, 3, 4, 6}) {
    if (in[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("QLinearMatMul input ", i, " is required"));
    }
  }
  ASSIGN_OR_RETURN(ValuePtr c, IntMatMul(node, ctx, in[0], in[2], in[3], in[5]));
  ASSIGN_OR_RETURN(ValuePtr y, Requantize(node, ctx, c, in[1], in[4], in[6],
                                          in[7], in[0]->dtype));
  return ctx.SetOutput(node, 0, y);
}

// The Conv2D attributes of a ConvInteger/QLinearConv node, or why not.
absl::StatusOr<AttrList> ConvAttrs(const onnx::NodeProto& node,
                                   const ValuePtr& x, const ValuePtr& w) {
  if (!w->shape.IsFullyDefined() || w->shape.rank() != 4 ||
      x->shape.unknown_rank() || x->shape.rank() != 4) {
    return absl::UnimplementedError(absl::StrCat(
        "only 2-D convolution with known weights is supported; X ",
        x->shape.DebugString(), ", W ", w->shape.DebugString()));
  }
  const std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return absl::UnimplementedError(
        absl::StrCat("auto_pad ", auto_pad, " is not supported"));
  }
  const int64_t volume = w->shape.dim(1) * w->shape.dim(2) * w->shape.dim(3);
  if (static_cast<double>(volume) * kMaxProduct >= kExactFloat) {
    return absl::UnimplementedError(absl::StrCat(
        "a filter of ", volume, " taps could round in float32 Conv2D "
        "(exact up to ", static_cast<int64_t>(kExactFloat / kMaxProduct),
        ")"));
  }
  std::vector<int64_t> pads = AttrInts(node, "pads").value_or(
      std::vector<int64_t>{0, 0, 0, 0});
  if (pads.size() != 4) {
    return absl::InvalidArgumentError("pads must have 4 values");
  }
  // ONNX pads are [top, left, bottom, right], as Conv2D's.
  AttrList attrs = {
      {"strides", MakeIntListAttr(AttrInts(node, "strides").value_or(
                      std::vector<int64_t>{1, 1}))},
      {"dilations", MakeIntListAttr(AttrInts(node, "dilations").value_or(
                        std::vector<int64_t>{1, 1}))},
      {"pads", MakeIntListAttr(pads)},
      {"group", MakeIntAttr(AttrInt(node, "group", 1))}};
  return attrs;
}

// The convolution of (x - x_zp) and (w - w_zp) in float32 (exact, see
// ConvAttrs), as float64.
absl::StatusOr<ValuePtr> IntConv(const onnx::NodeProto& node,
                                 ImportContext& ctx, ValuePtr x, ValuePtr xzp,
                                 ValuePtr w, ValuePtr wzp) {
  ASSIGN_OR_RETURN(AttrList attrs, ConvAttrs(node, x, w));
  ASSIGN_OR_RETURN(ValuePtr xc, Centred(node, ctx, x, xzp, DT_FLOAT, "x"));
  ASSIGN_OR_RETURN(ValuePtr wc, Centred(node, ctx, w, wzp, DT_FLOAT, "w",
                                        {-1, 1, 1, 1}));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Conv2D", ctx.Hint(node, "conv"),
                                              {xc, wc}, attrs));
  return EmitCastTo(ctx, ctx.Hint(node, "conv64"), y, DT_DOUBLE);
}

absl::Status ConvertConvInteger(const onnx::NodeProto& node,
                                ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr xzp, ctx.OptionalInput(node, 2));
  ASSIGN_OR_RETURN(ValuePtr wzp, ctx.OptionalInput(node, 3));
  ASSIGN_OR_RETURN(ValuePtr acc, IntConv(node, ctx, x, xzp, w, wzp));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Cast", ctx.Hint(node), {acc},
                                              {{"DstT", MakeTypeAttr(DT_INT32)}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertQLinearConv(const onnx::NodeProto& node,
                                ImportContext& ctx) {
  std::vector<ValuePtr> in(9);
  for (int i = 0; i < 9; ++i) {
    ASSIGN_OR_RETURN(in[i], ctx.OptionalInput(node, i));
  }
  for (int i : {0, 1, 3, 4, 6}) {
    if (in[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("QLinearConv input ", i, " is required"));
    }
  }
  ASSIGN_OR_RETURN(ValuePtr acc, IntConv(node, ctx, in[0], in[2], in[3],
                                         in[5]));
  if (in[8] != nullptr) {
    ASSIGN_OR_RETURN(ValuePtr bias, EmitCastTo(ctx, ctx.Hint(node, "bias64"),
                                               in[8], DT_DOUBLE));
    ASSIGN_OR_RETURN(bias, EmitReshape(ctx, ctx.Hint(node, "bias_c11"), bias,
                                       {-1, 1, 1}));
    ASSIGN_OR_RETURN(acc, ctx.em().Emit1("Add", ctx.Hint(node, "biased"),
                                         {acc, bias}));
  }
  ASSIGN_OR_RETURN(ValuePtr y, Requantize(node, ctx, acc, in[1], in[4], in[6],
                                          in[7], in[0]->dtype, {-1, 1, 1}));
  return ctx.SetOutput(node, 0, y);
}

// y_scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when both are 0),
// y_zp = rint(clip(-min / y_scale, 0, 255)),
// y = clip(rint(x / y_scale) + y_zp, 0, 255) as uint8.
absl::Status ConvertDynamicQuantize(const onnx::NodeProto& node,
                                    ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->dtype != DT_FLOAT) {
    return absl::UnimplementedError(absl::StrCat(
        "DynamicQuantizeLinear of ", DataTypeName(x->dtype),
        " (float32 only)"));
  }
  auto& em = ctx.em();
  auto h = [&](absl::string_view s) { return ctx.Hint(node, s); };
  const AttrList all = {{"keepdims", MakeBoolAttr(false)}};
  ValuePtr zero = Scalar(ctx, DT_FLOAT, 0, h("zero"));
  ValuePtr qmax = Scalar(ctx, DT_FLOAT, 255, h("qmax"));
  ASSIGN_OR_RETURN(ValuePtr hi, em.Emit1("ReduceMax", h("max"), {x}, all));
  ASSIGN_OR_RETURN(hi, em.Emit1("Maximum", h("max0"), {hi, zero}));
  ASSIGN_OR_RETURN(ValuePtr neg, em.Emit1("Neg", h("neg"), {x}));
  ASSIGN_OR_RETURN(ValuePtr lo, em.Emit1("ReduceMax", h("neg_min"), {neg},
                                         all));
  ASSIGN_OR_RETURN(lo, em.Emit1("Neg", h("min"), {lo}));
  ASSIGN_OR_RETURN(lo, em.Emit1("Minimum", h("min0"), {lo, zero}));
  ASSIGN_OR_RETURN(ValuePtr span, em.Emit1("Sub", h("span"), {hi, lo}));
  ASSIGN_OR_RETURN(ValuePtr flat, em.Emit1("Equal", h("flat"), {hi, lo}));
  ASSIGN_OR_RETURN(span, em.Emit1("Where", h("span1"),
                                  {flat, Scalar(ctx, DT_FLOAT, 1, h("one")),
                                   span}));
  ASSIGN_OR_RETURN(ValuePtr scale, em.Emit1("Div", h("y_scale"),
                                            {span, qmax}));
  ASSIGN_OR_RETURN(ValuePtr zp, em.Emit1("Div", h("min_scaled"), {lo, scale}));
  ASSIGN_OR_RETURN(zp, em.Emit1("Neg", h("zp_f"), {zp}));
  ASSIGN_OR_RETURN(zp, em.Emit1("Maximum", h("zp_lo"), {zp, zero}));
  ASSIGN_OR_RETURN(zp, em.Emit1("Minimum", h("zp_hi"), {zp, qmax}));
  ASSIGN_OR_RETURN(zp, em.Emit1("Round", h("zp_r"), {zp}));
  ASSIGN_OR_RETURN(ValuePtr q, em.Emit1("Div", h("x_scaled"), {x, scale}));
  ASSIGN_OR_RETURN(q, em.Emit1("Round", h("x_rounded"), {q}));
  ASSIGN_OR_RETURN(q, em.Emit1("Add", h("x_shifted"), {q, zp}));
  ASSIGN_OR_RETURN(q, em.Emit1("Maximum", h("y_lo"), {q, zero}));
  ASSIGN_OR_RETURN(q, em.Emit1("Minimum", h("y_hi"), {q, qmax}));
  const AttrList to_u8 = {{"DstT", MakeTypeAttr(DT_UINT8)}};
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Cast", h("y"), {q}, to_u8));
  ASSIGN_OR_RETURN(ValuePtr zp8, em.Emit1("Cast", h("y_zero_point"), {zp},
                                          to_u8));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, y));
  RETURN_IF_ERROR(ctx.SetOutput(node, 1, scale));
  return ctx.SetOutput(node, 2, zp8);
}

}  // namespace

void AddQLinearOps(OnnxOpTable* table) {
  (*table)["MatMulInteger"] = {ConvertMatMulInteger, nullptr};
  (*table)["QLinearMatMul"] = {ConvertQLinearMatMul, nullptr};
  (*table)["ConvInteger"] = {ConvertConvInteger, nullptr};
  (*table)["QLinearConv"] = {ConvertQLinearConv, nullptr};
  (*table)["DynamicQuantizeLinear"] = {ConvertDynamicQuantize, nullptr};
}

}  // namespace sluice
