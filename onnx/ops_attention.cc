// ONNX Attention (opsets 23 to 25) lowered to sluice ops, following the ONNX
// reference (onnx/reference/ops/op_attention.py) step by step: 3-D inputs
// split into heads, the past key/value concatenated (the present outputs),
// grouped-query heads repeated, Q and K each scaled by sqrt(scale),
// softcap, the additive bias from attn_mask (bool or float, padded to the
// key length), is_causal (bottom-right aligned after the past) and the
// sliding windows, softmax with fully-masked rows set to 0, then P x V.
// Needs Q, K, V and the mask with fully known shapes. nonpad_kv_seqlen (a
// per-batch runtime length, the external cache) masks the keys at and after
// it, and moves the causal and window frontiers of batch b to
// nonpad_kv_seqlen[b] - S; it is computed at run time from the lengths.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::string CheckAttention(const onnx::NodeProto& node, int opset) {
  if (HasInput(node, 6) && HasInput(node, 4)) {
    return "nonpad_kv_seqlen cannot be combined with past_key/past_value";
  }
  return "";
}

// A constant of x's dtype and `shape` filled with `v`.
absl::StatusOr<ValuePtr> Filled(ImportContext& ctx, DataType dtype,
                                const std::vector<int64_t>& shape, double v,
                                absl::string_view hint) {
  const Tensor one = ScalarTensor(dtype, v);
  return ctx.em().CreateConstant(hint, dtype, Shape(shape),
                                 [&](Tensor& t) { FillWith(one, t); }, hint);
}

class AttentionLowering {
 public:
  AttentionLowering(const onnx::NodeProto& node, ImportContext& ctx)
      : node_(node), ctx_(ctx), em_(ctx.em()) {}

