// matmul_bias_fusion: a linear layer's epilogue as exporters leave it,
// MatMul(x, W) -> Add(bias) [-> Add(residual)] [-> Relu | Gelu(tanh)], into
// one FusedMatMul, whose GPU kernel is one cuBLASLt matmul with the bias,
// residual and activation in its epilogue (kernels/cuda/cublaslt_matmul.h),
// as PyTorch's addmm does. ONNX Gemm arrives here as MatMul (transpose_b
// for transB) -> Add(C) and fuses the same way when C is a bias.
//
// What must hold:
//   - the MatMul is not transpose_a, its b a Const matrix (a weight: rank
//     2, so x's batch dimensions flatten into rows), of float32, float16 or
//     bfloat16, the dtype of x;
//   - the bias a Const with one value per output column: [N], or [1, ..., N]
//     of no higher rank than the output (Gemm's C of [1, N]);
//   - the residual any non-constant tensor of the output's shape and dtype
//     (no broadcast), added before the activation, as cuBLASLt's epilogue
//     computes act(a b + bias + C);
//   - the activation exactly what cuBLASLt computes: Relu, or Gelu with
//     approximate "tanh" (CUBLASLT_EPILOGUE_GELU_BIAS). An erf Gelu stays
//     its own node after the fused bias, as does an activation before the
//     residual Add (then only MatMul + bias fuse);
//   - a Reshape between the bias Add and the activation (GPT-2's Gemm ->
//     Add -> Reshape -> Gelu, when there is no residual) does not stop the
//     activation fusing: an elementwise activation commutes with a Reshape,
//     so the Reshape stays, after the fused node, named as the activation
//     was (it computes that value now);
//   - a Reshape between the bias Add and a residual Add (GPT-2's Gemm ->
//     Add -> Reshape -> Add(residual)) does not stop the residual fusing
//     when shapes are static: the residual is reshaped to the product's
//     shape (a view) for the epilogue, and the Reshape stays, after the
//     fused node, named as the residual Add was;
//   - every node of the pattern but the last has no reader outside it, is
//     no graph output and has no control inputs, and all ask for the same
//     device (a node placed by hand is not merged into another's request).
// The fused node takes the last node's name.
//
// A layer without a bias (Llama's projections; a Gemm whose zero bias the
// exporter dropped): MatMul(x, W) -> Add(residual) and/or the activation
// fuse the same way, the FusedMatMul given a Const of n zeros as its bias.
// A bias-less MatMul with nothing after it to take in stays a MatMul.
//
// The weight stays as it is: gemm_weight_layout, after this pass, stores it
// in the layout the target's GEMM wants.
//
// Runs after gelu_fusion (which
// makes the Gelu nodes) and before elementwise_fusion (which would
// otherwise take the bias and residual Adds into a FusedElementwise).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

bool IsFusableType(DataType t) {
  return t == DT_FLOAT || t == DT_FLOAT16 || t == DT_BFLOAT16;
}

// Whether `ref` is a Const of `dtype` with `n` values along its last axis
// and 1 along every other, of rank at most `max_rank`.
bool IsColumnBias(const Graph& g, TensorRef ref, int64_t n, int max_rank,
                  DataType dtype) {
  const Tensor* t = ConstValueOf(g, ref);
  if (t == nullptr || !t->on_host() || t->dtype() != dtype) return false;
  const Shape& s = t->shape();
  if (s.unknown_rank() || s.rank() < 1 || s.rank() > max_rank) return false;
  for (int j = 0; j < s.rank(); ++j) {
    if (s.dim(j) != (j == s.rank() - 1 ? n : 1)) return false;
  }
  return true;
}

// The cuBLASLt activation node `id` is, or "" when it is none of them.
std::string EpilogueActivation(const Graph& g, int id) {
  const Node& n = g.node(id);
  if (n.op() == "Relu") return "relu";
  if (n.op() == "Gelu" &&
      n.attrs().GetString("approximate").value_or("none") == "tanh") {
    return "gelu_tanh";
  }
  return "";
}

// The MatMul's weight when it is a Const matrix: its output width N, or -1.
int64_t WeightColumns(const Graph& g, const Node& mm, bool transpose_b) {
  const Tensor* w = ConstValueOf(g, mm.input(1));
  if (w == nullptr || !w->on_host() || w->dtype() != mm.output_dtype(0) ||
      w->rank() != 2) {
    return -1;
  }
  return w->dim(transpose_b ? 0 : 1);
}

