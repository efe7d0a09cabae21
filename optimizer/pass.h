// Pass: one graph optimisation. A pass reads a validated, immutable Graph
// and returns a new one (docs/design.md decision 4), or nothing when it has
// nothing to change, with a line for each thing it did. Passes run in the
// fixed order of optimizer/pipeline.h.
//
//   std::unique_ptr<Pass> pass = MakeConstantFoldingPass();
//   ASSIGN_OR_RETURN(PassOutput out, pass->Run(graph, PassOptions{}));
//   const Graph& next = out.graph != nullptr ? *out.graph : graph;
//
// Passes hold no state: Run is thread-safe.
#ifndef SLUICE_OPTIMIZER_PASS_H_
#define SLUICE_OPTIMIZER_PASS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/resource_limits.h"
#include "graph/data_format.h"
#include "graph/graph.h"

namespace sluice {

struct PassOptions {
  // What constant folding may make (core/resource_limits.h: a folded
  // constant within max_folded_constant_bytes or its inputs' bytes, and
  // max_folded_bytes in all per pass run), so a few bytes of file cannot
  // make a huge constant, while folding a Transpose of a weight still works.
  // The same limits the ONNX importer folds under.
  ResourceLimits limits;
  // DT_FLOAT16 or DT_BFLOAT16: reduced_precision runs the float32 model in
  // that type (RuntimeConfig.precision). DT_INVALID: the model's dtypes.
  DataType reduced_precision = DT_INVALID;
  // The layout convolutions run in (RuntimeConfig.conv_layout, resolved for
  // the target: PassOptionsFromConfig). kNhwc: nhwc_layout runs them channels last.
  DataFormat conv_layout = DataFormat::kNchw;
  // Whether nhwc_layout keeps a graph with a grouped or depthwise
  // convolution in NCHW: set when conv_layout is AUTO's choice for a target
  // that runs those slower channels last (cuDNN's channels-last depthwise
  // kernels: docs/design.md decision 31). The CPU's oneDNN converts them:
  // MobileNetV2 ran 3.1x faster channels last there.
  bool keep_grouped_convs_nchw = false;
  // Whether nhwc_layout, with conv_layout NCHW, still converts a graph that
  // comes out of it (and redundant_nodes) with fewer Transposes than it has:
  // a model that permutes its activations to channels last itself. Set when
  // conv_layout is AUTO's choice of NCHW for a target that asks for it
  // (OptimizationTarget::nhwc_where_fewer_transposes).
  bool nhwc_where_fewer_transposes = false;
  // Whether conv_activation_fusion also fuses HardSwish, HardSigmoid,
  // Sigmoid and SiLU into FusedConv2D: set for a target whose kernels take
  // them (the CPU provider's: PassOptionsFromConfig).
  bool fuse_conv_smooth_activations = false;
  // Nonzero: gemm_weight_layout stores a float32 weight [k, n] whose rows
  // are a multiple of this many bytes transposed, [n, k], for a
  // transpose_b MatMul or FusedMatMul: set for a target whose GEMM runs
  // such weights slower (OptimizationTarget::gemm_transposed_weight_row_bytes).
  int64_t transpose_weight_row_bytes = 0;
};

struct PassOutput {
  // The new graph; nullptr when the pass changed nothing.
  std::unique_ptr<const Graph> graph;
  // One line per change, naming the nodes ("folded 'scale' (Mul)").
  std::vector<std::string> changes;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // Short snake_case name: "constant_folding".
  virtual std::string_view name() const = 0;
  // The rewritten graph. An error means the pass itself failed (a bug, or a
  // graph it could not rebuild); the pipeline then keeps `graph` and
  // records why, so a failing pass never stops a model from running.
  virtual absl::StatusOr<PassOutput> Run(const Graph& graph,
                                         const PassOptions& options) const = 0;
  // Whether the pipeline runs the pass again on its own result until it
  // changes nothing (one record for all the rounds): a pass that rewrites
  // a bounded share of the weights per run, so that the old weights go
  // with each run's input graph before the next run copies more, and the
  // host never holds all of them twice (gemm_weight_layout).
  virtual bool RunsInRounds() const { return false; }
};

// The passes, in pipeline order (optimizer/pipeline.h says what each does).
std::unique_ptr<Pass> MakeDeadNodePass();
std::unique_ptr<Pass> MakeShapeSimplificationPass();
std::unique_ptr<Pass> MakeConstantFoldingPass();
std::unique_ptr<Pass> MakeRedundantNodePass();
std::unique_ptr<Pass> MakeCommonSubexpressionPass();
std::unique_ptr<Pass> MakeConvScaleFoldingPass();
std::unique_ptr<Pass> MakeLayerNormFusionPass();
std::unique_ptr<Pass> MakeRMSNormFusionPass();
std::unique_ptr<Pass> MakeGeluFusionPass();
std::unique_ptr<Pass> MakeSoftmaxFusionPass();
std::unique_ptr<Pass> MakeAttentionFusionPass();
std::unique_ptr<Pass> MakeConvActivationFusionPass();
std::unique_ptr<Pass> MakeMatMulBiasFusionPass();
std::unique_ptr<Pass> MakeGemmWeightLayoutPass();
std::unique_ptr<Pass> MakeElementwiseFusionPass();
std::unique_ptr<Pass> MakeReducedPrecisionPass();
std::unique_ptr<Pass> MakeNhwcLayoutPass();

}  // namespace sluice

#endif  // SLUICE_OPTIMIZER_PASS_H_
