// Identity: forwards its input's buffer.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

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

}  // namespace

void RegisterIdentityKernels(KernelRegistry* registry) {
  registry->Register(CpuKernel("Identity", {{"T", CpuAllTypes()}},
                               MakeKernel<IdentityKernel>));
}

}  // namespace sluice::cpu
