// Schemas of the sequence, signal and detection ops (docs/ops.md):
// LinearAttention, TensorScatter, DFT, the window functions and
// NonMaxSuppression. Their runtime parameters (write indices, DFT length and
// axis, window size, thresholds) are inputs; shapes that depend on their
// values are exact when the values are known at load time, partial
// otherwise.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// The single integer of a known scalar input, or nullopt.
std::optional<int64_t> KnownScalar(InferenceContext& c, int i) {
  const Tensor* v = c.input_value(i);
  if (v == nullptr || v->NumElements() != 1) return std::nullopt;
  if (v->dtype() == DT_INT64) return v->data<int64_t>()[0];
  if (v->dtype() == DT_INT32) return v->data<int32_t>()[0];
  return std::nullopt;
}

absl::Status LinearAttentionFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t hq, c.attrs().GetInt("q_num_heads"));
  ASSIGN_OR_RETURN(int64_t hkv, c.attrs().GetInt("kv_num_heads"));
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (",
        hkv, ")"));
  }
  const Shape& q = c.input_shape(0);
  const Shape& v = c.input_shape(2);
  for (const Shape* s : {&q, &c.input_shape(1), &v}) {
    if (!s->unknown_rank() && s->rank() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query, key and value must be [B, T, heads*D], got ",
          s->DebugString()));
    }
  }
  auto dim = [](const Shape& s, int i) {
    return s.unknown_rank() ? kUnknownDim : s.dim(i);
  };
  auto per_head = [](int64_t d, int64_t h) {
    return d == kUnknownDim ? kUnknownDim : d / h;
  };
  const int64_t dk = per_head(dim(q, 2), hq), dv = per_head(dim(v, 2), hkv);
  c.set_output_shape(0, Shape({dim(q, 0), dim(q, 1),
                               dv == kUnknownDim ? kUnknownDim : hq * dv}));
  c.set_output_shape(1, Shape({dim(q, 0), hkv, dk, dv}));
  return absl::OkStatus();
}

absl::Status TensorScatterFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::string mode, c.attrs().GetString("mode"));
  if (mode != "linear" && mode != "circular") {
    return absl::InvalidArgumentError(
        absl::StrCat("mode must be linear or circular, got ", mode));
  }
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  const Shape& cache = c.input_shape(0);
  if (!cache.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, cache.rank()));
    if (a == 0) {
      return absl::InvalidArgumentError(
          "TensorScatter's axis cannot be the batch axis 0");
    }
  }
  c.set_output_shape(0, cache);
  return absl::OkStatus();
}

// DFT: x [..., N, 1 or 2] -> [..., n', 2] (or [..., n, 1] for the inverse
// of a one-sided spectrum), n the DFT length (input 1, < 1: the default),
// along the axis of input 2.
absl::Status DftFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool inverse, c.attrs().GetBool("inverse"));
  ASSIGN_OR_RETURN(bool onesided, c.attrs().GetBool("onesided"));
  const Shape& x = c.input_shape(0);
  if (x.unknown_rank()) return absl::OkStatus();
  if (x.rank() < 2 || (x.dim(x.rank() - 1) != kUnknownDim &&
                       x.dim(x.rank() - 1) != 1 && x.dim(x.rank() - 1) != 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DFT's input must be [..., N, 1] (real) or [..., N, 2] (complex), got ",
        x.DebugString()));
  }
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  dims.back() = inverse && onesided ? 1 : 2;
  const std::optional<int64_t> axis_v = KnownScalar(c, 2);
  if (!axis_v) {
    c.set_output_shape(0, Shape(std::vector<int64_t>(dims.size(), kUnknownDim)));
    return absl::OkStatus();
  }
  int64_t axis = *axis_v < 0 ? *axis_v + x.rank() : *axis_v;
  if (axis < 0 || axis >= x.rank() - 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DFT axis ", *axis_v, " out of range for input ", x.DebugString()));
  }
  const std::optional<int64_t> len_v = KnownScalar(c, 1);
  int64_t n = kUnknownDim;
  if (len_v && *len_v >= 1) {
    n = *len_v;
  } else if (len_v && x.dim(axis) != kUnknownDim) {
    n = inverse && onesided ? 2 * (x.dim(axis) - 1) : x.dim(axis);
  }
  dims[axis] = n != kUnknownDim && onesided && !inverse ? n / 2 + 1 : n;
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status StftFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool onesided, c.attrs().GetBool("onesided"));
  const Shape& x = c.input_shape(0);
  const Shape& w = c.input_shape(2);
  const int64_t b = x.unknown_rank() ? kUnknownDim : x.dim(0);
  const int64_t len = x.unknown_rank() ? kUnknownDim : x.dim(1);
  const std::optional<int64_t> step = KnownScalar(c, 1);
  std::optional<int64_t> fl = KnownScalar(c, 3);
  if (fl && *fl < 1) {
    const int64_t wn = w.unknown_rank() || w.rank() != 1 ? kUnknownDim
                                                          : w.dim(0);
    fl = wn > 0 ? wn : (wn == 0 ? len : kUnknownDim);
    if (*fl == kUnknownDim) fl.reset();
  }
  int64_t frames = kUnknownDim, bins = kUnknownDim;
  if (fl) bins = onesided ? *fl / 2 + 1 : *fl;
  if (fl && step && *step > 0 && len != kUnknownDim && *fl <= len) {
    frames = 1 + (len - *fl) / *step;
  }
  c.set_output_shape(0, Shape({b, frames, bins, 2}));
  return absl::OkStatus();
}

