// FusedElementwise on CUDA GPUs (kernels/cuda/fused_elementwise_kernels.cc):
// the program compiled to one kernel with NVRTC per (program, dtype,
// broadcast class) and architecture, once per process. Compiled only in
// CUDA builds.
//
//   cuda::RegisterFusedElementwiseKernels(&registry);  // RegisterCudaKernels
//   ASSIGN_OR_RETURN(const CompiledCudaKernel* k,
//                    CompileFusedElementwise(program, DT_FLOAT, layout, 90));
//
// Thread-safe.
#ifndef SLUICE_KERNELS_CUDA_FUSED_ELEMENTWISE_H_
#define SLUICE_KERNELS_CUDA_FUSED_ELEMENTWISE_H_

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "graph/elementwise_program.h"
#include "kernels/cuda/nvrtc_kernel_cache.h"
#include "kernels/fused_elementwise_source.h"
#include "kernels/kernel_registry.h"

namespace sluice::cuda {

void RegisterFusedElementwiseKernels(KernelRegistry* registry);

// Generates the source for `program` on `dtype` and `layout`'s class and
// compiles it for compute capability `sm` (cached: CompileCudaKernel).
// Errors are CompileCudaKernel's (INVALID_ARGUMENT with NVRTC's log when
// the source does not compile; FAILED_PRECONDITION without NVRTC) and
// FusedElementwiseSource's, prefixed with the program and class.
absl::StatusOr<const CompiledCudaKernel*> CompileFusedElementwise(
    const ElementwiseProgram& program, DataType dtype,
    const FusedElementwiseLayout& layout, int sm);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_FUSED_ELEMENTWISE_H_
