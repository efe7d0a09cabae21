// Const and Input. Const hands out its value (no copy); Input is fed by the
// executor and never computed, so running its kernel is an error.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/input_kernel.h"

namespace sluice::cpu {
namespace {

class ConstKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor* value = node().const_value();
    if (value == nullptr || !value->valid()) {
      return absl::InternalError("Const node has no value");
    }
    ctx->set_output(0, *value);
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterSourceKernels(KernelRegistry* registry) {
  registry->Register(CpuKernel("Const", {}, MakeKernel<ConstKernel>));
  registry->Register(CpuKernel("Input", {}, MakeKernel<InputKernel>));
}

}  // namespace sluice::cpu
