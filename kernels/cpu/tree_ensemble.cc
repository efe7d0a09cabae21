// TreeEnsemble on the CPU (kernels/cpu/tree_ensemble.h).
#include "kernels/cpu/tree_ensemble.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

using Attrs = TreeEnsembleAttrs;

absl::Status TreeEnsembleError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("TreeEnsemble ", what));
}

absl::StatusOr<Attrs::Mode> ParseMode(const std::string& m) {
  static const std::pair<const char*, Attrs::Mode> kModes[] = {
      {"LEQ", Attrs::Mode::kLeq},      {"LT", Attrs::Mode::kLt},
      {"GTE", Attrs::Mode::kGte},      {"GT", Attrs::Mode::kGt},
      {"EQ", Attrs::Mode::kEq},        {"NEQ", Attrs::Mode::kNeq},
      {"MEMBER", Attrs::Mode::kMember}};
  for (const auto& [name, mode] : kModes) {
    if (m == name) return mode;
  }
  return TreeEnsembleError(
      absl::StrCat("node_modes: unknown mode '", m,
                   "' (LEQ, LT, GTE, GT, EQ, NEQ or MEMBER)"));
}

// Every reference (a root or child) names a node or a leaf.
absl::Status CheckRef(const Attrs& a, int64_t ref, absl::string_view where) {
  const int64_t nodes = static_cast<int64_t>(a.features.size());
  const int64_t leaves = static_cast<int64_t>(a.leaf_begin.size()) - 1;
  if (ref >= nodes || -1 - ref >= leaves) {
    return TreeEnsembleError(
        absl::StrCat(where, " ", ref, " names neither one of the ", nodes,
                     " nodes nor one of the ", leaves, " leaves (-1 - k)"));
  }
  return absl::OkStatus();
}

// Each tree reaches each of its nodes once (no loops).
absl::Status CheckTrees(const Attrs& a) {
  std::vector<int64_t> seen(a.features.size(), -1);
  std::vector<int64_t> stack;
  for (size_t t = 0; t < a.roots.size(); ++t) {
    stack.assign(1, a.roots[t]);
    while (!stack.empty()) {
      const int64_t n = stack.back();
      stack.pop_back();
      if (n < 0) continue;
      if (seen[n] == static_cast<int64_t>(t)) {
        return TreeEnsembleError(absl::StrCat("tree ", t, " reaches node ", n,
                                              " twice: a tree cannot loop"));
      }
      seen[n] = static_cast<int64_t>(t);
      stack.push_back(a.true_child[n]);
      stack.push_back(a.false_child[n]);
    }
  }
  return absl::OkStatus();
}

template <typename T>
bool TakesTrue(const Attrs& a, int64_t n, T v) {
  if (std::isnan(v) && !a.missing_true.empty() && a.missing_true[n]) {
    return true;
  }
  const T th = static_cast<T>(a.thresholds[n]);
  switch (a.modes[n]) {
    case Attrs::Mode::kLeq:
      return v <= th;
    case Attrs::Mode::kLt:
      return v < th;
    case Attrs::Mode::kGte:
      return v >= th;
    case Attrs::Mode::kGt:
      return v > th;
    case Attrs::Mode::kEq:
      return v == th;
    case Attrs::Mode::kNeq:
      return v != th;
    case Attrs::Mode::kMember: {
      for (int64_t i = a.member_begin[n]; i < a.member_begin[n + 1]; ++i) {
        if (v == static_cast<T>(a.member_values[i])) return true;
      }
      return false;
    }
  }
  return false;
}

