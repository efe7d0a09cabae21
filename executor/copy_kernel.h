// CopyKernel: moves one tensor between devices inside a step. The plan
// inserts one for every (value, destination device) pair that crosses
// devices: host to GPU through the GPU's pinned staging, GPU to host (the
// host waits: only for results the CPU or the caller needs), GPU to GPU
// (peer copy where there is peer access), and logical CPU to logical CPU
// (a copy into the destination's budget).
//
//   auto copy = std::make_unique<CopyKernel>(producer, src_device, dst_device);
//
// Stateless after construction; Compute is thread-safe.
#ifndef SLUICE_EXECUTOR_COPY_KERNEL_H_
#define SLUICE_EXECUTOR_COPY_KERNEL_H_

#include "device/device.h"
#include "kernels/kernel.h"

namespace sluice {

class CopyKernel final : public OpKernel {
 public:
  // `producer` names the copy in errors; the devices must outlive the kernel.
  CopyKernel(const Node& producer, Device* src, Device* dst)
      : OpKernel(producer), src_(src), dst_(dst) {}

  // Copies input 0 (on `src`) to output 0 (on `dst`).
  absl::Status Compute(OpKernelContext* ctx) override;

  Device* src() const { return src_; }
  Device* dst() const { return dst_; }

 private:
  Device* const src_;
  Device* const dst_;
};

// Copies `value` (which lives on `src`) to `dst`. Shared by CopyKernel and
// the session (constants, fetched results).
absl::StatusOr<Tensor> CopyTensor(const Tensor& value, Device* src,
                                  Device* dst);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_COPY_KERNEL_H_
