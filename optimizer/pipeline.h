// The optimisation pipeline: the passes of pass.h in one fixed order, cut
// at a level (RuntimeConfig.optimization_level, as onnxruntime's levels).
// Session::Create runs it before placement, `sluice place` runs it the same
// way, and `sluice inspect --optimized` prints what each pass did.
//
//   ASSIGN_OR_RETURN(OptimizedGraph opt,
//                    OptimizeGraph(std::move(graph), OPTIMIZATION_ALL, {}));
//   for (const PassRecord& r : opt.records) ...
//
// Order (each pass sees the graph the one before made):
//   basic  shape_simplification   Shape/Size of static shapes become
//                                 constants; Dynamic* ops whose parameter
//                                 inputs are constants become their
//                                 attribute forms
//          constant_folding       nodes whose inputs are all constants run
//                                 once on the CPU kernels and become Const
//                                 (size-capped, PassOptions)
//          shape_simplification   again, for parameters folding made
//          redundant_nodes        Identity, same-dtype Cast, identity
//                                 Transpose/Reshape, Transpose∘Transpose,
//                                 Reshape chains
//          common_subexpressions  same op, attributes and inputs: one node
//          conv_scale_folding     Conv -> per-channel constant Add/Mul/Sub/
//                                 Div chains (BatchNormalization): the scale
//                                 goes into the filter, one Add stays
//          dead_nodes             what no graph output needs
//          gemm_weight_layout     (at its end, then dead_nodes) as below
//   all    layer_norm_fusion      the decomposed LayerNorm exporters emit
//          rms_norm_fusion        the decomposed RMSNorm (LLaMA's
//                                 x * rsqrt(mean(x^2) + eps) * w, also
//                                 with Sqrt and Div, and with the Casts
//                                 of float16 / bfloat16 exports)
//          gelu_fusion            x*0.5*(1+erf(x/√2)) and the tanh form
//          softmax_fusion         exp(x-max)/sum(exp(x-max)) on one axis
//          attention_fusion       MatMul(Q, K^T) -> scale -> [mask] ->
//                                 Softmax [-> NaN guard] -> MatMul(., V)
//                                 into one FusedAttention
//          conv_activation_fusion Conv2D -> Add(bias) [-> Add(residual)]
//                                 [-> Relu] into one FusedConv2D
//          matmul_bias_fusion     MatMul(x, const W) -> Add(bias)
//                                 [-> Add(residual)] [-> Relu | tanh Gelu]
//                                 into one FusedMatMul (cuBLASLt epilogue)
//          gemm_weight_layout     float32 weights with rows of a multiple
//                                 of 2048 bytes stored transposed for a
//                                 MatMul or FusedMatMul, where the target's
//                                 GEMM asks (PassOptions)
//          common_subexpressions, dead_nodes   (what fusion orphaned)
// layout (PassOptions.conv_layout NHWC: RuntimeConfig.conv_layout NHWC, or
// AUTO where the target provider prefers it; at any level):
//          nhwc_layout            Conv2D, FusedConv2D, MaxPool, AvgPool
//                                 channels last, the layout-agnostic ops
//                                 between them too; constant filters
//                                 transposed once (all: after
//                                 conv_activation_fusion, so FusedConv2D is
//                                 what it converts, then redundant_nodes;
//                                 basic: at its end, then redundant_nodes
//                                 and dead_nodes; none: alone, then
//                                 dead_nodes)
// precision (RuntimeConfig.precision float16 / bfloat16, at any level):
//          reduced_precision      float32 nodes of the ops whose kernels
//                                 keep float32 accumulation run in the
//                                 reduced type; weights converted once,
//                                 Casts where values cross, outputs cast
//                                 back to float32
//          dead_nodes             the float32 weights nothing reads now
// onnxruntime's basic level is constant folding, redundant-node removal and
// the Conv+Add/Mul/BatchNorm fusions; its extended level the fusions into
// contrib kernels (Gelu, LayerNorm, attention) and "all" adds layout
// changes: sluice's basic and all follow that split; the layout change is
// sluice's conv_layout, not a level.
//
// Stateless; thread-safe.
#ifndef SLUICE_OPTIMIZER_PIPELINE_H_
#define SLUICE_OPTIMIZER_PIPELINE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "kernels/execution_provider.h"
#include "optimizer/pass.h"
#include "proto/config.pb.h"

