// layer_norm_fusion: the LayerNorm that exporters emit op by op (PyTorch
// before opset 17, Keras, hand-written graphs),
//   m = ReduceMean(x, axes, keepdims)    d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2) | Mul(d, d), axes, keepdims)
//   n = Div(d, Sqrt(Add(v, eps)))  |  Mul(d, Rsqrt(Add(v, eps)))
//   [y = Mul(n, gamma)]  [z = Add(y, beta)]
// over trailing axes [a, rank), with eps, gamma and beta constants, becomes
// LayerNorm(x, gamma, beta, axis=a, epsilon=eps) named after the last node
// (gamma and beta of ones and zeros when absent). Every node but the last
// must have no reader outside the pattern.
#include <algorithm>
#include <cstring>
#include <numeric>
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

class LayerNormFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "layer_norm_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(g);
    std::set<int> used;
    for (const Node& mean : g.nodes()) {
      if (mean.op() != "ReduceMean") continue;
      const TensorRef x = mean.input(0);
      const Shape& xs = mean.input_shape(0);
      const DataType dtype = mean.input_dtype(0);
      if (xs.unknown_rank() || !IsFloatType(dtype)) continue;
      const int rank = xs.rank();
      std::optional<std::vector<int64_t>> axes = ReduceAxes(mean, rank);
      if (!axes || axes->back() != rank - 1 ||
          axes->front() + static_cast<int64_t>(axes->size()) != rank) {
        continue;
      }
      const int64_t axis = axes->front();
      std::vector<int64_t> norm_dims(xs.dims().begin() + axis, xs.dims().end());
      const Shape norm_shape(norm_dims);
      if (!norm_shape.IsFullyDefined()) continue;
      // d = Sub(x, m)
      const int d = SoleReader(g, mean.id());
      if (d < 0 || g.node(d).op() != "Sub" || !(g.node(d).input(0) == x)) {
        continue;
      }
      // d's readers: the square and the division.
      if (IsGraphOutput(g, {d, 0}) || !g.control_consumers(d).empty()) continue;
      int sq = -1, div = -1;
      bool ok = true;
      for (const Consumer& c : g.consumers(d, 0)) {
        const Node& r = g.node(c.node);
        const bool square = (r.op() == "Pow" && c.input == 0 &&
                             IsScalarNear(g, r.input(1), 2.0)) ||
                            (r.op() == "Mul" && r.input(0) == r.input(1));
        if (square && (sq < 0 || sq == c.node)) {
          sq = c.node;
        } else if ((r.op() == "Div" && c.input == 0) || r.op() == "Mul") {
          if (div >= 0) ok = false;
          div = c.node;
        } else {
          ok = false;
        }
      }
      if (!ok || sq < 0 || div < 0) continue;
      const int var = SoleReader(g, sq);
      if (var < 0 || g.node(var).op() != "ReduceMean" ||
          ReduceAxes(g.node(var), rank) != axes) {
        continue;
      }
      const int add = SoleReader(g, var);
      if (add < 0 || g.node(add).op() != "Add") continue;
      std::optional<TensorRef> eps_ref = OtherOperand(g.node(add), {var, 0});
      std::optional<double> eps =
          eps_ref ? ScalarConstOf(g, *eps_ref) : std::nullopt;
      if (!eps || *eps < 0) continue;
      const int root = SoleReader(g, add);
      if (root < 0) continue;
      const std::string& root_op = g.node(root).op();
      if (SoleReader(g, root) != div) continue;
      const Node& dn = g.node(div);
      if (!((root_op == "Sqrt" && dn.op() == "Div" &&
             dn.input(1) == TensorRef{root, 0}) ||
            (root_op == "Rsqrt" && dn.op() == "Mul" &&
             OtherOperand(dn, {d, 0}) ==
                 std::optional<TensorRef>(TensorRef{root, 0})))) {
        continue;
      }
      std::vector<int> pattern = {mean.id(), d, sq, var, add, root, div};
      // Optional affine part.
      std::optional<std::variant<TensorRef, Tensor>> gamma, beta;
      int last = div;
      if (int mul = SoleReader(g, last);
          mul >= 0 && g.node(mul).op() == "Mul") {
        if (auto other = OtherOperand(g.node(mul), {last, 0})) {
          gamma = AffineParam(g, *other, norm_shape, dtype);
          if (gamma) {
            pattern.push_back(mul);
            last = mul;
          }
        }
      }
      if (int badd = SoleReader(g, last);
          gamma && badd >= 0 && g.node(badd).op() == "Add") {
        if (auto other = OtherOperand(g.node(badd), {last, 0})) {
          beta = AffineParam(g, *other, norm_shape, dtype);
          if (beta) {
            pattern.push_back(badd);
            last = badd;
          }
        }
      }
      if (!NoControlInputs(g, pattern) || !KeepsRank(g, last, x)) continue;
      bool overlap = false;
      for (int id : pattern) overlap = overlap || used.count(id) > 0;
      if (overlap) continue;
      used.insert(pattern.begin(), pattern.end());

      NewNode ln;
      ln.op = "LayerNorm";
      ln.attrs["axis"] = MakeIntAttr(axis);
      ln.attrs["epsilon"] = MakeFloatAttr(static_cast<float>(*eps));
      ln.inputs.push_back(x);
      const Node& last_node = g.node(last);
      auto param = [&](const std::optional<std::variant<TensorRef, Tensor>>& p,
                       double fill, const char* what)
          -> absl::StatusOr<std::variant<TensorRef, std::string>> {
        if (p && std::holds_alternative<TensorRef>(*p)) {
          return std::get<TensorRef>(*p);
        }
        Tensor value;
        if (p) {
          value = std::get<Tensor>(*p);
        } else {
          ASSIGN_OR_RETURN(value, Filled(dtype, norm_shape, fill));
        }
        std::string name =
            rw.UniqueName(absl::StrCat(last_node.name(), "/", what));
        rw.Add(last, ConstNode(name, value, last_node.requested_device(),
                               last_node.source_line()));
        return name;
      };
      ASSIGN_OR_RETURN(auto scale_in, param(gamma, 1.0, "scale"));
      ASSIGN_OR_RETURN(auto bias_in, param(beta, 0.0, "bias"));
      ln.inputs.push_back(scale_in);
      ln.inputs.push_back(bias_in);
      ReplacePattern(rw, pattern, std::move(ln), &out.changes);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeLayerNormFusionPass() {
  return std::make_unique<LayerNormFusionPass>();
}

}  // namespace sluice
