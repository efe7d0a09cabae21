// ONNX signal and detection ops mapped to sluice ops of their own
// (graph/ops/seq_ops.cc): DFT (17: axis attribute; 20: axis input), the
// Hann, Hamming and Blackman windows (one Window op), and
// NonMaxSuppression. Absent optional inputs become explicit constants:
// DFT's length 0 (the signal's), NonMaxSuppression's parameters empty
// tensors (their defaults).
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

ValuePtr Int64Scalar(ImportContext& ctx, int64_t v, absl::string_view hint) {
  return ctx.em().AddConstant(ScalarTensor(DT_INT64, static_cast<double>(v)),
                              hint);
}

// Input i as an int64 scalar, or `fallback` when absent.
absl::StatusOr<ValuePtr> IntParam(const onnx::NodeProto& node,
                                  ImportContext& ctx, int i, int64_t fallback,
                                  absl::string_view name) {
  ASSIGN_OR_RETURN(ValuePtr v, ctx.OptionalInput(node, i));
  if (v == nullptr) return Int64Scalar(ctx, fallback, ctx.Hint(node, name));
  return EmitCastTo(ctx, ctx.Hint(node, absl::StrCat(name, "_i64")), v,
                    DT_INT64);
}

absl::Status ConvertDft(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr len, IntParam(node, ctx, 1, 0, "dft_length"));
  ValuePtr axis;
  if (ctx.opset() >= 20) {
    ASSIGN_OR_RETURN(axis, IntParam(node, ctx, 2, -2, "axis"));
  } else {
    axis = Int64Scalar(ctx, AttrInt(node, "axis", 1), ctx.Hint(node, "axis"));
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("DFT", ctx.Hint(node), {x, len, axis},
                     {{"inverse", MakeBoolAttr(AttrInt(node, "inverse", 0))},
                      {"onesided",
                       MakeBoolAttr(AttrInt(node, "onesided", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertStft(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr step, IntParam(node, ctx, 1, 0, "frame_step"));
  ASSIGN_OR_RETURN(ValuePtr window, ctx.OptionalInput(node, 2));
  if (window == nullptr) {
    ASSIGN_OR_RETURN(Tensor empty, Tensor::Create(x->dtype, Shape({0})));
    window = ctx.em().AddConstant(empty, ctx.Hint(node, "no_window"));
  }
  ASSIGN_OR_RETURN(ValuePtr len, IntParam(node, ctx, 3, 0, "frame_length"));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("STFT", ctx.Hint(node), {x, step, window, len},
                     {{"onesided",
                       MakeBoolAttr(AttrInt(node, "onesided", 1) != 0)}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertWindow(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr size, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(DataType out,
                   DataTypeFromOnnx(static_cast<int32_t>(
                       AttrInt(node, "output_datatype", 1))));
  const std::string& op = node.op_type();
  const std::string kind = op == "HannWindow"      ? "hann"
                           : op == "HammingWindow" ? "hamming"
                                                   : "blackman";
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Window", ctx.Hint(node), {size},
                     {{"T", MakeTypeAttr(out)},
                      {"window", MakeStringAttr(kind)},
                      {"periodic", MakeBoolAttr(AttrInt(node, "periodic", 1))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertMel(const onnx::NodeProto& node, ImportContext& ctx) {
  std::vector<ValuePtr> in(5);
  for (int i = 0; i < 5; ++i) {
    ASSIGN_OR_RETURN(in[i], ctx.Input(node, i));
    ASSIGN_OR_RETURN(in[i], EmitCastTo(ctx, ctx.Hint(node, absl::StrCat("in", i)),
                                       in[i], i < 3 ? DT_INT64 : DT_FLOAT));
  }
  ASSIGN_OR_RETURN(DataType out,
                   DataTypeFromOnnx(static_cast<int32_t>(
                       AttrInt(node, "output_datatype", 1))));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("MelWeightMatrix",
                                              ctx.Hint(node), in,
                                              {{"T", MakeTypeAttr(out)}}));
  return ctx.SetOutput(node, 0, y);
}

// Input i cast to `dtype`, or an empty [0] tensor when absent.
absl::StatusOr<ValuePtr> ParamOrEmpty(const onnx::NodeProto& node,
                                      ImportContext& ctx, int i,
                                      DataType dtype, absl::string_view name) {
  ASSIGN_OR_RETURN(ValuePtr v, ctx.OptionalInput(node, i));
  if (v == nullptr) {
    ASSIGN_OR_RETURN(Tensor empty, Tensor::Create(dtype, Shape({0})));
    return ctx.em().AddConstant(empty, ctx.Hint(node, name));
  }
  return EmitCastTo(ctx, ctx.Hint(node, name), v, dtype);
}

absl::Status ConvertNms(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr boxes, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr scores, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr max_out, ParamOrEmpty(node, ctx, 2, DT_INT64,
                                                  "max_output_boxes"));
  ASSIGN_OR_RETURN(ValuePtr iou, ParamOrEmpty(node, ctx, 3, DT_FLOAT,
                                              "iou_threshold"));
  ASSIGN_OR_RETURN(ValuePtr score, ParamOrEmpty(node, ctx, 4, DT_FLOAT,
                                                "score_threshold"));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("NonMaxSuppression", ctx.Hint(node),
                     {boxes, scores, max_out, iou, score},
                     {{"center_point_box",
                       MakeIntAttr(AttrInt(node, "center_point_box", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddSignalOps(OnnxOpTable* table) {
  (*table)["DFT"] = {ConvertDft, nullptr};
  (*table)["STFT"] = {ConvertStft, nullptr};
  (*table)["MelWeightMatrix"] = {ConvertMel, nullptr};
  (*table)["HannWindow"] = {ConvertWindow, nullptr};
  (*table)["HammingWindow"] = {ConvertWindow, nullptr};
  (*table)["BlackmanWindow"] = {ConvertWindow, nullptr};
  (*table)["NonMaxSuppression"] = {ConvertNms, nullptr};
}

}  // namespace sluice
