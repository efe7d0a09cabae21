// Sgemm: one row-major float32 product, C = op(A) * op(B), on the calling
// thread, on oneDNN's JIT sgemm (dnnl_sgemm, Debian's libdnnl-dev) when
// sluice is built with it, else Eigen's. gemm.h's tiles call it once per
// tile: the parallelism stays sluice's (the intra-op pool), oneDNN only
// supplies the single-core kernel, which on AVX2/FMA runs ResNet-50's and a
// transformer layer's products 1.1x to 2.4x faster than Eigen's here.
//
//   Sgemm(/*ta=*/false, /*tb=*/true, m, n, k, a, /*lda=*/k, b, /*ldb=*/k,
//         c, /*ldc=*/n);
//
// Thread-safe: concurrent calls on different C are independent.
#ifndef SLUICE_KERNELS_CPU_SGEMM_H_
#define SLUICE_KERNELS_CPU_SGEMM_H_

#include <cstdint>

namespace sluice::cpu {

// A is [m,k] ([k,m] when ta) with rows lda apart, B is [k,n] ([n,k] when
// tb) with rows ldb apart, C is [m,n] with rows ldc apart; C is
// overwritten, or added to when `accumulate` (C += op(A) * op(B)).
// REQUIRES: m, n >= 1, k >= 0.
void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
           bool accumulate = false);

// Whether Sgemm runs on oneDNN (built with it).
bool SgemmUsesOneDnn();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_SGEMM_H_
