#include "executor/copy_kernel.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/fault_injector.h"
#include "device/gpu_device.h"

namespace sluice {

absl::StatusOr<Tensor> CopyTensor(const Tensor& value, Device* src,
                                  Device* dst, Allocator* dst_allocator) {
  const bool src_gpu = src->type() == DeviceType::kGpu;
  const bool dst_gpu = dst->type() == DeviceType::kGpu;
  // The boundary's two calls (device/fault_injector.h): the destination's
  // buffer, then the copy (cudaMemcpyAsync or memcpy).
  RETURN_IF_ERROR(InjectedFault(FaultKind::kAllocation, "copy's destination"));
  if (src_gpu && dst_gpu) {
    ASSIGN_OR_RETURN(Tensor out, Tensor::Create(value.dtype(), value.shape(),
                                                dst->allocator()));
    RETURN_IF_ERROR(InjectedFault(FaultKind::kCopy, "device to device"));
    RETURN_IF_ERROR(static_cast<GpuDevice*>(src)->CopyDeviceToDevice(
        value, static_cast<GpuDevice*>(dst), &out));
    return out;
  }
  if (dst_gpu) {
    ASSIGN_OR_RETURN(Tensor out, Tensor::Create(value.dtype(), value.shape(),
                                                dst->allocator()));
    RETURN_IF_ERROR(InjectedFault(FaultKind::kCopy, "host to device"));
    RETURN_IF_ERROR(static_cast<GpuDevice*>(dst)->CopyHostToDevice(value, &out));
    return out;
  }
  ASSIGN_OR_RETURN(Tensor out,
                   Tensor::Create(value.dtype(), value.shape(),
                                  dst_allocator != nullptr ? dst_allocator
                                                           : dst->allocator()));
  RETURN_IF_ERROR(InjectedFault(FaultKind::kCopy, src_gpu ? "device to host"
                                                          : "host to host"));
  if (src_gpu) {
    RETURN_IF_ERROR(static_cast<GpuDevice*>(src)->CopyDeviceToHost(value, &out));
  } else if (value.bytes() > 0) {
    std::memcpy(out.raw_data(), value.raw_data(), value.bytes());
  }
  return out;
}

absl::Status CopyKernel::Compute(OpKernelContext* ctx) {
  absl::StatusOr<Tensor> out =
      CopyTensor(ctx->input(0), src_, dst_, dst_allocator_);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("copy from ", src_->name(), " to ",
                                     dst_->name(), ": ",
                                     out.status().message()));
  }
  ctx->set_output(0, *std::move(out));
  return absl::OkStatus();
}

}  // namespace sluice
