#include "kernels/cpu/window_nd.h"

#include <algorithm>
#include <cstddef>

namespace sluice::cpu {
namespace {

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

// Visits every (kernel offset k, output position o) pair with the flat
// input offset it reads, or -1 outside the image.
template <typename F>
void ForEachTap(const WindowNd& g, F&& f) {
  const size_t n = g.in.size();
  const int64_t ksize = g.KernelSize(), osize = g.OutSize();
  std::vector<int64_t> kidx(n, 0), oidx(n, 0);
  for (int64_t k = 0; k < ksize; ++k) {
    std::fill(oidx.begin(), oidx.end(), 0);
    for (int64_t o = 0; o < osize; ++o) {
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < n; ++d) {
        const int64_t i = oidx[d] * g.strides[d] - g.pad_begin[d] +
                          kidx[d] * g.dilations[d];
        if (i < 0 || i >= g.in[d]) {
          inside = false;
          break;
        }
        off = off * g.in[d] + i;
      }
      f(k, o, inside ? off : -1);
      for (size_t d = n; d-- > 0;) {
        if (++oidx[d] < g.out[d]) break;
        oidx[d] = 0;
      }
    }
    for (size_t d = n; d-- > 0;) {
      if (++kidx[d] < g.kernel[d]) break;
      kidx[d] = 0;
    }
  }
}

}  // namespace

int64_t WindowNd::InSize() const { return Product(in); }
int64_t WindowNd::OutSize() const { return Product(out); }
int64_t WindowNd::KernelSize() const { return Product(kernel); }

void Im2ColNd(const WindowNd& g, const float* image, float* cols) {
  const int64_t ksize = g.KernelSize(), osize = g.OutSize(),
                isize = g.InSize();
  // The tap offsets are the same for every channel: compute them once.
  std::vector<int64_t> offsets(ksize * osize);
  ForEachTap(g, [&](int64_t k, int64_t o, int64_t off) {
    offsets[k * osize + o] = off;
  });
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* src = image + c * isize;
    float* dst = cols + c * ksize * osize;
    for (int64_t t = 0; t < ksize * osize; ++t) {
      dst[t] = offsets[t] < 0 ? 0.0f : src[offsets[t]];
    }
  }
}

void Col2ImNd(const WindowNd& g, const float* cols, float* image) {
  const int64_t ksize = g.KernelSize(), osize = g.OutSize(),
                isize = g.InSize();
  std::vector<int64_t> offsets(ksize * osize);
  ForEachTap(g, [&](int64_t k, int64_t o, int64_t off) {
    offsets[k * osize + o] = off;
  });
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* src = cols + c * ksize * osize;
    float* dst = image + c * isize;
    for (int64_t t = 0; t < ksize * osize; ++t) {
      if (offsets[t] >= 0) dst[offsets[t]] += src[t];
    }
  }
}

}  // namespace sluice::cpu
