// CUDA OpKernels for the elementwise ops: unary math, binary arithmetic and
// comparisons with broadcasting, Cast and Where.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.h"

namespace sluice::cuda {
namespace {

class UnaryKernel final : public OpKernel {
 public:
  UnaryKernel(const Node& node, UnaryOp op) : OpKernel(node), op_(op) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, x.shape(), x.dtype()));
    return LaunchUnary(op_, ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(),
                       x.NumElements(), gpu.stream);
  }

 private:
  const UnaryOp op_;
};

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

class CastKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType dst = DT_INVALID;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
    return a;
  }
  CastKernel(const Node& node, Attrs attrs) : OpKernel(node), dst_(attrs.dst) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const DataType dst = dst_;
    if (x.dtype() == dst) {
      ctx->set_output(0, x);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, x.shape(), dst));
    return LaunchCast(ToGpuDtype(x.dtype()), ToGpuDtype(dst), x.raw_data(),
                      y->raw_data(), x.NumElements(), gpu.stream);
  }

 private:
  const DataType dst_;
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

}  // namespace

void RegisterElementwiseKernels(KernelRegistry* registry) {
  const struct { const char* name; UnaryOp op; } unary[] = {
      {"Neg", UnaryOp::kNeg},     {"Abs", UnaryOp::kAbs},
      {"Relu", UnaryOp::kRelu},   {"Exp", UnaryOp::kExp},
      {"Log", UnaryOp::kLog},     {"Sqrt", UnaryOp::kSqrt},
      {"Rsqrt", UnaryOp::kRsqrt}, {"Tanh", UnaryOp::kTanh},
      {"Sigmoid", UnaryOp::kSigmoid}, {"Erf", UnaryOp::kErf},
  };
  auto has_unary = [](int op, GpuDtype t) {
    return HasUnaryKernel(static_cast<UnaryOp>(op), t);
  };
  auto has_binary = [](int op, GpuDtype t) {
    return HasBinaryKernel(static_cast<BinaryOp>(op), t);
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
      {"Pow", BinaryOp::kPow},         {"Maximum", BinaryOp::kMaximum},
      {"Minimum", BinaryOp::kMinimum}, {"Equal", BinaryOp::kEqual},
      {"Less", BinaryOp::kLess},       {"Greater", BinaryOp::kGreater},
  };
  std::vector<DataType> with_bool = GpuIntFloatTypes();
  with_bool.push_back(DT_BOOL);
  for (const auto& b : binary) {
    const BinaryOp op = b.op;
    RegisterGpu(registry, b.name,
                {{"T", Supported(has_binary, static_cast<int>(op), with_bool)}},
                Factory([op](const Node& node) {
                  return std::unique_ptr<OpKernel>(new BinaryKernel(node, op));
                }),
                {}, RanksAtMost(kMaxGpuDims));  // broadcasting IndexMap
  }
  const std::vector<DataType> cast_types = {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16,
                                            DT_DOUBLE, DT_INT8, DT_INT32,
                                            DT_INT64, DT_UINT8, DT_BOOL};
  RegisterGpu(registry, "Cast", {{"SrcT", cast_types}, {"DstT", cast_types}},
              MakeKernel<CastKernel>);
  RegisterGpu(registry, "Where", {{"T", GpuAllTypes()}}, MakeKernel<WhereKernel>,
              {}, RanksAtMost(kMaxGpuDims));
}

}  // namespace sluice::cuda
