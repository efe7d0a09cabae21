// conv_activation_fusion: a convolution's epilogue as exporters leave it,
// Conv2D -> Add(bias) [-> Add(side)] [-> Relu | -> Maximum(0) -> Minimum(6)
// (ReLU6, an ONNX Clip(0, 6) as imported)], and where the target's
// kernels take them (PassOptions::fuse_conv_smooth_activations: the CPU)
// also -> HardSwish, -> HardSigmoid(1/6, 0.5), -> Sigmoid, or SiLU as
// exporters write it (Mul(v, Sigmoid(v)), v read by both), into one
// FusedConv2D that
// adds the bias (and the side input: a residual) and applies the
// activation as the convolution's output is written, instead of three more
// passes over memory. The bias must be a Const with one value per output
// channel ([1, O, 1, 1] or [O, 1, 1]); the side input any tensor of the
// convolution's output shape and dtype. Every node of the pattern but the
// last must have no reader outside it (and be no graph output); the fused
// node takes the last node's name. Runs after conv_scale_folding, which
// leaves a BatchNormalization as the convolution's bias Add.
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// Whether `ref` is a Const with one value per channel of a rank-4 NCHW
// output with `channels` channels, broadcast along N, H and W.
bool IsPerChannelConst(const Graph& g, TensorRef ref, int64_t channels) {
  const Tensor* t = ConstValueOf(g, ref);
  if (t == nullptr || !t->on_host()) return false;
  const Shape& s = t->shape();
  if (s.unknown_rank() || s.rank() < 3 || s.rank() > 4) return false;
  for (int j = 0; j < s.rank(); ++j) {
    const bool channel_axis = j == s.rank() - 3;
    if (s.dim(j) != (channel_axis ? channels : 1)) return false;
  }
  return true;
}

// Whether node `id` is `op` (Maximum or Minimum) of `ref` and a float32
// scalar Const equal to `value`, producing `shape`.
bool IsClipAt(const Graph& g, int id, TensorRef ref, std::string_view op,
              float value, const Shape& shape) {
  const Node& n = g.node(id);
  if (n.op() != op || n.num_inputs() != 2 || !(n.output_shape(0) == shape)) {
    return false;
  }
  const std::optional<TensorRef> other = OtherOperand(n, ref);
  if (!other.has_value()) return false;
  const Tensor* t = ConstValueOf(g, *other);
  return t != nullptr && t->on_host() && t->dtype() == DT_FLOAT &&
         t->NumElements() == 1 && t->data<float>()[0] == value;
}

// The smooth activation (FusedConv2D's "hardswish", "hardsigmoid",
// "sigmoid" or "silu") that reads node `last` of `shape`, and the nodes it
// is made of, where it is one; none of them in `used`.
std::optional<std::pair<std::string, std::vector<int>>> SmoothActivation(
    const Graph& g, int last, const Shape& shape, const std::set<int>& used) {
  auto fresh = [&](int id) {
    return id >= 0 && used.count(id) == 0 &&
           g.node(id).output_shape(0) == shape;
  };
  const int act = SoleReader(g, last);
  if (fresh(act)) {
    const Node& n = g.node(act);
    if (n.op() == "HardSwish") return std::make_pair("hardswish", std::vector<int>{act});
    if (n.op() == "Sigmoid") return std::make_pair("sigmoid", std::vector<int>{act});
    if (n.op() == "HardSigmoid" &&
        n.attrs().GetFloat("alpha").value_or(0) == 1.0f / 6.0f &&
        n.attrs().GetFloat("beta").value_or(0) == 0.5f) {
      return std::make_pair("hardsigmoid", std::vector<int>{act});
    }
    return std::nullopt;
  }
  // SiLU: v read by a Sigmoid and by the Mul of v and that Sigmoid alone.
  const Node& v = g.node(last);
  if (v.num_outputs() != 1 || g.consumers(last, 0).size() != 2 ||
      !g.control_consumers(last).empty() || IsGraphOutput(g, {last, 0})) {
    return std::nullopt;
  }
  int sigmoid = -1, mul = -1;
  for (const Consumer& c : g.consumers(last, 0)) {
    const std::string& op = g.node(c.node).op();
    if (op == "Sigmoid") sigmoid = c.node;
    if (op == "Mul") mul = c.node;
  }
  if (!fresh(sigmoid) || !fresh(mul) || SoleReader(g, sigmoid) != mul) {
    return std::nullopt;
  }
  const std::optional<TensorRef> other = OtherOperand(g.node(mul), {last, 0});
  if (!other.has_value() || !(*other == TensorRef{sigmoid, 0})) return std::nullopt;
  return std::make_pair("silu", std::vector<int>{sigmoid, mul});
}

class ConvActivationFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "conv_activation_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions& options) const override {
    PassOutput out;
    GraphRewriter rw(g);
    // Nodes already in a pattern: the Add joining two branches (a ResNet
    // block's residual) is a candidate side Add for the convolutions of
    // both; the first to reach it takes it.
    std::set<int> used;
    for (const Node& conv : g.nodes()) {
      if (conv.op() != "Conv2D" || !IsFloatType(conv.output_dtype(0))) continue;
      // Channels first only: the bias and side patterns are NCHW ones.
      if (GetDataFormat(conv.attrs()).value_or(DataFormat::kNhwc) !=
          DataFormat::kNchw) {
        continue;
      }
      const Shape& shape = conv.output_shape(0);
      if (shape.unknown_rank() || shape.rank() != 4 ||
          shape.dim(1) == kUnknownDim) {
        continue;
      }
      const int64_t channels = shape.dim(1);
      std::vector<int> pattern = {conv.id()};
      // The bias.
      const int bias_add = SoleReader(g, conv.id());
      if (bias_add < 0 || used.count(bias_add) > 0 ||
          !IsAddOf(g, bias_add, {conv.id(), 0}, shape)) {
        continue;
      }
      const TensorRef bias = *OtherOperand(g.node(bias_add), {conv.id(), 0});
      if (!IsPerChannelConst(g, bias, channels)) continue;
      pattern.push_back(bias_add);
      int last = bias_add;
      // A side input of the output's own shape (no broadcast).
      std::optional<TensorRef> side;
      const int side_add = SoleReader(g, last);
      if (side_add >= 0 && used.count(side_add) == 0 &&
          IsAddOf(g, side_add, {last, 0}, shape)) {
        const TensorRef s = *OtherOperand(g.node(side_add), {last, 0});
        const Node& sn = g.node(s.node);
        if (sn.output_shape(s.port) == shape &&
            sn.output_dtype(s.port) == conv.output_dtype(0) &&
            ConstValueOf(g, s) == nullptr) {
          side = s;
          pattern.push_back(side_add);
          last = side_add;
        }
      }
      // The activation: Relu, or ReLU6 (Maximum with 0, then Minimum
      // with 6).
      std::string activation = "none";
      const int act = SoleReader(g, last);
      if (act >= 0 && used.count(act) == 0 && g.node(act).op() == "Relu") {
        activation = "relu";
        pattern.push_back(act);
        last = act;
      } else if (act >= 0 && used.count(act) == 0 &&
                 IsClipAt(g, act, {last, 0}, "Maximum", 0.0f, shape)) {
        const int upper = SoleReader(g, act);
        if (upper >= 0 && used.count(upper) == 0 &&
            IsClipAt(g, upper, {act, 0}, "Minimum", 6.0f, shape)) {
          activation = "relu6";
          pattern.push_back(act);
          pattern.push_back(upper);
          last = upper;
        }
      } else if (options.fuse_conv_smooth_activations) {
        if (auto smooth = SmoothActivation(g, last, shape, used)) {
          activation = smooth->first;
          pattern.insert(pattern.end(), smooth->second.begin(),
                         smooth->second.end());
          last = pattern.back();
        }
      }
      if (!NoControlInputs(g, pattern)) continue;
      used.insert(pattern.begin(), pattern.end());
      // Intermediate results must not be fetched: HasSoleReader checked
      // every node but the last.
      const Tensor* b = ConstValueOf(g, bias);
      const std::string bname =
          rw.UniqueName(absl::StrCat(conv.name(), "/fused_bias"));
      rw.Add(conv.id(), ConstNode(bname, b->Reshaped(Shape({channels})),
                                  g.node(bias.node).requested_device(),
                                  conv.source_line()));
      NewNode fused;
      fused.op = "FusedConv2D";
      for (const auto& [k, v] : conv.attrs().values()) fused.attrs[k] = v;
      fused.attrs["activation"] = MakeStringAttr(activation);
      fused.attrs["num_args"] = MakeIntAttr(side ? 2 : 1);
      fused.inputs.push_back(conv.input(0));
      fused.inputs.push_back(conv.input(1));
      fused.inputs.push_back(bname);
      if (side) fused.inputs.push_back(*side);
      ReplacePattern(rw, pattern, std::move(fused), &out.changes);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeConvActivationFusionPass() {
  return std::make_unique<ConvActivationFusionPass>();
}

}  // namespace sluice
