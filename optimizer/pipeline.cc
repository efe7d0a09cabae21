// The pass pipeline (optimizer/pipeline.h).
#include "optimizer/pipeline.h"

#include <chrono>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {

OptimizationLevel EffectiveLevel(OptimizationLevel level) {
  return level == OPTIMIZATION_DEFAULT ? OPTIMIZATION_ALL : level;
}

std::string OptimizationLevelName(OptimizationLevel level) {
  switch (EffectiveLevel(level)) {
    case OPTIMIZATION_NONE:
      return "none";
    case OPTIMIZATION_BASIC:
      return "basic";
    default:
      return "all";
  }
}

DataType ReducedPrecisionType(Precision precision) {
  switch (precision) {
    case PRECISION_FLOAT16: return DT_FLOAT16;
    case PRECISION_BFLOAT16: return DT_BFLOAT16;
    default: return DT_INVALID;
  }
}

DataFormat ResolveConvLayout(const RuntimeConfig& config,
                             const OptimizationTarget& target) {
  switch (config.conv_layout()) {
    case CONV_LAYOUT_NHWC: return DataFormat::kNhwc;
    case CONV_LAYOUT_NCHW: return DataFormat::kNchw;
    default:
      return ReducedPrecisionType(config.precision()) != DT_INVALID
                 ? target.conv_layout_reduced
                 : target.conv_layout_float32;
  }
}

std::vector<std::unique_ptr<Pass>> PassesForLevel(OptimizationLevel level,
                                                  DataType reduced_precision,
                                                  DataFormat conv_layout,
                                                  bool nhwc_where_fewer_transposes) {
  std::vector<std::unique_ptr<Pass>> passes;
  level = EffectiveLevel(level);
  const bool nhwc = conv_layout == DataFormat::kNhwc || nhwc_where_fewer_transposes;
  if (reduced_precision != DT_INVALID) {
    // Whatever the level: the config asked for it. After the fusions, so
    // the fused ops are what it converts; dead_nodes drops the float32
    // constants no reader is left for.
    std::vector<std::unique_ptr<Pass>> before =
        PassesForLevel(level, DT_INVALID, conv_layout, nhwc_where_fewer_transposes);
    before.push_back(MakeReducedPrecisionPass());
    before.push_back(MakeDeadNodePass());
    return before;
  }
  if (level == OPTIMIZATION_NONE) {
    // The layout, when asked for, at every level (as the precision).
    if (nhwc) {
      passes.push_back(MakeNhwcLayoutPass());
      passes.push_back(MakeDeadNodePass());  // the NCHW filters
    }
    return passes;
  }
  passes.push_back(MakeShapeSimplificationPass());
  passes.push_back(MakeConstantFoldingPass());
  // Again: parameters that folding just made constant.
  passes.push_back(MakeShapeSimplificationPass());
  passes.push_back(MakeRedundantNodePass());
  passes.push_back(MakeCommonSubexpressionPass());
  passes.push_back(MakeConvScaleFoldingPass());
  passes.push_back(MakeDeadNodePass());
  if (level == OPTIMIZATION_ALL) {
    passes.push_back(MakeLayerNormFusionPass());
    passes.push_back(MakeRMSNormFusionPass());
    passes.push_back(MakeGeluFusionPass());
    passes.push_back(MakeSoftmaxFusionPass());
    // After softmax_fusion (its Softmax is what attention_fusion matches),
    // before elementwise_fusion (which would take the scale and the mask).
    passes.push_back(MakeAttentionFusionPass());
    passes.push_back(MakeConvActivationFusionPass());
    if (nhwc) {
      // After conv_activation_fusion (FusedConv2D is what it converts);
      // redundant_nodes then composes its Transposes with the model's.
      passes.push_back(MakeNhwcLayoutPass());
      passes.push_back(MakeRedundantNodePass());
    }
    passes.push_back(MakeMatMulBiasFusionPass());
    // After it, so that the fused node is what reads the weight.
    passes.push_back(MakeGemmWeightLayoutPass());
    passes.push_back(MakeCommonSubexpressionPass());
    // After the pattern fusions (what they leave) and after common
    // subexpressions (duplicate constants read once).
    passes.push_back(MakeElementwiseFusionPass());
    passes.push_back(MakeDeadNodePass());
  } else {
    passes.push_back(MakeGemmWeightLayoutPass());
    if (nhwc) {
      passes.push_back(MakeNhwcLayoutPass());
      passes.push_back(MakeRedundantNodePass());
    }
    passes.push_back(MakeDeadNodePass());
  }
  return passes;
}

