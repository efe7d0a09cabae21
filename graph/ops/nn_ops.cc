// Schemas of the neural-network ops (docs/ops.md: Softmax, LayerNorm,
// RMSNorm, LRN, Convolution and pooling).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

absl::Status SoftmaxFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  const Shape& in = c.input_shape(0);
  if (!in.unknown_rank()) RETURN_IF_ERROR(NormalizeAxis(axis, in.rank()).status());
  c.set_output_shape(0, in);
  return absl::OkStatus();
}

absl::Status LrnFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t size, c.attrs().GetInt("size"));
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("LRN size must be >= 1, got ", size));
  }
  const Shape& in = c.input_shape(0);
  if (!in.unknown_rank() && in.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LRN needs an input [N, C, ...] of rank >= 2, got ", in.DebugString()));
  }
  c.set_output_shape(0, in);
  return absl::OkStatus();
}

absl::Status LayerNormFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(float epsilon, c.attrs().GetFloat("epsilon"));
  if (!(epsilon >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon must be >= 0, got ", epsilon));
  }
  const Shape& x = c.input_shape(0);
  if (!x.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, x.rank()));
    Shape normalized(absl::MakeConstSpan(x.dims()).subspan(a));
    for (int i = 1; i <= 2; ++i) {
      if (!c.input_shape(i).IsCompatibleWith(normalized)) {
        return absl::InvalidArgumentError(absl::StrCat(
            i == 1 ? "scale " : "bias ", c.input_shape(i).DebugString(),
            " must have shape x.shape[axis:] = ", normalized.DebugString()));
      }
    }
  }
  c.set_output_shape(0, x);
  return absl::OkStatus();
}

absl::Status RMSNormFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(float epsilon, c.attrs().GetFloat("epsilon"));
  if (!(epsilon >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon must be >= 0, got ", epsilon));
  }
  const Shape& x = c.input_shape(0);
  if (!x.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, x.rank()));
    Shape normalized(absl::MakeConstSpan(x.dims()).subspan(a));
    if (!c.input_shape(1).IsCompatibleWith(normalized)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scale ", c.input_shape(1).DebugString(),
          " must have shape x.shape[axis:] = ", normalized.DebugString()));
    }
  }
  c.set_output_shape(0, x);
  return absl::OkStatus();
}

absl::StatusOr<Conv2DParams> GetWindowParams(const AttrMap& attrs,
                                             bool with_conv_attrs) {
  Conv2DParams p;
  ASSIGN_OR_RETURN(p.strides, attrs.GetIntList("strides"));
  ASSIGN_OR_RETURN(p.pads, attrs.GetIntList("pads"));
  if (with_conv_attrs) {
    ASSIGN_OR_RETURN(p.dilations, attrs.GetIntList("dilations"));
    ASSIGN_OR_RETURN(p.group, attrs.GetInt("group"));
  }
  return p;
}

// NHWC (graph/data_format.h): the shapes are permuted to NCHW, inferred
// as NCHW, and the output permuted back.
absl::Status Conv2DFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(Conv2DParams p, GetWindowParams(c.attrs(), true));
  ASSIGN_OR_RETURN(DataFormat format, GetDataFormat(c.attrs()));
  if (format == DataFormat::kNhwc) {
    absl::StatusOr<Shape> out = Conv2DShape(NhwcToNchw(c.input_shape(0)),
                                            NhwcToNchw(c.input_shape(1)), p);
    if (!out.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "NHWC: input ", c.input_shape(0).DebugString(), " [N,H,W,C], filter ",
          c.input_shape(1).DebugString(), " [O,KH,KW,C/group]: ",
          out.status().message()));
    }
    c.set_output_shape(0, NchwToNhwc(*out));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Shape out,
                   Conv2DShape(c.input_shape(0), c.input_shape(1), p));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// FusedConv2D: Conv2D's output, then args = [bias [O]] or [bias, side]
