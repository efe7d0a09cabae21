// CUDA OpKernels for GatherElements, ScatterElements, GatherND and
// ScatterND. The indices are a host-memory input: the setup shared with
// the CPU kernels (kernels/scatter_gather_params.h) checks them and turns
// them into element offsets on the host, which are copied to the GPU; the
// GPU only moves data (scatter_gather.h). A scatter groups its updates by
// destination on the host, in the CPU's order, so repeated indices give the
// CPU's result with any reduction.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/scatter_gather.h"
#include "kernels/launch_kernel.h"
#include "kernels/scatter_gather_params.h"

namespace sluice::cuda {
namespace {

// A host vector of int64s, copied to the GPU.
absl::StatusOr<Tensor> ToGpu(const GpuContext& gpu,
                             const std::vector<int64_t>& v) {
  return gpu.device->CopyToDevice(Tensor::FromVector<int64_t>(
      v, Shape({static_cast<int64_t>(v.size())})));
}

absl::Status Gather(OpKernelContext* ctx, const GpuContext& gpu,
                    const Tensor& data, const ScatterGatherPlan& o) {
  ASSIGN_OR_RETURN(Tensor * out,
                   ctx->allocate_output(0, o.out_shape, data.dtype()));
  if (out->NumElements() == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(Tensor offsets, ToGpu(gpu, o.offsets));
  return LaunchGatherSlices(static_cast<int>(DataTypeSize(data.dtype())),
                            data.raw_data(), data.NumElements(),
                            offsets.data<int64_t>(), out->raw_data(),
                            static_cast<int64_t>(o.offsets.size()), o.slice,
                            gpu.stream);
}

// out = data, then each destination combined with its updates in order.
absl::Status Scatter(OpKernelContext* ctx, const GpuContext& gpu,
                     const Tensor& data, const Tensor& updates,
                     const ScatterGatherPlan& o,
                     ::sluice::ScatterReduction reduction) {
  ASSIGN_OR_RETURN(Tensor * out,
                   ctx->allocate_output(0, data.shape(), data.dtype()));
  const size_t bytes = data.NumElements() * DataTypeSize(data.dtype());
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(out->raw_data(), data.raw_data(), bytes,
                      cudaMemcpyDeviceToDevice, gpu.stream),
      "copying the scatter's data"));
  const int64_t n = static_cast<int64_t>(o.offsets.size());
  if (n == 0 || o.slice == 0) return absl::OkStatus();
  // Update numbers by destination; stable, so each keeps the CPU's order.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return o.offsets[a] < o.offsets[b];
  });
  // One buffer: dest (num_dests), start (num_dests + 1), order (n).
  std::vector<int64_t> dest, start;
  for (int64_t j = 0; j < n; ++j) {
    if (j == 0 || o.offsets[order[j]] != o.offsets[order[j - 1]]) {
      dest.push_back(o.offsets[order[j]]);
      start.push_back(j);
    }
  }
  start.push_back(n);
  const int64_t num_dests = static_cast<int64_t>(dest.size());
  std::vector<int64_t> packed = dest;
  packed.insert(packed.end(), start.begin(), start.end());
  packed.insert(packed.end(), order.begin(), order.end());
  ASSIGN_OR_RETURN(Tensor plan_buffer, ToGpu(gpu, packed));
  const int64_t* p = plan_buffer.data<int64_t>();
  ScatterPlan plan{p, p + num_dests, p + 2 * num_dests + 1, num_dests};
  // The launcher's enum lists the reductions in the same order.
  static_assert(static_cast<int>(ScatterReduction::kMin) ==
                static_cast<int>(::sluice::ScatterReduction::kMin));
  return LaunchScatterSlices(static_cast<ScatterReduction>(reduction),
                             ToGpuDtype(data.dtype()),
                             out->raw_data(), out->NumElements(),
                             updates.raw_data(), plan, o.slice, gpu.stream);
}

// The launch of the four ops on the GPU; their setup (the checks and the
// offset of every slice, from the host-memory indices) is
// kernels/scatter_gather_params.h.
class ScatterGatherKernel final
    : public LaunchKernel<ScatterGatherAttrs, ParseScatterGatherAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& data = ctx->input(0);
    const Tensor* updates = attrs().scatter ? &ctx->input(2) : nullptr;
    ASSIGN_OR_RETURN(ScatterGatherPlan p,
                     PlanScatterGather(attrs(), data, ctx->input(1), updates));
    if (updates == nullptr) return Gather(ctx, gpu, data, p);
    return Scatter(ctx, gpu, data, *updates, p, attrs().reduction);
  }
};

}  // namespace

void RegisterScatterGatherKernels(KernelRegistry* registry) {
  // The CPU kernels' dtypes: floats, int32, int64 and bool.
  const std::vector<DataType> types =
      GpuTypesWhere(HasScatterKernel, GpuAllTypes());
  const std::vector<DataType> index = {DT_INT32, DT_INT64};
  RegisterGpu(registry, "GatherElements", {{"T", types}, {"Tindices", index}},
              MakeKernel<ScatterGatherKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "ScatterElements", {{"T", types}, {"Tindices", index}},
              MakeKernel<ScatterGatherKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "GatherND", {{"T", types}}, MakeKernel<ScatterGatherKernel>,
              /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "ScatterND", {{"T", types}}, MakeKernel<ScatterGatherKernel>,
              /*host_memory_inputs=*/{1});
}

}  // namespace sluice::cuda
