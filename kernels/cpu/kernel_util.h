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
#include "graph/shape_fns.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice::cpu {

// Dtype sets the CPU kernels are registered for (docs/ops.md, "Kernels
// present").
const std::vector<DataType>& CpuFloatTypes();        // f32, f64, f16, bf16
const std::vector<DataType>& CpuArithTypes();        // floats + int32, int64
const std::vector<DataType>& CpuComparisonTypes();   // arith + bool
const std::vector<DataType>& CpuReduceTypes();       // f32, int32, int64
const std::vector<DataType>& CpuCastTypes();         // every dtype
const std::vector<DataType>& CpuMatMulTypes();       // floats
const std::vector<DataType>& CpuNnTypes();           // f32
const std::vector<DataType>& CpuAllTypes();          // every dtype

// A CPU KernelDef with these type constraints and no host-memory inputs.
KernelDef CpuKernel(std::string op,
                    std::map<std::string, std::vector<DataType>> constraints,
                    KernelFactory factory);

// Axes are normalised with graph/shape_fns.h's NormalizeAxis, the one the
// shape functions use.
using ::sluice::NormalizeAxis;

// Each input's dtype must equal the node's declared dtype for that input
// position; catches executors feeding the wrong tensor.
absl::Status CheckDtype(const Tensor& t, DataType want,
                        absl::string_view what);
absl::Status CheckRank(const Tensor& t, int rank, absl::string_view what);
// A host tensor that the kernel can read (valid, on host).
absl::Status CheckHostInput(const OpKernelContext& ctx, int i);
// CheckHostInput for every input.
absl::Status CheckHostInputs(const OpKernelContext& ctx);

// Splits [0, n) into chunks of about 40k cycles that the calling thread and
// the device's intra-op pool claim as they come (RunBlocks, parallel.h),
// when there is a pool and the work (n * cost_per_unit, in rough cycles) is
// worth it; otherwise calls fn(0, n) inline. Blocks until all chunks are
// done.
void ParallelFor(const OpKernelContext& ctx, int64_t n, double cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn);

// Calls f(TypeTag<T>{}) with T the C++ type of `dtype`, for the dtypes of
// each family; UNIMPLEMENTED naming the dtype for any other.
template <typename T>
struct TypeTag {
  using type = T;
};
template <typename F>
absl::Status VisitFloat(DataType dtype, F&& f);       // f32, f64, f16, bf16
template <typename F>
absl::Status VisitArith(DataType dtype, F&& f);       // floats + i32, i64
template <typename F>
absl::Status VisitComparable(DataType dtype, F&& f);  // arith + bool
// Data movement by element size: T is an unsigned integer as wide as the
// dtype (uint8_t for bool and int8, uint16_t for the 16-bit floats, ...).
template <typename F>
absl::Status VisitBySize(DataType dtype, F&& f);

// The type arithmetic is done in: float for the 16-bit floats, T otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<half> {
  using type = float;
};
template <>
struct ComputeType<bfloat16> {
  using type = float;
};

absl::Status UnsupportedDtype(DataType dtype);

// Row-major strides of a shape (elements).
DimVector RowMajorStrides(const Shape& shape);

template <typename F>
absl::Status VisitFloat(DataType dtype, F&& f) {
  switch (dtype) {
    case DT_FLOAT: return f(TypeTag<float>{});
    case DT_DOUBLE: return f(TypeTag<double>{});
    case DT_FLOAT16: return f(TypeTag<half>{});
    case DT_BFLOAT16: return f(TypeTag<bfloat16>{});
    default: return UnsupportedDtype(dtype);
  }
}

template <typename F>
absl::Status VisitArith(DataType dtype, F&& f) {
  switch (dtype) {
    case DT_INT32: return f(TypeTag<int32_t>{});
    case DT_INT64: return f(TypeTag<int64_t>{});
    default: return VisitFloat(dtype, f);
  }
}

template <typename F>
absl::Status VisitComparable(DataType dtype, F&& f) {
  if (dtype == DT_BOOL) return f(TypeTag<bool>{});
  return VisitArith(dtype, f);
}

template <typename F>
absl::Status VisitBySize(DataType dtype, F&& f) {
  switch (DataTypeSize(dtype)) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: return UnsupportedDtype(dtype);
  }
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_KERNEL_UTIL_H_