// where side has the output's shape.
absl::Status FusedConv2DFn(InferenceContext& c) {
  RETURN_IF_ERROR(Conv2DFn(c));
  ASSIGN_OR_RETURN(std::string activation, c.attrs().GetString("activation"));
  static constexpr std::string_view kActivations[] = {
      "none", "relu", "relu6", "hardswish", "hardsigmoid", "sigmoid", "silu"};
  if (std::find(std::begin(kActivations), std::end(kActivations),
                activation) == std::end(kActivations)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation must be \"none\", \"relu\", \"relu6\", \"hardswish\", "
        "\"hardsigmoid\", \"sigmoid\" or \"silu\", got \"",
        activation, "\""));
  }
  const int args = c.num_inputs() - 2;
  if (args != 1 && args != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedConv2D takes a bias and at most one side input after the input "
        "and filter, got ", args, " more inputs"));
  }
  const Shape& out = c.output_shapes()[0];
  const Shape& f = c.input_shape(1);
  const int64_t channels = f.unknown_rank() || f.rank() < 1 ? kUnknownDim : f.dim(0);
  if (!c.input_shape(2).IsCompatibleWith(Shape({channels}))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bias ", c.input_shape(2).DebugString(), " must have shape [",
        channels == kUnknownDim ? std::string("O") : absl::StrCat(channels),
        "] (one value per output channel)"));
  }
  if (args == 2 && !c.input_shape(3).IsCompatibleWith(out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "side input ", c.input_shape(3).DebugString(),
        " must have the output's shape ", out.DebugString()));
  }
  return absl::OkStatus();
}