namespace sluice {

// What one pass did.
struct PassRecord {
  std::string pass;
  int nodes_before = 0;
  int nodes_after = 0;
  std::vector<std::string> changes;  // the pass's lines
  std::string error;  // non-empty: the pass (its last round) failed and
                      // changed nothing (earlier rounds' changes stand)
  double seconds = 0;
};

struct OptimizedGraph {
  std::unique_ptr<const Graph> graph;
  OptimizationLevel level = OPTIMIZATION_ALL;  // DEFAULT resolved
  std::vector<PassRecord> records;             // one per pass run
  // Names of the input graph's nodes that are not in `graph`, so that a
  // fetch of one can say why it is gone.
  std::vector<std::string> removed_nodes;
  int nodes_before = 0;
};

// OPTIMIZATION_DEFAULT is OPTIMIZATION_ALL.
OptimizationLevel EffectiveLevel(OptimizationLevel level);
// "none", "basic", "all".
std::string OptimizationLevelName(OptimizationLevel level);
// The passes a level runs, in order; with a reduced precision
// (DT_FLOAT16 / DT_BFLOAT16), reduced_precision and dead_nodes after them,
// at every level; with conv_layout NHWC (or nhwc_where_fewer_transposes:
// PassOptions), nhwc_layout where the order above says.
std::vector<std::unique_ptr<Pass>> PassesForLevel(
    OptimizationLevel level, DataType reduced_precision = DT_INVALID,
    DataFormat conv_layout = DataFormat::kNchw,
    bool nhwc_where_fewer_transposes = false);
// PRECISION_FLOAT16 -> DT_FLOAT16, PRECISION_BFLOAT16 -> DT_BFLOAT16, else
// DT_INVALID (the model's dtypes).
DataType ReducedPrecisionType(Precision precision);
// The layout convolutions run in under `config` on `target` (the
// execution provider that runs the graph's compute,
// kernels/execution_provider.h): NCHW and NHWC as asked; AUTO the target's
// layout for the precision the config runs in.
DataFormat ResolveConvLayout(const RuntimeConfig& config,
                             const OptimizationTarget& target);
// PassOptions from a config and the target it will run on: its
// EffectiveResourceLimits, reduced precision and conv layout
// (ResolveConvLayout). The optimizer looks at no hardware: the caller says
// what the graph will run on (kernels/providers.h: ProvidersForMachine for
// a session, ProvidersForPlan for `sluice place --devices`).
PassOptions PassOptionsFromConfig(const RuntimeConfig& config,
                                  const OptimizationTarget& target);

// Before each pass: its name, how many passes ran before it, and how many
// the level runs.
using PassStartFn = std::function<void(const std::string& pass, int done, int total)>;

// Runs the level's passes over `graph`, calling `on_pass` (when set) before
// each. A pass that fails is recorded and skipped; the result is always a
// valid graph (the input itself for OPTIMIZATION_NONE). Errors only for a
// null graph.
absl::StatusOr<OptimizedGraph> OptimizeGraph(std::unique_ptr<const Graph> graph,
                                             OptimizationLevel level,
                                             const PassOptions& options,
                                             const PassStartFn& on_pass = {});

// A first line with the level, the node counts and the passes' time, then
// one line per pass: "  constant_folding   42 -> 30 nodes      1.25 ms",
// then each change indented (at most `max_changes` per pass, 0 = all).
std::vector<std::string> DescribeOptimization(const OptimizedGraph& opt,
                                              size_t max_changes);

}  // namespace sluice

#endif  // SLUICE_OPTIMIZER_PIPELINE_H_
