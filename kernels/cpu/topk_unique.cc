// TopK and Unique: the sorting ops. TopK sorts each line along its axis by
// (value, index), NaN counting as the largest value; Unique sorts the
// elements (or the slices along an axis, compared lexicographically) and
// sizes its outputs by the number of distinct ones it finds.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"
#include "kernels/launch_kernel.h"
#include "kernels/select_params.h"

namespace sluice::cpu {
namespace {

template <typename T>
bool IsNan(T v) {
  if constexpr (kIsStdInteger<T> || std::is_same_v<T, bool>) {
    return false;
  } else {
    return v != v;
  }
}

// a < b with NaN after every number (NumPy's sort order).
template <typename T>
bool NanLast(T a, T b) {
  if (IsNan(a)) return false;
  if (IsNan(b)) return true;
  return a < b;
}

// The ordered types and bool.
template <typename F>
absl::Status VisitSortable(DataType dtype, F&& f) {
  if (dtype == DT_BOOL) return f(TypeTag<bool>{});
  return VisitOrdered(dtype, f);
}

const std::vector<DataType>& SortableTypes() {
  static const auto* types = [] {
    auto* t = new std::vector<DataType>(OrderedTypes());
    t->push_back(DT_BOOL);
    return t;
  }();
  return *types;
}

class TopKKernel final : public LaunchKernel<TopKAttrs, ParseTopKAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(TopKPlan p, PlanTopK(x, ctx->input(1), attrs()));
    const AxisView v = p.view;
    const int64_t k = p.k;
    ASSIGN_OR_RETURN(Tensor * values, ctx->allocate_output(0, p.out_shape));
    ASSIGN_OR_RETURN(Tensor * indices, ctx->allocate_output(1, p.out_shape));
    const bool largest = attrs().largest;
    return VisitOrdered(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = values->data<T>();
      int64_t* idx = indices->data<int64_t>();
      ParallelFor(*ctx, v.outer * v.inner, static_cast<double>(v.n) * 8,
                  [&](int64_t b, int64_t e) {
        std::vector<int64_t> order(v.n);
        for (int64_t line = b; line < e; ++line) {
          const int64_t o = line / v.inner, j = line % v.inner;
          const T* base = in + o * v.n * v.inner + j;
          auto at = [&](int64_t i) { return base[i * v.inner]; };
          std::iota(order.begin(), order.end(), 0);
          auto before = [&](int64_t p, int64_t q) {
            const T a = at(p), c = at(q);
            if (largest ? NanLast(c, a) : NanLast(a, c)) return true;
            if (largest ? NanLast(a, c) : NanLast(c, a)) return false;
            return p < q;  // equal (or both NaN): index order
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(),
                            before);
          for (int64_t r = 0; r < k; ++r) {
            const int64_t dst = (o * k + r) * v.inner + j;
            out[dst] = at(order[r]);
            idx[dst] = order[r];
          }
        }
      });
      return absl::OkStatus();
    });
  }
};

// Unique over the slices of an outer x n x inner view along its middle
// axis (n elements of a flattened input: outer = inner = 1).
class UniqueKernel final : public OpKernel {
 public:
  struct Attrs {
    bool flatten = true;
    int64_t axis = 0;
    bool sorted = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.flatten, node.attrs().GetBool("flatten"));
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(a.sorted, node.attrs().GetBool("sorted"));
    return a;
  }
  UniqueKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    AxisView v;
    int axis = 0;
    if (attrs_.flatten) {
      v.n = x.NumElements();
    } else {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(attrs_.axis, x.rank()));
      v = ViewAround(x.shape(), axis);
    }
    return VisitSortable(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      return Run<T>(ctx, x, v, axis);
    });
  }

 private:
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& x, const AxisView& v,
                   int axis) const {
    const T* in = x.data<T>();
    // Slice p compared with slice q, element by element in row-major order:
    // -1, 0 or 1.
    auto compare = [&](int64_t p, int64_t q) {
      for (int64_t o = 0; o < v.outer; ++o) {
        const T* a = in + (o * v.n + p) * v.inner;
        const T* b = in + (o * v.n + q) * v.inner;
        for (int64_t j = 0; j < v.inner; ++j) {
          if (NanLast(a[j], b[j])) return -1;
          if (NanLast(b[j], a[j])) return 1;
        }
      }
      return 0;
    };
    std::vector<int64_t> order(v.n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
      return compare(p, q) < 0;
    });
    // Groups of equal slices; the first of each is its first occurrence.
    std::vector<int64_t> first, counts;
    std::vector<int64_t> group_of(v.n);
    for (int64_t r = 0; r < v.n; ++r) {
      if (r == 0 || compare(order[r - 1], order[r]) != 0) {
        first.push_back(order[r]);
        counts.push_back(0);
      }
      group_of[order[r]] = static_cast<int64_t>(first.size()) - 1;
      ++counts.back();
    }
    const int64_t u = static_cast<int64_t>(first.size());
    // Output position of each group: ascending, or by first occurrence.
    std::vector<int64_t> pos(u);
    std::iota(pos.begin(), pos.end(), 0);
    if (!attrs_.sorted) {
      std::vector<int64_t> by_first(u);
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (int64_t i = 0; i < u; ++i) pos[by_first[i]] = i;
    }
    Shape y_shape({u});
    if (!attrs_.flatten) {
      y_shape = x.shape();
      y_shape.set_dim(axis, u);
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, y_shape));
    ASSIGN_OR_RETURN(Tensor * indices, ctx->allocate_output(1, Shape({u})));
    ASSIGN_OR_RETURN(Tensor * inverse, ctx->allocate_output(2, Shape({v.n})));
    ASSIGN_OR_RETURN(Tensor * count, ctx->allocate_output(3, Shape({u})));
    T* out = y->data<T>();
    for (int64_t g = 0; g < u; ++g) {
      const int64_t at = pos[g];
      indices->data<int64_t>()[at] = first[g];
      count->data<int64_t>()[at] = counts[g];
      for (int64_t o = 0; o < v.outer; ++o) {
        std::copy_n(in + (o * v.n + first[g]) * v.inner, v.inner,
                    out + (o * u + at) * v.inner);
      }
    }
    for (int64_t i = 0; i < v.n; ++i) {
      inverse->data<int64_t>()[i] = pos[group_of[i]];
    }
    return absl::OkStatus();
  }

  const Attrs attrs_;
};

}  // namespace

void RegisterTopKUniqueKernels(KernelRegistry* r) {
  r->Register(
      CpuKernel("TopK", {{"T", OrderedTypes()}}, MakeKernel<TopKKernel>));
  r->Register(CpuKernel("Unique", {{"T", SortableTypes()}},
                        MakeKernel<UniqueKernel>));
}

}  // namespace sluice::cpu
