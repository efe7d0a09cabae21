// CUDA OpKernels for ArgMax, ArgMin, CumSum, CumProd and Trilu. The
// cumulative ops' axis and Trilu's k are host-memory inputs (scalars the
// kernels read on the host); the checks and error messages are the setup
// they share with the CPU kernels (kernels/index_params.h).
#include <cstdint>
#include <memory>

#include "core/status_macros.h"
#include "kernels/cuda/arg_reduce.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/trilu_cumsum.h"
#include "kernels/index_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cuda {
namespace {

// The launches of ArgMax (kMax) and ArgMin on the GPU; their setup is
// kernels/index_params.h.
template <bool kMax>
class ArgReduceKernel final
    : public LaunchKernel<ArgReduceAttrs, ParseArgReduceAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(AxisPlan p, PlanArgReduce(attrs(), x.shape()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, DT_INT64));
    return LaunchArgReduce(kMax, attrs().select_last_index,
                           ToGpuDtype(x.dtype()), x.raw_data(),
                           y->data<int64_t>(), p.view.outer, p.view.n,
                           p.view.inner, gpu.stream);
  }
};

// CumSum and CumProd.
class CumulativeKernel final
    : public LaunchKernel<CumulativeAttrs, ParseCumulativeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(AxisPlan p,
                     PlanCumulative(attrs(), x.shape(), ctx->input(1)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, x.dtype()));
    return (attrs().prod ? LaunchCumProd : LaunchCumSum)(
        ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(), p.view.outer,
        p.view.n, p.view.inner, attrs().exclusive, attrs().reverse, gpu.stream);
  }
};

class TriluKernel final : public LaunchKernel<TriluAttrs, ParseTriluAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(TriluPlan p, PlanTrilu(x.shape(), ctx->input(1)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, x.dtype()));
    return LaunchTrilu(static_cast<int>(DataTypeSize(x.dtype())), x.raw_data(),
                       y->raw_data(), x.NumElements(), p.rows, p.cols, p.k,
                       attrs().upper, gpu.stream);
  }
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
              MakeKernel<CumulativeKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "CumProd",
              {{"T", GpuTypesWhere(HasCumSumKernel, GpuIntFloatTypes())},
               {"Tidx", {DT_INT32, DT_INT64}}},
              MakeKernel<CumulativeKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "Trilu", {{"T", GpuAllTypes()}},
              MakeKernel<TriluKernel>, /*host_memory_inputs=*/{1});
}

}  // namespace sluice::cuda
