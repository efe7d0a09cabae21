// CUDA OpKernels for BitShift, BitwiseAnd / Or / Xor (with broadcasting),
// BitwiseNot and BitCast, on the dtypes and with the attributes and errors
// of the CPU kernels (kernels/cpu/bitwise.cc, kernels/bitwise_params.h).
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/bitwise_params.h"
#include "kernels/launch_kernel.h"
#include "kernels/cuda/bitwise.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"

namespace sluice::cuda {
namespace {

// z = op(x, y) with broadcasting; x and y of one integer dtype.
absl::Status ComputeBitBinary(OpKernelContext* ctx, BitOp op) {
  ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
  RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
  const Tensor& x = ctx->input(0);
  const Tensor& y = ctx->input(1);
  if (y.dtype() != x.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input y has dtype ", DataTypeName(y.dtype()),
                     ", expected ", DataTypeName(x.dtype())));
  }
  ASSIGN_OR_RETURN(Shape out, BroadcastShapes(x.shape(), y.shape()));
  ASSIGN_OR_RETURN(Tensor* z, ctx->allocate_output(0, out, x.dtype()));
  const bool contiguous = x.shape() == out && y.shape() == out;
  IndexMap map;
  if (contiguous) {
    map.num_elements = z->NumElements();
  } else {
    ASSIGN_OR_RETURN(map, BroadcastMap(out, {&x.shape(), &y.shape()}));
  }
  return LaunchBitBinary(op, ToGpuDtype(x.dtype()), x.raw_data(), y.raw_data(),
                         z->raw_data(), map, contiguous, gpu.stream);
}

class BitBinaryKernel final : public OpKernel {
 public:
  BitBinaryKernel(const Node& node, BitOp op) : OpKernel(node), op_(op) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    return ComputeBitBinary(ctx, op_);
  }

 private:
  const BitOp op_;
};

class BitShiftKernel final : public LaunchKernel<BitShiftAttrs, ParseBitShiftAttrs> {
 public:
  using LaunchKernel::LaunchKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    return ComputeBitBinary(ctx,
                            attrs().left ? BitOp::kShiftLeft : BitOp::kShiftRight);
  }
};

class BitwiseNotKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, x.shape(), x.dtype()));
    return LaunchBitwiseNot(ToGpuDtype(x.dtype()), x.raw_data(),
                            y->raw_data(), x.NumElements(), gpu.stream);
  }
};

// The bytes of x as DstT, copied on the stream; to bool, a nonzero byte
// becomes true (1), as on the CPU.
class BitCastKernel final : public LaunchKernel<BitCastAttrs, ParseBitCastAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(BitCastPlan p, PlanBitCast(attrs(), x));
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, p.out_shape, p.dst));
    if (p.dst == DT_BOOL) {
      return LaunchBytesToBool(static_cast<const uint8_t*>(x.raw_data()),
                               static_cast<bool*>(y->raw_data()), p.bytes, gpu.stream);
    }
    if (p.bytes == 0) return absl::OkStatus();
    return CudaStatus(cudaMemcpyAsync(y->raw_data(), x.raw_data(), p.bytes,
                                      cudaMemcpyDeviceToDevice, gpu.stream),
                      "BitCast copy");
  }
};

// The integer dtypes the CPU bitwise kernels take (int8 to uint64).
std::vector<DataType> BitwiseTypes() {
  std::vector<DataType> out;
  for (DataType t : AllDataTypes()) {
    const int v = static_cast<int>(t);
    if (v >= 1 && v <= static_cast<int>(GpuDtype::kUInt2) &&
        IsBitwiseDtype(ToGpuDtype(t))) {
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace

void RegisterBitwiseKernels(KernelRegistry* registry) {
  const std::vector<DataType> types = BitwiseTypes();
  const struct { const char* name; BitOp op; } binary[] = {
      {"BitwiseAnd", BitOp::kAnd},
      {"BitwiseOr", BitOp::kOr},
      {"BitwiseXor", BitOp::kXor},
  };
  for (const auto& b : binary) {
    const BitOp op = b.op;
    RegisterGpu(registry, b.name, {{"T", types}},
                [op](const Node& node)
                    -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                  return std::unique_ptr<OpKernel>(
                      new BitBinaryKernel(node, op));
                },
                {}, RanksAtMost(kMaxGpuDims));  // broadcasting IndexMap
  }
  RegisterGpu(registry, "BitShift", {{"T", types}}, MakeKernel<BitShiftKernel>,
              {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "BitwiseNot", {{"T", types}},
              MakeKernel<BitwiseNotKernel>);
  // Every dtype GpuDtype names (all but string).
  std::vector<DataType> all;
  for (DataType t : AllDataTypes()) {
    const int v = static_cast<int>(t);
    if (v >= 1 && v <= static_cast<int>(GpuDtype::kUInt2)) all.push_back(t);
  }
  RegisterGpu(registry, "BitCast", {{"SrcT", all}, {"DstT", all}},
              MakeKernel<BitCastKernel>);
}

}  // namespace sluice::cuda
