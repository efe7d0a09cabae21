// CudaKernel on the CPU: there is none. A CudaKernel node carries CUDA C++
// source, which only a GPU runs (kernels/cuda/cuda_kernel_op.cc). This
// registration exists so that the refusal has words: the placer reports a
// capability refusal (KernelDef::supports) with its reason where a missing
// kernel would only say "no kernel", so a graph placed on a machine without
// a GPU fails naming the node and saying why.
#include "absl/status/status.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

constexpr char kGpuOnly[] =
    "a CudaKernel runs only on a GPU (its CUDA C++ source is compiled with "
    "NVRTC for the GPU); it has no CPU implementation";

absl::StatusOr<std::unique_ptr<OpKernel>> RefuseCudaKernel(const Node&) {
  return absl::UnimplementedError(kGpuOnly);
}

}  // namespace

void RegisterCudaKernelCpuRefusal(KernelRegistry* registry) {
  KernelDef def = CpuKernel("CudaKernel", {}, RefuseCudaKernel);
  def.supports = [](const Node&) { return absl::UnimplementedError(kGpuOnly); };
  registry->Register(std::move(def));
}

}  // namespace sluice::cpu
