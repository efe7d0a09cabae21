// A matrix product with its epilogue on cuBLASLt, for FusedMatMul's GPU
// kernel: y = act(x w + bias (+ residual)) as one cublasLtMatmul call, the
// bias and activation in cuBLASLt's epilogue (CUBLASLT_EPILOGUE_BIAS,
// RELU_BIAS, GELU_BIAS) and the residual as C with beta = 1 (D, the output,
// separate from C). The kernel falls back to cuBLAS + its own epilogue
// kernel when RunCublasLtMatmul says it did not run. CUDA-free header:
// pointers are device addresses.
//
//   CublasLtMatmulProblem p{DT_FLOAT16, rows, k, n, /*transpose_b=*/false,
//                           MatMulActivation::kGeluTanh, /*residual=*/false};
//   std::string why_not;
//   ASSIGN_OR_RETURN(bool ran, RunCublasLtMatmul(ctx, gpu, p, x, w, bias,
//                                                nullptr, y, &why_not));
//   if (!ran) { /* cuBLAS GEMM, then LaunchRowBiasActivation */ }
//
// Row-major y [rows, n] = x [rows, k] w [k, n] (w [n, k] with transpose_b)
// is computed as the column-major y^T = w^T x^T, as kernels/cuda/matmul.cc
// does for cuBLAS; the bias then runs along the rows of cuBLASLt's D.
// Per device (a GpuDevice resource) it keeps a cuBLASLt handle and a cache
// keyed by (shape, dtype, compute type, epilogue, residual, operand
// alignment): the descriptors and the algorithms cublasLtMatmulAlgoGetHeuristic
// returned. The device's AlgorithmCache (kernels/algorithm_cache.h, shared
// with cuDNN's convolutions) times those algorithms on the first ordinary
// call of a problem and keeps them fastest first; a call runs the first
// whose workspace it can allocate from the device's arena
// (ctx->allocate_temp, so it counts against the memory limit). While a
// step is recorded as a CUDA graph nothing is timed (the heuristic's order
// runs) and nothing calls cudaMalloc, so the graph records the call.
// float32 uses TF32 tensor cores only when the device allows TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32), as MatMul does; float16 and bfloat16
// accumulate in float32.
//
// Thread-safe: a device's cuBLASLt calls and its cache are serialised by
// its state's mutex.
#ifndef SLUICE_KERNELS_CUDA_CUBLASLT_MATMUL_H_
#define SLUICE_KERNELS_CUDA_CUBLASLT_MATMUL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "device/gpu_device.h"
#include "kernels/kernel.h"

namespace sluice::cuda {

enum class MatMulActivation { kNone, kRelu, kGeluTanh };

struct CublasLtMatmulProblem {
  DataType dtype = DT_FLOAT;
  int64_t rows = 0;  // x's rows: its batch dimensions flattened
  int64_t k = 0;
  int64_t n = 0;
  bool transpose_b = false;
  MatMulActivation activation = MatMulActivation::kNone;
  bool residual = false;
};

// Runs `p` on `gpu` (ctx's device, current on this thread): x [rows, k], w
// [k, n] or [n, k], bias [n], residual null or [rows, n], y [rows, n], all
// of p.dtype in gpu's memory. true: enqueued on the compute stream. false:
// nothing enqueued, `why_not` says why (cuBLASLt is not installed, the
// dtype is not float32, float16 or bfloat16, k is 0, cuBLASLt has no
// algorithm for it, refused every one, or no workspace fits in the memory
// left). Errors: a cuBLASLt or CUDA failure while running.
absl::StatusOr<bool> RunCublasLtMatmul(OpKernelContext* ctx, GpuDevice* gpu,
                                       const CublasLtMatmulProblem& p,
                                       const void* x, const void* w,
                                       const void* bias, const void* residual,
                                       void* y, std::string* why_not);

// What a device's cache holds, for tests and diagnostics.
struct CublasLtMatmulCacheEntry {
  std::string key;        // dtype, compute type, shape, epilogue, alignment
  int algorithms = 0;     // what the heuristic offered
  std::string unsupported;  // non-empty: cuBLASLt refused it; why
  int64_t runs = 0;
  int64_t last_workspace_bytes = 0;
  bool timed = false;   // the algorithms were timed (AlgorithmCache)
  std::string timings;  // what timing found: "heuristic #0 0.02 ms, ...: heuristic #1"
};
// The device's cache (empty when cuBLASLt was never used on it).
std::vector<CublasLtMatmulCacheEntry> CublasLtMatmulCache(GpuDevice* gpu);

// Tests: with `disabled`, RunCublasLtMatmul answers false on `gpu` ("disabled
// for testing") so the kernel's fallback runs; other devices keep cuBLASLt.
// FAILED_PRECONDITION when cuBLASLt cannot be loaded.
absl::Status DisableCublasLtMatmulForTesting(GpuDevice* gpu, bool disabled);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CUBLASLT_MATMUL_H_
