// ONNX sequence-model ops lowered to existing sluice ops (no kernel of
// their own), following the ONNX reference implementations:
//   SwiGLU (28):              y = a * sigmoid(alpha * a) * b
//   RotaryEmbedding (23):     rotates the first rotary_embedding_dim
//                             channels of each head by the cos/sin caches
//                             (halves or interleaved pairs)
//   CausalConvWithState (27): a depthwise causal Conv1d over the past
//                             state and the input (as a Conv2D of height
//                             1), optional SiLU, and the last k - 1 padded
//                             positions as the new state.
// Each needs its inputs' shapes known at import. LinearAttention and
// TensorScatter map to the sluice ops of those names, with the absent
// optional inputs made explicit (a zero state, zero write indices).
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_join.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

// A constant of `dtype` and `shape`, all zeros, made for `what` (default:
// the hint) within the importer's limits.
absl::StatusOr<ValuePtr> Zeros(ImportContext& ctx, DataType dtype,
                               const std::vector<int64_t>& shape,
                               absl::string_view hint,
                               absl::string_view what = "") {
  return ctx.em().CreateConstant(
      what.empty() ? hint : what, dtype, Shape(shape),
      [](Tensor& t) { std::memset(t.raw_data(), 0, t.bytes()); }, hint);
}

absl::Status NeedShape(const ValuePtr& v, int rank, absl::string_view name) {
  if (!v->shape.IsFullyDefined() || (rank >= 0 && v->shape.rank() != rank)) {
    return absl::UnimplementedError(absl::StrCat(
        name, " needs a known ", rank >= 0 ? absl::StrCat(rank, "-D ") : "",
        "shape, got ", v->shape.DebugString()));
  }
  return absl::OkStatus();
}

// x[..., begin:end] along `axis`.
absl::StatusOr<ValuePtr> SliceAxis(ImportContext& ctx, absl::string_view hint,
                                   ValuePtr x, int64_t axis, int64_t begin,
                                   int64_t end) {
  return ctx.em().Emit1("Slice", std::string(hint), {x},
                        {{"begin", MakeIntListAttr({begin})},
                         {"end", MakeIntListAttr({end})},
                         {"axes", MakeIntListAttr({axis})}});
}

