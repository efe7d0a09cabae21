// If, Loop and Scan (graph/ops/control_flow_ops.cc) for any device: kernels
// that run their subgraphs, compiled once when the plan is made on the
// kernel's device (kernels/subgraph_kernel.h, executor/subgraph.h), per
// branch taken, per iteration or per slice. What differs per device is how
// bytes move, which the device's ControlFlowMemory says; the CPU's is in
// kernels/cpu/control_flow.cc, the GPU's in kernels/cuda/
// control_flow_kernels.cc.
//
//   static const CpuControlFlowMemory memory;
//   r->Register(CpuKernel("If", {}, IfKernelFactory(&memory)));
//
// Any dtype: scan slices and stacked outputs are moved by element size.
// The factories are thread-safe; each kernel is as thread-safe as any.
#ifndef SLUICE_KERNELS_CONTROL_FLOW_KERNELS_H_
#define SLUICE_KERNELS_CONTROL_FLOW_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice {

// How the control-flow kernels move bytes on their device.
class ControlFlowMemory {
 public:
  virtual ~ControlFlowMemory() = default;
  // Copies the first `bytes` of `t` to `dst` on the host. `device_memory`:
  // `t` is in the kernel device's memory (a subgraph's output), after the
  // work enqueued so far; otherwise it is a host tensor (an input the
  // kernel reads in host memory).
  virtual absl::Status ReadToHost(OpKernelContext* ctx, const Tensor& t,
                                  bool device_memory, void* dst,
                                  size_t bytes) const = 0;
  // A tensor in the kernel device's memory with the bytes of host tensor
  // `host` (the CPU returns `host` itself).
  virtual absl::StatusOr<Tensor> FromHost(OpKernelContext* ctx,
                                          const Tensor& host) const = 0;
  // `rows` rows of `width` bytes, row r from src + r * src_pitch to
  // dst + r * dst_pitch, both in the kernel device's memory, ordered after
  // the work enqueued so far.
  virtual absl::Status Copy2D(OpKernelContext* ctx, void* dst,
                              int64_t dst_pitch, const void* src,
                              int64_t src_pitch, int64_t width,
                              int64_t rows) const = 0;
};

// Factories for the three kernels over `memory` (borrowed; it must outlive
// every kernel made, in practice a static).
KernelFactory IfKernelFactory(const ControlFlowMemory* memory);
KernelFactory LoopKernelFactory(const ControlFlowMemory* memory);
KernelFactory ScanKernelFactory(const ControlFlowMemory* memory);

// The graph attributes that hold a control-flow node's subgraphs.
std::vector<const Graph*> Subgraphs(const Node& node);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CONTROL_FLOW_KERNELS_H_
