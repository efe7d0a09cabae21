// Raw CUDA baselines for bench/gpu_bench.cc: the same work done with the
// CUDA runtime and cuBLAS directly, so sluice's figures are read as a
// fraction of what the hardware and library give in the same run.
//
//   absl::StatusOr<double> s = RawSgemmSeconds(8192, /*tf32=*/true, 10);
//
// Not thread-safe: one benchmark at a time.
#ifndef SLUICE_BENCH_CUDA_RAW_CUDA_H_
#define SLUICE_BENCH_CUDA_RAW_CUDA_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace sluice {

// Median seconds of one n x n x n float32 GEMM on GPU 0 (cuBLAS, TF32 tensor
// cores when `tf32`), over `iters` timed runs after a warm-up, CUDA events.
absl::StatusOr<double> RawSgemmSeconds(int n, bool tf32, int iters);

// GB/s of one host-to-device copy of `bytes` on GPU 0, from pinned or
// pageable host memory (median of `iters`).
absl::StatusOr<double> RawHostToDeviceGBps(int64_t bytes, bool pinned,
                                           int iters);

// GB/s of one cudaMemcpyPeerAsync of `bytes` from GPU 0 to GPU 1 (median of
// `iters`). FAILED_PRECONDITION with fewer than two GPUs.
absl::StatusOr<double> RawPeerCopyGBps(int64_t bytes, int iters);

}  // namespace sluice

#endif  // SLUICE_BENCH_CUDA_RAW_CUDA_H_
