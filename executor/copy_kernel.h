// CopyKernel: moves one tensor between devices inside a step. The plan
// inserts one for every (value, destination device) pair that crosses
// devices: host to GPU (one DMA from page-locked memory, else through the
// GPU's pinned staging), GPU to host (the host waits: only for results the
// CPU or the caller needs; into page-locked memory when the step asks), GPU to GPU
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
  // `dst_allocator` (may be null: dst's own) is where the output is
  // allocated when dst is a CPU: page-locked memory for a fetch the caller
  // asked for there (StepOptions::pinned_host_fetches). Not owned; it must
  // outlive the kernel and the tensors it makes.
  CopyKernel(const Node& producer, Device* src, Device* dst,
             Allocator* dst_allocator = nullptr)
      : OpKernel(producer), src_(src), dst_(dst),
        dst_allocator_(dst_allocator) {}

  // Copies input 0 (on `src`) to output 0 (on `dst`).
  absl::Status Compute(OpKernelContext* ctx) override;

  Device* src() const { return src_; }
  Device* dst() const { return dst_; }
  Allocator* dst_allocator() const { return dst_allocator_; }

 private:
  Device* const src_;
  Device* const dst_;
  Allocator* const dst_allocator_;
};

// Copies `value` (which lives on `src`) to `dst`. Shared by CopyKernel and
// the session (constants, fetched results). A CPU destination allocates
// from `dst_allocator` when it is given (host-accessible memory, such as
// device/pinned_memory.h's), else from dst's allocator; a GPU destination
// ignores it.
absl::StatusOr<Tensor> CopyTensor(const Tensor& value, Device* src,
                                  Device* dst,
                                  Allocator* dst_allocator = nullptr);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_COPY_KERNEL_H_
