// InputKernel: the kernel of an Input node on every device. The executor
// feeds an Input; running its kernel means it was not fed, which is an
// error naming the node.
//
//   registry->Register(CpuKernel("Input", {}, MakeKernel<InputKernel>));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_INPUT_KERNEL_H_
#define SLUICE_KERNELS_INPUT_KERNEL_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/kernel.h"

namespace sluice {

class InputKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext*) override {
    return absl::FailedPreconditionError(absl::StrCat(
        "Input node '", node().name(),
        "' must be fed by the caller; its kernel cannot compute a value"));
  }
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_INPUT_KERNEL_H_
