// Element and N-d gathers and scatters with runtime indices (ONNX's
// GatherElements, ScatterElements, GatherND, ScatterND). Indices are int32
// or int64, may be negative (counted from the end) and are checked: an
// index out of range is an error naming it, never a read or write outside
// a buffer. Scatters copy the data, then write each update in index order,
// replacing it or combining with reduction add, mul, max or min.
#include <cstring>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/scatter_gather_params.h"

namespace sluice::cpu {
namespace {

template <typename T>
void Combine(T* dst, const T& src, ScatterReduction r) {
  using C = typename ComputeType<T>::type;
  switch (r) {
    case ScatterReduction::kNone: *dst = src; break;
    case ScatterReduction::kAdd: *dst = static_cast<T>(C(*dst) + C(src)); break;
    case ScatterReduction::kMul: *dst = static_cast<T>(C(*dst) * C(src)); break;
    case ScatterReduction::kMax: if (C(src) > C(*dst)) *dst = src; break;
    case ScatterReduction::kMin: if (C(src) < C(*dst)) *dst = src; break;
  }
}

// The launch of the four ops on the CPU; their setup (the checks and the
// offset of every slice) is kernels/scatter_gather_params.h. A gather
// copies slice j from data's offset j; a scatter copies data, then combines
// slice j of updates into offset j, in index order.
class ScatterGatherKernel final
    : public LaunchKernel<ScatterGatherAttrs, ParseScatterGatherAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& data = ctx->input(0);
    const Tensor* updates = attrs().scatter ? &ctx->input(2) : nullptr;
    ASSIGN_OR_RETURN(ScatterGatherPlan p,
                     PlanScatterGather(attrs(), data, ctx->input(1), updates));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, p.out_shape));
    if (updates != nullptr) {
      std::memcpy(out->raw_data(), data.raw_data(),
                  data.NumElements() * DataTypeSize(data.dtype()));
    }
    const int64_t slice = p.slice;
    const int64_t n = static_cast<int64_t>(p.offsets.size());
    return VisitComparable(data.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      T* dst = out->data<T>();
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t e = 0; e < slice; ++e) {
          if (updates != nullptr) {
            Combine(dst + p.offsets[j] + e, updates->data<T>()[j * slice + e],
                    attrs().reduction);
          } else {
            dst[j * slice + e] = data.data<T>()[p.offsets[j] + e];
          }
        }
      }
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterScatterGatherKernels(KernelRegistry* r) {
  const std::vector<DataType> index = {DT_INT32, DT_INT64};
  r->Register(CpuKernel("GatherElements",
                        {{"T", CpuComparisonTypes()}, {"Tindices", index}},
                        MakeKernel<ScatterGatherKernel>));
  r->Register(CpuKernel("ScatterElements",
                        {{"T", CpuComparisonTypes()}, {"Tindices", index}},
                        MakeKernel<ScatterGatherKernel>));
  r->Register(CpuKernel("GatherND", {{"T", CpuComparisonTypes()}},
                        MakeKernel<ScatterGatherKernel>));
  r->Register(CpuKernel("ScatterND", {{"T", CpuComparisonTypes()}},
                        MakeKernel<ScatterGatherKernel>));
}

}  // namespace sluice::cpu