// Moves the Reshape `reshape` (attribute form) after the fused node `last`:
// the node `after` that read it (an activation or the residual Add, now in
// the fused node) is replaced by the Reshape of `last`, under after's name.
void MoveReshapeAfter(const Graph& g, int reshape, int after, int last,
                      GraphRewriter* rw, std::vector<std::string>* changes) {
  const Node& r = g.node(reshape);
  const Node& a = g.node(after);
  NewNode moved;
  moved.name = a.name();
  moved.op = r.op();
  for (const auto& [k, v] : r.attrs().values()) moved.attrs[k] = v;
  moved.inputs.push_back(TensorRef{last, 0});
  moved.device = a.requested_device();
  moved.source_line = a.source_line();
  changes->push_back(absl::StrCat(
      "moved '", a.name(), "' (", a.op(), ") before '", r.name(),
      "' (Reshape) into the FusedMatMul; the Reshape takes its name"));
  rw->Remove(reshape);
  rw->Replace(after, std::move(moved));
}

class MatMulBiasFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "matmul_bias_fusion"; }

  absl::StatusOr<PassOutput> Run(
      const Graph& g, const PassOptions& /*options*/) const override {
    PassOutput out;
    GraphRewriter rw(g);
    // Nodes already in a pattern: an Add reading two MatMul branches is a
    // candidate residual Add for both; the first to reach it takes it.
    std::set<int> used;
    for (const Node& mm : g.nodes()) {
      if (mm.op() != "MatMul" || mm.num_inputs() != 2 ||
          !IsFusableType(mm.output_dtype(0)) ||
          mm.attrs().GetBool("transpose_a").value_or(false)) {
        continue;
      }
      const DataType dtype = mm.output_dtype(0);
      const bool transpose_b = mm.attrs().GetBool("transpose_b").value_or(false);
      const Shape& shape = mm.output_shape(0);
      const int64_t n = WeightColumns(g, mm, transpose_b);
      if (n < 0 || shape.unknown_rank() || shape.rank() < 2) continue;
      const TensorRef x = mm.input(0);
      if (g.node(x.node).output_dtype(x.port) != dtype) continue;
      std::vector<int> pattern = {mm.id()};
      // The bias, if the layer has one.
      const int bias_add = SoleReader(g, mm.id());
      auto same_device = [&](int id) {
        return g.node(id).requested_device() == mm.requested_device();
      };
      std::optional<TensorRef> bias;
      if (bias_add >= 0 && used.count(bias_add) == 0 && same_device(bias_add) &&
          IsAddOf(g, bias_add, {mm.id(), 0}, shape)) {
        const TensorRef b = *OtherOperand(g.node(bias_add), {mm.id(), 0});
        if (IsColumnBias(g, b, n, shape.rank(), dtype)) bias = b;
      }
      int last = mm.id();
      if (bias) {
        pattern.push_back(bias_add);
        last = bias_add;
      }
      // A residual of the output's own shape (no broadcast).
      std::optional<TensorRef> residual;
      const int res_add = SoleReader(g, last);
      if (res_add >= 0 && used.count(res_add) == 0 && same_device(res_add) &&
          IsAddOf(g, res_add, {last, 0}, shape)) {
        const TensorRef r = *OtherOperand(g.node(res_add), {last, 0});
        const Node& rn = g.node(r.node);
        if (rn.output_shape(r.port) == shape &&
            rn.output_dtype(r.port) == dtype && ConstValueOf(g, r) == nullptr) {
          residual = r;
          pattern.push_back(res_add);
          last = res_add;
        }
      }
      // The activation, when cuBLASLt computes exactly it.
      std::string activation = "none";
      const int act = SoleReader(g, last);
      if (act >= 0 && used.count(act) == 0 && same_device(act) &&
          g.node(act).output_shape(0) == shape) {
        const std::string a = EpilogueActivation(g, act);
        if (!a.empty()) {
          activation = a;
          pattern.push_back(act);
          last = act;
        }
      }
      // Or behind a Reshape (attribute form) that only the activation reads.
      int reshape = -1;
      if (activation == "none" && !residual && act >= 0 &&
          used.count(act) == 0 && same_device(act) &&
          g.node(act).op() == "Reshape" && g.node(act).num_inputs() == 1) {
        const int after = SoleReader(g, act);
        if (after >= 0 && used.count(after) == 0 && same_device(after) &&
            g.node(after).output_shape(0) == g.node(act).output_shape(0) &&
            g.node(act).control_inputs().empty()) {
          const std::string a = EpilogueActivation(g, after);
          if (!a.empty() && g.node(after).control_inputs().empty()) {
            activation = a;
            reshape = act;
          }
        }
      }
      // Or a residual behind a Reshape (attribute form) that only the
      // residual Add reads (GPT-2's Gemm -> Add(bias) -> Reshape ->
      // Add(residual)): the residual is reshaped to the product's shape (a
      // view) for the epilogue, and the Reshape moves after the fused node
      // under the residual Add's name. Only with static shapes.
      int res_reshape = -1;
      std::optional<TensorRef> reshaped_residual;
      bool static_shape = true;
      for (int j = 0; j < shape.rank(); ++j) static_shape = static_shape && shape.dim(j) >= 0;
      if (activation == "none" && !residual && reshape < 0 && static_shape && act >= 0 &&
          used.count(act) == 0 && same_device(act) && g.node(act).op() == "Reshape" &&
          g.node(act).num_inputs() == 1 && g.node(act).control_inputs().empty()) {
        const Shape& rshape = g.node(act).output_shape(0);
        const int radd = SoleReader(g, act);
        if (radd >= 0 && used.count(radd) == 0 && same_device(radd) &&
            g.node(radd).control_inputs().empty() && IsAddOf(g, radd, {act, 0}, rshape)) {
          const TensorRef r = *OtherOperand(g.node(radd), {act, 0});
          const Node& rn = g.node(r.node);
          if (rn.output_shape(r.port) == rshape && rn.output_dtype(r.port) == dtype &&
              ConstValueOf(g, r) == nullptr && r.node != act) {
            reshaped_residual = r;
            res_reshape = act;
          }
        }
      }
      // Without a bias, only a residual or an activation to take in makes a
      // FusedMatMul (with a zero bias) worth it.
      if (!bias && !residual && activation == "none" && reshape < 0 &&
          res_reshape < 0) {
        continue;
      }
      if (!NoControlInputs(g, pattern)) continue;
      used.insert(pattern.begin(), pattern.end());
      std::string residual_name;
      if (res_reshape >= 0) {
        const int radd = SoleReader(g, res_reshape);
        used.insert(res_reshape);
        used.insert(radd);
        const Node& a = g.node(radd);
        // The residual as the product's shape.
        NewNode view;
        view.name = rw.UniqueName(absl::StrCat(a.name(), "/residual"));
        view.op = "Reshape";
        view.attrs["T"] = MakeTypeAttr(dtype);
        view.attrs["shape"] = MakeIntListAttr(
            std::vector<int64_t>(shape.dims().begin(), shape.dims().end()));
        view.inputs.push_back(*reshaped_residual);
        view.device = a.requested_device();
        view.source_line = a.source_line();
        residual_name = view.name;
        rw.Add(mm.id(), std::move(view));
        MoveReshapeAfter(g, res_reshape, radd, last, &rw, &out.changes);
      }
      if (reshape >= 0) {
        // The Reshape, now of the fused node's result, in the activation's
        // place and under its name.
        const int after = SoleReader(g, reshape);
        used.insert(reshape);
        used.insert(after);
        MoveReshapeAfter(g, reshape, after, last, &rw, &out.changes);
      }
      // Intermediate results are not fetched: SoleReader checked every
      // node but the last.
      std::variant<TensorRef, std::string> bias_input;
      if (!bias) {
        // n zeros (common_subexpressions merges those of one width).
        ASSIGN_OR_RETURN(Tensor zeros, Filled(dtype, Shape({n}), 0.0));
        const std::string bname =
            rw.UniqueName(absl::StrCat(mm.name(), "/zero_bias"));
        rw.Add(mm.id(), ConstNode(bname, std::move(zeros),
                                  mm.requested_device(), mm.source_line()));
        out.changes.push_back(absl::StrCat(
            "'", mm.name(), "' (MatMul) has no bias: its FusedMatMul adds '",
            bname, "' (", n, " zeros)"));
        bias_input = bname;
      } else if (const Tensor* b = ConstValueOf(g, *bias); b->rank() != 1) {
        const std::string bname =
            rw.UniqueName(absl::StrCat(mm.name(), "/fused_bias"));
        rw.Add(mm.id(), ConstNode(bname, b->Reshaped(Shape({n})),
                                  g.node(bias->node).requested_device(),
                                  mm.source_line()));
        bias_input = bname;
      } else {
        bias_input = *bias;
      }
      NewNode fused;
      fused.op = "FusedMatMul";
      fused.attrs["T"] = MakeTypeAttr(dtype);
      fused.attrs["transpose_b"] = MakeBoolAttr(transpose_b);
      fused.attrs["activation"] = MakeStringAttr(activation);
      const bool has_residual = residual.has_value() || !residual_name.empty();
      fused.attrs["num_args"] = MakeIntAttr(has_residual ? 2 : 1);
      fused.inputs.push_back(x);
      fused.inputs.push_back(mm.input(1));
      fused.inputs.push_back(bias_input);
      if (residual) fused.inputs.push_back(*residual);
      if (!residual_name.empty()) fused.inputs.push_back(residual_name);
      ReplacePattern(rw, pattern, std::move(fused), &out.changes);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeMatMulBiasFusionPass() {
  return std::make_unique<MatMulBiasFusionPass>();
}

}  // namespace sluice
