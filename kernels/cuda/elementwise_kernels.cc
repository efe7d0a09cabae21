// CUDA OpKernels for the elementwise ops: unary math and activations,
// binary arithmetic and comparisons with broadcasting, Cast and Where.
// Integer Div, Mod, FMod and Pow check their second operand on the GPU
// first and read the verdict back (a host wait), so a zero divisor or a
// negative exponent is the CPU kernels' error.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cast_params.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/launch_kernel.h"

namespace sluice::cuda {
namespace {

class UnaryKernel final : public OpKernel {
 public:
  UnaryKernel(const Node& node, UnaryOp op, UnaryParams params = {})
      : OpKernel(node), op_(op), params_(params) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, x.shape(), x.dtype()));
    return LaunchUnary(op_, ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(),
                       x.NumElements(), gpu.stream, params_);
  }

 private:
  const UnaryOp op_;
  const UnaryParams params_;
};

// The value of element `i` of a signed integer tensor in device memory.
absl::StatusOr<int64_t> ReadIntElement(const Tensor& t, int64_t i) {
  const int64_t size = static_cast<int64_t>(DataTypeSize(t.dtype()));
  const char* src = static_cast<const char*>(t.raw_data()) + i * size;
  int64_t v64 = 0;
  int32_t v32 = 0;
  int16_t v16 = 0;
  int8_t v8 = 0;
  void* dst = size == 8   ? static_cast<void*>(&v64)
              : size == 4 ? static_cast<void*>(&v32)
              : size == 2 ? static_cast<void*>(&v16)
                          : static_cast<void*>(&v8);
  RETURN_IF_ERROR(CudaStatus(cudaMemcpy(dst, src, size, cudaMemcpyDeviceToHost),
                             "reading an operand"));
  return size == 8   ? v64
         : size == 4 ? int64_t{v32}
         : size == 2 ? int64_t{v16}
                     : int64_t{v8};
}

// The CPU kernels' check of integer Div, Mod, FMod (no zero divisor) and
// Pow (no negative exponent), on b in device memory.
absl::Status CheckIntegerOperand(OpKernelContext* ctx, const GpuContext& gpu,
                                 BinaryOp op, const Tensor& b) {
  ASSIGN_OR_RETURN(Tensor flag, ctx->allocate_temp(DT_INT64, Shape({1})));
  auto* bad = static_cast<unsigned long long*>(flag.raw_data());
  RETURN_IF_ERROR(LaunchOperandCheck(op, ToGpuDtype(b.dtype()), b.raw_data(),
                                     b.NumElements(), bad, gpu.stream));
  ASSIGN_OR_RETURN(uint64_t position, ReadDeviceFlag(gpu, bad));
  if (position == ~uint64_t{0}) return absl::OkStatus();
  const int64_t i = static_cast<int64_t>(position);
  if (op != BinaryOp::kPow) {
    return absl::InvalidArgumentError(absl::StrCat(
        "integer division by zero (divisor element ", i, " is 0)"));
  }
  ASSIGN_OR_RETURN(int64_t value, ReadIntElement(b, i));
  return absl::InvalidArgumentError(
      absl::StrCat("integer Pow with negative exponent ", value, " (element ",
                   i, "); cast to a float type first"));
}

class BinaryKernel final : public OpKernel {
 public:
  BinaryKernel(const Node& node, BinaryOp op) : OpKernel(node), op_(op) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.dtype() != b.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("operands have dtypes ", DataTypeName(a.dtype()),
                       " and ", DataTypeName(b.dtype())));
    }
    ASSIGN_OR_RETURN(Shape out, BroadcastShapes(a.shape(), b.shape()));
    if (NeedsOperandCheck(op_, ToGpuDtype(b.dtype()))) {
      RETURN_IF_ERROR(CheckIntegerOperand(ctx, gpu, op_, b));
    }
    const bool compare = op_ == BinaryOp::kEqual || op_ == BinaryOp::kLess ||
                         op_ == BinaryOp::kGreater;
    ASSIGN_OR_RETURN(Tensor* z, ctx->allocate_output(
                                    0, out, compare ? DT_BOOL : a.dtype()));
    const bool contiguous = a.shape() == out && b.shape() == out;
    IndexMap map;
    if (contiguous) {
      map.num_elements = z->NumElements();
    } else {
      ASSIGN_OR_RETURN(map, BroadcastMap(out, {&a.shape(), &b.shape()}));
    }
    return LaunchBinary(op_, ToGpuDtype(a.dtype()), a.raw_data(), b.raw_data(),
                        z->raw_data(), map, contiguous, gpu.stream);
  }

 private:
  const BinaryOp op_;
};

