// conv_scale_folding: an inference BatchNormalization after a convolution
// is, once exported, a chain of per-channel constant arithmetic:
// Conv2D/ConvND (filter a Const) -> [Add bias] -> Mul scale -> Add shift
// (and Sub, Div). The chain is y = conv(x, W) * S + B with S and B per
// output channel, so it becomes conv(x, W * S) + B: the scale goes into a
// new filter constant and the chain into one Add named after its last node
// (or nothing, when the chain had no Add/Sub and its end is no graph
// output). Only float32 (the convolution kernels' dtype); the convolution
// and every node of the chain but the last must have no other reader.
// The ONNX importer already folds BatchNormalization into a Conv it
// directly follows; this does it for native graphs and for what import
// left (a bias Add between them, for example).
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// A float32 Const holding one value per output channel of a rank-`rank`
// NCHW-like output with `channels` channels (or one value for all), as
// `channels` values; nullopt otherwise.
std::optional<std::vector<double>> PerChannel(const Graph& g, TensorRef ref,
                                              int rank, int64_t channels) {
  const Tensor* t = ConstValueOf(g, ref);
  if (t == nullptr || t->dtype() != DT_FLOAT || !t->on_host()) {
    return std::nullopt;
  }
  const Shape& s = t->shape();
  if (s.unknown_rank() || s.rank() > rank) return std::nullopt;
  bool per_channel = false;
  for (int j = 0; j < s.rank(); ++j) {
    const int axis = rank - s.rank() + j;
    if (s.dim(j) == 1) continue;
    if (axis == 1 && s.dim(j) == channels) {
      per_channel = true;
      continue;
    }
    return std::nullopt;
  }
  std::vector<double> v(channels);
  for (int64_t o = 0; o < channels; ++o) {
    v[o] = t->data<float>()[per_channel ? o : 0];
  }
  return v;
}

struct Step {
  int node;
  char op;  // '+', '-', '*', '/'
  std::vector<double> value;
};

class ConvScaleFoldingPass final : public Pass {
 public:
  std::string_view name() const override { return "conv_scale_folding"; }

  absl::StatusOr<PassOutput> Run(const Graph& graph,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(graph);
    for (const Node& conv : graph.nodes()) {
      if ((conv.op() != "Conv2D" && conv.op() != "ConvND") ||
          conv.output_dtype(0) != DT_FLOAT || !conv.control_inputs().empty()) {
        continue;
      }
      // Channels first only (an NHWC Conv2D's filter is [O,KH,KW,I]).
      if (GetDataFormat(conv.attrs()).value_or(DataFormat::kNhwc) !=
          DataFormat::kNchw) {
        continue;
      }
      const Tensor* w = ConstValueOf(graph, conv.input(1));
      if (w == nullptr || !w->on_host() || w->shape().rank() < 3) continue;
      const int rank = w->shape().rank();
      const int64_t channels = w->shape().dim(0);
      std::vector<Step> chain;
      int cur = conv.id();
      while (HasSoleReader(graph, cur)) {
        const Consumer c = graph.consumers(cur, 0)[0];
        const Node& next = graph.node(c.node);
        if (next.num_inputs() != 2 || !next.control_inputs().empty() ||
            next.output_dtype(0) != DT_FLOAT) {
          break;
        }
        const int other = 1 - c.input;
        char op = 0;
        if (next.op() == "Add") op = '+';
        if (next.op() == "Mul") op = '*';
        if (next.op() == "Sub" && c.input == 0) op = '-';
        if (next.op() == "Div" && c.input == 0) op = '/';
        if (op == 0) break;
        std::optional<std::vector<double>> v =
            PerChannel(graph, next.input(other), rank, channels);
        if (!v) break;
        // The chain's output must keep the convolution's shape.
        if (!(next.output_shape(0) == conv.output_shape(0))) break;
        chain.push_back({next.id(), op, *std::move(v)});
        cur = next.id();
      }
      int scales = 0, shifts = 0;
      for (const Step& s : chain)
        (s.op == '*' || s.op == '/' ? scales : shifts)++;
      if (scales == 0 && shifts < 2) continue;
      std::vector<double> S(channels, 1.0), B(channels, 0.0);
      for (const Step& s : chain) {
        for (int64_t o = 0; o < channels; ++o) {
          switch (s.op) {
            case '+':
              B[o] += s.value[o];
              break;
            case '-':
              B[o] -= s.value[o];
              break;
            case '*':
              S[o] *= s.value[o];
              B[o] *= s.value[o];
              break;
            case '/':
              S[o] /= s.value[o];
              B[o] /= s.value[o];
              break;
          }
        }
      }
      const Node& last = graph.node(chain.back().node);
      NewNode new_conv;
      new_conv.name = conv.name();
      new_conv.op = conv.op();
      new_conv.device = conv.requested_device();
      new_conv.source_line = conv.source_line();
      for (const auto& [k, v] : conv.attrs().values()) new_conv.attrs[k] = v;
      new_conv.inputs.push_back(conv.input(0));
      if (scales > 0) {
        ASSIGN_OR_RETURN(Tensor nw, Tensor::Create(DT_FLOAT, w->shape()));
        const int64_t per = w->NumElements() / std::max<int64_t>(channels, 1);
        for (int64_t i = 0; i < w->NumElements(); ++i) {
          nw.data<float>()[i] =
              static_cast<float>(w->data<float>()[i] * S[i / per]);
        }
        const std::string wname =
            rw.UniqueName(absl::StrCat(conv.name(), "/scaled_filter"));
        rw.Add(conv.id(),
               ConstNode(wname, nw,
                         graph.node(conv.input(1).node).requested_device(),
                         conv.source_line()));
        new_conv.inputs.push_back(wname);
      } else {
        new_conv.inputs.push_back(conv.input(1));
      }
      rw.Replace(conv.id(), std::move(new_conv));
      for (size_t i = 0; i + 1 < chain.size(); ++i) rw.Remove(chain[i].node);
      if (shifts == 0 && !IsGraphOutput(graph, {last.id(), 0})) {
        rw.Forward({last.id(), 0}, {conv.id(), 0});
        rw.Remove(last.id());
      } else {
        std::vector<float> b(B.begin(), B.end());
        Shape bshape = Shape({channels});
        std::vector<int64_t> dims(rank, 1);
        dims[1] = channels;
        const std::string bname =
            rw.UniqueName(absl::StrCat(last.name(), "/folded_shift"));
        rw.Add(last.id(),
               ConstNode(bname, Tensor::FromVector<float>(b, Shape(dims)),
                         last.requested_device(), last.source_line()));
        NewNode add;
        add.name = last.name();
        add.op = "Add";
        add.device = last.requested_device();
        add.source_line = last.source_line();
        add.inputs.push_back(TensorRef{conv.id(), 0});
        add.inputs.push_back(bname);
        rw.Replace(last.id(), std::move(add));
      }
      std::string names;
      for (const Step& s : chain) {
        absl::StrAppend(&names, names.empty() ? "" : ", ", "'",
                        graph.node(s.node).name(), "'");
      }
      out.changes.push_back(absl::StrCat(
          "folded ", names, " into ", conv.DebugName(),
          scales > 0 ? " (filter scaled per output channel)" : "",
          shifts > 0 ? absl::StrCat(", one Add '", last.name(), "' left")
                     : ""));
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeConvScaleFoldingPass() {
  return std::make_unique<ConvScaleFoldingPass>();
}

}  // namespace sluice