PassOptions PassOptionsFromConfig(const RuntimeConfig& config,
                                  const OptimizationTarget& target) {
  PassOptions options;
  options.limits = EffectiveResourceLimits(config);
  options.reduced_precision = ReducedPrecisionType(config.precision());
  options.conv_layout = ResolveConvLayout(config, target);
  options.keep_grouped_convs_nchw = config.conv_layout() == CONV_LAYOUT_AUTO &&
                                    options.conv_layout == DataFormat::kNhwc &&
                                    target.grouped_convs_stay_nchw;
  options.nhwc_where_fewer_transposes = config.conv_layout() == CONV_LAYOUT_AUTO &&
                                        options.conv_layout == DataFormat::kNchw &&
                                        target.nhwc_where_fewer_transposes;
  options.fuse_conv_smooth_activations = target.convs_apply_smooth_activations;
  options.transpose_weight_row_bytes = target.gemm_transposed_weight_row_bytes;
  return options;
}

absl::StatusOr<OptimizedGraph> OptimizeGraph(std::unique_ptr<const Graph> graph,
                                             OptimizationLevel level,
                                             const PassOptions& options,
                                             const PassStartFn& on_pass) {
  if (graph == nullptr) {
    return absl::InvalidArgumentError("OptimizeGraph needs a graph");
  }
  OptimizedGraph out;
  out.level = EffectiveLevel(level);
  out.nodes_before = graph->num_nodes();
  std::vector<std::string> original_names;
  for (const Node& n : graph->nodes()) original_names.push_back(n.name());
  const std::vector<std::unique_ptr<Pass>> passes =
      PassesForLevel(level, options.reduced_precision, options.conv_layout,
                     options.nhwc_where_fewer_transposes);
  for (const std::unique_ptr<Pass>& pass : passes) {
    PassRecord record;
    record.pass = std::string(pass->name());
    if (on_pass) {
      on_pass(record.pass, static_cast<int>(out.records.size()),
              static_cast<int>(passes.size()));
    }
    record.nodes_before = graph->num_nodes();
    const auto start = std::chrono::steady_clock::now();
    // Each round's input graph is released as the next begins.
    for (bool again = true; again;) {
      absl::StatusOr<PassOutput> result = pass->Run(*graph, options);
      again = false;
      if (!result.ok()) {
        record.error = std::string(result.status().message());
      } else {
        for (std::string& c : result->changes)
          record.changes.push_back(std::move(c));
        if (result->graph != nullptr) {
          graph = std::move(result->graph);
          again = pass->RunsInRounds();
        }
      }
    }
    record.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    record.nodes_after = graph->num_nodes();
    out.records.push_back(std::move(record));
  }
  for (const std::string& name : original_names) {
    if (graph->FindNode(name) == nullptr) out.removed_nodes.push_back(name);
  }
  out.graph = std::move(graph);
  return out;
}

std::vector<std::string> DescribeOptimization(const OptimizedGraph& opt,
                                              size_t max_changes) {
  std::vector<std::string> lines;
  double seconds = 0;
  for (const PassRecord& r : opt.records) seconds += r.seconds;
  lines.push_back(absl::StrFormat(
      "optimization level %s: %d -> %d nodes, %.1f ms in the passes",
      OptimizationLevelName(opt.level), opt.nodes_before,
      opt.graph->num_nodes(), seconds * 1e3));
  for (const PassRecord& r : opt.records) {
    std::string line =
        absl::StrFormat("  %-22s %d -> %d nodes %9.2f ms", r.pass,
                        r.nodes_before, r.nodes_after, r.seconds * 1e3);
    if (!r.error.empty()) {
      absl::StrAppend(&line, "  FAILED, skipped: ", r.error);
    } else if (r.changes.empty()) {
      absl::StrAppend(&line, "  (no change)");
    }
    lines.push_back(line);
    for (size_t i = 0; i < r.changes.size(); ++i) {
      if (max_changes > 0 && i == max_changes) {
        lines.push_back(
            absl::StrCat("      ... and ", r.changes.size() - i, " more"));
        break;
      }
      lines.push_back(absl::StrCat("      ", r.changes[i]));
    }
  }
  return lines;
}

}  // namespace sluice
