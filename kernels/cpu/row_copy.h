// CopyRow and ZeroRow: copy or clear a short run of floats inline. An
// im2col or a padded copy moves tens of thousands of runs of 7 to 56 floats
// per convolution (one per image row and filter tap); as std::copy and
// std::fill each is a memmove or memset call, whose overhead per call is
// larger than the copy itself at these lengths. With AVX2 these move eight
// floats an instruction and the tail with a mask; longer runs, or builds
// without AVX2, use std::copy / std::fill.
//
//   CopyRow(src + offset, n, dst);
//   ZeroRow(dst + n, pad);
//
// Thread-safe (pure functions); src and dst must not overlap.
#ifndef SLUICE_KERNELS_CPU_ROW_COPY_H_
#define SLUICE_KERNELS_CPU_ROW_COPY_H_

#include <algorithm>
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace sluice::cpu {

// Runs at least this long go to std::copy / std::fill.
inline constexpr int64_t kShortRow = 64;

#if defined(__AVX2__)
// Lanes [0, n) of a vector's 8 set, for n in [0, 8).
inline __m256i RowTailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

// dst[0, n) = src[0, n).
inline void CopyRow(const float* src, int64_t n, float* dst) {
#if defined(__AVX2__)
  if (n < kShortRow) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
    }
    if (i < n) {
      const __m256i mask = RowTailMask(n - i);
      _mm256_maskstore_ps(dst + i, mask, _mm256_maskload_ps(src + i, mask));
    }
    return;
  }
#endif
  std::copy(src, src + n, dst);
}

// dst[0, n) = 0.
inline void ZeroRow(float* dst, int64_t n) {
#if defined(__AVX2__)
  if (n < kShortRow) {
    const __m256 zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, zero);
    if (i < n) _mm256_maskstore_ps(dst + i, RowTailMask(n - i), zero);
    return;
  }
#endif
  std::fill(dst, dst + std::max<int64_t>(n, 0), 0.0f);
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_ROW_COPY_H_
