// NonZero, Compress, OneHot, EyeLike and ReverseSequence. NonZero and
// Compress size their outputs from the data; the others move whole
// elements, so most of them work on bytes and take every dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"
#include "kernels/host_params.h"
#include "kernels/launch_kernel.h"
#include "kernels/select_params.h"

namespace sluice::cpu {
namespace {

// The ordered types and bool: those whose elements compare with zero.
template <typename F>
absl::Status VisitNumericOrBool(DataType dtype, F&& f) {
  if (dtype == DT_BOOL) return f(TypeTag<bool>{});
  return VisitOrdered(dtype, f);
}

const std::vector<DataType>& NumericOrBoolTypes() {
  static const auto* types = [] {
    auto* t = new std::vector<DataType>(OrderedTypes());
    t->push_back(DT_BOOL);
    return t;
  }();
  return *types;
}

class NonZeroKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> hits;
    RETURN_IF_ERROR(VisitNumericOrBool(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        if (p[i] != T(0)) hits.push_back(i);
      }
      return absl::OkStatus();
    }));
    // A scalar is one element of rank 1 (NumPy's and onnxruntime's rule).
    std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    if (dims.empty()) dims.push_back(1);
    const int rank = static_cast<int>(dims.size());
    const int64_t n = static_cast<int64_t>(hits.size());
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({rank, n})));
    int64_t* out = y->data<int64_t>();
    for (int64_t h = 0; h < n; ++h) {
      int64_t flat = hits[h];
      for (int d = rank - 1; d >= 0; --d) {
        out[d * n + h] = flat % dims[d];
        flat /= dims[d];
      }
    }
    return absl::OkStatus();
  }
};

class CompressKernel final
    : public LaunchKernel<CompressAttrs, ParseCompressAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& cond = ctx->input(1);
    AxisView v;
    v.n = x.NumElements();
    int axis = 0;
    if (!attrs().flatten) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(attrs().axis, x.rank()));
      v = ViewAround(x.shape(), axis);
    }
    const int64_t outer = v.outer, n = v.n, inner = v.inner;
    ASSIGN_OR_RETURN(std::vector<int64_t> keep, CompressSelection(cond, n));
    const int64_t m = static_cast<int64_t>(keep.size());
    Shape out_shape({m});
    if (!attrs().flatten) {
      out_shape = x.shape();
      out_shape.set_dim(axis, m);
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
    const size_t row = inner * DataTypeSize(x.dtype());
    const char* in = static_cast<const char*>(x.raw_data());
    char* out = static_cast<char*>(y->raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t r = 0; r < m; ++r) {
        std::memcpy(out + (o * m + r) * row, in + (o * n + keep[r]) * row,
                    row);
      }
    }
    return absl::OkStatus();
  }
};

class OneHotKernel final : public LaunchKernel<OneHotAttrs, ParseOneHotAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& indices = ctx->input(0);
    const Tensor& values = ctx->input(2);
    ASSIGN_OR_RETURN(OneHotPlan p,
                     PlanOneHot(indices, ctx->input(1), values, attrs()));
    ASSIGN_OR_RETURN(std::vector<int64_t> idx, HostInt64s(indices, "indices"));
    const int64_t depth = p.depth, outer = p.outer, inner = p.inner;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    return VisitBySize(values.dtype(), [&](auto tag) -> absl::Status {
      using U = typename decltype(tag)::type;
      const U off = values.data<U>()[0], on = values.data<U>()[1];
      U* out = y->data<U>();
      std::fill_n(out, y->NumElements(), off);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          int64_t i = idx[o * inner + j];
          if (i < 0) i += depth;
          if (i < 0 || i >= depth) continue;
          out[(o * depth + i) * inner + j] = on;
        }
      }
      return absl::OkStatus();
    });
  }
};

class EyeLikeKernel final
    : public LaunchKernel<EyeLikeAttrs, ParseEyeLikeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckEyeLikeInput(x));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, x.shape(), attrs().dst));
    const int64_t rows = x.dim(0), cols = x.dim(1), k = attrs().k;
    return VisitNumericOrBool(attrs().dst, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      T* out = y->data<T>();
      std::fill_n(out, rows * cols, T(0));
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r + k;
        if (c >= 0 && c < cols) out[r * cols + c] = T(1);
      }
      return absl::OkStatus();
    });
  }
};

class ReverseSequenceKernel final
    : public LaunchKernel<ReverseSequenceAttrs, ParseReverseSequenceAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& lens_t = ctx->input(1);
    ASSIGN_OR_RETURN(ReverseSequencePlan p,
                     PlanReverseSequence(x, lens_t, attrs()));
    const bool batch_first = p.batch_first;
    const int64_t batch = p.batch, steps = p.steps;
    const int64_t* lens = lens_t.data<int64_t>();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    size_t row = DataTypeSize(x.dtype());
    for (int d = 2; d < x.rank(); ++d) row *= x.dim(d);
    const char* in = static_cast<const char*>(x.raw_data());
    char* out = static_cast<char*>(y->raw_data());
    auto offset = [&](int64_t b, int64_t t) {
      return (batch_first ? b * steps + t : t * batch + b) * row;
    };
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t src = t < lens[b] ? lens[b] - 1 - t : t;
        std::memcpy(out + offset(b, t), in + offset(b, src), row);
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterSelectKernels(KernelRegistry* r) {
  r->Register(CpuKernel("NonZero", {{"T", NumericOrBoolTypes()}},
                        MakeKernel<NonZeroKernel>));
  r->Register(CpuKernel("Compress", {{"T", CpuAllTypes()}},
                        MakeKernel<CompressKernel>));
  r->Register(CpuKernel("OneHot",
                        {{"TI", OrderedTypes()},
                         {"TD", OrderedTypes()},
                         {"T", CpuAllTypes()}},
                        MakeKernel<OneHotKernel>));
  r->Register(CpuKernel("EyeLike", {{"DstT", NumericOrBoolTypes()}},
                        MakeKernel<EyeLikeKernel>));
  r->Register(CpuKernel("ReverseSequence", {{"T", CpuAllTypes()}},
                        MakeKernel<ReverseSequenceKernel>));
}

}  // namespace sluice::cpu
