// 1x1 convolutions as cuBLAS GEMMs. Row-major y[n] = w . x[n] is computed
// as the column-major y[n]^T (HW x O) = x[n]^T (HW x C) . w^T (C x O): x[n]
// read as an HW x C column-major matrix (ld HW), w as C x O (ld C). NHWC
// (channels_last) is one GEMM over all images: y [N*HW, O] = x [N*HW, C]
// . w^T.
#include "kernels/cuda/conv_gemm.h"

#include <cstdint>
#include <limits>

#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cuda/cublas_api.h"
#include "device/fault_injector.h"

namespace sluice::cuda {

bool ConvIsGemm(const CudnnConvProblem& p) {
  if (p.transpose || p.group != 1 || p.image.empty()) return false;
  if (p.dtype != DT_FLOAT && p.dtype != DT_FLOAT16 && p.dtype != DT_BFLOAT16) {
    return false;
  }
  int64_t spatial = 1;
  for (size_t d = 0; d < p.image.size(); ++d) {
    if (p.kernel[d] != 1 || p.strides[d] != 1 || p.pad_begin[d] != 0 ||
        p.positions[d] != p.image[d]) {
      return false;
    }
    spatial *= p.image[d];
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (p.channels_last) {  // one GEMM over every image's positions
    const int64_t rows = p.batch * spatial;
    return p.batch >= 1 && rows <= kIntMax && p.in_channels <= kIntMax &&
           p.out_channels <= kIntMax && rows * p.in_channels <= kIntMax &&
           rows * p.out_channels <= kIntMax;
  }
  return p.batch >= 1 && p.batch <= kIntMax && spatial <= kIntMax &&
         p.in_channels <= kIntMax && p.out_channels <= kIntMax &&
         spatial * p.in_channels <= kIntMax && spatial * p.out_channels <= kIntMax;
}

absl::Status RunConvAsGemm(GpuDevice* gpu, const CudnnConvProblem& p,
                           const void* x, const void* w, void* y) {
  ASSIGN_OR_RETURN(const CublasApi* cublas, LoadCublas());
  cudaDataType_t data = CUDA_R_32F;
  cublasComputeType_t compute =
      gpu->allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (p.dtype == DT_FLOAT16) {
    data = CUDA_R_16F;
    compute = CUBLAS_COMPUTE_32F;
  } else if (p.dtype == DT_BFLOAT16) {
    data = CUDA_R_16BF;
    compute = CUBLAS_COMPUTE_32F;
  }
  int64_t spatial = 1;
  for (int64_t d : p.image) spatial *= d;
  const int m = static_cast<int>(spatial);
  const int n = static_cast<int>(p.out_channels);
  const int k = static_cast<int>(p.in_channels);
  const float one = 1.0f, zero = 0.0f;
  auto* handle = static_cast<cublasHandle_t>(gpu->cublas_handle());
  absl::MutexLock lock(&gpu->cublas_mutex());
  RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "cuBLAS GEMM"));
  if (p.channels_last) {
    // Row-major y [N*HW, O] = x [N*HW, C] . w^T, w [O, C]: column-major
    // y^T (O x N*HW, ld O) = w^T (O x C: w read as C x O, ld C, transposed)
    // . x^T (C x N*HW, ld C).
    const int rows = static_cast<int>(p.batch * spatial);
    return CublasStatus(cublas->GemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, rows,
                                       k, &one, w, data, k, x, data, k, &zero, y,
                                       data, n, compute, CUBLAS_GEMM_DEFAULT),
                        "cublasGemmEx (1x1 NHWC convolution)");
  }
  if (p.batch == 1) {
    return CublasStatus(cublas->GemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k,
                                       &one, x, data, m, w, data, k, &zero, y,
                                       data, m, compute, CUBLAS_GEMM_DEFAULT),
                        "cublasGemmEx (1x1 convolution)");
  }
  return CublasStatus(
      cublas->GemmStridedBatchedEx(
          handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, x, data, m,
          static_cast<long long>(spatial) * k, w, data, k, 0, &zero, y, data, m,
          static_cast<long long>(spatial) * n, static_cast<int>(p.batch), compute,
          CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx (1x1 convolution)");
}

}  // namespace sluice::cuda
