// TensorScatter: a KV-cache update. present = past_cache, with
// update[p..., s, rest...] written to present[p..., w[p0] + s, rest...] for
// every prefix p over the dims before `axis` (p0 its batch index) and every
// update position s; circular mode wraps the index modulo the cache length,
// linear mode refuses an index past the end.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/host_params.h"
#include "kernels/launch_kernel.h"
#include "kernels/select_params.h"

namespace sluice::cpu {
namespace {

class TensorScatterKernel final
    : public LaunchKernel<TensorScatterAttrs, ParseTensorScatterAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& cache = ctx->input(0);
    const Tensor& update = ctx->input(1);
    const Tensor& where = ctx->input(2);
    ASSIGN_OR_RETURN(TensorScatterPlan plan,
                     PlanTensorScatter(cache, update, where, attrs().axis));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, cache.shape()));
    const size_t size = DataTypeSize(cache.dtype());
    std::memcpy(out->raw_data(), cache.raw_data(), cache.NumElements() * size);
    const int64_t prefix = plan.prefix, inner = plan.inner, len = plan.len;
    const int64_t steps = plan.steps, per_batch = plan.per_batch;
    const char* src = static_cast<const char*>(update.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const int64_t* w = where.data<int64_t>();
    for (int64_t p = 0; p < prefix; ++p) {
      const int64_t start = w[p / per_batch];
      for (int64_t s = 0; s < steps; ++s) {
        int64_t at = start + s;
        if (attrs().circular) at = ((at % len) + len) % len;
        if (at < 0 || at >= len) {
          return absl::OutOfRangeError(absl::StrCat(
              "write index ", at, " is outside the cache length ", len));
        }
        std::memcpy(dst + ((p * len + at) * inner) * size,
                    src + ((p * steps + s) * inner) * size, inner * size);
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterTensorScatterKernels(KernelRegistry* r) {
  r->Register(CpuKernel("TensorScatter", {{"T", CpuAllTypes()}},
                        MakeKernel<TensorScatterKernel>));
}

}  // namespace sluice::cpu
