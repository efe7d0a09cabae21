// attention_fusion: scaled dot-product attention as exporters write it,
//   s = MatMul(Q [* c1], K^T [* c2]) [* c3 or / c3]   (or K, transpose_b)
//   s = Add(s, mask) | Where(cond, s, fill) | s        (optional mask)
//   p = Softmax(s, last axis) [-> Where(IsNaN(p), 0, p)]
//   y = MatMul(p, V)
// becomes FusedAttention(Q, K, V [, mask], scale = c1 c2 c3, causal) named
// after the last MatMul, where Q, K, V are [B, H, S, D]. K^T's Transpose
// (perm p) is replaced by one giving K (p with its last two entries
// swapped); without one, a Transpose of K^T's last two axes is added. The
// scale factors must be one-element Consts; the mask any tensor of the
// scores' dtype that broadcasts to them without widening them. A Const mask
// that is 0 on and below the diagonal (aligned to the last key) and at most
// -1e4 above becomes causal = true where Sq <= Sk; an all-zero one is
// dropped. GPT-2's Where(causal_bool, s, fill) (or Where(future, fill, s))
// with fill <= -1e4 becomes causal the same way, or else, where the fill is
// at most -1e30 (float16: -65000), so that adding it to a score is as good
// as putting it in its place, a Const additive mask. The NaN guard (IsNaN imported as Equal(Equal(p, p), false))
// that PyTorch's exporter puts after the softmax is absorbed: FusedAttention
// gives zeros for rows whose keys are all masked out, where the guard turns
// the softmax's NaNs into zeros. Every node but the last must have no
// reader outside the pattern. Runs after softmax_fusion (which makes the
// Softmax) and before elementwise_fusion (which would take the scale and
// mask into a FusedElementwise).
//
// The layout copies around the attention go too (design decision 29): Q,
// K or V made by Reshape([B,S,H*D] -> [B,S,H,D]) then Transpose(0,2,1,3)
// (for K also the K^T form Transpose(0,2,3,1)) is read where the Reshape's
// input has it ("BSHD" layout, [B,S,H*D]); when Q, K and V are the three
// outputs of one Split along the last axis, each read only by its Reshape,
// the Split goes too and the op reads column ranges of the packed
// projection; and Transpose(0,2,1,3) then Reshape([B,Sq,H,Dv] ->
// [B,Sq,H*Dv]) after the output becomes a "BSHD" output, the fused node
// taking the Reshape's name (a Reshape to another shape, such as GPT-2's
// [B*Sq, H*Dv], stays and reads the BSHD output in the Transpose's place).
// Each part is absorbed only where its nodes have no other reader and the
// shapes show the Reshape splits or merges the last axis (H and D known,
// and B or S); otherwise that part stays as it was.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

bool PlainMatMul(const Node& n) {
  return n.op() == "MatMul" && !n.attrs().GetBool("transpose_a").value_or(false) &&
         !n.attrs().GetBool("transpose_b").value_or(false);
}

// MatMul(Q, K^T), or MatMul(Q, K, transpose_b) (examples/transformer_block).
bool ScoresMatMul(const Node& n) {
  return n.op() == "MatMul" && !n.attrs().GetBool("transpose_a").value_or(false);
}

bool Rank4(const Shape& s) { return !s.unknown_rank() && s.rank() == 4; }

// Element i of a float Const as a double.
double ElementOf(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data<float>()[i];
    case DT_DOUBLE: return t.data<double>()[i];
    case DT_FLOAT16: return static_cast<double>(static_cast<float>(t.data<half>()[i]));
    case DT_BFLOAT16:
      return static_cast<double>(static_cast<float>(t.data<bfloat16>()[i]));
    default: return std::nan("");
  }
}

// A value that masks a key out as well as -inf does, added to a score or
// in its place: exp underflows to 0 for it, in every float dtype, beside a
// key that is not masked (-10000 is what older exporters used).
bool MasksOut(double v) { return v <= -1e4; }

