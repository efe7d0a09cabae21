// Raw CUDA baselines for bench/gpu_bench.cc: the same work done with the
// CUDA runtime and cuBLAS directly, so sluice's figures are read as a
// fraction of what the hardware and library give in the same run.
//
//   absl::StatusOr<double> s = RawGemmSeconds(8192, RawGemm::kBf16, 10);
//
// Not thread-safe: one benchmark at a time.
#ifndef SLUICE_BENCH_CUDA_RAW_CUDA_H_
#define SLUICE_BENCH_CUDA_RAW_CUDA_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace sluice {

// The GEMM types of sluice's CUDA MatMul (kernels/cuda/matmul.cc), as
// cublasGemmEx data type / compute type: kFp32 CUDA_R_32F / COMPUTE_32F,
// kTf32 CUDA_R_32F / COMPUTE_32F_FAST_TF32, kBf16 CUDA_R_16BF (inputs and
// output) / COMPUTE_32F.
enum class RawGemm { kFp32, kTf32, kBf16 };

// Median seconds of one n x n x n GEMM of `type` on GPU 0 (cublasGemmEx, the
// call sluice makes), over `iters` timed runs after a warm-up, CUDA events.
absl::StatusOr<double> RawGemmSeconds(int n, RawGemm type, int iters);

// GB/s of one host-to-device copy of `bytes` on GPU 0, from pinned or
// pageable host memory (median of `iters`).
absl::StatusOr<double> RawHostToDeviceGBps(int64_t bytes, bool pinned,
                                           int iters);

// GB/s of one cudaMemcpyPeerAsync of `bytes` from GPU 0 to GPU 1 (median of
// `iters`). FAILED_PRECONDITION with fewer than two GPUs.
absl::StatusOr<double> RawPeerCopyGBps(int64_t bytes, int iters);

}  // namespace sluice

#endif  // SLUICE_BENCH_CUDA_RAW_CUDA_H_
