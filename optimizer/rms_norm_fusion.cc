// rms_norm_fusion: the RMSNorm that exporters emit op by op (PyTorch's
// LLaMA-style `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) *
// weight`, Hugging Face's T5 and LLaMA norms, hand-written graphs),
//   v = ReduceMean(Pow(x, 2) | Mul(x, x), axes, keepdims)
//   a = Add(v, eps)                       (eps on either side)
//   n = Mul(x, Rsqrt(a))  |  Div(x, Sqrt(a))  |  Mul(x, Div(1, Sqrt(a)))
//   [n = Cast(n, to=T)]                   (when x = Cast(x0: T, to=float32),
//                                          T float16 or bfloat16)
//   [y = Mul(n, scale)]                   (scale on either side)
// over trailing axes [a, rank), with eps a scalar constant, becomes
// RMSNorm(x, scale, axis=a, epsilon=eps) named after the last node (x0
// when the Casts around it are matched: RMSNorm keeps float32 statistics
// for float16 and bfloat16; scale of ones when absent). scale is a
// constant whose shape is x.shape[axis:] up to leading 1s, or any tensor
// of exactly that shape. Every node but the last must have no reader
// outside the pattern; x itself (and its Cast) may have other readers.
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include "core/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// The normalised value and the nodes that make it from the Add.
struct Normalized {
  std::vector<int> nodes;  // root [, reciprocal], the Mul or Div making n
};

// From a = Add(v, eps): x * Rsqrt(a), x / Sqrt(a) or x * (1 / Sqrt(a)).
std::optional<Normalized> MatchNormalized(const Graph& g, int add,
                                          TensorRef x) {
  const int root = SoleReader(g, add);
  if (root < 0) return std::nullopt;
  const std::string& root_op = g.node(root).op();
  const int next = SoleReader(g, root);
  if (next < 0) return std::nullopt;
  const Node& nn = g.node(next);
  const TensorRef r{root, 0};
  // Mul(x, inv) with x on either side.
  auto times_x = [&](const Node& mul, TensorRef inv) {
    return mul.op() == "Mul" &&
           OtherOperand(mul, inv) == std::optional<TensorRef>(x);
  };
  if (root_op == "Rsqrt") {
    if (times_x(nn, r)) return Normalized{{root, next}};
    return std::nullopt;
  }
  if (root_op != "Sqrt") return std::nullopt;
  if (nn.op() == "Div" && nn.input(0) == x && nn.input(1) == r) {
    return Normalized{{root, next}};
  }
  // Reciprocal (ONNX imports it as Div(1, .)).
  if (nn.op() == "Div" && nn.input(1) == r &&
      IsScalarNear(g, nn.input(0), 1.0)) {
    const int mul = SoleReader(g, next);
    if (mul >= 0 && times_x(g.node(mul), {next, 0})) {
      return Normalized{{root, next, mul}};
    }
  }
  return std::nullopt;
}

// x0 when `xf` is Cast(x0) from float16 or bfloat16 to float32, else nullopt.
std::optional<TensorRef> NarrowSource(const Graph& g, TensorRef xf) {
  const Node& c = g.node(xf.node);
  if (c.op() != "Cast" || c.output_dtype(0) != DT_FLOAT) return std::nullopt;
  const DataType src = c.input_dtype(0);
  if (src != DT_FLOAT16 && src != DT_BFLOAT16) return std::nullopt;
  return c.input(0);
}

// RMSNorm's scale from the other operand of the scale Mul: a constant in
// the shape it wants, or a tensor of exactly that shape and dtype.
std::optional<std::variant<TensorRef, Tensor>> ScaleParam(const Graph& g,
                                                          TensorRef ref,
                                                          const Shape& dims,
                                                          DataType dtype) {
  if (ConstValueOf(g, ref) != nullptr) return AffineParam(g, ref, dims, dtype);
  const Node& p = g.node(ref.node);
  if (p.output_dtype(ref.port) == dtype && p.output_shape(ref.port) == dims) {
    return ref;
  }
  return std::nullopt;
}

class RMSNormFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "rms_norm_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(g);
    std::set<int> used;
    for (const Node& mean : g.nodes()) {
      if (mean.op() != "ReduceMean") continue;
      // The square: Pow(xf, 2) or Mul(xf, xf), read only by the mean.
      const int sq = mean.input(0).node;
      const Node& sqn = g.node(sq);
      const bool square =
          (sqn.op() == "Pow" && IsScalarNear(g, sqn.input(1), 2.0)) ||
          (sqn.op() == "Mul" && sqn.input(0) == sqn.input(1));
      if (!square || SoleReader(g, sq) != mean.id()) continue;
      const TensorRef xf = sqn.input(0);
      const Shape& xs = sqn.input_shape(0);
      const DataType xf_dtype = sqn.input_dtype(0);
      if (xs.unknown_rank() || !IsFloatType(xf_dtype)) continue;
      const int rank = xs.rank();
      std::optional<std::vector<int64_t>> axes = ReduceAxes(mean, rank);
      if (!axes || axes->back() != rank - 1 ||
          axes->front() + static_cast<int64_t>(axes->size()) != rank) {
        continue;
      }
      const int64_t axis = axes->front();
      const Shape norm_shape(std::vector<int64_t>(xs.dims().begin() + axis,
                                                  xs.dims().end()));
      if (!norm_shape.IsFullyDefined()) continue;
      // a = Add(v, eps), eps a scalar constant on either side.
      const int add = SoleReader(g, mean.id());
      if (add < 0 || g.node(add).op() != "Add") continue;
      std::optional<TensorRef> eps_ref =
          OtherOperand(g.node(add), {mean.id(), 0});
      std::optional<double> eps =
          eps_ref ? ScalarConstOf(g, *eps_ref) : std::nullopt;
      if (!eps || !(*eps >= 0)) continue;
      std::optional<Normalized> norm = MatchNormalized(g, add, xf);
      if (!norm) continue;
      std::vector<int> pattern = {sq, mean.id(), add};
      pattern.insert(pattern.end(), norm->nodes.begin(), norm->nodes.end());
      int last = pattern.back();
      // The Casts around it in float16 / bfloat16 exports.
      TensorRef x = xf;
      DataType dtype = xf_dtype;
      if (std::optional<TensorRef> x0 = NarrowSource(g, xf)) {
        const int back = SoleReader(g, last);
        const DataType narrow = g.node(xf.node).input_dtype(0);
        if (back >= 0 && g.node(back).op() == "Cast" &&
            g.node(back).output_dtype(0) == narrow) {
          pattern.push_back(back);
          last = back;
          x = *x0;
          dtype = narrow;
        }
      }
      // The scale, on either side.
      std::optional<std::variant<TensorRef, Tensor>> scale;
      if (int mul = SoleReader(g, last);
          mul >= 0 && g.node(mul).op() == "Mul") {
        if (auto other = OtherOperand(g.node(mul), {last, 0})) {
          scale = ScaleParam(g, *other, norm_shape, dtype);
          if (scale) {
            pattern.push_back(mul);
            last = mul;
          }
        }
      }
      if (!NoControlInputs(g, pattern) || !KeepsRank(g, last, x)) continue;
      bool overlap = false;
      for (int id : pattern) overlap = overlap || used.count(id) > 0;
      if (overlap) continue;
      used.insert(pattern.begin(), pattern.end());

      NewNode rms;
      rms.op = "RMSNorm";
      rms.attrs["axis"] = MakeIntAttr(axis);
      rms.attrs["epsilon"] = MakeFloatAttr(static_cast<float>(*eps));
      rms.inputs.push_back(x);
      if (scale && std::holds_alternative<TensorRef>(*scale)) {
        rms.inputs.push_back(std::get<TensorRef>(*scale));
      } else {
        Tensor value;
        if (scale) {
          value = std::get<Tensor>(*scale);
        } else {
          ASSIGN_OR_RETURN(value, Filled(dtype, norm_shape, 1.0));
        }
        const Node& last_node = g.node(last);
        std::string name =
            rw.UniqueName(absl::StrCat(last_node.name(), "/scale"));
        rw.Add(last, ConstNode(name, value, last_node.requested_device(),
                               last_node.source_line()));
        rms.inputs.push_back(name);
      }
      ReplacePattern(rw, pattern, std::move(rms), &out.changes);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeRMSNormFusionPass() {
  return std::make_unique<RMSNormFusionPass>();
}

}  // namespace sluice
