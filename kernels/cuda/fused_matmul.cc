// FusedMatMul on CUDA: one cublasLtMatmul with the bias, activation and
// residual in its epilogue where cuBLASLt takes the problem
// (cublaslt_matmul.h); otherwise, so that a model that ran before never
// fails, the product on cuBLAS (x's batch dimensions folded into M, as
// MatMul does when b has no batch) and then the bias, residual and
// activation in one pass over the output (bias_activation.h).
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cuda/cublas_api.h"
#include "device/fault_injector.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/bias_activation.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"

namespace sluice::cuda {
namespace {

absl::StatusOr<MatMulActivation> ParseActivation(const std::string& s) {
  if (s == "none") return MatMulActivation::kNone;
  if (s == "relu") return MatMulActivation::kRelu;
  if (s == "gelu_tanh") return MatMulActivation::kGeluTanh;
  return absl::InvalidArgumentError(absl::StrCat(
      "FusedMatMul: activation must be \"none\", \"relu\" or \"gelu_tanh\", "
      "got \"", s, "\""));
}

RowActivation ToRowActivation(MatMulActivation a) {
  switch (a) {
    case MatMulActivation::kRelu: return RowActivation::kRelu;
    case MatMulActivation::kGeluTanh: return RowActivation::kGeluTanh;
    default: return RowActivation::kNone;
  }
}

struct FusedGemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

absl::StatusOr<FusedGemmTypes> GemmTypesFor(DataType dtype, bool allow_tf32) {
  switch (dtype) {
    case DT_FLOAT:
      return FusedGemmTypes{CUDA_R_32F, allow_tf32
                                            ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F};
    case DT_FLOAT16:
      return FusedGemmTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DT_BFLOAT16:
      return FusedGemmTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default:
      return absl::UnimplementedError(
          absl::StrCat("no CUDA FusedMatMul for ", DataTypeName(dtype)));
  }
}

class FusedMatMulKernel final : public OpKernel {
 public:
  struct Attrs {
    bool transpose_b = false;
    MatMulActivation activation = MatMulActivation::kNone;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    if (node.attrs().Has("transpose_b")) {
      ASSIGN_OR_RETURN(a.transpose_b, node.attrs().GetBool("transpose_b"));
    }
    ASSIGN_OR_RETURN(std::string act, StringAttr(node, "activation", "none"));
    ASSIGN_OR_RETURN(a.activation, ParseActivation(act));
    return a;
  }
  FusedMatMulKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    const Tensor* residual = ctx->num_inputs() > 3 ? &ctx->input(3) : nullptr;
    const DataType dtype = a.dtype();
    if (b.rank() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedMatMul's b must be a matrix, got ", b.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Shape shape, MatMulShape(a.shape(), b.shape(), false,
                                              attrs_.transpose_b));
    const int64_t k = a.dim(a.rank() - 1);
    const int64_t n = shape.dim(shape.rank() - 1);
    // Checked before anything runs: cuBLASLt reads them in the same call.
    if (b.dtype() != dtype || bias.dtype() != dtype ||
        bias.NumElements() != n ||
        (residual != nullptr &&
         (residual->dtype() != dtype || !(residual->shape() == shape)))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedMatMul: b ", DataTypeName(b.dtype()), " and bias ",
          DataTypeName(bias.dtype()), bias.shape().DebugString(), " must be ",
          DataTypeName(dtype), " and [", n, "]",
          residual == nullptr ? "" : ", the residual ",
          residual == nullptr ? "" : residual->shape().DebugString(),
          residual == nullptr ? "" : " of the output's shape and dtype ",
          residual == nullptr ? "" : shape.DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape, dtype));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t rows = y->NumElements() / n;
    CublasLtMatmulProblem p;
    p.dtype = dtype;
    p.rows = rows;
    p.k = k;
    p.n = n;
    p.transpose_b = attrs_.transpose_b;
    p.activation = attrs_.activation;
    p.residual = residual != nullptr;
    std::string why_not;
    ASSIGN_OR_RETURN(
        bool ran,
        RunCublasLtMatmul(ctx, gpu.device, p, a.raw_data(), b.raw_data(),
                          bias.raw_data(),
                          residual == nullptr ? nullptr : residual->raw_data(),
                          y->raw_data(), &why_not));
    if (ran) return absl::OkStatus();
    RETURN_IF_ERROR(Gemm(gpu, dtype, a.raw_data(), b.raw_data(), y->raw_data(),
                         rows, k, n, y->bytes()));
    return LaunchRowBiasActivation(
        ToGpuDtype(dtype), y->raw_data(), bias.raw_data(),
        residual == nullptr ? nullptr : residual->raw_data(), rows, n,
        ToRowActivation(attrs_.activation), gpu.stream);
  }

 private:
  // y [rows, n] = x [rows, k] w on cuBLAS (column-major y^T = w^T x^T).
  absl::Status Gemm(const GpuContext& gpu, DataType dtype, const void* x,
                    const void* w, void* y, int64_t rows, int64_t k, int64_t n,
                    size_t y_bytes) const {
    if (k == 0) {
      return CudaStatus(cudaMemsetAsync(y, 0, y_bytes, gpu.stream),
                        "FusedMatMul: cudaMemsetAsync");
    }
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    if (rows > kIntMax || n > kIntMax || k > kIntMax) {
      return absl::UnimplementedError(absl::StrCat(
          "FusedMatMul dimensions above 2^31 (rows=", rows, ", n=", n,
          ", k=", k, ")"));
    }
    ASSIGN_OR_RETURN(FusedGemmTypes types,
                     GemmTypesFor(dtype, gpu.device->allow_tf32()));
    ASSIGN_OR_RETURN(const CublasApi* cublas, LoadCublas());
    auto* handle = static_cast<cublasHandle_t>(gpu.device->cublas_handle());
    absl::MutexLock cublas_lock(&gpu.device->cublas_mutex());
    RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "cuBLAS GEMM"));
    const float one = 1.0f, zero = 0.0f;
    const bool tb = attrs_.transpose_b;
    return CublasStatus(
        cublas->GemmEx(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N,
                       static_cast<int>(n), static_cast<int>(rows),
                       static_cast<int>(k), &one, w, types.data,
                       static_cast<int>(tb ? k : n), x, types.data,
                       static_cast<int>(k), &zero, y, types.data,
                       static_cast<int>(n), types.compute, CUBLAS_GEMM_DEFAULT),
        "FusedMatMul: cublasGemmEx");
  }

  const Attrs attrs_;
};

}  // namespace

void RegisterFusedMatMulKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "FusedMatMul",
              {{"T", {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}}},
              MakeKernel<FusedMatMulKernel>);
}

}  // namespace sluice::cuda