// A fill that stays a masked-out value when added to a score: no row whose
// keys are all masked can tell adding it from putting it in the score's
// place.
bool AbsorbsScores(double v, DataType dtype) {
  return v <= (dtype == DT_FLOAT16 ? -65000.0 : -1e30);
}

// How a Const mask of the scores' rank-4 shape acts: every element 0, or
// causal (0 where key j <= query i + Sk - Sq, masked out elsewhere), in
// every [B, H] plane it has (its leading dims must be 1).
enum class MaskKind { kOther, kZero, kCausal };

MaskKind ClassifyConstMask(const Tensor& m, int64_t sq, int64_t sk) {
  if (!m.on_host() || !IsFloatType(m.dtype())) return MaskKind::kOther;
  const Shape& s = m.shape();
  bool zero = true;
  for (int64_t i = 0; i < m.NumElements() && zero; ++i) {
    zero = ElementOf(m, i) == 0.0;
  }
  if (zero) return MaskKind::kZero;
  // Causal only where every row keeps a key (Sq <= Sk): the fused op gives
  // zeros for a row with none, the unfused graph does not.
  if (sq > sk || s.rank() < 2 || s.dim(s.rank() - 2) != sq ||
      s.dim(s.rank() - 1) != sk || m.NumElements() != sq * sk) {
    return MaskKind::kOther;
  }
  for (int64_t i = 0; i < sq; ++i) {
    for (int64_t j = 0; j < sk; ++j) {
      const double v = ElementOf(m, i * sk + j);
      const bool visible = j <= i + sk - sq;
      if (visible ? v != 0.0 : !MasksOut(v)) return MaskKind::kOther;
    }
  }
  return MaskKind::kCausal;
}

// Where(cond, a, b) as an additive mask of `dtype`: 0 where the scores are
// kept, `fill` where they are replaced. nullopt unless cond is a bool Const.
std::optional<Tensor> MaskFromWhere(const Tensor& cond, bool keep_when_true,
                                    double fill, DataType dtype) {
  if (cond.dtype() != DT_BOOL || !cond.on_host()) return std::nullopt;
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, cond.shape());
  if (!t.ok()) return std::nullopt;
  for (int64_t i = 0; i < cond.NumElements(); ++i) {
    const bool keep = cond.data<bool>()[i] == keep_when_true;
    const double v = keep ? 0.0 : fill;
    switch (dtype) {
      case DT_FLOAT: t->data<float>()[i] = static_cast<float>(v); break;
      case DT_DOUBLE: t->data<double>()[i] = v; break;
      case DT_FLOAT16: t->data<half>()[i] = static_cast<half>(static_cast<float>(v)); break;
      case DT_BFLOAT16:
        t->data<bfloat16>()[i] = static_cast<bfloat16>(static_cast<float>(v));
        break;
      default: return std::nullopt;
    }
  }
  return *std::move(t);
}

// x * c, c * x or x / c with c a one-element Const, keeping x's shape, with
// `x`'s node read only by `reader`: the factor it applies and x. nullopt
// when `ref` is no such node.
struct Scaled {
  TensorRef x;
  double factor;
};
std::optional<Scaled> ScaleOf(const Graph& g, TensorRef ref) {
  const Node& n = g.node(ref.node);
  if ((n.op() != "Mul" && n.op() != "Div") || n.num_inputs() != 2 ||
      !HasSoleReader(g, n.id())) {
    return std::nullopt;
  }
  for (int side = 0; side < 2; ++side) {
    if (n.op() == "Div" && side == 0) continue;  // c / x is no scale
    std::optional<double> c = ScalarConstOf(g, n.input(side));
    if (!c || !std::isfinite(*c)) continue;
    const TensorRef x = n.input(1 - side);
    if (g.node(x.node).output_shape(x.port) != n.output_shape(0)) continue;
    if (n.op() == "Div") {
      if (*c == 0) return std::nullopt;
      return Scaled{x, 1.0 / *c};
    }
    return Scaled{x, *c};
  }
  return std::nullopt;
}

