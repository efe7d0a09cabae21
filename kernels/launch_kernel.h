// LaunchKernel: the base of a kernel whose setup is written once for every
// device, in a kernels/<family>_params.h. The family's Parse<Op>Attrs(node)
// parses and checks the attributes (MakeKernel calls it when the kernel is
// made); the device's kernel implements only Compute, the launch: it calls
// the family's Plan<Op>(attrs(), inputs...) for the checked shapes, the
// output's shape and the plain values a launch needs (an <Op>Plan),
// allocates the output and runs.
//
//   class SoftmaxKernel final
//       : public LaunchKernel<SoftmaxAttrs, ParseSoftmaxAttrs> {
//    public:
//     using LaunchKernel::LaunchKernel;
//     absl::Status Compute(OpKernelContext* ctx) override {
//       ASSIGN_OR_RETURN(SoftmaxPlan p, PlanSoftmax(attrs(), x.shape()));
//       ...  // this device's loops or launcher
//     }
//   };
//   registry->Register(CpuKernel("Softmax", ..., MakeKernel<SoftmaxKernel>));
//
// The attributes never change after creation; Compute may run on several
// threads at once (kernel.h).
#ifndef SLUICE_KERNELS_LAUNCH_KERNEL_H_
#define SLUICE_KERNELS_LAUNCH_KERNEL_H_

#include <utility>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "kernels/kernel.h"

namespace sluice {

template <typename A, absl::StatusOr<A> (*Parse)(const Node&)>
class LaunchKernel : public OpKernel {
 public:
  using Attrs = A;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return Parse(node);
  }
  LaunchKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

 protected:
  const Attrs& attrs() const { return attrs_; }

 private:
  const Attrs attrs_;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_LAUNCH_KERNEL_H_