// FusedAttention: q [B,H,Sq,D], k [B,H,Sk,D], args = [v [B,H,Sk,Dv]] or
// [v, mask] with mask broadcastable to [B,H,Sq,Sk]; B and H broadcast
// between q, k and v as MatMul's batch dimensions do. Output [B,H,Sq,Dv].
// An operand whose layout attribute is "BSHD" is [B, S, C] instead, with
// num_heads heads of head_dim (v: v_head_dim) columns from its offset; a
// "BSHD" output is [B, Sq, H*Dv] (design decision 29).
absl::Status FusedAttentionFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(float scale, c.attrs().GetFloat("scale"));
  if (!std::isfinite(scale)) {
    return absl::InvalidArgumentError(absl::StrCat("scale must be finite, got ", scale));
  }
  const int args = c.num_inputs() - 2;
  if (args != 1 && args != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention takes v and at most one mask after q and k, got ",
        args, " more inputs"));
  }
  static constexpr const char* kLayouts[] = {"q_layout", "k_layout", "v_layout",
                                             "out_layout"};
  bool bshd[4] = {};
  for (int i = 0; i < 4; ++i) {
    const std::string l = c.attrs().GetString(kLayouts[i]).value_or("BHSD");
    if (l != "BHSD" && l != "BSHD") {
      return absl::InvalidArgumentError(absl::StrCat(
          kLayouts[i], " must be \"BHSD\" or \"BSHD\", got \"", l, "\""));
    }
    bshd[i] = l == "BSHD";
  }
  const int64_t heads = c.attrs().GetInt("num_heads").value_or(0);
  const int64_t head_dims[3] = {c.attrs().GetInt("head_dim").value_or(0),
                                c.attrs().GetInt("head_dim").value_or(0),
                                c.attrs().GetInt("v_head_dim").value_or(0)};
  const int64_t offsets[3] = {c.attrs().GetInt("q_offset").value_or(0),
                              c.attrs().GetInt("k_offset").value_or(0),
                              c.attrs().GetInt("v_offset").value_or(0)};
  if ((bshd[0] || bshd[1] || bshd[2] || bshd[3]) &&
      (heads <= 0 || head_dims[0] < 0 || head_dims[2] < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention with a BSHD layout needs num_heads > 0 and head_dim, "
        "v_head_dim >= 0, got num_heads=", heads, " head_dim=", head_dims[0],
        " v_head_dim=", head_dims[2]));
  }
  // Each operand as [B, H, S, E].
  static constexpr const char* kNames[] = {"q", "k", "v"};
  Shape views[3];
  for (int i = 0; i < 3; ++i) {
    const Shape& s = c.input_shape(i);
    const int rank = bshd[i] ? 3 : 4;
    if (s.unknown_rank()) {
      views[i] = Shape({kUnknownDim, bshd[i] ? heads : kUnknownDim, kUnknownDim,
                        bshd[i] ? head_dims[i] : kUnknownDim});
      continue;
    }
    if (s.rank() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedAttention's ", kNames[i], " must have rank ", rank,
          bshd[i] ? " ([B, S, C], layout BSHD)" : " ([B, H, S, D])", ", got ",
          s.DebugString()));
    }
    if (!bshd[i]) {
      views[i] = s;
      continue;
    }
    if (offsets[i] < 0 || (s.dim(2) != kUnknownDim &&
                           offsets[i] + heads * head_dims[i] > s.dim(2))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedAttention's ", kNames[i], ": ", heads, " heads of ",
          head_dims[i], " columns from column ", offsets[i], " do not fit in ",
          s.DebugString()));
    }
    views[i] = Shape({s.dim(0), heads, s.dim(1), head_dims[i]});
  }
  const Shape& q = views[0];
  const Shape& k = views[1];
  const Shape& v = views[2];
  auto compatible = [](int64_t a, int64_t b) {
    return a == kUnknownDim || b == kUnknownDim || a == b;
  };
  if (!compatible(q.dim(3), k.dim(3)) || !compatible(k.dim(2), v.dim(2))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention needs q [B,H,Sq,D], k [B,H,Sk,D] and v [B,H,Sk,Dv], got ",
        q.DebugString(), ", ", k.DebugString(), " and ", v.DebugString()));
  }
  ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(Shape({q.dim(0), q.dim(1)}),
                                                Shape({k.dim(0), k.dim(1)})));
  ASSIGN_OR_RETURN(batch, BroadcastShapes(batch, Shape({v.dim(0), v.dim(1)})));
  Shape out({batch.dim(0), batch.dim(1), q.dim(2), v.dim(3)});
  if (args == 2) {
    const Shape& m = c.input_shape(3);
    if (!m.unknown_rank()) {
      const Shape scores({out.dim(0), out.dim(1), q.dim(2), k.dim(2)});
      absl::StatusOr<Shape> b = BroadcastShapes(m, scores);
      if (m.rank() > 4 || !b.ok() || !b->IsCompatibleWith(scores)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "mask ", m.DebugString(), " must broadcast to the scores' shape ",
            scores.DebugString(), " [B,H,Sq,Sk]"));
      }
    }
  }
  if (bshd[3]) {
    if (!compatible(out.dim(1), heads) || !compatible(out.dim(3), head_dims[2])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a BSHD output needs ", heads, " heads (num_heads) of v_head_dim ",
          head_dims[2], " columns, the inputs give ", out.DebugString()));
    }
    out = Shape({out.dim(0), q.dim(2), heads * head_dims[2]});
  }
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status PoolFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(Conv2DParams p, GetWindowParams(c.attrs(), false));
  ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                   c.attrs().GetIntList("kernel_shape"));
  ASSIGN_OR_RETURN(DataFormat format, GetDataFormat(c.attrs()));
  if (format == DataFormat::kNhwc) {
    ASSIGN_OR_RETURN(Shape out, PoolShape(NhwcToNchw(c.input_shape(0)), kernel, p));
    c.set_output_shape(0, NchwToNhwc(out));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Shape out, PoolShape(c.input_shape(0), kernel, p));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status GlobalAvgPoolFn(InferenceContext& c) {
  const Shape& in = c.input_shape(0);
  if (in.unknown_rank()) {
    c.set_output_shape(0, Shape({kUnknownDim, kUnknownDim, 1, 1}));
    return absl::OkStatus();
  }
  if (in.rank() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GlobalAvgPool input must have rank 4, got ", in.DebugString()));
  }
  c.set_output_shape(0, Shape({in.dim(0), in.dim(1), 1, 1}));
  return absl::OkStatus();
}

