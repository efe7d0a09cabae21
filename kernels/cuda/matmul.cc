// MatMul on CUDA through cuBLAS. Row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T. Batches: one strided-batched GEMM when
// each operand's batch offsets form an arithmetic progression (same batch
// shape, or one side broadcast), a single GEMM with the batch folded into M
// when b has no batch and a is not transposed, else one GEMM per batch.
// float32 uses TF32 tensor cores only when the device allows it.
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cuda/cublas_api.h"
#include "device/fault_injector.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"

namespace sluice::cuda {
namespace {

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  bool double_scalars;
};

absl::StatusOr<GemmTypes> TypesFor(DataType dtype, bool allow_tf32) {
  switch (dtype) {
    case DT_FLOAT:
      return GemmTypes{CUDA_R_32F,
                       allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                  : CUBLAS_COMPUTE_32F,
                       false};
    case DT_FLOAT16: return GemmTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case DT_BFLOAT16: return GemmTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    case DT_DOUBLE: return GemmTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    default:
      return absl::UnimplementedError(
          absl::StrCat("no CUDA MatMul for ", DataTypeName(dtype)));
  }
}

// Batch offsets (in matrices) of each operand for every output batch.
void BatchOffsets(const Shape& out_batch, const Shape& batch,
                  std::vector<int64_t>* offsets) {
  const int64_t count = out_batch.num_elements();
  const int shift = out_batch.rank() - batch.rank();
  std::vector<int64_t> strides = RowMajorStrides(batch);
  offsets->resize(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    int64_t off = 0;
    for (int d = out_batch.rank() - 1; d >= 0; --d) {
      const int64_t idx = rest % out_batch.dim(d);
      rest /= out_batch.dim(d);
      const int bd = d - shift;
      if (bd >= 0 && batch.dim(bd) != 1) off += idx * strides[bd];
    }
    (*offsets)[i] = off;
  }
}

// The common step of an arithmetic progression, or -1.
int64_t Progression(const std::vector<int64_t>& v) {
  if (v.size() <= 1) return 0;
  const int64_t step = v[1] - v[0];
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] - v[i - 1] != step) return -1;
  }
  return v[0] == 0 ? step : -1;
}

// A bool attribute, false when absent.
absl::StatusOr<bool> BoolAttr(const Node& node, const char* name) {
  if (!node.attrs().Has(name)) return false;
  return node.attrs().GetBool(name);
}