// Cast with the CPU kernel's attributes (kernels/cast_params.h) and result.
class CastKernel final : public LaunchKernel<CastAttrs, ParseCastAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    if (x.dtype() != attrs().src) {
      return absl::InvalidArgumentError(
          absl::StrCat("input x has dtype ", DataTypeName(x.dtype()),
                       ", expected ", DataTypeName(attrs().src)));
    }
    if (attrs().src == attrs().dst) {
      ctx->set_output(0, x);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor* y,
                     ctx->allocate_output(0, x.shape(), attrs().dst));
    return LaunchCast(ToGpuDtype(attrs().src), ToGpuDtype(attrs().dst),
                      x.raw_data(), y->raw_data(), x.NumElements(),
                      {.saturate = attrs().saturate, .round = attrs().round},
                      gpu.stream);
  }
};

class WhereKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& c = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& y = ctx->input(2);
    if (c.dtype() != DT_BOOL || x.dtype() != y.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Where needs a bool condition and equal x / y dtypes, got ",
          DataTypeName(c.dtype()), ", ", DataTypeName(x.dtype()), ", ",
          DataTypeName(y.dtype())));
    }
    ASSIGN_OR_RETURN(Shape cx, BroadcastShapes(c.shape(), x.shape()));
    ASSIGN_OR_RETURN(Shape out, BroadcastShapes(cx, y.shape()));
    ASSIGN_OR_RETURN(Tensor* o, ctx->allocate_output(0, out, x.dtype()));
    ASSIGN_OR_RETURN(IndexMap map,
                     BroadcastMap(out, {&c.shape(), &x.shape(), &y.shape()}));
    return LaunchWhere(static_cast<int>(DataTypeSize(x.dtype())),
                       c.data<bool>(), x.raw_data(), y.raw_data(),
                       o->raw_data(), map, gpu.stream);
  }
};

template <typename F>
KernelFactory Factory(F make) {
  return [make](const Node& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    return make(node);
  };
}

std::vector<DataType> Supported(bool (*has)(int, GpuDtype), int op,
                                const std::vector<DataType>& candidates) {
  std::vector<DataType> out;
  for (DataType t : candidates) {
    if (has(op, ToGpuDtype(t))) out.push_back(t);
  }
  return out;
}

// The float attributes of a parameterised activation, as UnaryParams.
absl::StatusOr<UnaryParams> ParseParams(const Node& node, const char* alpha,
                                        const char* beta) {
  UnaryParams p;
  if (alpha != nullptr) {
    ASSIGN_OR_RETURN(p.alpha, node.attrs().GetFloat(alpha));
  }
  if (beta != nullptr) {
    ASSIGN_OR_RETURN(p.beta, node.attrs().GetFloat(beta));
  }
  return p;
}

