// ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd over a set of
// axes (all when empty), with keepdims. An empty reduction gives the
// operation's identity (0, 1, -inf / the lowest integer for Max, +inf / the
// highest for Min); float16 and bfloat16 are reduced in float. Adjacent dimensions of the same kind (reduced or kept) are merged
// first, so the walk is over rows of the innermost group: a reduced innermost
// group folds each row into one output, a kept one accumulates a row of
// outputs. Reducing only trailing dimensions runs rows in parallel.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"
#include "kernels/launch_kernel.h"
#include "kernels/reduce_params.h"

namespace sluice::cpu {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd };

// The input as merged groups: dims_[g], whether it is reduced, and the
// output stride of each group (0 when reduced).
struct ReducePlan {
  DimVector dims;
  std::vector<bool> reduced;
  DimVector out_strides;
  int64_t reduced_count = 1;  // elements folded into each output
};

ReducePlan MakePlan(const Shape& in, const std::vector<bool>& is_reduced) {
  ReducePlan p;
  for (int d = 0; d < in.rank(); ++d) {
    if (is_reduced[d]) p.reduced_count *= in.dim(d);
    if (in.dim(d) == 1) continue;
    if (!p.dims.empty() && p.reduced.back() == is_reduced[d]) {
      p.dims.back() *= in.dim(d);
    } else {
      p.dims.push_back(in.dim(d));
      p.reduced.push_back(is_reduced[d]);
    }
  }
  if (p.dims.empty()) {  // a single element
    p.dims.push_back(1);
    p.reduced.push_back(true);
  }
  p.out_strides.resize(p.dims.size());
  int64_t s = 1;
  for (int g = static_cast<int>(p.dims.size()) - 1; g >= 0; --g) {
    p.out_strides[g] = p.reduced[g] ? 0 : s;
    if (!p.reduced[g]) s *= p.dims[g];
  }
  return p;
}

template <ReduceKind kKind, typename T>
T Fold(T acc, T v) {
  if constexpr (kKind == ReduceKind::kMax) {
    return (v > acc || v != v) ? v : acc;
  } else if constexpr (kKind == ReduceKind::kMin) {
    return (v < acc || v != v) ? v : acc;
  } else if constexpr (kKind == ReduceKind::kProd) {
    return static_cast<T>(acc * v);
  } else {
    return static_cast<T>(acc + v);
  }
}

template <ReduceKind kKind, typename T>
T Identity() {
  if constexpr (kKind == ReduceKind::kMax) {
    if constexpr (std::is_floating_point_v<T>) return -INFINITY;
    return std::numeric_limits<T>::lowest();
  } else if constexpr (kKind == ReduceKind::kMin) {
    if constexpr (std::is_floating_point_v<T>) return INFINITY;
    return std::numeric_limits<T>::max();
  } else if constexpr (kKind == ReduceKind::kProd) {
    return T(1);
  }
  return T(0);
}

// The dtypes each reduction takes: the ordered types (type_visit.h), and
// bool for Max and Min (any, all).
template <ReduceKind kKind>
const std::vector<DataType>& ReduceTypes() {
  static const auto* types = [] {
    auto* t = new std::vector<DataType>(OrderedTypes());
    if (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) {
      t->push_back(DT_BOOL);
    }
    return t;
  }();
  return *types;
}

template <ReduceKind kKind, typename T>
void Reduce(const OpKernelContext& ctx, const ReducePlan& p, const T* in,
            T* out, int64_t out_n) {
  const int groups = static_cast<int>(p.dims.size());
  const int64_t inner = p.dims[groups - 1];
  const bool fold_rows = p.reduced[groups - 1];
  std::fill(out, out + out_n, Identity<kKind, T>());
  if (fold_rows && groups <= 2 && (groups == 1 || !p.reduced[0])) {
    // Trailing reduction: row r is output r.
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    ParallelFor(ctx, out_n, static_cast<double>(inner),
                [&](int64_t b, int64_t e) {
                  for (int64_t r = b; r < e; ++r) {
                    Acc acc = Identity<kKind, T>();
                    const T* row = in + r * inner;
                    for (int64_t j = 0; j < inner; ++j) {
                      acc = Fold<kKind, Acc>(acc, row[j]);
                    }
                    out[r] = static_cast<T>(acc);
                  }
                });
    return;
  }
  DimVector idx(groups, 0);
  int64_t off = 0;
  const int64_t rows = p.reduced_count == 0 ? 0 : [&] {
    int64_t n = 1;
    for (int g = 0; g < groups - 1; ++g) n *= p.dims[g];
    return n;
  }();
  for (int64_t r = 0; r < rows; ++r, in += inner) {
    if (fold_rows) {
      T acc = out[off];
      for (int64_t j = 0; j < inner; ++j) acc = Fold<kKind, T>(acc, in[j]);
      out[off] = acc;
    } else {
      T* o = out + off;
      for (int64_t j = 0; j < inner; ++j) o[j] = Fold<kKind, T>(o[j], in[j]);
    }
    for (int g = groups - 2; g >= 0; --g) {
      off += p.out_strides[g];
      if (++idx[g] < p.dims[g]) break;
      off -= idx[g] * p.out_strides[g];
      idx[g] = 0;
    }
  }
}