class MatMulKernel final : public OpKernel {
 public:
  struct Attrs {
    bool transpose_a = false;
    bool transpose_b = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.transpose_a, BoolAttr(node, "transpose_a"));
    ASSIGN_OR_RETURN(a.transpose_b, BoolAttr(node, "transpose_b"));
    return a;
  }
  MatMulKernel(const Node& node, Attrs attrs)
      : OpKernel(node), ta_(attrs.transpose_a), tb_(attrs.transpose_b) {}

  // cuBLAS takes int sizes: refuses m, n or k above 2^31 - 1 when the
  // inferred shapes know them.
  static absl::Status Supports(const Node& node) {
    ASSIGN_OR_RETURN(Attrs attrs, ParseAttrs(node));
    if (node.num_inputs() != 2) return absl::OkStatus();
    const Shape& a = node.input_shape(0);
    const Shape& b = node.input_shape(1);
    if (a.unknown_rank() || b.unknown_rank() || a.rank() < 2 || b.rank() < 2) {
      return absl::OkStatus();
    }
    const int64_t dims[] = {a.dim(a.rank() - (attrs.transpose_a ? 1 : 2)),
                            a.dim(a.rank() - (attrs.transpose_a ? 2 : 1)),
                            b.dim(b.rank() - (attrs.transpose_b ? 2 : 1))};
    const char* names[] = {"m", "k", "n"};
    for (int i = 0; i < 3; ++i) {
      if (dims[i] > std::numeric_limits<int>::max()) {
        return absl::UnimplementedError(absl::StrCat(
            "MatMul ", names[i], " = ", dims[i], " is above 2^31 - 1 (cuBLAS)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.dtype() != b.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("MatMul operands have dtypes ", DataTypeName(a.dtype()),
                       " and ", DataTypeName(b.dtype())));
    }
    ASSIGN_OR_RETURN(Shape out_shape,
                     MatMulShape(a.shape(), b.shape(), ta_, tb_));
    ASSIGN_OR_RETURN(Tensor* c, ctx->allocate_output(0, out_shape, a.dtype()));
    ASSIGN_OR_RETURN(GemmTypes types, TypesFor(a.dtype(), gpu.device->allow_tf32()));
    const int64_t m = a.dim(a.rank() - (ta_ ? 1 : 2));
    const int64_t k = a.dim(a.rank() - (ta_ ? 2 : 1));
    const int64_t n = b.dim(b.rank() - (tb_ ? 2 : 1));
    if (c->NumElements() == 0) return absl::OkStatus();
    if (k == 0) {
      return CudaOk(cudaMemsetAsync(c->raw_data(), 0, c->bytes(), gpu.stream));
    }
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    if (m > kIntMax || n > kIntMax || k > kIntMax) {
      return absl::UnimplementedError(absl::StrCat(
          "MatMul dimensions above 2^31 (m=", m, ", n=", n, ", k=", k, ")"));
    }
    const Shape a_batch(absl::MakeConstSpan(a.shape().dims()).subspan(0, a.rank() - 2));
    const Shape b_batch(absl::MakeConstSpan(b.shape().dims()).subspan(0, b.rank() - 2));
    const Shape out_batch(
        absl::MakeConstSpan(out_shape.dims()).subspan(0, out_shape.rank() - 2));
    const int64_t batches = out_batch.num_elements();
    const size_t elem = DataTypeSize(a.dtype());
    auto* handle = static_cast<cublasHandle_t>(gpu.device->cublas_handle());
    ASSIGN_OR_RETURN(const CublasApi* cublas, LoadCublas());
    absl::MutexLock cublas_lock(&gpu.device->cublas_mutex());
    RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "cuBLAS GEMM"));

    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void* alpha = types.double_scalars ? static_cast<const void*>(&one_d)
                                             : static_cast<const void*>(&one_f);
    const void* beta = types.double_scalars ? static_cast<const void*>(&zero_d)
                                            : static_cast<const void*>(&zero_f);
    const cublasOperation_t op_a = ta_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = tb_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = static_cast<int>(ta_ ? m : k);
    const int ldb = static_cast<int>(tb_ ? k : n);
    const int ldc = static_cast<int>(n);

    // b without batch, a not transposed: a's batches are rows of one GEMM.
    if (b_batch.num_elements() == 1 && !ta_ && a_batch.num_elements() == batches &&
        batches * m <= kIntMax) {
      return CublasStatus(
          cublas->GemmEx(handle, op_b, op_a, static_cast<int>(n),
                       static_cast<int>(batches * m), static_cast<int>(k), alpha,
                       b.raw_data(), types.data, ldb, a.raw_data(), types.data,
                       lda, beta, c->raw_data(), types.data, ldc, types.compute,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
    }
    std::vector<int64_t> a_off, b_off;
    BatchOffsets(out_batch, a_batch, &a_off);
    BatchOffsets(out_batch, b_batch, &b_off);
    const int64_t sa = Progression(a_off);
    const int64_t sb = Progression(b_off);
    if (sa >= 0 && sb >= 0 && batches <= kIntMax) {
      return CublasStatus(
          cublas->GemmStridedBatchedEx(
              handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
              static_cast<int>(k), alpha, b.raw_data(), types.data, ldb,
              sb * k * n, a.raw_data(), types.data, lda, sa * m * k, beta,
              c->raw_data(), types.data, ldc, m * n, static_cast<int>(batches),
              types.compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
    }
    for (int64_t i = 0; i < batches; ++i) {
      const char* pa = static_cast<const char*>(a.raw_data()) + a_off[i] * m * k * elem;
      const char* pb = static_cast<const char*>(b.raw_data()) + b_off[i] * k * n * elem;
      char* pc = static_cast<char*>(c->raw_data()) + i * m * n * elem;
      RETURN_IF_ERROR(CublasStatus(
          cublas->GemmEx(handle, op_b, op_a, static_cast<int>(n),
                       static_cast<int>(m), static_cast<int>(k), alpha, pb,
                       types.data, ldb, pa, types.data, lda, beta, pc,
                       types.data, ldc, types.compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx"));
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status CudaOk(cudaError_t err) {
    if (err == cudaSuccess) return absl::OkStatus();
    cudaGetLastError();
    return absl::InternalError(
        absl::StrCat("MatMul: ", cudaGetErrorString(err)));
  }

  const bool ta_;
  const bool tb_;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "MatMul", {{"T", GpuFloatTypes()}},
              MakeKernel<MatMulKernel>, {}, MatMulKernel::Supports);
}

}  // namespace sluice::cuda
