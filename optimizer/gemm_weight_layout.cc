// gemm_weight_layout: float32 weights stored in the layout the target's
// GEMM multiplies fastest (docs/design.md decisions 47, 69). For a target
// whose float32 GEMM runs slower on a [k, n] weight with rows a multiple of
// R bytes (PassOptions::transpose_weight_row_bytes: the CPU provider's
// 2048; oneDNN's dnnl_sgemm ran BERT's 768->3072 FFN 2.8x slower so, and
// Llama's 1376->512 projection 1.4x), a float32 weight Const [k, n] with
// n * 4 a multiple of R, read by one MatMul or
// FusedMatMul alone and not transposed, is replaced by a new Const
// "<node name>/weight_t" holding it transposed, [n, k], which the node reads
// with transpose_b; the old Const is removed (no second copy stays alive).
//
// Every such product, with its bias fused or not: a Linear layer without a
// bias (Llama's projections, or a Gemm whose zero bias the exporter
// dropped) is a plain MatMul, and ran as slowly as the fused ones did
// before they were transposed (GPT-2's dynamo export at 0.72x onnxruntime).
//
// In rounds (Pass::RunsInRounds): a run transposes weights up to a quarter
// of the graph's constant bytes (at least one weight, at least 64 MiB), and
// the pipeline runs it again on its result, the previous graph and the
// weights it held released in between; the host then holds at most 1.25x
// the weights (or the weights and 64 MiB), not twice them (issue 29's
// bound is 1.5x).
//
// Runs after matmul_bias_fusion (the fused node reads the weight the
// MatMul did).
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// Whether node `mm` multiplies by a weight to store transposed: a MatMul or
// FusedMatMul, not transpose_a or transpose_b, whose b is a float32 Const
// [k, n] with rows a multiple of `row_bytes` that `mm` alone reads.
bool TransposesWeight(const Graph& g, const Node& mm, int64_t row_bytes) {
  if ((mm.op() != "MatMul" && mm.op() != "FusedMatMul") ||
      mm.num_inputs() < 2 ||
      mm.attrs().GetBool("transpose_a").value_or(false) ||
      mm.attrs().GetBool("transpose_b").value_or(false)) {
    return false;
  }
  const Tensor* w = ConstValueOf(g, mm.input(1));
  if (w == nullptr || !w->on_host() || w->dtype() != DT_FLOAT ||
      w->rank() != 2 || w->dim(1) <= 0 || w->dim(1) * 4 % row_bytes != 0) {
    return false;
  }
  // A MatMul of two Consts is constant folding's; the other operand may be
  // anything else, its dtype the weight's (the kernel checks both).
  return SoleReader(g, mm.input(1).node) == mm.id() &&
         ConstValueOf(g, mm.input(0)) == nullptr;
}

// `w` [k, n] as [n, k].
absl::StatusOr<Tensor> Transposed(const Tensor& w) {
  const int64_t k = w.dim(0), n = w.dim(1);
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DT_FLOAT, Shape({n, k})));
  const float* src = w.data<float>();
  float* dst = t.data<float>();
  // In 8 x 8 tiles, each written row by row: the rows this transposes are
  // multiples of 2048 or 4096 bytes, so the lines of a taller tile (64 x 64
  // here before: 21 ms for [768, 3072] on the 2-core development VM, 4 ms in 8
  // x 8) fall into a few cache sets and evict each other.
  constexpr int64_t kTile = 8;
  for (int64_t i0 = 0; i0 < k; i0 += kTile) {
    const int64_t i1 = std::min(k, i0 + kTile);
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      const int64_t j1 = std::min(n, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) dst[j * k + i] = src[i * n + j];
      }
    }
  }
  return t;
}

// What one round may transpose: a quarter of the graph's constant bytes,
// at least kMinRoundBytes.
constexpr int64_t kMinRoundBytes = int64_t{64} << 20;

int64_t RoundBytes(const Graph& g) {
  int64_t bytes = 0;
  for (const Node& n : g.nodes()) {
    if (n.op() != "Const") continue;
    const Tensor* t = ConstValueOf(g, {n.id(), 0});
    if (t != nullptr) bytes += static_cast<int64_t>(t->bytes());
  }
  return std::max(kMinRoundBytes, bytes / 4);
}

class GemmWeightLayoutPass final : public Pass {
 public:
  std::string_view name() const override { return "gemm_weight_layout"; }
  bool RunsInRounds() const override { return true; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions& options) const override {
    PassOutput out;
    const int64_t row_bytes = options.transpose_weight_row_bytes;
    if (row_bytes <= 0) return out;
    GraphRewriter rw(g);
    const int64_t budget = RoundBytes(g);
    int64_t transposed = 0;
    for (const Node& mm : g.nodes()) {
      if (!TransposesWeight(g, mm, row_bytes)) continue;
      const Node& wnode = g.node(mm.input(1).node);
      const Tensor* w = ConstValueOf(g, mm.input(1));
      const int64_t bytes = static_cast<int64_t>(w->bytes());
      if (transposed > 0 && transposed + bytes > budget) break;  // next round
      transposed += bytes;
      ASSIGN_OR_RETURN(Tensor wt, Transposed(*w));
      const std::string wname =
          rw.UniqueName(absl::StrCat(mm.name(), "/weight_t"));
      rw.Add(mm.id(), ConstNode(wname, std::move(wt), wnode.requested_device(),
                                mm.source_line()));
      out.changes.push_back(
          absl::StrCat("stored '", wnode.name(), "' [", w->dim(0), ", ",
                       w->dim(1), "] transposed as '", wname, "' for '",
                       mm.name(), "' (", mm.op(), "; rows of a multiple of ",
                       row_bytes, " bytes multiply slower on this target)"));
      NewNode node;
      node.name = mm.name();
      node.op = mm.op();
      for (const auto& [k, v] : mm.attrs().values()) node.attrs[k] = v;
      node.attrs["transpose_b"] = MakeBoolAttr(true);
      for (int i = 0; i < mm.num_inputs(); ++i) {
        if (i == 1) {
          node.inputs.push_back(wname);
        } else {
          node.inputs.push_back(mm.input(i));
        }
      }
      node.device = mm.requested_device();
      node.source_line = mm.source_line();
      rw.Replace(mm.id(), std::move(node));
      // Gone with this round's input graph (mm was its sole reader).
      rw.Remove(wnode.id());
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeGemmWeightLayoutPass() {
  return std::make_unique<GemmWeightLayoutPass>();
}

}  // namespace sluice