  absl::Status Run() {
    ASSIGN_OR_RETURN(ValuePtr q, ctx_.Input(node_, 0));
    ASSIGN_OR_RETURN(ValuePtr k, ctx_.Input(node_, 1));
    ASSIGN_OR_RETURN(ValuePtr v, ctx_.Input(node_, 2));
    for (const ValuePtr& t : {q, k, v}) {
      if (!t->shape.IsFullyDefined() ||
          (t->shape.rank() != 3 && t->shape.rank() != 4)) {
        return absl::UnimplementedError(absl::StrCat(
            "Q, K and V need known 3-D or 4-D shapes, got ",
            t->shape.DebugString()));
      }
    }
    dtype_ = q->dtype;
    const bool three_d = q->shape.rank() == 3;
    if (three_d) {
      const int64_t hq = AttrInt(node_, "q_num_heads", 0);
      const int64_t hkv = AttrInt(node_, "kv_num_heads", 0);
      if (hq <= 0 || hkv <= 0) {
        return absl::InvalidArgumentError(
            "3-D inputs need q_num_heads and kv_num_heads");
      }
      ASSIGN_OR_RETURN(q, SplitHeads(q, hq, "q"));
      ASSIGN_OR_RETURN(k, SplitHeads(k, hkv, "k"));
      ASSIGN_OR_RETURN(v, SplitHeads(v, hkv, "v"));
    }
    if (HasInput(node_, 4) != HasInput(node_, 5)) {
      return absl::InvalidArgumentError(
          "past_key and past_value come together");
    }
    int64_t past = 0;
    if (HasInput(node_, 4)) {
      ASSIGN_OR_RETURN(ValuePtr pk, ctx_.Input(node_, 4));
      ASSIGN_OR_RETURN(ValuePtr pv, ctx_.Input(node_, 5));
      if (!pk->shape.IsFullyDefined() || pk->shape.rank() != 4) {
        return absl::UnimplementedError("past_key needs a known 4-D shape");
      }
      past = pk->shape.dim(2);
      ASSIGN_OR_RETURN(k, em_.Emit1("Concat", Hint("present_key"), {pk, k},
                                    {{"axis", MakeIntAttr(2)}}));
      ASSIGN_OR_RETURN(v, em_.Emit1("Concat", Hint("present_value"), {pv, v},
                                    {{"axis", MakeIntAttr(2)}}));
    }
    RETURN_IF_ERROR(SetOptionalOutput(1, k));
    RETURN_IF_ERROR(SetOptionalOutput(2, v));

    const int64_t batch = q->shape.dim(0), hq = q->shape.dim(1);
    const int64_t s = q->shape.dim(2), d = q->shape.dim(3);
    const int64_t hkv = k->shape.dim(1), l = k->shape.dim(2);
    if (hq != hkv && hkv > 0 && hq % hkv == 0) {
      ASSIGN_OR_RETURN(k, RepeatHeads(k, hq / hkv, "k"));
      ASSIGN_OR_RETURN(v, RepeatHeads(v, hq / hkv, "v"));
    }

    // Q sqrt(scale) x (K sqrt(scale))^T.
    const float scale_attr = AttrFloat(node_, "scale", 0.0f);
    const double scale =
        FindAttr(node_, "scale") != nullptr ? scale_attr : 1.0 / std::sqrt(d);
    ValuePtr root = Scalar(std::sqrt(scale), "scale_sqrt");
    ASSIGN_OR_RETURN(ValuePtr qs, em_.Emit1("Mul", Hint("q_scaled"), {q, root}));
    ASSIGN_OR_RETURN(ValuePtr ks, em_.Emit1("Mul", Hint("k_scaled"), {k, root}));
    ASSIGN_OR_RETURN(ValuePtr scores,
                     em_.Emit1("MatMul", Hint("qk"), {qs, ks},
                               {{"transpose_b", MakeBoolAttr(true)}}));
    const float softcap = AttrFloat(node_, "softcap", 0.0f);
    if (softcap > 0) {
      ValuePtr cap = Scalar(softcap, "softcap");
      ASSIGN_OR_RETURN(scores,
                       em_.Emit1("Div", Hint("qk_div_cap"), {scores, cap}));
      ASSIGN_OR_RETURN(scores, em_.Emit1("Tanh", Hint("qk_tanh"), {scores}));
      ASSIGN_OR_RETURN(scores,
                       em_.Emit1("Mul", Hint("qk_capped"), {scores, cap}));
    }
    const int64_t mode = AttrInt(node_, "qk_matmul_output_mode", 0);
    ValuePtr qk_out = scores;

    ValuePtr bias;
    if (HasInput(node_, 6)) {
      ASSIGN_OR_RETURN(bias, NonpadBias(batch, s, l));
    } else {
      ASSIGN_OR_RETURN(bias, Bias(s, l, past));
    }
    ValuePtr with_bias = scores;
    if (bias != nullptr) {
      ASSIGN_OR_RETURN(with_bias,
                       em_.Emit1("Add", Hint("qk_bias"), {scores, bias}));
    }
    if (mode == 2) qk_out = with_bias;
    ASSIGN_OR_RETURN(ValuePtr p, em_.Emit1("Softmax", Hint("probs"),
                                           {with_bias},
                                           {{"axis", MakeIntAttr(-1)}}));
    if (bias != nullptr) {
      // Rows whose bias is all -inf attend nothing: 0, not NaN.
      ValuePtr wide = bias;  // ReduceMax runs on float32 and wider
      if (dtype_ == DT_FLOAT16 || dtype_ == DT_BFLOAT16) {
        ASSIGN_OR_RETURN(wide, EmitCastTo(ctx_, Hint("bias32"), bias,
                                          DT_FLOAT));
      }
      ASSIGN_OR_RETURN(ValuePtr row_max,
                       em_.Emit1("ReduceMax", Hint("bias_max"), {wide},
                                 {{"axes", MakeIntListAttr({-1})},
                                  {"keepdims", MakeBoolAttr(true)}}));
      ASSIGN_OR_RETURN(
          ValuePtr masked,
          em_.Emit1("Equal", Hint("row_masked"),
                    {row_max, em_.AddConstant(ScalarTensor(wide->dtype, kNegInf),
                                              Hint("neg_inf"))}));
      ASSIGN_OR_RETURN(p, em_.Emit1("Where", Hint("probs_guarded"),
                                    {masked, Scalar(0, "zero"), p}));
    }
    if (mode == 3) qk_out = p;
    RETURN_IF_ERROR(SetOptionalOutput(3, qk_out));

    ASSIGN_OR_RETURN(ValuePtr y, em_.Emit1("MatMul",
                                           three_d ? Hint("pv") : ctx_.Hint(node_),
                                           {p, v}));
    if (three_d) {
      ASSIGN_OR_RETURN(y, em_.Emit1("Transpose", Hint("y_bshd"), {y},
                                    {{"perm", MakeIntListAttr({0, 2, 1, 3})}}));
      ASSIGN_OR_RETURN(y, EmitReshape(ctx_, ctx_.Hint(node_), y,
                                      {batch, s, hq * v->shape.dim(3)}));
    }
    return ctx_.SetOutput(node_, 0, y);
  }

 private:
  std::string Hint(absl::string_view suffix) const {
    return ctx_.Hint(node_, suffix);
  }
  ValuePtr Scalar(double v, absl::string_view hint) {
    return em_.AddConstant(ScalarTensor(dtype_, v), Hint(hint));
  }
  absl::Status SetOptionalOutput(int i, const ValuePtr& v) {
    if (node_.output_size() > i && !node_.output(i).empty()) {
      return ctx_.SetOutput(node_, i, v);
    }
    return absl::OkStatus();
  }

