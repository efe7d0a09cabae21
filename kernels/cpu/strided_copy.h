// StridedCopy: fills a dense row-major output from a strided view of an
// input, the one loop behind Transpose, Slice and Expand. Dimensions whose
// strides chain are merged and size-1 dimensions dropped first, so a
// contiguous view is one memcpy-like row and [B,S,H] -> [S,B,H] walks B*S
// rows of H. Where the output's last dimension is strided in the input and
// another dimension is the input's contiguous one (a transpose that moves
// the innermost axis: NCHW <-> NHWC, a channel shuffle), the two are copied
// as a tiled matrix transpose, so that both sides are read and written a
// cache line at a time instead of one element per row.
//
//   // out[i][j] = in[j][i] for a [2,3] input:
//   StridedCopy<uint32_t>(ctx, in, out, {3, 2}, {1, 3});
//
// Thread-safe; rows may be split over the device's intra-op pool.
#ifndef SLUICE_KERNELS_CPU_STRIDED_COPY_H_
#define SLUICE_KERNELS_CPU_STRIDED_COPY_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "absl/types/span.h"
#include "core/shape.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {

// out[i_0, ..., i_{r-1}] = in[sum_d i_d * strides[d]] over the dense output
// of shape `dims`. Strides are in elements and may be 0 or negative.
// REQUIRES: every index read lies inside the input buffer (the kernels
// check bounds before calling).
namespace strided_copy_internal {

#if defined(__AVX2__)
// dst[i * dst_stride + j] = src[j * src_stride + i] for an 8 x 8 block of
// 4-byte values: eight rows loaded, transposed in registers, stored.
inline void Transpose8x8(const uint32_t* src, int64_t src_stride, uint32_t* dst,
                         int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + j * src_stride));
  }
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    r[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
    r[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
    r[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    r[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_stride), t[i]);
  }
}
#endif

// Side of a tile of the tiled transpose: a 16 x 16 tile of 4-byte values is
// 16 cache lines on each side, in L1 together. A work item is kTile rows by
// up to kBand columns of one matrix.
inline constexpr int64_t kTile = 16;
inline constexpr int64_t kBand = 16 * kTile;

// Rows of a run of interleaving: enough to outweigh a task, few enough to
// split an image between threads.
inline constexpr int64_t kInterleaveRun = 4096;

// out[m][i * C + j] = in[m][i + j * col_stride] for every matrix m of the
// other dimensions (extents od, input strides ois, output strides oos,
// outermost first): C planes of `rows` values interleaved.
template <typename T, int C>
void InterleaveMatrices(const OpKernelContext& ctx, const T* in, T* out,
                        const std::array<int64_t, kMaxRank>& od,
                        const std::array<int64_t, kMaxRank>& ois,
                        const std::array<int64_t, kMaxRank>& oos, int orank,
                        int64_t rows, int64_t col_stride, int64_t total) {
  const int64_t runs = (rows + kInterleaveRun - 1) / kInterleaveRun;
  const int64_t items = total / (rows * C) * runs;
  const double cost = static_cast<double>(std::min(rows, kInterleaveRun) * C);
  ParallelFor(ctx, items, cost, [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      int64_t in_off = 0, out_off = 0, rem = item / runs;
      for (int d = orank - 1; d >= 0; --d) {
        in_off += rem % od[d] * ois[d];
        out_off += rem % od[d] * oos[d];
        rem /= od[d];
      }
      const int64_t i0 = item % runs * kInterleaveRun;
      const int64_t i1 = std::min(rows, i0 + kInterleaveRun);
      const T* planes[C];
      for (int j = 0; j < C; ++j) planes[j] = in + in_off + j * col_stride;
      T* dst = out + out_off;
      for (int64_t i = i0; i < i1; ++i) {
        for (int j = 0; j < C; ++j) dst[i * C + j] = planes[j][i];
      }
    }
  });
}