class TreeEnsembleKernel final
    : public LaunchKernel<TreeEnsembleAttrs, ParseTreeEnsembleAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Attrs& a = attrs();
    if (x.rank() != 2) {
      return TreeEnsembleError(
          absl::StrCat("needs an input [N, F], got ", x.shape().DebugString()));
    }
    const int64_t rows = x.dim(0), features = x.dim(1);
    if (a.max_feature >= features) {
      return TreeEnsembleError(absl::StrCat("reads feature ", a.max_feature,
                                            " of an input with ", features));
    }
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape({rows, a.n_targets})));
    if (rows == 0) return absl::OkStatus();
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const double trees = static_cast<double>(a.roots.size());
      ParallelFor(*ctx, rows, 20.0 * trees + 1, [&](int64_t b, int64_t e) {
        std::vector<double> acc(a.n_targets);
        std::vector<uint8_t> hit(a.n_targets);
        for (int64_t r = b; r < e; ++r) {
          const T* row = in + r * features;
          std::fill(acc.begin(), acc.end(), 0.0);
          std::fill(hit.begin(), hit.end(), 0);
          for (int64_t ref : a.roots) {
            while (ref >= 0) {
              ref = TakesTrue(a, ref, row[a.features[ref]])
                        ? a.true_child[ref]
                        : a.false_child[ref];
            }
            const int64_t leaf = -1 - ref;
            for (int64_t k = a.leaf_begin[leaf]; k < a.leaf_begin[leaf + 1];
                 ++k) {
              const int64_t t = a.leaf_targets[k];
              const double w = a.leaf_weights[k];
              switch (a.aggregate) {
                case Attrs::Aggregate::kSum:
                case Attrs::Aggregate::kAverage:
                  acc[t] += w;
                  break;
                case Attrs::Aggregate::kMin:
                  acc[t] = hit[t] ? std::min(acc[t], w) : w;
                  break;
                case Attrs::Aggregate::kMax:
                  acc[t] = hit[t] ? std::max(acc[t], w) : w;
                  break;
              }
              hit[t] = 1;
            }
          }
          for (int64_t t = 0; t < a.n_targets; ++t) {
            double s = acc[t];
            if (a.aggregate == Attrs::Aggregate::kAverage && trees > 0) {
              s /= trees;
            }
            if (!a.base_values.empty()) s += a.base_values[t];
            out[r * a.n_targets + t] = static_cast<T>(s);
          }
        }
      });
      return absl::OkStatus();
    };
    if (x.dtype() == DT_DOUBLE) return run(TypeTag<double>());
    return run(TypeTag<float>());
  }
};

}  // namespace

