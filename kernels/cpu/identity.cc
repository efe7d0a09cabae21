// Identity: forwards its input's buffer; Dropout (inference) too.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/host_params.h"

namespace sluice::cpu {
namespace {

class IdentityKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    if (ctx->num_inputs() != 1 || !ctx->input(0).valid()) {
      return absl::InvalidArgumentError("Identity expects one input");
    }
    ctx->set_output(0, ctx->input(0));
    return absl::OkStatus();
  }
};

// Dropout at inference: y = x and a mask of all true. Training mode with a
// nonzero ratio (random dropping) is refused.
class DropoutKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& ratio = ctx->input(1);
    const Tensor& training = ctx->input(2);
    RETURN_IF_ERROR(CheckDropoutInference(ratio, training));
    ctx->set_output(0, x);
    ASSIGN_OR_RETURN(Tensor * mask, ctx->allocate_output(1, x.shape()));
    std::fill_n(mask->data<bool>(), mask->NumElements(), true);
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterIdentityKernels(KernelRegistry* registry) {
  registry->Register(CpuKernel("Identity", {{"T", CpuAllTypes()}},
                               MakeKernel<IdentityKernel>));
  registry->Register(CpuKernel("Dropout", {{"T", CpuAllTypes()}},
                               MakeKernel<DropoutKernel>));
}

}  // namespace sluice::cpu