// out = in transposed for every index of the other dimensions, where
// dims/strides are merged (r of them), `k` is the dimension read with
// stride 1 ("rows" here) and the last one (r - 1, "columns") is written
// with stride 1.
template <typename T>
void TiledTranspose(const OpKernelContext& ctx, const T* in, T* out,
                    const std::array<int64_t, kMaxRank>& md,
                    const std::array<int64_t, kMaxRank>& ms, int r, int k,
                    int64_t total) {
  const int64_t rows = md[k], cols = md[r - 1], col_stride = ms[r - 1];
  std::array<int64_t, kMaxRank> os{};  // the output's dense strides
  os[r - 1] = 1;
  for (int d = r - 2; d >= 0; --d) os[d] = os[d + 1] * md[d + 1];
  const int64_t row_stride = os[k];  // out[i * row_stride + j]
  // The other dimensions, outermost first.
  std::array<int64_t, kMaxRank> od{}, ois{}, oos{};
  int orank = 0;
  for (int d = 0; d < r - 1; ++d) {
    if (d == k) continue;
    od[orank] = md[d];
    ois[orank] = ms[d];
    oos[orank] = os[d];
    ++orank;
  }
  if (cols <= 4 && row_stride == cols) {
    // A few planes interleaved (NCHW -> NHWC of an RGB image): rows in
    // runs, each written whole with the plane count a constant.
    switch (cols) {
      case 2: return InterleaveMatrices<T, 2>(ctx, in, out, od, ois, oos, orank, rows, col_stride, total);
      case 3: return InterleaveMatrices<T, 3>(ctx, in, out, od, ois, oos, orank, rows, col_stride, total);
      case 4: return InterleaveMatrices<T, 4>(ctx, in, out, od, ois, oos, orank, rows, col_stride, total);
      default: break;
    }
  }
  const int64_t row_bands = (rows + kTile - 1) / kTile;
  const int64_t col_bands = (cols + kBand - 1) / kBand;
  const int64_t per_matrix = row_bands * col_bands;
  const int64_t items = total / (rows * cols) * per_matrix;
  const double cost = static_cast<double>(std::min(rows, kTile) * std::min(cols, kBand));
  ParallelFor(ctx, items, cost, [&](int64_t b, int64_t e) {
    std::array<int64_t, kMaxRank> idx{};
    int64_t in_off = 0, out_off = 0, rem = b / per_matrix;
    for (int d = orank - 1; d >= 0; --d) {
      idx[d] = rem % od[d];
      rem /= od[d];
      in_off += idx[d] * ois[d];
      out_off += idx[d] * oos[d];
    }
    int64_t part = b % per_matrix;
    for (int64_t item = b; item < e; ++item) {
      const int64_t i0 = part / col_bands * kTile, i1 = std::min(rows, i0 + kTile);
      const int64_t c0 = part % col_bands * kBand, c1 = std::min(cols, c0 + kBand);
      for (int64_t j0 = c0; j0 < c1; j0 += kTile) {
        const int64_t n = std::min(c1, j0 + kTile) - j0;
#if defined(__AVX2__)
        if constexpr (sizeof(T) == 4) {
          if (n == kTile && i1 - i0 == kTile) {
            for (int64_t bi = 0; bi < kTile; bi += 8) {
              for (int64_t bj = 0; bj < kTile; bj += 8) {
                Transpose8x8(
                    reinterpret_cast<const uint32_t*>(
                        in + in_off + i0 + bi + (j0 + bj) * col_stride),
                    col_stride,
                    reinterpret_cast<uint32_t*>(
                        out + out_off + (i0 + bi) * row_stride + j0 + bj),
                    row_stride);
              }
            }
            continue;
          }
        }
#endif
        for (int64_t i = i0; i < i1; ++i) {
          const T* src = in + in_off + i + j0 * col_stride;
          T* dst = out + out_off + i * row_stride + j0;
          for (int64_t j = 0; j < n; ++j) dst[j] = src[j * col_stride];
        }
      }
      if (++part < per_matrix) continue;
      part = 0;
      for (int d = orank - 1; d >= 0; --d) {
        in_off += ois[d];
        out_off += oos[d];
        if (++idx[d] < od[d]) break;
        in_off -= idx[d] * ois[d];
        out_off -= idx[d] * oos[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace strided_copy_internal

template <typename T>
void StridedCopy(const OpKernelContext& ctx, const T* in, T* out,
                 absl::Span<const int64_t> dims,
                 absl::Span<const int64_t> strides) {
  std::array<int64_t, kMaxRank> md{}, ms{};
  int r = 0;
  int64_t total = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    total *= dims[d];
    if (dims[d] == 1) continue;
    if (r > 0 && ms[r - 1] == strides[d] * dims[d]) {
      md[r - 1] *= dims[d];
      ms[r - 1] = strides[d];
    } else {
      md[r] = dims[d];
      ms[r] = strides[d];
      ++r;
    }
  }
  if (total == 0) return;
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  const int64_t inner = md[r - 1];
  const int64_t step = ms[r - 1];
  if (step != 1) {
    // The input's contiguous dimension, if the view has one.
    for (int k = r - 2; k >= 0; --k) {
      if (ms[k] == 1) {
        strided_copy_internal::TiledTranspose(ctx, in, out, md, ms, r, k, total);
        return;
      }
    }
  }
  const int outer_rank = r - 1;
  const int64_t rows = total / inner;
  ParallelFor(ctx, rows, static_cast<double>(inner), [&](int64_t b, int64_t e) {
    std::array<int64_t, kMaxRank> idx{};
    int64_t off = 0, rem = b;
    for (int d = outer_rank - 1; d >= 0; --d) {
      idx[d] = rem % md[d];
      rem /= md[d];
      off += idx[d] * ms[d];
    }
    for (int64_t row = b; row < e; ++row) {
      T* o = out + row * inner;
      const T* src = in + off;
      if (step == 1) {
        std::memcpy(o, src, inner * sizeof(T));
      } else {
        for (int64_t j = 0; j < inner; ++j) o[j] = src[j * step];
      }
      for (int d = outer_rank - 1; d >= 0; --d) {
        off += ms[d];
        if (++idx[d] < md[d]) break;
        off -= idx[d] * ms[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_STRIDED_COPY_H_
