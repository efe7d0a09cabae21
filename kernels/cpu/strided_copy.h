// StridedCopy: fills a dense row-major output from a strided view of an
// input, the one loop behind Transpose, Slice and Expand. Dimensions whose
// strides chain are merged and size-1 dimensions dropped first, so a
// contiguous view is one memcpy-like row and [B,S,H] -> [S,B,H] walks B*S
// rows of H.
//
//   // out[i][j] = in[j][i] for a [2,3] input:
//   StridedCopy<uint32_t>(ctx, in, out, {3, 2}, {1, 3});
//
// Thread-safe; rows may be split over the device's intra-op pool.
#ifndef SLUICE_KERNELS_CPU_STRIDED_COPY_H_
#define SLUICE_KERNELS_CPU_STRIDED_COPY_H_

#include <array>
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"
#include "core/shape.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {

// out[i_0, ..., i_{r-1}] = in[sum_d i_d * strides[d]] over the dense output
// of shape `dims`. Strides are in elements and may be 0 or negative.
// REQUIRES: every index read lies inside the input buffer (the kernels
// check bounds before calling).
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
