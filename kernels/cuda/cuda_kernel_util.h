// Host-side helpers for the CUDA OpKernels: finding the GpuDevice and its
// compute stream from a kernel context, checking that inputs live on that
// device, dtype conversion for the launchers, and building IndexMaps for
// broadcasting and strided copies (with adjacent dimensions merged, so up
// to kMaxGpuDims dimensions remain).
//
//   ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
//   RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
//   ASSIGN_OR_RETURN(IndexMap m, BroadcastMap(out_shape, {&a.shape(), &b.shape()}));
//   RETURN_IF_ERROR(LaunchBinary(op, ToGpuDtype(t), ..., gpu.stream));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
#define SLUICE_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "cuda_runtime_api.h"
#include "device/gpu_device.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice::cuda {

struct GpuContext {
  GpuDevice* device = nullptr;  // the context's device
  cudaStream_t stream = nullptr;  // its compute stream
};

// The kernel's GpuDevice, made current on this thread. INTERNAL when the
// context's device is not a GPU (an executor bug).
absl::StatusOr<GpuContext> GetGpu(OpKernelContext* ctx);

// Every input is present and in the GPU's memory, except inputs listed in
// `host_inputs`, which must be host tensors. Also checks the input count.
absl::Status CheckGpuInputs(const OpKernelContext& ctx, const GpuContext& gpu,
                            std::initializer_list<int> host_inputs = {});

inline GpuDtype ToGpuDtype(DataType dtype) {
  return static_cast<GpuDtype>(static_cast<int>(dtype));
}

// Dtype sets the CUDA kernels are registered for.
const std::vector<DataType>& GpuFloatTypes();      // f32, f16, bf16, f64
const std::vector<DataType>& GpuIntFloatTypes();   // floats + int32, int64
const std::vector<DataType>& GpuAllTypes();        // every dtype GpuDtype has
// The candidates whose GpuDtype `has` accepts (a launcher's HasXKernel), in
// their order: the dtypes to register a kernel for.
std::vector<DataType> GpuTypesWhere(bool (*has)(GpuDtype),
                                    const std::vector<DataType>& candidates);

// Row-major element strides of a shape.
std::vector<int64_t> RowMajorStrides(const Shape& shape);

// An IndexMap over `out` where operand i of `inputs` broadcasts to `out`
// (strides 0 along stretched dimensions); at most 3 operands.
// UNIMPLEMENTED when more than kMaxGpuDims dimensions remain after merging.
absl::StatusOr<IndexMap> BroadcastMap(const Shape& out,
                                      std::initializer_list<const Shape*> inputs);

// An IndexMap over `dims` with two explicit stride sets (source,
// destination), merged where possible.
absl::StatusOr<IndexMap> CopyMap(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& src_strides,
                                 const std::vector<int64_t>& dst_strides);

// Registers a GPU kernel for `op`, with its capability check (empty: any
// node its dtypes match).
// The KernelDef RegisterGpu registers, for a kernel that sets more of it.
KernelDef GpuKernelDef(std::string op,
                       std::map<std::string, std::vector<DataType>> constraints,
                       KernelFactory factory, std::vector<int> host_memory_inputs = {},
                       KernelSupports supports = {});
void RegisterGpu(KernelRegistry* registry, std::string op,
                 std::map<std::string, std::vector<DataType>> constraints,
                 KernelFactory factory, std::vector<int> host_memory_inputs = {},
                 KernelSupports supports = {});

// A capability check: every input and output of known rank has rank <=
// `max_rank` ("rank 9 > 8: CUDA kernels index at most 8 dimensions"). For
// kernels built on IndexMaps, whose dimensions need not all merge.
KernelSupports RanksAtMost(int max_rank);

// OK for cudaSuccess; otherwise INTERNAL naming `what` and the error (and
// the sticky last error is cleared).
absl::Status CudaStatus(cudaError_t err, const char* what);

// Copies one 8-byte value from device memory to the host after the work
// enqueued on gpu's stream so far, and waits for it: a host
// synchronisation, for the error flags and counts kernels leave in device
// memory (noted on the device: GpuDevice::kernel_host_waits).
absl::StatusOr<uint64_t> ReadDeviceFlag(const GpuContext& gpu, const void* flag);

// A string attribute (default when absent); INVALID_ARGUMENT when it is
// of another kind.
absl::StatusOr<std::string> StringAttr(const Node& node, const char* name,
                                       const std::string& default_value);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CUDA_KERNEL_UTIL_H_
