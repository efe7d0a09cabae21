// The CPU kernel of TreeEnsemble (graph/ops/ml_ops.cc; the trees of ONNX's
// ai.onnx.ml TreeEnsembleRegressor/Classifier and TreeEnsemble, as
// onnxruntime runs them): the attributes are checked once, when the kernel
// is made (every child and root names a node or leaf, no tree loops back,
// modes known), then each row of x walks every tree to a leaf, the leaves'
// weights are combined per target (SUM, AVERAGE, MIN or MAX) and
// base_values added. Rows are shared between the intra-op pool's threads.
// There is no GPU kernel: the placer keeps TreeEnsemble on the CPU.
//
//   cpu::RegisterTreeEnsembleKernels(&registry);  // RegisterCpuKernels
//
// Stateless registration; the kernel is thread-safe (its attributes never
// change; Compute keeps its scratch per call).
#ifndef SLUICE_KERNELS_CPU_TREE_ENSEMBLE_H_
#define SLUICE_KERNELS_CPU_TREE_ENSEMBLE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "kernels/kernel_registry.h"

namespace sluice::cpu {

// TreeEnsemble's attributes, parsed and checked.
struct TreeEnsembleAttrs {
  enum class Mode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };
  enum class Aggregate : uint8_t { kSum, kAverage, kMin, kMax };
  int64_t n_targets = 1;
  Aggregate aggregate = Aggregate::kSum;
  std::vector<float> base_values;  // empty or n_targets
  std::vector<int64_t> roots;      // >= 0 a node, -1 - k leaf k
  std::vector<int64_t> features;
  std::vector<float> thresholds;
  std::vector<Mode> modes;
  std::vector<int64_t> true_child, false_child;  // as roots
  std::vector<uint8_t> missing_true;
  std::vector<int64_t> member_begin;  // per node + 1, or empty
  std::vector<float> member_values;
  std::vector<int64_t> leaf_begin;  // per leaf + 1
  std::vector<int64_t> leaf_targets;
  std::vector<float> leaf_weights;
  int64_t max_feature = -1;
};
// INVALID_ARGUMENT naming the attribute for arrays of different lengths, a
// child, root, feature or target out of range, an unknown mode or
// aggregate, or a tree that reaches a node twice.
absl::StatusOr<TreeEnsembleAttrs> ParseTreeEnsembleAttrs(const Node& node);

void RegisterTreeEnsembleKernels(KernelRegistry* registry);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_TREE_ENSEMBLE_H_
