// gelu_fusion: GELU as exporters write it, into Gelu:
//   erf form   x * 0.5 * (1 + Erf(x / √2))          (or x * 0.70710678)
//   tanh form  x * 0.5 * (1 + Tanh(0.7978845608 * (x + 0.044715 * x^3)))
// with x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x), and the
// outer product in any of the orders PyTorch and TensorFlow emit:
// Mul(Mul(x, inner), 0.5), Mul(Mul(x, 0.5), inner), Mul(Mul(inner, 0.5), x).
// Constants match within a relative 1e-4; every node but the last must have
// no reader outside the pattern. The result is Gelu (approximate "none" or
// "tanh") named after the last node.
#include <optional>
#include <set>
#include <vector>

#include "core/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrtHalf = 0.7071067811865476;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kTanhCoeff = 0.044715;

// `id` is Mul(ref, c) or Mul(c, ref) with c near `want`.
bool IsMulByConst(const Graph& g, int id, TensorRef ref, double want) {
  const Node& n = g.node(id);
  if (n.op() != "Mul") return false;
  std::optional<TensorRef> other = OtherOperand(n, ref);
  return other && IsScalarNear(g, *other, want);
}

// Erf's argument is x / √2 or x * (1/√2); returns x and appends the node.
std::optional<TensorRef> ErfArgument(const Graph& g, TensorRef arg,
                                     std::vector<int>* pattern) {
  const Node& n = g.node(arg.node);
  if (!HasSoleReader(g, n.id())) return std::nullopt;
  if (n.op() == "Div" && IsScalarNear(g, n.input(1), kSqrt2)) {
    pattern->push_back(n.id());
    return n.input(0);
  }
  if (n.op() == "Mul") {
    for (int i = 0; i < 2; ++i) {
      if (IsScalarNear(g, n.input(1 - i), kSqrtHalf)) {
        pattern->push_back(n.id());
        return n.input(i);
      }
    }
  }
  return std::nullopt;
}

// x^3 as Pow(x, 3) or a product of three x; appends its nodes.
bool IsCube(const Graph& g, TensorRef ref, TensorRef x,
            std::vector<int>* pattern) {
  const Node& n = g.node(ref.node);
  if (!HasSoleReader(g, n.id())) return false;
  if (n.op() == "Pow" && n.input(0) == x && IsScalarNear(g, n.input(1), 3.0)) {
    pattern->push_back(n.id());
    return true;
  }
  if (n.op() != "Mul") return false;
  std::optional<TensorRef> sq = OtherOperand(n, x);
  if (!sq) return false;
  const Node& s = g.node(sq->node);
  if (s.op() != "Mul" || !(s.input(0) == x) || !(s.input(1) == x) ||
      !HasSoleReader(g, s.id())) {
    return false;
  }
  pattern->push_back(s.id());
  pattern->push_back(n.id());
  return true;
}

// Tanh's argument is 0.79788 * (x + 0.044715 * x^3); returns x.
std::optional<TensorRef> TanhArgument(const Graph& g, TensorRef arg,
                                      std::vector<int>* pattern) {
  const Node& scale = g.node(arg.node);
  if (scale.op() != "Mul" || !HasSoleReader(g, scale.id())) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    if (!IsScalarNear(g, scale.input(1 - i), kSqrt2OverPi)) continue;
    const Node& sum = g.node(scale.input(i).node);
    if (sum.op() != "Add" || !HasSoleReader(g, sum.id())) continue;
    for (int j = 0; j < 2; ++j) {
      const TensorRef x = sum.input(j);
      const Node& cubic = g.node(sum.input(1 - j).node);
      if (cubic.op() != "Mul" || !HasSoleReader(g, cubic.id())) continue;
      for (int k = 0; k < 2; ++k) {
        if (!IsScalarNear(g, cubic.input(1 - k), kTanhCoeff)) continue;
        std::vector<int> nodes;
        if (!IsCube(g, cubic.input(k), x, &nodes)) continue;
        pattern->insert(pattern->end(), nodes.begin(), nodes.end());
        pattern->push_back(cubic.id());
        pattern->push_back(sum.id());
        pattern->push_back(scale.id());
        return x;
      }
    }
  }
  return std::nullopt;
}

// From `one_plus` = 1 + erf/tanh(...): the Muls by x and 0.5; the last node
// of the pattern or -1.
int OuterProduct(const Graph& g, int one_plus, TensorRef x,
                 std::vector<int>* pattern) {
  const int m1 = SoleReader(g, one_plus);
  if (m1 < 0 || g.node(m1).op() != "Mul") return -1;
  std::optional<TensorRef> other = OtherOperand(g.node(m1), {one_plus, 0});
  if (!other) return -1;
  if (*other == x) {  // Mul(Mul(x, inner), 0.5)
    const int m2 = SoleReader(g, m1);
    if (m2 < 0 || !IsMulByConst(g, m2, {m1, 0}, 0.5)) return -1;
    pattern->push_back(m1);
    return m2;
  }
  if (IsScalarNear(g, *other, 0.5)) {  // Mul(Mul(inner, 0.5), x)
    const int m2 = SoleReader(g, m1);
    if (m2 < 0 || g.node(m2).op() != "Mul" ||
        OtherOperand(g.node(m2), {m1, 0}) != std::optional<TensorRef>(x)) {
      return -1;
    }
    pattern->push_back(m1);
    return m2;
  }
  // Mul(Mul(x, 0.5), inner)
  const int half = other->node;
  if (other->port != 0 || !HasSoleReader(g, half) ||
      !IsMulByConst(g, half, x, 0.5)) {
    return -1;
  }
  pattern->push_back(half);
  return m1;
}

class GeluFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "gelu_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(g);
    std::set<int> used;
    for (const Node& fn : g.nodes()) {
      const bool erf = fn.op() == "Erf";
      if ((!erf && fn.op() != "Tanh") || !IsFloatType(fn.output_dtype(0)) ||
          !HasSoleReader(g, fn.id())) {
        continue;
      }
      std::vector<int> pattern;
      std::optional<TensorRef> x = erf ? ErfArgument(g, fn.input(0), &pattern)
                                       : TanhArgument(g, fn.input(0), &pattern);
      if (!x) continue;
      pattern.push_back(fn.id());
      const int one_plus = SoleReader(g, fn.id());
      if (one_plus < 0 || g.node(one_plus).op() != "Add") continue;
      std::optional<TensorRef> one =
          OtherOperand(g.node(one_plus), {fn.id(), 0});
      if (!one || !IsScalarNear(g, *one, 1.0)) continue;
      pattern.push_back(one_plus);
      const int last = OuterProduct(g, one_plus, *x, &pattern);
      if (last < 0) continue;
      pattern.push_back(last);
      if (!NoControlInputs(g, pattern) || !KeepsRank(g, last, *x)) continue;
      bool overlap = false;
      for (int id : pattern) overlap = overlap || used.count(id) > 0;
      if (overlap) continue;
      used.insert(pattern.begin(), pattern.end());
      NewNode gelu;
      gelu.op = "Gelu";
      gelu.attrs["approximate"] = MakeStringAttr(erf ? "none" : "tanh");
      gelu.inputs.push_back(*x);
      ReplacePattern(rw, pattern, std::move(gelu), &out.changes);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeGeluFusionPass() {
  return std::make_unique<GeluFusionPass>();
}

}  // namespace sluice