void RegisterUnary(KernelRegistry* registry) {
  const struct { const char* name; UnaryOp op; } unary[] = {
      {"Neg", UnaryOp::kNeg},     {"Abs", UnaryOp::kAbs},
      {"Relu", UnaryOp::kRelu},   {"Exp", UnaryOp::kExp},
      {"Log", UnaryOp::kLog},     {"Sqrt", UnaryOp::kSqrt},
      {"Rsqrt", UnaryOp::kRsqrt}, {"Tanh", UnaryOp::kTanh},
      {"Sigmoid", UnaryOp::kSigmoid}, {"Erf", UnaryOp::kErf},
      {"Sin", UnaryOp::kSin},     {"Cos", UnaryOp::kCos},
      {"Tan", UnaryOp::kTan},     {"Asin", UnaryOp::kAsin},
      {"Acos", UnaryOp::kAcos},   {"Atan", UnaryOp::kAtan},
      {"Sinh", UnaryOp::kSinh},   {"Cosh", UnaryOp::kCosh},
      {"Asinh", UnaryOp::kAsinh}, {"Acosh", UnaryOp::kAcosh},
      {"Atanh", UnaryOp::kAtanh}, {"Floor", UnaryOp::kFloor},
      {"Ceil", UnaryOp::kCeil},   {"Round", UnaryOp::kRound},
      {"Sign", UnaryOp::kSign},   {"Softplus", UnaryOp::kSoftplus},
      {"Softsign", UnaryOp::kSoftsign}, {"Mish", UnaryOp::kMish},
      {"HardSwish", UnaryOp::kHardSwish},
  };
  auto has_unary = [](int op, GpuDtype t) {
    return HasUnaryKernel(static_cast<UnaryOp>(op), t);
  };
  for (const auto& u : unary) {
    const UnaryOp op = u.op;
    RegisterGpu(registry, u.name,
                {{"T", Supported(has_unary, static_cast<int>(op),
                                 GpuIntFloatTypes())}},
                Factory([op](const Node& node) {
                  return std::unique_ptr<OpKernel>(new UnaryKernel(node, op));
                }));
  }
  // Activations with float attributes (beta: HardSigmoid's beta, Selu's
  // gamma).
  const struct {
    const char* name;
    UnaryOp op;
    const char* alpha;
    const char* beta;
  } with_params[] = {
      {"HardSigmoid", UnaryOp::kHardSigmoid, "alpha", "beta"},
      {"Elu", UnaryOp::kElu, "alpha", nullptr},
      {"Selu", UnaryOp::kSelu, "alpha", "gamma"},
      {"Celu", UnaryOp::kCelu, "alpha", nullptr},
      {"ThresholdedRelu", UnaryOp::kThresholdedRelu, "alpha", nullptr},
  };
  for (const auto& u : with_params) {
    const UnaryOp op = u.op;
    const char* alpha = u.alpha;
    const char* beta = u.beta;
    RegisterGpu(registry, u.name, {{"T", GpuFloatTypes()}},
                [op, alpha, beta](const Node& node)
                    -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                  ASSIGN_OR_RETURN(UnaryParams p, ParseParams(node, alpha, beta));
                  return std::unique_ptr<OpKernel>(new UnaryKernel(node, op, p));
                });
  }
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry* registry) {
  RegisterUnary(registry);
  auto has_binary = [](int op, GpuDtype t) {
    return HasBinaryKernel(static_cast<BinaryOp>(op), t);
  };
  RegisterGpu(
      registry, "Gelu", {{"T", GpuFloatTypes()}},
      [](const Node& node)
           -> absl::StatusOr<std::unique_ptr<OpKernel>> {
         ASSIGN_OR_RETURN(const std::string approximate,
                          StringAttr(node, "approximate", "none"));
         if (approximate != "none" && approximate != "tanh") {
           return absl::InvalidArgumentError(absl::StrCat(
               "Gelu: approximate must be \"none\" or \"tanh\", got \"",
               approximate, "\""));
         }
         return std::unique_ptr<OpKernel>(new UnaryKernel(
             node, approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGeluErf));
      });
  const struct { const char* name; BinaryOp op; } binary[] = {
      {"Add", BinaryOp::kAdd},         {"Sub", BinaryOp::kSub},
      {"Mul", BinaryOp::kMul},         {"Div", BinaryOp::kDiv},
      {"Pow", BinaryOp::kPow},         {"Mod", BinaryOp::kMod},
      {"FMod", BinaryOp::kFMod},       {"Maximum", BinaryOp::kMaximum},
      {"Minimum", BinaryOp::kMinimum}, {"Equal", BinaryOp::kEqual},
      {"Less", BinaryOp::kLess},       {"Greater", BinaryOp::kGreater},
  };
  // The CPU binary kernels' dtypes: every integer type, and bool.
  std::vector<DataType> with_bool = GpuIntFloatTypes();
  with_bool.insert(with_bool.end(), {DT_INT8, DT_UINT8, DT_INT16, DT_UINT16,
                                     DT_UINT32, DT_UINT64, DT_BOOL});
  for (const auto& b : binary) {
    const BinaryOp op = b.op;
    RegisterGpu(registry, b.name,
                {{"T", Supported(has_binary, static_cast<int>(op), with_bool)}},
                Factory([op](const Node& node) {
                  return std::unique_ptr<OpKernel>(new BinaryKernel(node, op));
                }),
                {}, RanksAtMost(kMaxGpuDims));  // broadcasting IndexMap
  }
  // Cast: every dtype GpuDtype names (all but string), as the CPU's.
  std::vector<DataType> cast_types;
  for (DataType t : AllDataTypes()) {
    const int v = static_cast<int>(t);
    if (v >= static_cast<int>(GpuDtype::kFloat) &&
        v <= static_cast<int>(GpuDtype::kUInt2)) {
      cast_types.push_back(t);
    }
  }
  RegisterGpu(registry, "Cast", {{"SrcT", cast_types}, {"DstT", cast_types}},
              MakeKernel<CastKernel>);
  RegisterGpu(registry, "Where", {{"T", GpuAllTypes()}}, MakeKernel<WhereKernel>,
              {}, RanksAtMost(kMaxGpuDims));
}

}  // namespace sluice::cuda