// Reduce, then divide by the count for Mean (Sum's result otherwise).
template <ReduceKind kKind, typename T>
void RunReduceAs(const OpKernelContext& ctx, const ReducePlan& plan,
                 const T* in, T* out, int64_t out_n) {
  if constexpr (std::is_same_v<T, bool>) {
    if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) {
      Reduce<kKind, T>(ctx, plan, in, out, out_n);
    }
  } else {
    constexpr ReduceKind kFold =
        kKind == ReduceKind::kMean ? ReduceKind::kSum : kKind;
    Reduce<kFold, T>(ctx, plan, in, out, out_n);
    if constexpr (kKind == ReduceKind::kMean) {
      for (int64_t i = 0; i < out_n; ++i) {
        out[i] = static_cast<T>(out[i] / static_cast<T>(plan.reduced_count));
      }
    }
  }
}

// The Dynamic forms (DynamicReduce*) read the axes from input 1; empty axes
// with noop_with_empty_axes pass the input through.
template <ReduceKind kKind>
class ReduceKernel final : public LaunchKernel<ReduceAttrs, ParseReduceAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  template <typename T>
  static void RunReduce(const OpKernelContext& ctx, const ReducePlan& plan,
                        const T* in, T* out, int64_t out_n) {
    RunReduceAs<kKind, T>(ctx, plan, in, out, out_n);
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = x.dtype();
    ASSIGN_OR_RETURN(ReducePlanning setup,
                     PlanReduce(attrs(), x, attrs().dynamic ? &ctx->input(1) : nullptr));
    if (setup.pass_through) {
      ctx->set_output(0, x);
      return absl::OkStatus();
    }
    const Shape& out_shape = setup.out_shape;
    const ReducePlan plan = MakePlan(x.shape(), setup.reduced);
    const int64_t out_n = out_shape.num_elements();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
    auto run = [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
        // In float, converted on the way in and out.
        std::vector<float> in(x.NumElements()), out(out_n);
        const T* xp = x.data<T>();
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(xp[i]);
        RunReduce<float>(*ctx, plan, in.data(), out.data(), out_n);
        T* yp = y->data<T>();
        for (int64_t i = 0; i < out_n; ++i) yp[i] = static_cast<T>(out[i]);
      } else {
        RunReduce<T>(*ctx, plan, x.data<T>(), y->data<T>(), out_n);
      }
      return absl::OkStatus();
    };
    if (t == DT_BOOL) return run(TypeTag<bool>{});
    return VisitOrdered(t, run);
  }
};

template <ReduceKind kKind>
void Register(KernelRegistry* r, const std::string& op) {
  r->Register(CpuKernel(op, {{"T", ReduceTypes<kKind>()}},
                        MakeKernel<ReduceKernel<kKind>>));
  r->Register(CpuKernel("Dynamic" + op, {{"T", ReduceTypes<kKind>()}},
                        MakeKernel<ReduceKernel<kKind>>));
}

}  // namespace

void RegisterReduceKernels(KernelRegistry* r) {
  Register<ReduceKind::kSum>(r, "ReduceSum");
  Register<ReduceKind::kMean>(r, "ReduceMean");
  Register<ReduceKind::kMax>(r, "ReduceMax");
  Register<ReduceKind::kMin>(r, "ReduceMin");
  Register<ReduceKind::kProd>(r, "ReduceProd");
}

}  // namespace sluice::cpu