absl::StatusOr<TreeEnsembleAttrs> ParseTreeEnsembleAttrs(const Node& node) {
  Attrs a;
  const AttrMap& m = node.attrs();
  ASSIGN_OR_RETURN(a.n_targets, m.GetInt("n_targets"));
  if (a.n_targets < 1) return TreeEnsembleError("n_targets must be >= 1");
  ASSIGN_OR_RETURN(std::string aggregate, m.GetString("aggregate"));
  if (aggregate == "SUM") {
    a.aggregate = Attrs::Aggregate::kSum;
  } else if (aggregate == "AVERAGE") {
    a.aggregate = Attrs::Aggregate::kAverage;
  } else if (aggregate == "MIN") {
    a.aggregate = Attrs::Aggregate::kMin;
  } else if (aggregate == "MAX") {
    a.aggregate = Attrs::Aggregate::kMax;
  } else {
    return TreeEnsembleError(absl::StrCat("aggregate '", aggregate,
                                          "' is not SUM, AVERAGE, MIN or MAX"));
  }
  ASSIGN_OR_RETURN(a.base_values, m.GetFloatList("base_values"));
  ASSIGN_OR_RETURN(a.roots, m.GetIntList("tree_roots"));
  ASSIGN_OR_RETURN(a.features, m.GetIntList("node_features"));
  ASSIGN_OR_RETURN(a.thresholds, m.GetFloatList("node_thresholds"));
  ASSIGN_OR_RETURN(std::vector<std::string> modes,
                   m.GetStringList("node_modes"));
  ASSIGN_OR_RETURN(a.true_child, m.GetIntList("node_true"));
  ASSIGN_OR_RETURN(a.false_child, m.GetIntList("node_false"));
  ASSIGN_OR_RETURN(std::vector<int64_t> missing,
                   m.GetIntList("node_missing_true"));
  ASSIGN_OR_RETURN(a.member_begin, m.GetIntList("member_begin"));
  ASSIGN_OR_RETURN(a.member_values, m.GetFloatList("member_values"));
  ASSIGN_OR_RETURN(a.leaf_begin, m.GetIntList("leaf_begin"));
  ASSIGN_OR_RETURN(a.leaf_targets, m.GetIntList("leaf_targets"));
  ASSIGN_OR_RETURN(a.leaf_weights, m.GetFloatList("leaf_weights"));
  const size_t nodes = a.features.size();
  if (a.thresholds.size() != nodes || modes.size() != nodes ||
      a.true_child.size() != nodes || a.false_child.size() != nodes ||
      (!missing.empty() && missing.size() != nodes)) {
    return TreeEnsembleError(absl::StrCat(
        "node_features, node_thresholds, node_modes, node_true, node_false "
        "(and node_missing_true if given) must be as long; got ",
        nodes, ", ", a.thresholds.size(), ", ", modes.size(), ", ",
        a.true_child.size(), ", ", a.false_child.size(), ", ", missing.size()));
  }
  if (!a.base_values.empty() &&
      static_cast<int64_t>(a.base_values.size()) != a.n_targets) {
    return TreeEnsembleError(absl::StrCat("base_values has ",
                                          a.base_values.size(), " values for ",
                                          a.n_targets, " targets"));
  }
  for (const std::string& mode : modes) {
    ASSIGN_OR_RETURN(Attrs::Mode parsed, ParseMode(mode));
    a.modes.push_back(parsed);
  }
  for (int64_t v : missing) a.missing_true.push_back(v != 0 ? 1 : 0);
  const bool members = std::find(a.modes.begin(), a.modes.end(),
                                 Attrs::Mode::kMember) != a.modes.end();
  if (members &&
      (a.member_begin.size() != nodes + 1 || a.member_begin.front() != 0 ||
       a.member_begin.back() != static_cast<int64_t>(a.member_values.size()) ||
       !std::is_sorted(a.member_begin.begin(), a.member_begin.end()))) {
    return TreeEnsembleError(
        "member_begin must be nodes + 1 ascending offsets into "
        "member_values");
  }
  if (a.leaf_begin.empty() || a.leaf_begin.front() != 0 ||
      a.leaf_begin.back() != static_cast<int64_t>(a.leaf_targets.size()) ||
      a.leaf_weights.size() != a.leaf_targets.size() ||
      !std::is_sorted(a.leaf_begin.begin(), a.leaf_begin.end())) {
    return TreeEnsembleError(
        "leaf_begin must be leaves + 1 ascending offsets into "
        "leaf_targets and leaf_weights (as long as each other)");
  }
  for (int64_t t : a.leaf_targets) {
    if (t < 0 || t >= a.n_targets) {
      return TreeEnsembleError(
          absl::StrCat("leaf_targets has target ", t, " of ", a.n_targets));
    }
  }
  for (size_t n = 0; n < nodes; ++n) {
    if (a.features[n] < 0) {
      return TreeEnsembleError(
          absl::StrCat("node_features has feature ", a.features[n]));
    }
    a.max_feature = std::max(a.max_feature, a.features[n]);
    RETURN_IF_ERROR(CheckRef(a, a.true_child[n], "node_true"));
    RETURN_IF_ERROR(CheckRef(a, a.false_child[n], "node_false"));
  }
  for (int64_t r : a.roots) RETURN_IF_ERROR(CheckRef(a, r, "tree_roots"));
  RETURN_IF_ERROR(CheckTrees(a));
  return a;
}

void RegisterTreeEnsembleKernels(KernelRegistry* r) {
  r->Register(CpuKernel("TreeEnsemble", {{"T", {DT_FLOAT, DT_DOUBLE}}},
                        MakeKernel<TreeEnsembleKernel>));
}

}  // namespace sluice::cpu
