// NonZero, Compress, OneHot, EyeLike and ReverseSequence. NonZero and
// Compress size their outputs from the data; the others move whole
// elements, so most of them work on bytes and take every dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"
#include "kernels/host_params.h"

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
    const int rank = x.rank();
    const int64_t n = static_cast<int64_t>(hits.size());
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({rank, n})));
    int64_t* out = y->data<int64_t>();
    for (int64_t h = 0; h < n; ++h) {
      int64_t flat = hits[h];
      for (int d = rank - 1; d >= 0; --d) {
        out[d * n + h] = flat % x.dim(d);
        flat /= x.dim(d);
      }
    }
    return absl::OkStatus();
  }
};

class CompressKernel final : public OpKernel {
 public:
  struct Attrs {
    bool flatten = true;
    int64_t axis = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.flatten, node.attrs().GetBool("flatten"));
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    return a;
  }
  CompressKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& cond = ctx->input(1);
    int64_t outer = 1, n = x.NumElements(), inner = 1;
    int axis = 0;
    if (!attrs_.flatten) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(attrs_.axis, x.rank()));
      for (int i = 0; i < axis; ++i) outer *= x.dim(i);
      n = x.dim(axis);
      for (int i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> keep, CompressSelection(cond, n));
    const int64_t m = static_cast<int64_t>(keep.size());
    Shape out_shape({m});
    if (!attrs_.flatten) {
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

 private:
  const Attrs attrs_;
};

class OneHotKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = -1;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    return a;
  }
  OneHotKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& indices = ctx->input(0);
    const Tensor& values = ctx->input(2);
    ASSIGN_OR_RETURN(std::vector<int64_t> depth_v,
                     HostInt64s(ctx->input(1), "depth"));
    if (depth_v.size() != 1 || depth_v[0] < 1) {
      return absl::InvalidArgumentError(
          "depth must be one value of at least 1");
    }
    const int64_t depth = depth_v[0];
    if (values.NumElements() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "values must hold [off_value, on_value], got shape ",
          values.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> idx, HostInt64s(indices, "indices"));
    const int rank = indices.rank() + 1;
    int64_t axis = attrs_.axis;
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "axis ", axis, " is out of range for an output of rank ", rank));
    }
    if (axis < 0) axis += rank;
    Shape out_shape;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < indices.rank(); ++d) {
      if (d == axis) out_shape.AddDim(depth);
      out_shape.AddDim(indices.dim(d));
      (d < axis ? outer : inner) *= indices.dim(d);
    }
    if (axis == indices.rank()) out_shape.AddDim(depth);
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
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

 private:
  const Attrs attrs_;
};

class EyeLikeKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType dst = DT_INVALID;
    int64_t k = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
    ASSIGN_OR_RETURN(a.k, node.attrs().GetInt("k"));
    return a;
  }
  EyeLikeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckRank(x, 2, "EyeLike's input"));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, x.shape(), attrs_.dst));
    const int64_t rows = x.dim(0), cols = x.dim(1), k = attrs_.k;
    return VisitNumericOrBool(attrs_.dst, [&](auto tag) -> absl::Status {
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

 private:
  const Attrs attrs_;
};

class ReverseSequenceKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t batch_axis = 1;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.batch_axis, node.attrs().GetInt("batch_axis"));
    ASSIGN_OR_RETURN(int64_t time_axis, node.attrs().GetInt("time_axis"));
    if (!((a.batch_axis == 0 && time_axis == 1) ||
          (a.batch_axis == 1 && time_axis == 0))) {
      return absl::InvalidArgumentError(
          "batch_axis and time_axis must be 0 and 1 in some order");
    }
    return a;
  }
  ReverseSequenceKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& lens_t = ctx->input(1);
    if (x.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ReverseSequence needs rank >= 2, got ", x.shape().DebugString()));
    }
    const bool batch_first = attrs_.batch_axis == 0;
    const int64_t batch = x.dim(batch_first ? 0 : 1);
    const int64_t steps = x.dim(batch_first ? 1 : 0);
    RETURN_IF_ERROR(CheckSequenceLens(lens_t, batch, steps));
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

 private:
  const Attrs attrs_;
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