absl::Status ConvertSwiGlu(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr a, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.Input(node, 1));
  if (a->shape.IsFullyDefined() && b->shape.IsFullyDefined() &&
      a->shape != b->shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SwiGLU needs A and B of one shape, got ", a->shape.DebugString(),
        " and ", b->shape.DebugString()));
  }
  auto& em = ctx.em();
  const float alpha = AttrFloat(node, "alpha", 1.0f);
  ValuePtr gate_in = a;
  if (alpha != 1.0f) {
    ValuePtr al = em.AddConstant(ScalarTensor(a->dtype, alpha),
                                 ctx.Hint(node, "alpha"));
    ASSIGN_OR_RETURN(gate_in, em.Emit1("Mul", ctx.Hint(node, "alpha_a"),
                                       {a, al}));
  }
  ASSIGN_OR_RETURN(ValuePtr g, em.Emit1("Sigmoid", ctx.Hint(node, "gate"),
                                        {gate_in}));
  ASSIGN_OR_RETURN(ValuePtr swish, em.Emit1("Mul", ctx.Hint(node, "swish"),
                                            {a, g}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Mul", ctx.Hint(node), {swish, b}));
  return ctx.SetOutput(node, 0, y);
}

class RotaryLowering {
 public:
  RotaryLowering(const onnx::NodeProto& node, ImportContext& ctx)
      : node_(node), ctx_(ctx), em_(ctx.em()) {}

  absl::Status Run() {
    ASSIGN_OR_RETURN(ValuePtr x, ctx_.Input(node_, 0));
    ASSIGN_OR_RETURN(ValuePtr cos, ctx_.Input(node_, 1));
    ASSIGN_OR_RETURN(ValuePtr sin, ctx_.Input(node_, 2));
    RETURN_IF_ERROR(NeedShape(x, -1, "RotaryEmbedding's input"));
    const bool four_d = x->shape.rank() == 4;
    if (!four_d && x->shape.rank() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RotaryEmbedding's input must be 3-D or 4-D, got ",
          x->shape.DebugString()));
    }
    const int64_t b = x->shape.dim(0);
    const int64_t s = four_d ? x->shape.dim(2) : x->shape.dim(1);
    int64_t h, d;
    if (four_d) {
      h = x->shape.dim(1);
      d = x->shape.dim(3);
      ASSIGN_OR_RETURN(x, Transpose(x, "x_bshd"));
    } else {
      h = AttrInt(node_, "num_heads", 0);
      if (h <= 0 || x->shape.dim(2) % h != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a 3-D input needs num_heads dividing its hidden size ",
            x->shape.dim(2), ", got ", h));
      }
      d = x->shape.dim(2) / h;
      ASSIGN_OR_RETURN(x, EmitReshape(ctx_, Hint("x_bshd"), x, {b, s, h, d}));
    }
    int64_t r = AttrInt(node_, "rotary_embedding_dim", 0);
    if (r == 0) r = d;
    if (r < 0 || r > d || r % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rotary_embedding_dim ", r, " must be even and at most the head "
          "size ", d));
    }
    const int64_t half = r / 2;
    ASSIGN_OR_RETURN(cos, Cache(cos, b, s, half, "cos"));
    ASSIGN_OR_RETURN(sin, Cache(sin, b, s, half, "sin"));

    ValuePtr rot = x;
    if (r < d) {
      ASSIGN_OR_RETURN(rot, SliceAxis(ctx_, Hint("x_rot"), x, 3, 0, r));
    }
    const bool interleaved = AttrInt(node_, "interleaved", 0) != 0;
    ValuePtr x1, x2;
    if (interleaved) {
      ASSIGN_OR_RETURN(ValuePtr pairs, EmitReshape(ctx_, Hint("pairs"), rot,
                                                   {b, s, h, half, 2}));
      ASSIGN_OR_RETURN(x1, SliceAxis(ctx_, Hint("x1_5d"), pairs, 4, 0, 1));
      ASSIGN_OR_RETURN(x2, SliceAxis(ctx_, Hint("x2_5d"), pairs, 4, 1, 2));
      ASSIGN_OR_RETURN(x1, EmitReshape(ctx_, Hint("x1"), x1, {b, s, h, half}));
      ASSIGN_OR_RETURN(x2, EmitReshape(ctx_, Hint("x2"), x2, {b, s, h, half}));
    } else {
      ASSIGN_OR_RETURN(x1, SliceAxis(ctx_, Hint("x1"), rot, 3, 0, half));
      ASSIGN_OR_RETURN(x2, SliceAxis(ctx_, Hint("x2"), rot, 3, half, r));
    }
    ASSIGN_OR_RETURN(ValuePtr c1, em_.Emit1("Mul", Hint("cos_x1"), {cos, x1}));
    ASSIGN_OR_RETURN(ValuePtr s2, em_.Emit1("Mul", Hint("sin_x2"), {sin, x2}));
    ASSIGN_OR_RETURN(ValuePtr s1, em_.Emit1("Mul", Hint("sin_x1"), {sin, x1}));
    ASSIGN_OR_RETURN(ValuePtr c2, em_.Emit1("Mul", Hint("cos_x2"), {cos, x2}));
    ASSIGN_OR_RETURN(ValuePtr real, em_.Emit1("Sub", Hint("real"), {c1, s2}));
    ASSIGN_OR_RETURN(ValuePtr imag, em_.Emit1("Add", Hint("imag"), {s1, c2}));
    if (interleaved) {
      ASSIGN_OR_RETURN(real, EmitReshape(ctx_, Hint("real_5d"), real,
                                         {b, s, h, half, 1}));
      ASSIGN_OR_RETURN(imag, EmitReshape(ctx_, Hint("imag_5d"), imag,
                                         {b, s, h, half, 1}));
      ASSIGN_OR_RETURN(rot, em_.Emit1("Concat", Hint("rotated_5d"),
                                      {real, imag}, {{"axis", MakeIntAttr(4)}}));
      ASSIGN_OR_RETURN(rot, EmitReshape(ctx_, Hint("rotated"), rot,
                                        {b, s, h, r}));
    } else {
      ASSIGN_OR_RETURN(rot, em_.Emit1("Concat", Hint("rotated"), {real, imag},
                                      {{"axis", MakeIntAttr(3)}}));
    }
    ValuePtr y = rot;
    if (r < d) {
      ASSIGN_OR_RETURN(ValuePtr pass,
                       SliceAxis(ctx_, Hint("x_pass"), x, 3, r, d));
      ASSIGN_OR_RETURN(y, em_.Emit1("Concat", Hint("y_bshd"), {rot, pass},
                                    {{"axis", MakeIntAttr(3)}}));
    }
    if (four_d) {
      ASSIGN_OR_RETURN(y, em_.Emit1("Transpose", ctx_.Hint(node_), {y},
                                    {{"perm", MakeIntListAttr({0, 2, 1, 3})}}));
    } else {
      ASSIGN_OR_RETURN(y, EmitReshape(ctx_, ctx_.Hint(node_), y,
                                      {b, s, h * d}));
    }
    return ctx_.SetOutput(node_, 0, y);
  }

 private:
  std::string Hint(absl::string_view suffix) const {
    return ctx_.Hint(node_, suffix);
  }
  absl::StatusOr<ValuePtr> Transpose(ValuePtr x, absl::string_view name) {
    return em_.Emit1("Transpose", Hint(name), {x},
                     {{"perm", MakeIntListAttr({0, 2, 1, 3})}});
  }
  // The cache rows of each (batch, position), as [B, S, 1, R/2]: gathered
  // by position_ids when given, else the cache is [B, S, R/2] already.
  absl::StatusOr<ValuePtr> Cache(ValuePtr cache, int64_t b, int64_t s,
                                 int64_t half, absl::string_view name) {
    if (HasInput(node_, 3)) {
      ASSIGN_OR_RETURN(ValuePtr pos, ctx_.Input(node_, 3));
      ASSIGN_OR_RETURN(cache, em_.Emit1("Gather",
                                        Hint(absl::StrCat(name, "_rows")),
                                        {cache, pos},
                                        {{"axis", MakeIntAttr(0)}}));
    }
    if (cache->shape.IsFullyDefined() &&
        cache->shape.num_elements() != b * s * half) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ", name, " cache gives ", cache->shape.DebugString(),
          " for batch ", b, ", sequence ", s, " and rotary_embedding_dim/2 ",
          half));
    }
    return EmitReshape(ctx_, Hint(absl::StrCat(name, "_bs1r")), cache,
                       {b, s, 1, half});
  }

  const onnx::NodeProto& node_;
  ImportContext& ctx_;
  GraphEmitter& em_;
};