absl::Status WindowFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::string kind, c.attrs().GetString("window"));
  if (kind != "hann" && kind != "hamming" && kind != "blackman") {
    return absl::InvalidArgumentError(absl::StrCat(
        "window must be hann, hamming or blackman, got ", kind));
  }
  const std::optional<int64_t> size = KnownScalar(c, 0);
  c.set_output_shape(0, Shape({size ? std::max<int64_t>(*size, 0)
                                    : kUnknownDim}));
  return absl::OkStatus();
}

absl::Status RecurrentFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::string direction, c.attrs().GetString("direction"));
  const int64_t d = direction == "bidirectional" ? 2 : 1;
  const Shape& x = c.input_shape(0);
  const Shape& r = c.input_shape(2);
  const int64_t s = x.unknown_rank() ? kUnknownDim : x.dim(0);
  const int64_t b = x.unknown_rank() ? kUnknownDim : x.dim(1);
  const int64_t h = r.unknown_rank() ? kUnknownDim : r.dim(2);
  c.set_output_shape(0, Shape({s, d, b, h}));
  c.set_output_shape(1, Shape({d, b, h}));
  c.set_output_shape(2, Shape({d, b, h}));
  return absl::OkStatus();
}

absl::Status MelFn(InferenceContext& c) {
  const std::optional<int64_t> mels = KnownScalar(c, 0);
  const std::optional<int64_t> dft = KnownScalar(c, 1);
  c.set_output_shape(0, Shape({dft ? *dft / 2 + 1 : kUnknownDim,
                               mels ? *mels : kUnknownDim}));
  return absl::OkStatus();
}

absl::Status NmsFn(InferenceContext& c) {
  const Shape& boxes = c.input_shape(0);
  if (!boxes.unknown_rank() &&
      (boxes.rank() != 3 || (boxes.dim(2) != 4 && boxes.dim(2) != kUnknownDim))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "boxes must be [batches, boxes, 4], got ", boxes.DebugString()));
  }
  c.set_output_shape(0, Shape({kUnknownDim, 3}));
  return absl::OkStatus();
}

}  // namespace

void RegisterSeqOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("LinearAttention")
             .Input("query", "T")
             .Input("key", "T")
             .Input("value", "T")
             .Input("past_state", "T")
             .Input("decay", "T")
             .Input("beta", "T")
             .Output("output", "T")
             .Output("present_state", "T")
             .TypeAttr("T", kFloatTypes)
             .Attr("q_num_heads", AttrType::kInt)
             .Attr("kv_num_heads", AttrType::kInt)
             .Attr("scale", AttrType::kFloat, MakeFloatAttr(0.0f))
             .Attr("update_rule", AttrType::kString,
                   MakeStringAttr("gated_delta"))
             .ShapeFn(LinearAttentionFn)
             .Doc("Recurrent linear attention over [B, T, heads*D] inputs: "
                  "per step S = exp(decay) S (gated), v = beta (v - S^T k) "
                  "(delta), S += k v^T, out = scale q S. past_state is "
                  "[B, kv_heads, Dk, Dv]; decay and beta are ignored by the "
                  "rules without them.")
             .Build());
  RegisterOrDie(r, OpDefBuilder("TensorScatter")
                       .Input("past_cache", "T")
                       .Input("update", "T")
                       .Input("write_indices", "int64")
                       .Output("present_cache", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("mode", AttrType::kString, MakeStringAttr("linear"))
                       .Attr("axis", AttrType::kInt, MakeIntAttr(-2))
                       .ShapeFn(TensorScatterFn)
                       .Doc("Writes update into the cache along axis at "
                            "write_indices[batch] (circular: modulo the "
                            "cache length).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("DFT")
                       .Input("input", "T")
                       .Input("dft_length", "int64")
                       .Input("axis", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("inverse", AttrType::kBool, MakeBoolAttr(false))
                       .Attr("onesided", AttrType::kBool, MakeBoolAttr(false))
                       .ShapeFn(DftFn)
                       .Doc("Discrete Fourier transform along an axis of a "
                            "real [..., 1] or complex [..., 2] signal; "
                            "dft_length < 1 takes the signal's length.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("STFT")
                       .Input("signal", "T")
                       .Input("frame_step", "int64")
                       .Input("window", "T")
                       .Input("frame_length", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("onesided", AttrType::kBool, MakeBoolAttr(true))
                       .ShapeFn(StftFn)
                       .Doc("Short-time Fourier transform of [B, L, 1 or 2] "
                            "signals: [B, frames, bins, 2]; an empty window "
                            "is rectangular, frame_length < 1 the window's "
                            "(or the signal's) length.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Window")
                       .Input("size", "Tsize")
                       .Output("output", "T")
                       .TypeAttr("Tsize", kIndexTypes)
                       .TypeAttr("T", kNumericTypes)
                       .Attr("window", AttrType::kString)
                       .Attr("periodic", AttrType::kBool, MakeBoolAttr(true))
                       .ShapeFn(WindowFn)
                       .Doc("The hann, hamming or blackman window of the "
                            "runtime length size.")
                       .Build());
  RegisterOrDie(
      r, OpDefBuilder("Recurrent")
             .Input("x", "T")
             .Input("w", "T")
             .Input("r", "T")
             .Input("b", "T")
             .Input("sequence_lens", "int32")
             .Input("initial_h", "T")
             .Input("initial_c", "T")
             .Input("p", "T")
             .Output("y", "T")
             .Output("y_h", "T")
             .Output("y_c", "T")
             .TypeAttr("T", kFloatTypes)
             .Attr("cell", AttrType::kString)
             .Attr("direction", AttrType::kString, MakeStringAttr("forward"))
             .Attr("activations", AttrType::kString, MakeStringAttr(""))
             .Attr("activation_alpha", AttrType::kListFloat,
                   MakeFloatListAttr({}))
             .Attr("activation_beta", AttrType::kListFloat,
                   MakeFloatListAttr({}))
             .Attr("clip", AttrType::kFloat, MakeFloatAttr(0.0f))
             .Attr("linear_before_reset", AttrType::kBool, MakeBoolAttr(false))
             .Attr("input_forget", AttrType::kBool, MakeBoolAttr(false))
             .ShapeFn(RecurrentFn)
             .Doc("The ONNX RNN, GRU and LSTM layers (cell rnn, gru, lstm) "
                  "in sequence-major layout: x [S, B, I] -> y [S, D, B, H], "
                  "y_h and y_c [D, B, H]; activations is a comma-separated "
                  "list (empty: the cell's defaults).")
             .Build());
  RegisterOrDie(r, OpDefBuilder("MelWeightMatrix")
                       .Input("num_mel_bins", "int64")
                       .Input("dft_length", "int64")
                       .Input("sample_rate", "int64")
                       .Input("lower_edge_hertz", "float32")
                       .Input("upper_edge_hertz", "float32")
                       .Output("output", "T")
                       .TypeAttr("T", kNumericTypes)
                       .ShapeFn(MelFn)
                       .Doc("Triangular mel filters: [dft_length/2 + 1, "
                            "num_mel_bins].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("NonMaxSuppression")
                       .Input("boxes", "float32")
                       .Input("scores", "float32")
                       .Input("max_output_boxes_per_class", "int64")
                       .Input("iou_threshold", "float32")
                       .Input("score_threshold", "float32")
                       .Output("selected_indices", "int64")
                       .Attr("center_point_box", AttrType::kInt, MakeIntAttr(0))
                       .ShapeFn(NmsFn)
                       .Doc("Greedy per-class box selection; an empty "
                            "parameter input takes its default (0 boxes, "
                            "IoU 0, no score threshold).")
                       .Build());
}

}  // namespace sluice
