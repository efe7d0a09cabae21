// Reshape, Squeeze, Unsqueeze (the input's buffer under a new shape),
// Transpose and Expand (strided copies), each also in its Dynamic form that
// reads the shape or axes from input 1 (graph/runtime_params.h), and Shape
// and Size.
// Any dtype.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/array_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/strided_copy.h"
#include "kernels/dynamic_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// Ops whose output is the input's buffer with another shape; the Dynamic
// forms read the shape (ONNX semantics, with allowzero) or axes from input 1.
template <absl::StatusOr<ViewAttrs> (*Parse)(const Node&)>
class ViewKernel final : public LaunchKernel<ViewAttrs, Parse> {
 public:
  using LaunchKernel<ViewAttrs, Parse>::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const ViewAttrs& a = this->attrs();
    ASSIGN_OR_RETURN(Shape shape,
                     PlanView(a, x.shape(), a.dynamic ? &ctx->input(1) : nullptr));
    ctx->set_output(0, x.Reshaped(shape));
    return absl::OkStatus();
  }
};

// Transpose and Expand (and DynamicExpand): a strided copy of the input.
template <typename A, absl::StatusOr<A> (*Parse)(const Node&)>
class CopyKernel final : public LaunchKernel<A, Parse> {
 public:
  using LaunchKernel<A, Parse>::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(CopyPlan p, Plan(ctx));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    return VisitBySize(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      StridedCopy<T>(*ctx, x.data<T>(), y->data<T>(), p.out_shape.dims(), p.in_strides);
      return absl::OkStatus();
    });
  }

 private:
  absl::StatusOr<CopyPlan> Plan(const OpKernelContext* ctx) const {
    const Shape& x = ctx->input(0).shape();
    if constexpr (std::is_same_v<A, TransposeAttrs>) {
      return PlanTranspose(this->attrs(), x);
    } else {
      return PlanExpand(this->attrs(), x,
                        this->attrs().dynamic ? &ctx->input(1) : nullptr);
    }
  }
};
using TransposeKernel = CopyKernel<TransposeAttrs, ParseTransposeAttrs>;

// ONNX Shape: the input's dimensions [start, end) as int64. Reads only the
// input's shape.
class ShapeKernel final : public LaunchKernel<ShapeAttrs, ParseShapeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const ShapePlan p = PlanShape(attrs(), ctx->input(0).shape());
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    std::copy(p.dims.begin(), p.dims.end(), y->data<int64_t>());
    return absl::OkStatus();
  }
};

// ONNX Size: the input's number of elements as an int64 scalar.
class SizeKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({})));
    y->data<int64_t>()[0] = ctx->input(0).NumElements();
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterShapeKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Size", {{"T", CpuAllTypes()}},
                        MakeKernel<SizeKernel>));
  r->Register(CpuKernel("Shape", {{"T", CpuAllTypes()}},
                        MakeKernel<ShapeKernel>));
  r->Register(CpuKernel("DynamicReshape", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ParseDynamicReshapeAttrs>>));
  r->Register(CpuKernel("DynamicSqueeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ParseDynamicSqueezeAttrs>>));
  r->Register(CpuKernel("DynamicUnsqueeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ParseDynamicUnsqueezeAttrs>>));
  r->Register(CpuKernel("DynamicExpand", {{"T", CpuAllTypes()}},
                        MakeKernel<CopyKernel<ExpandAttrs, ParseDynamicExpandAttrs>>));
  r->Register(CpuKernel("Reshape", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ParseReshapeAttrs>>));
  r->Register(CpuKernel("Squeeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ParseSqueezeAttrs>>));
  r->Register(CpuKernel("Unsqueeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ParseUnsqueezeAttrs>>));
  r->Register(CpuKernel("Transpose", {{"T", CpuAllTypes()}},
                        MakeKernel<TransposeKernel>));
  r->Register(CpuKernel("Expand", {{"T", CpuAllTypes()}},
                        MakeKernel<CopyKernel<ExpandAttrs, ParseExpandAttrs>>));
}

}  // namespace sluice::cpu
