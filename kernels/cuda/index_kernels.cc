// CUDA OpKernels for ArgMax, ArgMin, CumSum, CumProd and Trilu. The
// cumulative ops' axis and Trilu's k are host-memory inputs (scalars the
// kernels read on the host); every check and error message is the CPU
// kernel's
// (kernels/cpu/arg_reduce.cc, kernels/cpu/trilu_cumsum.cc).
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/arg_reduce.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/trilu_cumsum.h"

namespace sluice::cuda {
namespace {

// The single integer in host tensor `t` (shape [] or [1]), int32 or int64.
absl::StatusOr<int64_t> ScalarInt(const Tensor& t, absl::string_view what) {
  if (t.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must hold one value, got shape ", t.shape().DebugString()));
  }
  if (t.dtype() == DT_INT64) return t.data<int64_t>()[0];
  if (t.dtype() == DT_INT32) return t.data<int32_t>()[0];
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be int32 or int64"));
}

// Products of the dimensions before and after `axis`.
void OuterInner(const Shape& s, int axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; ++i) *outer *= s.dim(i);
  for (int i = axis + 1; i < s.rank(); ++i) *inner *= s.dim(i);
}

template <bool kMax>
class ArgReduceKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = 0;
    bool keepdims = true;
    bool select_last_index = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(a.keepdims, node.attrs().GetBool("keepdims"));
    ASSIGN_OR_RETURN(a.select_last_index,
                     node.attrs().GetBool("select_last_index"));
    return a;
  }
  ArgReduceKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const Shape& shape = x.shape();
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(attrs_.axis, shape.rank()));
    if (shape.dim(axis) == 0) {
      return absl::InvalidArgumentError(
          "ArgMax/ArgMin over an empty dimension");
    }
    ASSIGN_OR_RETURN(Shape out_shape,
                     ReduceShape(shape, {axis}, attrs_.keepdims));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape, DT_INT64));
    int64_t outer = 0, inner = 0;
    OuterInner(shape, axis, &outer, &inner);
    return LaunchArgReduce(kMax, attrs_.select_last_index,
                           ToGpuDtype(x.dtype()), x.raw_data(),
                           y->data<int64_t>(), outer, shape.dim(axis), inner,
                           gpu.stream);
  }

 private:
  const Attrs attrs_;
};

// CumSum (kProd false) and CumProd.
template <bool kProd>
class CumulativeKernel final : public OpKernel {
 public:
  struct Attrs {
    bool exclusive = false;
    bool reverse = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.exclusive, node.attrs().GetBool("exclusive"));
    ASSIGN_OR_RETURN(a.reverse, node.attrs().GetBool("reverse"));
    return a;
  }
  CumulativeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(
        int64_t axis_value,
        ScalarInt(ctx->input(1), absl::StrCat(node().op(), "'s axis")));
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_value, x.shape().rank()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape(), x.dtype()));
    int64_t outer = 0, inner = 0;
    OuterInner(x.shape(), axis, &outer, &inner);
    return (kProd ? LaunchCumProd : LaunchCumSum)(ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(),
                        outer, x.shape().dim(axis), inner, attrs_.exclusive,
                        attrs_.reverse, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

class TriluKernel final : public OpKernel {
 public:
  struct Attrs {
    bool upper = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.upper, node.attrs().GetBool("upper"));
    return a;
  }
  TriluKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(int64_t k, ScalarInt(ctx->input(1), "Trilu's k"));
    if (x.shape().rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Trilu needs rank >= 2, got ", x.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape(), x.dtype()));
    const int rank = x.shape().rank();
    return LaunchTrilu(static_cast<int>(DataTypeSize(x.dtype())), x.raw_data(),
                       y->raw_data(), x.NumElements(), x.shape().dim(rank - 2),
                       x.shape().dim(rank - 1), k, attrs_.upper, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterIndexKernels(KernelRegistry* registry) {
  const std::vector<DataType> arg_types =
      GpuTypesWhere(HasArgReduceKernel, GpuIntFloatTypes());
  RegisterGpu(registry, "ArgMax", {{"T", arg_types}},
              MakeKernel<ArgReduceKernel<true>>);
  RegisterGpu(registry, "ArgMin", {{"T", arg_types}},
              MakeKernel<ArgReduceKernel<false>>);
  RegisterGpu(registry, "CumSum",
              {{"T", GpuTypesWhere(HasCumSumKernel, GpuIntFloatTypes())},
               {"Tidx", {DT_INT32, DT_INT64}}},
              MakeKernel<CumulativeKernel<false>>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "CumProd",
              {{"T", GpuTypesWhere(HasCumSumKernel, GpuIntFloatTypes())},
               {"Tidx", {DT_INT32, DT_INT64}}},
              MakeKernel<CumulativeKernel<true>>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "Trilu", {{"T", GpuAllTypes()}},
              MakeKernel<TriluKernel>, /*host_memory_inputs=*/{1});
}

}  // namespace sluice::cuda