absl::Status ConvertRotary(const onnx::NodeProto& node, ImportContext& ctx) {
  return RotaryLowering(node, ctx).Run();
}

std::string CheckCausalConv(const onnx::NodeProto& node, int opset) {
  const std::string act = AttrString(node, "activation", "none");
  if (act != "none" && act != "silu" && act != "swish") {
    return absl::StrCat("activation '", act, "' (none, silu or swish)");
  }
  return "";
}

absl::Status ConvertCausalConv(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr bias, ctx.OptionalInput(node, 2));
  ASSIGN_OR_RETURN(ValuePtr past, ctx.OptionalInput(node, 3));
  RETURN_IF_ERROR(NeedShape(x, 3, "CausalConvWithState's input"));
  RETURN_IF_ERROR(NeedShape(w, 3, "CausalConvWithState's weight"));
  const int64_t b = x->shape.dim(0), c = x->shape.dim(1), l = x->shape.dim(2);
  const int64_t k = w->shape.dim(2);
  if (w->shape.dim(0) != c || w->shape.dim(1) != 1 || k < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight ", w->shape.DebugString(), " must be [channels=", c,
        ", 1, k]"));
  }
  auto& em = ctx.em();
  const DataType t = x->dtype;
  ValuePtr padded = x;
  if (k > 1) {
    if (past == nullptr) {
      ASSIGN_OR_RETURN(past, Zeros(ctx, t, {b, c, k - 1},
                                   ctx.Hint(node, "zero_state"),
                                   NodeLabel(node)));
    }
    ASSIGN_OR_RETURN(padded, em.Emit1("Concat", ctx.Hint(node, "padded"),
                                      {past, x}, {{"axis", MakeIntAttr(2)}}));
  }
  // The depthwise conv as a Conv2D of height 1 (float32: Conv2D's dtype).
  ASSIGN_OR_RETURN(ValuePtr x4, EmitCastTo(ctx, ctx.Hint(node, "padded32"),
                                           padded, DT_FLOAT));
  ASSIGN_OR_RETURN(x4, EmitReshape(ctx, ctx.Hint(node, "padded_4d"), x4,
                                   {b, c, 1, l + k - 1}));
  ASSIGN_OR_RETURN(ValuePtr w4, EmitCastTo(ctx, ctx.Hint(node, "w32"), w,
                                           DT_FLOAT));
  ASSIGN_OR_RETURN(w4, EmitReshape(ctx, ctx.Hint(node, "w_4d"), w4,
                                   {c, 1, 1, k}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Conv2D", ctx.Hint(node, "conv"),
                                        {x4, w4},
                                        {{"group", MakeIntAttr(c)}}));
  ASSIGN_OR_RETURN(y, EmitReshape(ctx, ctx.Hint(node, "conv_3d"), y,
                                  {b, c, l}));
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(bias, EmitCastTo(ctx, ctx.Hint(node, "bias32"), bias,
                                      DT_FLOAT));
    ASSIGN_OR_RETURN(bias, EmitReshape(ctx, ctx.Hint(node, "bias_c1"), bias,
                                       {c, 1}));
    ASSIGN_OR_RETURN(y, em.Emit1("Add", ctx.Hint(node, "biased"), {y, bias}));
  }
  const std::string act = AttrString(node, "activation", "none");
  if (act == "silu" || act == "swish") {
    // The reference rounds the conv to the input dtype before the SiLU.
    ASSIGN_OR_RETURN(y, EmitCastTo(ctx, ctx.Hint(node, "conv_t"), y, t));
    ASSIGN_OR_RETURN(y, EmitCastTo(ctx, ctx.Hint(node, "conv_f"), y, DT_FLOAT));
    ASSIGN_OR_RETURN(ValuePtr g, em.Emit1("Sigmoid", ctx.Hint(node, "gate"),
                                          {y}));
    ASSIGN_OR_RETURN(y, em.Emit1("Mul", ctx.Hint(node, "silu"), {y, g}));
  }
  ASSIGN_OR_RETURN(y, EmitCastTo(ctx, ctx.Hint(node), y, t));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, y));
  if (node.output_size() > 1 && !node.output(1).empty()) {
    ASSIGN_OR_RETURN(ValuePtr state,
                     SliceAxis(ctx, ctx.Hint(node, "present_state"), padded, 2,
                               l, l + k - 1));
    RETURN_IF_ERROR(ctx.SetOutput(node, 1, state));
  }
  return absl::OkStatus();
}

