// Shared CPU kernel helpers.
#include "kernels/cpu/kernel_util.h"

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/Tensor"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/parallel.h"

namespace sluice::cpu {

const std::vector<DataType>& CpuFloatTypes() {
  static const std::vector<DataType> k = {DT_FLOAT, DT_DOUBLE, DT_FLOAT16,
                                          DT_BFLOAT16};
  return k;
}
const std::vector<DataType>& CpuArithTypes() {
  static const std::vector<DataType> k = {DT_FLOAT,    DT_DOUBLE, DT_FLOAT16,
                                          DT_BFLOAT16, DT_INT32,  DT_INT64};
  return k;
}
const std::vector<DataType>& CpuComparisonTypes() {
  static const std::vector<DataType> k = {DT_FLOAT,    DT_DOUBLE, DT_FLOAT16,
                                          DT_BFLOAT16, DT_INT32,  DT_INT64,
                                          DT_BOOL};
  return k;
}
const std::vector<DataType>& CpuReduceTypes() {
  static const std::vector<DataType> k = {DT_FLOAT, DT_INT32, DT_INT64};
  return k;
}
const std::vector<DataType>& CpuCastTypes() { return AllDataTypes(); }
const std::vector<DataType>& CpuMatMulTypes() { return CpuFloatTypes(); }
const std::vector<DataType>& CpuNnTypes() {
  static const std::vector<DataType> k = {DT_FLOAT};
  return k;
}

const std::vector<DataType>& CpuAllTypes() { return AllDataTypes(); }

absl::Status UnsupportedDtype(DataType dtype) {
  return absl::UnimplementedError(
      absl::StrCat("no CPU implementation for dtype ", DataTypeName(dtype)));
}

KernelDef CpuKernel(std::string op,
                    std::map<std::string, std::vector<DataType>> constraints,
                    KernelFactory factory) {
  KernelDef def;
  def.op = std::move(op);
  def.device = DeviceType::kCpu;
  def.type_constraints = std::move(constraints);
  def.factory = std::move(factory);
  return def;
}

absl::Status CheckDtype(const Tensor& t, DataType want,
                        absl::string_view what) {
  if (t.dtype() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has dtype ", DataTypeName(t.dtype()),
                     ", expected ", DataTypeName(want)));
  }
  return absl::OkStatus();
}

absl::Status CheckRank(const Tensor& t, int rank, absl::string_view what) {
  if (t.rank() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must have rank ", rank, ", got shape ",
                     t.shape().DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckHostInput(const OpKernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (!t.valid()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is missing"));
  }
  if (!t.on_host()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", i, " is not in host memory (", t.allocator()->Name(), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckHostInputs(const OpKernelContext& ctx) {
  const int expected = ctx.node().num_inputs();
  if (ctx.num_inputs() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", expected, " inputs, got ", ctx.num_inputs()));
  }
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    absl::Status s = CheckHostInput(ctx, i);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void ParallelFor(const OpKernelContext& ctx, int64_t n, double cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const Eigen::ThreadPoolDevice* pool = ctx.device()->eigen_cpu_device();
  // Below ~50k cycles of work, the hand-off costs more than it saves.
  const double total = static_cast<double>(n) * cost_per_unit;
  if (pool == nullptr || pool->numThreads() <= 1 || total < 5e4) {
    fn(0, n);
    return;
  }
  // Blocks of about kParallelForBlockCycles, at least one unit each, claimed
  // by the caller and the pool's threads as they come (parallel.h).
  constexpr double kParallelForBlockCycles = 4e4;
  const int64_t per_block = std::max<int64_t>(
      1, static_cast<int64_t>(kParallelForBlockCycles /
                              std::max(cost_per_unit, 1e-3)));
  const int64_t blocks = (n + per_block - 1) / per_block;
  RunBlocks(pool, blocks, [&](int64_t b) {
    fn(b * per_block, std::min(n, (b + 1) * per_block));
  });
}

DimVector RowMajorStrides(const Shape& shape) {
  DimVector strides(shape.rank());
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dim(i);
  }
  return strides;
}

}  // namespace sluice::cpu