  // [B, S, H*D] -> [B, H, S, D].
  absl::StatusOr<ValuePtr> SplitHeads(ValuePtr x, int64_t heads,
                                      absl::string_view name) {
    const int64_t b = x->shape.dim(0), s = x->shape.dim(1);
    const int64_t hidden = x->shape.dim(2);
    if (hidden % heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, "'s hidden size ", hidden, " is not a multiple of ", heads,
          " heads"));
    }
    ASSIGN_OR_RETURN(x, EmitReshape(ctx_, Hint(absl::StrCat(name, "_bshd")), x,
                                    {b, s, heads, hidden / heads}));
    return em_.Emit1("Transpose", Hint(absl::StrCat(name, "_bhsd")), {x},
                     {{"perm", MakeIntListAttr({0, 2, 1, 3})}});
  }

  // [B, H, L, D] -> [B, H*r, L, D], each head repeated r times in place.
  absl::StatusOr<ValuePtr> RepeatHeads(ValuePtr x, int64_t r,
                                       absl::string_view name) {
    const int64_t b = x->shape.dim(0), h = x->shape.dim(1);
    const int64_t l = x->shape.dim(2), d = x->shape.dim(3);
    ASSIGN_OR_RETURN(x, EmitReshape(ctx_, Hint(absl::StrCat(name, "_h1")), x,
                                    {b, h, 1, l, d}));
    ASSIGN_OR_RETURN(
        x, em_.Emit1("Expand", Hint(absl::StrCat(name, "_rep")), {x},
                     {{"shape", MakeIntListAttr({b, h, r, l, d})}}));
    return EmitReshape(ctx_, Hint(absl::StrCat(name, "_gqa")), x,
                       {b, h * r, l, d});
  }

  // attn_mask as an additive bias of Q's dtype, padded with -inf to `l`
  // keys, or nullptr when absent.
  absl::StatusOr<ValuePtr> MaskBias(int64_t l) {
    ValuePtr mask;
    if (HasInput(node_, 3)) {
      ASSIGN_OR_RETURN(mask, ctx_.Input(node_, 3));
      if (!mask->shape.IsFullyDefined() || mask->shape.rank() == 0) {
        return absl::UnimplementedError("attn_mask needs a known shape");
      }
      const bool is_bool = mask->dtype == DT_BOOL;
      std::vector<int64_t> dims(mask->shape.dims().begin(),
                                mask->shape.dims().end());
      const int64_t pad = l - dims.back();
      if (pad > 0) {  // a shorter mask masks the keys it does not cover
        dims.back() = pad;
        ASSIGN_OR_RETURN(ValuePtr fill,
                         Filled(ctx_, mask->dtype, dims, is_bool ? 0 : kNegInf,
                                Hint("mask_pad")));
        ASSIGN_OR_RETURN(mask, em_.Emit1("Concat", Hint("mask_padded"),
                                         {mask, fill},
                                         {{"axis", MakeIntAttr(-1)}}));
      }
      if (is_bool) {
        ASSIGN_OR_RETURN(mask, em_.Emit1("Where", Hint("mask_bias"),
                                         {mask, Scalar(0, "mask_zero"),
                                          Scalar(kNegInf, "mask_neg_inf")}));
      }
    }
    return mask;
  }

  // The additive bias (0 or -inf, or the float mask), or nullptr for none.
  absl::StatusOr<ValuePtr> Bias(int64_t s, int64_t l, int64_t past) {
    ASSIGN_OR_RETURN(ValuePtr mask, MaskBias(l));
    const bool causal = AttrInt(node_, "is_causal", 0) != 0;
    const int64_t left = AttrInt(node_, "left_window_size", -1);
    const int64_t right = AttrInt(node_, "right_window_size", -1);
    if (!causal && left < 0 && right < 0) return mask;
    // Query i comes after `past` cached keys, at p = i + past; it sees key
    // j iff j <= p (causal) and p - left <= j <= p + right (the windows,
    // each side only when >= 0).
    const size_t size = DataTypeSize(dtype_);
    Tensor zero = ScalarTensor(dtype_, 0), neg = ScalarTensor(dtype_, kNegInf);
    ASSIGN_OR_RETURN(
        ValuePtr c,
        em_.CreateConstant(
            NodeLabel(node_), dtype_, Shape({s, l}),
            [&](Tensor& allowed) {
              for (int64_t i = 0; i < s; ++i) {
                for (int64_t j = 0; j < l; ++j) {
                  const int64_t diff = i + past - j;
                  const bool ok = (!causal || diff >= 0) &&
                                  (left < 0 || diff <= left) &&
                                  (right < 0 || -diff <= right);
                  std::memcpy(static_cast<char*>(allowed.raw_data()) +
                                  (i * l + j) * size,
                              (ok ? zero : neg).raw_data(), size);
                }
              }
            },
            Hint("causal")));
    if (mask == nullptr) return c;
    return em_.Emit1("Add", Hint("bias"), {mask, c});
  }

  // The bias with nonpad_kv_seqlen (n, [B] at run time): key j of batch b
  // is masked when j >= n[b]; with off[b] = n[b] - S and D[i][j] = j - i,
  // causal masks D > off, the left window D < off - left and the right
  // window D > off + right.
  absl::StatusOr<ValuePtr> NonpadBias(int64_t batch, int64_t s, int64_t l) {
    ASSIGN_OR_RETURN(ValuePtr n, ctx_.Input(node_, 6));
    ASSIGN_OR_RETURN(n, EmitCastTo(ctx_, Hint("nonpad_i64"), n, DT_INT64));
    ASSIGN_OR_RETURN(n, EmitReshape(ctx_, Hint("nonpad_b111"), n,
                                    {batch, 1, 1, 1}));
    ASSIGN_OR_RETURN(ValuePtr bias, MaskBias(l));
    if (bias == nullptr) bias = Scalar(0, "bias_zero");
    ValuePtr neg = Scalar(kNegInf, "nonpad_neg_inf");
    ASSIGN_OR_RETURN(
        ValuePtr jv,
        em_.CreateConstant(
            NodeLabel(node_), DT_INT64, Shape({l}),
            [&](Tensor& j_idx) {
              for (int64_t j = 0; j < l; ++j) j_idx.data<int64_t>()[j] = j;
            },
            Hint("key_index")));
    ASSIGN_OR_RETURN(
        ValuePtr dv,
        em_.CreateConstant(
            NodeLabel(node_), DT_INT64, Shape({s, l}),
            [&](Tensor& diff) {
              for (int64_t i = 0; i < s; ++i) {
                for (int64_t j = 0; j < l; ++j) {
                  diff.data<int64_t>()[i * l + j] = j - i;
                }
              }
            },
            Hint("key_minus_query")));
    ASSIGN_OR_RETURN(ValuePtr valid,
                     em_.Emit1("Less", Hint("key_valid"), {jv, n}));
    ASSIGN_OR_RETURN(bias, em_.Emit1("Where", Hint("nonpad_bias"),
                                     {valid, bias, neg}));
    ASSIGN_OR_RETURN(ValuePtr off,
                     em_.Emit1("Sub", Hint("frontier"),
                               {n, em_.AddConstant(ScalarTensor(DT_INT64, s),
                                                   Hint("q_len"))}));
    // Masks the keys where `op`(D, off + shift) holds.
    auto mask_where = [&](const char* op, int64_t shift,
                          absl::string_view name) -> absl::Status {
      ValuePtr bound = off;
      if (shift != 0) {
        ASSIGN_OR_RETURN(
            bound, em_.Emit1("Add", Hint(absl::StrCat(name, "_bound")),
                             {off, em_.AddConstant(ScalarTensor(DT_INT64, shift),
                                                   Hint(absl::StrCat(
                                                       name, "_shift")))}));
      }
      ASSIGN_OR_RETURN(ValuePtr hit, em_.Emit1(op, Hint(name), {dv, bound}));
      ASSIGN_OR_RETURN(bias, em_.Emit1("Where", Hint(absl::StrCat(name, "_bias")),
                                       {hit, neg, bias}));
      return absl::OkStatus();
    };
    const int64_t left = AttrInt(node_, "left_window_size", -1);
    const int64_t right = AttrInt(node_, "right_window_size", -1);
    if (AttrInt(node_, "is_causal", 0) != 0) {
      RETURN_IF_ERROR(mask_where("Greater", 0, "causal"));
    }
    if (left >= 0) RETURN_IF_ERROR(mask_where("Less", -left, "left_window"));
    if (right >= 0) RETURN_IF_ERROR(mask_where("Greater", right, "right_window"));
    return bias;
  }

  const onnx::NodeProto& node_;
  ImportContext& ctx_;
  GraphEmitter& em_;
  DataType dtype_ = DT_FLOAT;
};

absl::Status ConvertAttention(const onnx::NodeProto& node,
                              ImportContext& ctx) {
  return AttentionLowering(node, ctx).Run();
}

}  // namespace

void AddAttentionOps(OnnxOpTable* table) {
  (*table)["Attention"] = {ConvertAttention, CheckAttention};
}

}  // namespace sluice