std::string CheckLinearAttention(const onnx::NodeProto& node, int opset) {
  const std::string rule = AttrString(node, "update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta") {
    return absl::StrCat("update_rule '", rule, "'");
  }
  return "";
}

absl::Status ConvertLinearAttention(const onnx::NodeProto& node,
                                    ImportContext& ctx) {
  std::vector<ValuePtr> in(6);
  for (int i = 0; i < 6; ++i) {
    ASSIGN_OR_RETURN(in[i], ctx.OptionalInput(node, i));
  }
  if (in[0] == nullptr || in[1] == nullptr || in[2] == nullptr) {
    return absl::InvalidArgumentError("query, key and value are required");
  }
  const std::string rule = AttrString(node, "update_rule", "gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (gated != (in[4] != nullptr) || delta != (in[5] != nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "update_rule '", rule, "' ", gated ? "needs" : "forbids",
        " decay and ", delta ? "needs" : "forbids", " beta"));
  }
  const int64_t hq = AttrInt(node, "q_num_heads", 0);
  const int64_t hkv = AttrInt(node, "kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0) {
    return absl::InvalidArgumentError(
        "q_num_heads and kv_num_heads are required");
  }
  const DataType t = in[0]->dtype;
  if (in[3] == nullptr) {
    RETURN_IF_ERROR(NeedShape(in[0], 3, "LinearAttention's query"));
    RETURN_IF_ERROR(NeedShape(in[2], 3, "LinearAttention's value"));
    ASSIGN_OR_RETURN(in[3], Zeros(ctx, t,
                                  {in[0]->shape.dim(0), hkv,
                                   in[0]->shape.dim(2) / hq,
                                   in[2]->shape.dim(2) / hkv},
                                  ctx.Hint(node, "zero_state")));
  } else if (in[3]->dtype != t) {
    return absl::UnimplementedError(absl::StrCat(
        "past_state of ", DataTypeName(in[3]->dtype), " with a ",
        DataTypeName(t), " query"));
  }
  for (int i : {4, 5}) {
    if (in[i] == nullptr) {
      ASSIGN_OR_RETURN(in[i], Zeros(ctx, t, {}, ctx.Hint(node, "unused")));
    } else {
      ASSIGN_OR_RETURN(in[i], EmitCastTo(ctx, ctx.Hint(node, i == 4 ? "decay_t"
                                                                    : "beta_t"),
                                         in[i], t));
    }
  }
  AttrList attrs = {{"q_num_heads", MakeIntAttr(hq)},
                    {"kv_num_heads", MakeIntAttr(hkv)},
                    {"scale", MakeFloatAttr(AttrFloat(node, "scale", 0.0f))},
                    {"update_rule", MakeStringAttr(rule)}};
  ASSIGN_OR_RETURN(std::vector<ValuePtr> out,
                   ctx.em().Emit("LinearAttention", ctx.Hint(node), in, attrs));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, out[0]));
  return ctx.SetOutput(node, 1, out[1]);
}