// The NaN guard after a softmax: Where(Equal(Equal(p, p), false), 0, p).
// Fills `nodes` with the guard's nodes (the Where last) and returns the
// Where's id, or -1.
int NanGuardOf(const Graph& g, int softmax, std::vector<int>* nodes) {
  const TensorRef p{softmax, 0};
  int self_equal = -1, where = -1;
  for (const Consumer& c : g.consumers(softmax, 0)) {
    const Node& r = g.node(c.node);
    if (r.op() == "Equal" && r.num_inputs() == 2 && r.input(0) == p &&
        r.input(1) == p) {
      self_equal = c.node;
    } else if (r.op() == "Where" && c.input == 2) {
      where = c.node;
    } else {
      return -1;
    }
  }
  if (self_equal < 0 || where < 0 || IsGraphOutput(g, p) ||
      !g.control_consumers(softmax).empty()) {
    return -1;
  }
  const int is_nan = SoleReader(g, self_equal);
  if (is_nan < 0) return -1;
  const Node& n = g.node(is_nan);
  if (n.op() != "Equal" || n.num_inputs() != 2) return -1;
  std::optional<TensorRef> other = OtherOperand(n, {self_equal, 0});
  const Tensor* f = other ? ConstValueOf(g, *other) : nullptr;
  if (f == nullptr || f->dtype() != DT_BOOL || f->NumElements() != 1 ||
      !f->on_host() || f->data<bool>()[0] || SoleReader(g, is_nan) != where) {
    return -1;
  }
  const Node& w = g.node(where);
  if (!(w.input(0) == TensorRef{is_nan, 0}) || !IsScalarNear(g, w.input(1), 0.0) ||
      w.output_shape(0) != g.node(softmax).output_shape(0)) {
    return -1;
  }
  *nodes = {self_equal, is_nan, where};
  return where;
}

// An operand of the attention read token-major: `src` [B, S, C] holds its
// heads at columns offset + h D; `nodes` (the Reshape splitting the heads,
// and the heads Transpose) go away.
struct TokenMajor {
  TensorRef src;
  int64_t offset = 0;
  std::vector<int> nodes;
};

// Whether node `id` is a Reshape of [B, S, heads * D] into [B, S, heads, D]
// whose output has one reader: heads and D known, and S or B known and the
// same on both sides (the other then equal by the element count, so a
// symbolic batch or sequence is fine).
// Whether dim i or dim j of a and b is known (>= 1) and equal.
bool SameKnownDim(const Shape& a, const Shape& b, int i, int j) {
  return (a.dim(i) >= 1 && a.dim(i) == b.dim(i)) ||
         (a.dim(j) >= 1 && a.dim(j) == b.dim(j));
}

bool SplitsHeads(const Graph& g, int id, int64_t heads) {
  const Node& r = g.node(id);
  if (r.op() != "Reshape" || r.num_inputs() < 1 || !HasSoleReader(g, id)) {
    return false;
  }
  const Shape& in = g.node(r.input(0).node).output_shape(r.input(0).port);
  const Shape& out = r.output_shape(0);
  if (in.unknown_rank() || out.unknown_rank() || in.rank() != 3 ||
      out.rank() != 4) {
    return false;
  }
  return SameKnownDim(in, out, 0, 1) && heads >= 1 && out.dim(2) == heads &&
         out.dim(3) >= 1 && in.dim(2) == heads * out.dim(3);
}

bool IsTransposeWith(const Node& n, const std::vector<int64_t>& perm) {
  if (n.op() != "Transpose") return false;
  absl::StatusOr<std::vector<int64_t>> p = n.attrs().GetIntList("perm");
  return p.ok() && *p == perm;
}

const std::vector<int64_t> kSwapSH = {0, 2, 1, 3};