OpDefBuilder Pool(const std::string& op) {
  OpDefBuilder b(op);
  b.Input("input", "T")
      .Output("output", "T")
      .TypeAttr("T", kFloatTypes)
      .Attr("kernel_shape", AttrType::kListInt)
      .Attr("strides", AttrType::kListInt, MakeIntListAttr({1, 1}))
      .Attr("pads", AttrType::kListInt, MakeIntListAttr({0, 0, 0, 0}))
      .Attr("data_format", AttrType::kString, MakeStringAttr("NCHW"))
      .ShapeFn(PoolFn);
  return b;
}

}  // namespace

void RegisterNnOps(OpRegistry* r) {
  RegisterOrDie(r, OpDefBuilder("Softmax")
                       .Input("logits", "T")
                       .Output("softmax", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(-1))
                       .ShapeFn(SoftmaxFn)
                       .Doc("exp(x) / sum(exp(x)) along axis.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("LayerNorm")
                       .Input("x", "T")
                       .Input("scale", "T")
                       .Input("bias", "T")
                       .Output("y", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(-1))
                       .Attr("epsilon", AttrType::kFloat, MakeFloatAttr(1e-5f))
                       .ShapeFn(LayerNormFn)
                       .Doc("Normalises over dims [axis, rank); scale and bias "
                            "have shape x.shape[axis:].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("RMSNorm")
                       .Input("x", "T")
                       .Input("scale", "T")
                       .Output("y", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(-1))
                       .Attr("epsilon", AttrType::kFloat, MakeFloatAttr(1e-5f))
                       .ShapeFn(RMSNormFn)
                       .Doc("x / sqrt(mean(x^2 over dims [axis, rank)) + "
                            "epsilon) * scale; scale has shape "
                            "x.shape[axis:].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Conv2D")
                       .Input("input", "T")
                       .Input("filter", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("strides", AttrType::kListInt,
                             MakeIntListAttr({1, 1}))
                       .Attr("pads", AttrType::kListInt,
                             MakeIntListAttr({0, 0, 0, 0}))
                       .Attr("dilations", AttrType::kListInt,
                             MakeIntListAttr({1, 1}))
                       .Attr("group", AttrType::kInt, MakeIntAttr(1))
                       .Attr("data_format", AttrType::kString,
                             MakeStringAttr("NCHW"))
                       .ShapeFn(Conv2DFn)
                       .Doc("NCHW convolution; filter [O, C/group, KH, KW]; "
                            "pads are top, left, bottom, right. data_format "
                            "\"NHWC\": input [N,H,W,C], filter "
                            "[O,KH,KW,C/group], output [N,OH,OW,O].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("FusedConv2D")
                       .Input("input", "T")
                       .Input("filter", "T")
                       .InputList("args", "T", "num_args")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("num_args", AttrType::kInt)
                       .Attr("strides", AttrType::kListInt,
                             MakeIntListAttr({1, 1}))
                       .Attr("pads", AttrType::kListInt,
                             MakeIntListAttr({0, 0, 0, 0}))
                       .Attr("dilations", AttrType::kListInt,
                             MakeIntListAttr({1, 1}))
                       .Attr("group", AttrType::kInt, MakeIntAttr(1))
                       .Attr("activation", AttrType::kString,
                             MakeStringAttr("none"))
                       .Attr("data_format", AttrType::kString,
                             MakeStringAttr("NCHW"))
                       .ShapeFn(FusedConv2DFn)
                       .Doc("activation(Conv2D(input, filter) + bias[o] "
                            "(+ side)): args are the bias [O] and optionally "
                            "a side input of the output's shape (a residual); "
                            "data_format as Conv2D's; "
                            "activation \"none\", \"relu\", \"relu6\" "
                            "(min(max(v, 0), 6)), and on the CPU also "
                            "\"hardswish\" (v * clamp(v / 6 + 0.5, 0, 1)), "
                            "\"hardsigmoid\" (clamp(v / 6 + 0.5, 0, 1)), "
                            "\"sigmoid\" and \"silu\" (v * sigmoid(v)). "
                            "The optimizer's conv_activation_fusion makes "
                            "it.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("FusedAttention")
                       .Input("q", "T")
                       .Input("k", "T")
                       .InputList("args", "T", "num_args")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("num_args", AttrType::kInt)
                       .Attr("scale", AttrType::kFloat, MakeFloatAttr(1.0f))
                       .Attr("causal", AttrType::kBool, MakeBoolAttr(false))
                       .Attr("q_layout", AttrType::kString, MakeStringAttr("BHSD"))
                       .Attr("k_layout", AttrType::kString, MakeStringAttr("BHSD"))
                       .Attr("v_layout", AttrType::kString, MakeStringAttr("BHSD"))
                       .Attr("out_layout", AttrType::kString, MakeStringAttr("BHSD"))
                       .Attr("num_heads", AttrType::kInt, MakeIntAttr(0))
                       .Attr("head_dim", AttrType::kInt, MakeIntAttr(0))
                       .Attr("v_head_dim", AttrType::kInt, MakeIntAttr(0))
                       .Attr("q_offset", AttrType::kInt, MakeIntAttr(0))
                       .Attr("k_offset", AttrType::kInt, MakeIntAttr(0))
                       .Attr("v_offset", AttrType::kInt, MakeIntAttr(0))
                       .ShapeFn(FusedAttentionFn)
                       .Doc("softmax(scale * q k^T + mask (causal: -inf where "
                            "key j > query i + Sk - Sq), last axis) v, per "
                            "[batch, head]: q [B,H,Sq,D], k [B,H,Sk,D], args "
                            "v [B,H,Sk,Dv] and optionally an additive mask "
                            "broadcastable to [B,H,Sq,Sk]. A row whose scores "
                            "are all -inf gives zeros. q_layout, k_layout, "
                            "v_layout, out_layout \"BSHD\": that operand is "
                            "[B,S,C] with num_heads heads of head_dim "
                            "(v_head_dim) columns from q/k/v_offset, the "
                            "output [B,Sq,H*Dv]. The optimizer's "
                            "attention_fusion makes it.")
                       .Build());
  RegisterOrDie(r, Pool("MaxPool").Doc("Max pooling, NCHW or (data_format) NHWC.").Build());
  RegisterOrDie(r, Pool("AvgPool")
                       .Attr("count_include_pad", AttrType::kBool,
                             MakeBoolAttr(false))
                       .Doc("Average pooling, NCHW or (data_format) NHWC.")
                       .Build());
  RegisterOrDie(
      r, OpDefBuilder("LRN")
             .Input("x", "T")
             .Output("y", "T")
             .TypeAttr("T", kFloatTypes)
             .Attr("alpha", AttrType::kFloat, MakeFloatAttr(1e-4f))
             .Attr("beta", AttrType::kFloat, MakeFloatAttr(0.75f))
             .Attr("bias", AttrType::kFloat, MakeFloatAttr(1.0f))
             .Attr("size", AttrType::kInt)
             .ShapeFn(LrnFn)
             .Doc("Local response normalisation across channels of x [N, C, "
                  "...]: x / (bias + alpha / size * sum of x^2 over the size "
                  "channels around c)^beta (ONNX LRN).")
             .Build());
  RegisterOrDie(r, OpDefBuilder("GlobalAvgPool")
                       .Input("input", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .ShapeFn(GlobalAvgPoolFn)
                       .Doc("Mean over H and W: [N,C,H,W] -> [N,C,1,1].")
                       .Build());
}

}  // namespace sluice
