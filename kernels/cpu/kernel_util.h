// Helpers shared by the CPU kernels: the dtype sets kernels are registered
// for, input checks that produce clear INVALID_ARGUMENT messages, axis
// normalisation, and a parallel-for over the device's intra-op pool.
//
//   RETURN_IF_ERROR(CheckRank(ctx->input(0), 4, "input"));
//   ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr_, x.rank()));
//   ParallelFor(ctx, n, /*cost_per_unit=*/10, [&](int64_t b, int64_t e) {...});
//
// Stateless functions; thread-safe.
#ifndef SLUICE_KERNELS_CPU_KERNEL_UTIL_H_
#define SLUICE_KERNELS_CPU_KERNEL_UTIL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice::cpu {

// Dtype sets the CPU kernels are registered for (docs/ops.md, "Kernels
// present").
const std::vector<DataType>& CpuFloatTypes();        // f32, f64, f16, bf16
const std::vector<DataType>& CpuArithTypes();        // floats + int32, int64
const std::vector<DataType>& CpuIndexedTypes();      // f32, int32, int64, bool
const std::vector<DataType>& CpuComparisonTypes();   // arith + bool
const std::vector<DataType>& CpuReduceTypes();       // f32, int32, int64
const std::vector<DataType>& CpuCastTypes();         // arith + bool
const std::vector<DataType>& CpuMatMulTypes();       // floats
const std::vector<DataType>& CpuNnTypes();           // f32

// A CPU KernelDef with these type constraints and no host-memory inputs.
KernelDef CpuKernel(std::string op,
                    std::map<std::string, std::vector<DataType>> constraints,
                    KernelFactory factory);

// Maps `axis` in [-rank, rank) to [0, rank); INVALID_ARGUMENT otherwise.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank);

// Each input's dtype must equal the node's declared dtype for that input
// position; catches executors feeding the wrong tensor.
absl::Status CheckDtype(const Tensor& t, DataType want,
                        absl::string_view what);
absl::Status CheckRank(const Tensor& t, int rank, absl::string_view what);
// A host tensor that the kernel can read (valid, on host).
absl::Status CheckHostInput(const OpKernelContext& ctx, int i);
// CheckHostInput for every input.
absl::Status CheckHostInputs(const OpKernelContext& ctx);

// Splits [0, n) into chunks run on the device's intra-op pool when there is
// one and the work (n * cost_per_unit, in rough cycles) is worth it;
// otherwise calls fn(0, n) inline. Blocks until all chunks are done.
void ParallelFor(const OpKernelContext& ctx, int64_t n, double cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn);

// Row-major strides of a shape (elements).
DimVector RowMajorStrides(const Shape& shape);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_KERNEL_UTIL_H_