absl::Status ConvertTensorScatter(const onnx::NodeProto& node,
                                  ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr cache, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr update, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr where, ctx.OptionalInput(node, 2));
  if (where == nullptr) {
    if (cache->shape.unknown_rank() || cache->shape.rank() == 0 ||
        cache->shape.dim(0) == kUnknownDim) {
      return absl::UnimplementedError(
          "without write_indices the cache's batch size must be known");
    }
    ASSIGN_OR_RETURN(where, Zeros(ctx, DT_INT64, {cache->shape.dim(0)},
                                  ctx.Hint(node, "write_indices")));
  }
  ASSIGN_OR_RETURN(where, EmitCastTo(ctx, ctx.Hint(node, "write_i64"), where,
                                     DT_INT64));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("TensorScatter", ctx.Hint(node), {cache, update, where},
                     {{"mode", MakeStringAttr(AttrString(node, "mode",
                                                         "linear"))},
                      {"axis", MakeIntAttr(AttrInt(node, "axis", -2))}}));
  return ctx.SetOutput(node, 0, y);
}

// RNN, GRU and LSTM -> Recurrent: absent inputs become zeros (full
// sequence lengths), batch-major layout (1) is transposed around it.
absl::Status ConvertRecurrent(const onnx::NodeProto& node,
                              ImportContext& ctx) {
  const std::string& op = node.op_type();
  const std::string cell = op == "RNN" ? "rnn" : op == "GRU" ? "gru" : "lstm";
  const int64_t gates = cell == "rnn" ? 1 : cell == "gru" ? 3 : 4;
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr r, ctx.Input(node, 2));
  RETURN_IF_ERROR(NeedShape(x, 3, "X"));
  RETURN_IF_ERROR(NeedShape(r, 3, "R"));
  const bool batch_major = AttrInt(node, "layout", 0) == 1;
  const DataType t = x->dtype;
  const AttrList swap = {{"perm", MakeIntListAttr({1, 0, 2})}};
  auto& em = ctx.em();
  if (batch_major) {
    ASSIGN_OR_RETURN(x, em.Emit1("Transpose", ctx.Hint(node, "x_sbi"), {x},
                                 swap));
  }
  const int64_t s = x->shape.dim(0), b = x->shape.dim(1);
  const int64_t d = r->shape.dim(0), h = r->shape.dim(2);
  std::vector<ValuePtr> in = {x, w, r};
  // B, sequence_lens, initial_h, initial_c, P: ONNX inputs 3..7.
  const std::vector<std::vector<int64_t>> shapes = {
      {d, 2 * gates * h}, {b}, {d, b, h}, {d, b, h}, {d, 3 * h}};
  for (int i = 3; i <= 7; ++i) {
    ValuePtr v;
    if (i <= 5 || cell == "lstm") {
      ASSIGN_OR_RETURN(v, ctx.OptionalInput(node, i));
    }
    const std::string name = absl::StrCat("input", i);
    if (v == nullptr && i == 4) {
      ASSIGN_OR_RETURN(Tensor lens, Tensor::Create(DT_INT32, Shape({b})));
      std::fill_n(lens.data<int32_t>(), b, static_cast<int32_t>(s));
      v = em.AddConstant(lens, ctx.Hint(node, "full_lengths"));
    } else if (v == nullptr) {
      ASSIGN_OR_RETURN(v, Zeros(ctx, t, shapes[i - 3], ctx.Hint(node, name)));
    } else if (i == 4) {
      ASSIGN_OR_RETURN(v, EmitCastTo(ctx, ctx.Hint(node, "lens32"), v,
                                     DT_INT32));
    } else if (batch_major && (i == 5 || i == 6)) {
      ASSIGN_OR_RETURN(v, em.Emit1("Transpose", ctx.Hint(node, name), {v},
                                   swap));
    }
    in.push_back(v);
  }
  std::vector<std::string> names;
  if (const onnx::AttributeProto* a = FindAttr(node, "activations")) {
    names.assign(a->strings().begin(), a->strings().end());
  }
  std::vector<float> alpha, beta;
  if (const onnx::AttributeProto* a = FindAttr(node, "activation_alpha")) {
    alpha.assign(a->floats().begin(), a->floats().end());
  }
  if (const onnx::AttributeProto* a = FindAttr(node, "activation_beta")) {
    beta.assign(a->floats().begin(), a->floats().end());
  }
  AttrList attrs = {
      {"cell", MakeStringAttr(cell)},
      {"direction", MakeStringAttr(AttrString(node, "direction", "forward"))},
      {"activations", MakeStringAttr(absl::StrJoin(names, ","))},
      {"clip", MakeFloatAttr(AttrFloat(node, "clip", 0.0f))},
      {"linear_before_reset",
       MakeBoolAttr(AttrInt(node, "linear_before_reset", 0) != 0)},
      {"input_forget", MakeBoolAttr(AttrInt(node, "input_forget", 0) != 0)}};
  // An empty list reads as unset: leave those to the schema's default.
  if (!alpha.empty()) attrs["activation_alpha"] = MakeFloatListAttr(alpha);
  if (!beta.empty()) attrs["activation_beta"] = MakeFloatListAttr(beta);
  ASSIGN_OR_RETURN(std::vector<ValuePtr> out,
                   em.Emit("Recurrent", ctx.Hint(node, "recurrent"), in, attrs));
  if (batch_major) {
    ASSIGN_OR_RETURN(out[0], em.Emit1("Transpose", ctx.Hint(node, "y"),
                                      {out[0]},
                                      {{"perm", MakeIntListAttr({2, 0, 1, 3})}}));
    for (int i : {1, 2}) {
      ASSIGN_OR_RETURN(out[i], em.Emit1("Transpose",
                                        ctx.Hint(node, i == 1 ? "y_h" : "y_c"),
                                        {out[i]}, swap));
    }
  }
  for (int i = 0; i < node.output_size() && i < (cell == "lstm" ? 3 : 2); ++i) {
    RETURN_IF_ERROR(ctx.SetOutput(node, i, out[i]));
  }
  return absl::OkStatus();
}

}  // namespace

void AddSeqOps(OnnxOpTable* table) {
  (*table)["SwiGLU"] = {ConvertSwiGlu, nullptr};
  (*table)["RotaryEmbedding"] = {ConvertRotary, nullptr};
  (*table)["CausalConvWithState"] = {ConvertCausalConv, CheckCausalConv};
  (*table)["LinearAttention"] = {ConvertLinearAttention, CheckLinearAttention};
  (*table)["TensorScatter"] = {ConvertTensorScatter, nullptr};
  (*table)["RNN"] = {ConvertRecurrent, nullptr};
  (*table)["GRU"] = {ConvertRecurrent, nullptr};
  (*table)["LSTM"] = {ConvertRecurrent, nullptr};
}

}  // namespace sluice