// The operand `ref` as the op would read it after `perm` (identity, or
// (0,2,1,3) for a K whose K^T Transpose goes), token-major where it comes
// from a Reshape splitting heads, through a Transpose(0,2,1,3) unless
// `perm` is that transpose already.
std::optional<TokenMajor> TokenMajorOf(const Graph& g, TensorRef ref,
                                       const std::vector<int64_t>& perm,
                                       int64_t heads) {
  std::vector<int> nodes;
  if (perm != kSwapSH) {
    if (perm != std::vector<int64_t>{0, 1, 2, 3}) return std::nullopt;
    const Node& t = g.node(ref.node);
    if (!IsTransposeWith(t, kSwapSH) || !HasSoleReader(g, t.id())) {
      return std::nullopt;
    }
    nodes.push_back(t.id());
    ref = t.input(0);
  }
  if (ref.port != 0 || !SplitsHeads(g, ref.node, heads)) return std::nullopt;
  nodes.push_back(ref.node);
  return TokenMajor{g.node(ref.node).input(0), 0, std::move(nodes)};
}

// When q, k and v are the three outputs of one Split along the last axis
// of a rank-3 tensor, each read once (by its Reshape) and by nothing else:
// points them at the Split's input with their column offsets and returns
// the Split's id; -1 (and nothing changed) otherwise.
int AbsorbSplit(const Graph& g, TokenMajor* qkv[3]) {
  const int split = qkv[0]->src.node;
  const Node& n = g.node(split);
  if (n.op() != "Split" || n.num_outputs() != 3 ||
      qkv[1]->src.node != split || qkv[2]->src.node != split ||
      !g.control_consumers(split).empty()) {
    return -1;
  }
  const Shape& in = g.node(n.input(0).node).output_shape(n.input(0).port);
  int64_t axis = n.attrs().GetInt("axis").value_or(0);
  if (in.unknown_rank() || in.rank() != 3) return -1;
  if (axis < 0) axis += 3;
  if (axis != 2) return -1;
  int64_t offsets[3] = {};
  int64_t at = 0;
  for (int port = 0; port < 3; ++port) {
    const TensorRef out{split, port};
    if (g.consumers(split, port).size() != 1 || IsGraphOutput(g, out)) return -1;
    const Shape& s = n.output_shape(port);
    if (s.unknown_rank() || s.rank() != 3 || s.dim(2) < 0) return -1;
    offsets[port] = at;
    at += s.dim(2);
  }
  bool seen[3] = {};
  for (int i = 0; i < 3; ++i) {
    if (seen[qkv[i]->src.port]) return -1;
    seen[qkv[i]->src.port] = true;
  }
  for (int i = 0; i < 3; ++i) {
    qkv[i]->offset = offsets[qkv[i]->src.port];
    qkv[i]->src = n.input(0);
  }
  return split;
}

// After MatMul(p, V) `pv` ([B, heads, Sq, Dv]): Transpose(0,2,1,3), its
// sole reader, then a Reshape, the Transpose's sole reader. Returns the
// nodes the BSHD output ([B, Sq, heads * Dv]) replaces: the Transpose and
// the Reshape where the Reshape gives exactly that shape, the Transpose
// alone where it gives another (GPT-2's [B*Sq, heads * Dv]: the Reshape
// then reads the fused output, which has the Transpose's elements in the
// Transpose's order); empty when there is no such pair.
std::vector<int> MergedHeadsOf(const Graph& g, int pv, int64_t heads) {
  const int t = SoleReader(g, pv);
  if (t < 0 || !IsTransposeWith(g.node(t), kSwapSH)) return {};
  const int r = SoleReader(g, t);
  if (r < 0 || g.node(r).op() != "Reshape") return {};
  const Shape& in = g.node(t).output_shape(0);
  const Shape& out = g.node(r).output_shape(0);
  if (heads < 1 || in.unknown_rank() || in.rank() != 4 || in.dim(2) != heads ||
      in.dim(3) < 0) {
    return {};
  }
  if (!out.unknown_rank() && out.rank() == 3 && SameKnownDim(in, out, 0, 1) &&
      out.dim(2) == heads * in.dim(3)) {
    return {t, r};
  }
  return {t};
}

class AttentionFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "attention_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(g);
    std::set<int> used;
    for (const Node& sm : g.nodes()) {
      if (sm.op() != "Softmax") continue;
      const DataType dtype = sm.output_dtype(0);
      const Shape& scores_shape = sm.output_shape(0);
      if (!IsFloatType(dtype) || !Rank4(scores_shape)) continue;
      const int64_t axis = sm.attrs().GetInt("axis").value_or(-1);
      if (axis != -1 && axis != 3) continue;
      std::vector<int> pattern;  // ends with the node the fused one replaces
      // After the softmax: the NaN guard, then MatMul(p, V).
      std::vector<int> guard;
      int prob = sm.id();
      if (SoleReader(g, sm.id()) < 0) {
        prob = NanGuardOf(g, sm.id(), &guard);
        if (prob < 0) continue;
      }
      const int pv = SoleReader(g, prob);
      if (pv < 0 || !PlainMatMul(g.node(pv)) ||
          !(g.node(pv).input(0) == TensorRef{prob, 0})) {
        continue;
      }
      const TensorRef v = g.node(pv).input(1);
      if (!Rank4(g.node(v.node).output_shape(v.port))) continue;
      // Before it: the mask.
      TensorRef s = sm.input(0);
      std::vector<int> before;  // pattern nodes before the softmax
      std::optional<TensorRef> mask;
      std::optional<Tensor> mask_value;  // a mask made from a Where
      double where_fill = 0;             // and the Where's fill
      const Node& sn = g.node(s.node);
      if (sn.op() == "Add" && sn.num_inputs() == 2 && HasSoleReader(g, sn.id())) {
        // The scores are the side a MatMul (maybe scaled) produces.
        for (int side = 0; side < 2 && !mask; ++side) {
          TensorRef cand = sn.input(side);
          if (std::optional<Scaled> sc = ScaleOf(g, cand)) cand = sc->x;
          if (!ScoresMatMul(g.node(cand.node))) continue;
          const TensorRef m = sn.input(1 - side);
          if (g.node(sn.input(side).node).output_shape(sn.input(side).port) !=
              scores_shape) {
            continue;
          }
          const Shape& ms = g.node(m.node).output_shape(m.port);
          if (ms.unknown_rank() || ms.rank() > 4) continue;
          mask = m;
          before.push_back(sn.id());
          s = sn.input(side);
        }
        if (!mask) continue;
      } else if (sn.op() == "Where" && HasSoleReader(g, sn.id())) {
        const Tensor* cond = ConstValueOf(g, sn.input(0));
        int side = -1;  // the input the scores come in by
        std::optional<double> fill;
        for (int i = 1; i <= 2 && side < 0; ++i) {
          std::optional<double> f = ScalarConstOf(g, sn.input(3 - i));
          if (f && MasksOut(*f) &&
              g.node(sn.input(i).node).output_shape(sn.input(i).port) ==
                  scores_shape) {
            side = i;
            fill = f;
          }
        }
        if (cond == nullptr || side < 0) continue;
        where_fill = *fill;
        mask_value = MaskFromWhere(*cond, side == 1, *fill, dtype);
        if (!mask_value || mask_value->shape().rank() > 4) continue;
        before.push_back(sn.id());
        s = sn.input(side);
      }
      // The scale on the scores, the MatMul, the scales on Q and K^T.
      double scale = 1;
      if (std::optional<Scaled> sc = ScaleOf(g, s)) {
        before.push_back(s.node);
        scale *= sc->factor;
        s = sc->x;
      }
      const Node& qk = g.node(s.node);
      if (!ScoresMatMul(qk) || !HasSoleReader(g, qk.id()) ||
          qk.output_shape(0) != scores_shape) {
        continue;
      }
      before.push_back(qk.id());
      TensorRef q = qk.input(0);
      if (std::optional<Scaled> sc = ScaleOf(g, q)) {
        before.push_back(q.node);
        scale *= sc->factor;
        q = sc->x;
      }
      TensorRef kt = qk.input(1);
      if (std::optional<Scaled> sc = ScaleOf(g, kt)) {
        before.push_back(kt.node);
        scale *= sc->factor;
        kt = sc->x;
      }
      if (!Rank4(g.node(q.node).output_shape(q.port)) ||
          !Rank4(g.node(kt.node).output_shape(kt.port)) || !std::isfinite(scale)) {
        continue;
      }
      // K from K^T: through K^T's Transpose where there is one.
      const bool k_given = qk.attrs().GetBool("transpose_b").value_or(false);
      TensorRef k_source = kt;
      std::vector<int64_t> perm = {0, 1, 3, 2};
      if (k_given) perm = {0, 1, 2, 3};
      bool remove_transpose = false;
      const Node& tn = g.node(kt.node);
      if (tn.op() == "Transpose" && !k_given) {
        absl::StatusOr<std::vector<int64_t>> p = tn.attrs().GetIntList("perm");
        if (p.ok() && p->size() == 4) {
          perm = *p;
          std::swap(perm[2], perm[3]);
          k_source = tn.input(0);
          remove_transpose = HasSoleReader(g, tn.id());
        }
      }
      // Mask kinds: Const masks may be dropped or become the causal flag.
      bool causal = false;
      const Shape& k_shape = g.node(kt.node).output_shape(kt.port);
      const int64_t sq = scores_shape.dim(2), sk = k_shape.dim(k_given ? 2 : 3);
      const Tensor* const_mask = mask ? ConstValueOf(g, *mask)
                                      : (mask_value ? &*mask_value : nullptr);
      if (const_mask != nullptr && sq >= 0 && sk >= 0) {
        const MaskKind kind = ClassifyConstMask(*const_mask, sq, sk);
        if (kind != MaskKind::kOther) {
          causal = kind == MaskKind::kCausal;
          mask.reset();
          mask_value.reset();
        }
      }
      // A Where's fill kept as an additive mask must absorb the scores.
      if (mask_value && !AbsorbsScores(where_fill, dtype)) continue;
      for (int id : before) pattern.push_back(id);
      if (remove_transpose) pattern.push_back(tn.id());
      pattern.push_back(sm.id());
      for (int id : guard) pattern.push_back(id);
      pattern.push_back(pv);
      // The layout copies around it (design decision 29).
      const int64_t heads = scores_shape.dim(1);
      std::optional<TokenMajor> tq = TokenMajorOf(g, q, {0, 1, 2, 3}, heads);
      std::optional<TokenMajor> tk;
      if (k_given || remove_transpose) tk = TokenMajorOf(g, k_source, perm, heads);
      std::optional<TokenMajor> tv = TokenMajorOf(g, v, {0, 1, 2, 3}, heads);
      int split = -1;
      if (tq && tk && tv) {
        TokenMajor* qkv[3] = {&*tq, &*tk, &*tv};
        split = AbsorbSplit(g, qkv);
      }
      const std::vector<int> merge = MergedHeadsOf(g, pv, heads);
      for (const std::optional<TokenMajor>* t : {&tq, &tk, &tv}) {
        if (*t) pattern.insert(pattern.end() - 1, (*t)->nodes.begin(), (*t)->nodes.end());
      }
      if (split >= 0) pattern.insert(pattern.end() - 1, split);
      pattern.insert(pattern.end(), merge.begin(), merge.end());
      if (!NoControlInputs(g, pattern)) continue;
      bool overlap = false;
      for (int id : pattern) overlap = overlap || used.count(id) > 0;
      if (overlap) continue;
      used.insert(pattern.begin(), pattern.end());
      // Removed nodes go first; ReplacePattern puts the fused node in the
      // last one's place (MatMul(p, V) or the Reshape merging the heads).
      const int last_id = pattern.back();
      const Node& last = g.node(last_id);
      // K: k_source itself when the Transpose it needs is the identity.
      std::variant<TensorRef, std::string> k = k_source;
      if (tk) {
        k = tk->src;
      } else if (perm != std::vector<int64_t>{0, 1, 2, 3}) {
        const std::string k_name =
            rw.UniqueName(absl::StrCat(last.name(), "/k"));
        NewNode transpose;
        transpose.name = k_name;
        transpose.op = "Transpose";
        transpose.attrs["perm"] = MakeIntListAttr(perm);
        transpose.inputs.push_back(k_source);
        transpose.device = last.requested_device();
        transpose.source_line = last.source_line();
        rw.Add(last_id, std::move(transpose));
        k = k_name;
      }
      NewNode fused;
      fused.op = "FusedAttention";
      fused.attrs["T"] = MakeTypeAttr(dtype);
      fused.attrs["scale"] = MakeFloatAttr(static_cast<float>(scale));
      fused.attrs["causal"] = MakeBoolAttr(causal);
      fused.attrs["num_args"] = MakeIntAttr(mask || mask_value ? 2 : 1);
      fused.inputs.push_back(tq ? tq->src : q);
      fused.inputs.push_back(k);
      fused.inputs.push_back(tv ? tv->src : v);
      std::string layout_note;
      if (tq || tk || tv || !merge.empty()) {
        const Shape& vs = g.node(v.node).output_shape(v.port);
        const Shape& qs = g.node(q.node).output_shape(q.port);
        fused.attrs["num_heads"] = MakeIntAttr(heads);
        const int64_t dq = qs.dim(3) >= 0 ? qs.dim(3) : k_shape.dim(k_given ? 3 : 2);
        fused.attrs["head_dim"] = MakeIntAttr(std::max<int64_t>(dq, 0));
        fused.attrs["v_head_dim"] = MakeIntAttr(std::max<int64_t>(vs.dim(3), 0));
        const char* names[3] = {"q", "k", "v"};
        const std::optional<TokenMajor>* ts[3] = {&tq, &tk, &tv};
        std::vector<std::string> read;
        for (int i = 0; i < 3; ++i) {
          if (!*ts[i]) continue;
          fused.attrs[absl::StrCat(names[i], "_layout")] = MakeStringAttr("BSHD");
          const int64_t off = (*ts[i])->offset;
          if (off != 0) fused.attrs[absl::StrCat(names[i], "_offset")] = MakeIntAttr(off);
          read.push_back(absl::StrCat(names[i], " from '",
                                      g.node((*ts[i])->src.node).name(), "'",
                                      split >= 0 ? absl::StrCat(" col ", off) : ""));
        }
        if (!merge.empty()) fused.attrs["out_layout"] = MakeStringAttr("BSHD");
        if (!merge.empty()) {
          read.push_back(merge.size() == 2
                             ? "output [B, S, H*Dv]"
                             : absl::StrCat("output [B, S, H*Dv] read by '",
                                            g.node(SoleReader(g, merge[0])).name(),
                                            "'"));
        }
        layout_note = absl::StrCat("BSHD: ", absl::StrJoin(read, ", "));
      }
      if (mask) {
        fused.inputs.push_back(*mask);
      } else if (mask_value) {
        const std::string m_name =
            rw.UniqueName(absl::StrCat(last.name(), "/mask"));
        rw.Add(last_id, ConstNode(m_name, *std::move(mask_value),
                                  last.requested_device(), last.source_line()));
        fused.inputs.push_back(m_name);
      }
      ReplacePattern(rw, pattern, std::move(fused), &out.changes);
      if (causal) out.changes.back() += " (causal)";
      if (!layout_note.empty()) {
        out.changes.back() += absl::StrCat(" (", layout_note, ")");
      }
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeAttentionFusionPass() {
  return std::make_unique<AttentionFusionPass>();
}

}  // namespace sluice
