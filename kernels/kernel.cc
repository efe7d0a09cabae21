// OpKernelContext: output and scratch allocation on the kernel's device.
#include "kernels/kernel.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/fault_injector.h"

namespace sluice {

absl::StatusOr<Tensor*> OpKernelContext::allocate_output(int port,
                                                         const Shape& shape) {
  if (port < 0 || port >= num_outputs() || port >= node_->num_outputs()) {
    return absl::InternalError(absl::StrCat(
        "allocate_output: port ", port, " out of range for ",
        node_->DebugName(), " with ", num_outputs(), " outputs"));
  }
  DataType dtype = node_->output_dtype(port);
  if (reduced_in_float32_ && (dtype == DT_FLOAT16 || dtype == DT_BFLOAT16)) {
    dtype = DT_FLOAT;
  }
  return allocate_output(port, shape, dtype);
}

absl::StatusOr<Tensor*> OpKernelContext::allocate_output(int port,
                                                         const Shape& shape,
                                                         DataType dtype) {
  if (port < 0 || port >= num_outputs()) {
    return absl::InternalError(absl::StrCat(
        "allocate_output: port ", port, " out of range for ",
        node_->DebugName(), " with ", num_outputs(), " outputs"));
  }
  RETURN_IF_ERROR(InjectedFault(FaultKind::kAllocation, "output allocation"));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape, device_->allocator()));
  outputs_[port] = std::move(t);
  return &outputs_[port];
}

absl::StatusOr<Tensor> OpKernelContext::allocate_temp(DataType dtype,
                                                      const Shape& shape) {
  RETURN_IF_ERROR(InjectedFault(FaultKind::kAllocation, "temporary allocation"));
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, shape, device_->allocator());
  if (t.ok() && keep_alive_ != nullptr) keep_alive_->push_back(*t);
  return t;
}

}  // namespace sluice
