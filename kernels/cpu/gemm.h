// Row-major GEMM for the CPU kernels (MatMul, Conv2D): C = op(A) * op(B) on
// Eigen, spread over the device's intra-op pool when the product is large.
//
//   Gemm<float>(ctx.device()->eigen_cpu_device(), a, b, c, m, n, k,
//               /*transpose_a=*/false, /*transpose_b=*/true);
//
// Thread-safe; `pool` may be null (run on the calling thread).
#ifndef SLUICE_KERNELS_CPU_GEMM_H_
#define SLUICE_KERNELS_CPU_GEMM_H_

#include <cstdint>

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace sluice::cpu {

// A is [m,k] ([k,m] when transpose_a), B is [k,n] ([n,k] when transpose_b),
// C is [m,n]; all row-major and dense. C is overwritten (zeros when k == 0).
// T is float or double.
template <typename T>
void Gemm(const Eigen::ThreadPoolDevice* pool, const T* a, const T* b, T* c,
          int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b);

// Products with at least this many multiply-adds use the pool.
inline constexpr int64_t kParallelGemmFlops = int64_t{1} << 18;

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_GEMM_H_
