// ConvTapGemmsNhwc: one Sgemm per filter tap over the output rectangle
// where the tap reads the image. See the header.
#include "kernels/cpu/conv_tap_gemms.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/sgemm.h"

namespace sluice::cpu {
namespace {

std::atomic<int64_t> tap_runs{0};
std::atomic<int64_t> channel_split_runs{0};

// Output positions [lo, hi) of one axis where a tap reads the image.
struct TapRange {
  int64_t lo, hi;
};

int64_t FloorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// For each of the k taps of one axis: output position q reads input
// q * stride - pad + t * dilation, which must lie in [0, in).
std::vector<TapRange> AxisRanges(int64_t in, int64_t out, int64_t k,
                                 int64_t stride, int64_t dilation,
                                 int64_t pad) {
  std::vector<TapRange> ranges(k);
  for (int64_t t = 0; t < k; ++t) {
    const int64_t first = pad - t * dilation;  // q * stride >= first
    const int64_t lo = std::max<int64_t>(0, -FloorDiv(-first, stride));
    const int64_t hi = std::min(out, FloorDiv(in - 1 + first, stride) + 1);
    ranges[t] = {lo, std::max(lo, hi)};
  }
  return ranges;
}

// Positions read over all taps of an axis, and how many taps read any.
void Live(const std::vector<TapRange>& ranges, int64_t* positions,
          int64_t* taps) {
  *positions = *taps = 0;
  for (const TapRange& r : ranges) {
    if (r.hi == r.lo) continue;
    *positions += r.hi - r.lo;
    ++*taps;
  }
}

}  // namespace

bool TapGemmsPay(const Conv2DParams& p, int64_t h, int64_t w, int64_t oh,
                 int64_t ow, int64_t kh, int64_t kw) {
  if (p.group != 1 || (p.dilations[0] == 1 && p.dilations[1] == 1)) {
    return false;
  }
  int64_t rows, row_taps, cols, col_taps;
  Live(AxisRanges(h, oh, kh, p.strides[0], p.dilations[0], p.pads[0]), &rows,
       &row_taps);
  Live(AxisRanges(w, ow, kw, p.strides[1], p.dilations[1], p.pads[1]), &cols,
       &col_taps);
  if (rows == 0 || cols == 0) return false;
  return 2 * rows * cols <= row_taps * col_taps * oh * ow;
}

void ConvTapGemmsNhwc(const Eigen::ThreadPoolDevice* pool,
                      const Conv2DParams& p, ConvActivation act,
                      const Tensor& x, const Tensor& f, const float* bias,
                      const Tensor* side, Tensor* y) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t o = f.dim(0), kh = f.dim(1), kw = f.dim(2);
  const int64_t oh = y->dim(1), ow = y->dim(2);
  const int64_t sh = p.strides[0], sw = p.strides[1];
  const int64_t dh = p.dilations[0], dw = p.dilations[1];
  const std::vector<TapRange> rows = AxisRanges(h, oh, kh, sh, dh, p.pads[0]);
  const std::vector<TapRange> cols = AxisRanges(w, ow, kw, sw, dw, p.pads[1]);
  int64_t live_rows, row_taps, live_cols, col_taps;
  Live(rows, &live_rows, &row_taps);
  Live(cols, &live_cols, &col_taps);
  const int64_t image_macs = live_rows * live_cols * c * o;
  // Runs of output channels (whole vectors of 8) where the batch has fewer
  // images than the pool threads, none under MinConvSliceMacs().
  const int threads = PoolThreads(pool);
  int64_t parts = 1;
  if (n < threads) {
    parts = std::min<int64_t>(
        {(threads + n - 1) / n, std::max<int64_t>(1, o / 8),
         std::max<int64_t>(1, image_macs / MinConvSliceMacs())});
  }
  if (parts > 1) channel_split_runs.fetch_add(1);
  const float* xd = x.data<float>();
  const float* fd = f.data<float>();
  const float* sd = side == nullptr ? nullptr : side->data<float>();
  float* yd = y->data<float>();
  const int64_t per_channel = kh * kw * c;  // filter floats per output channel
  RunBlocks(pool, n * parts, [&](int64_t block) {
    const int64_t img = block / parts, part = block % parts;
    const int64_t o0 = o * part / parts / 8 * 8;
    const int64_t o1 = part + 1 == parts ? o : o * (part + 1) / parts / 8 * 8;
    const int64_t width = o1 - o0;
    float* out = yd + img * oh * ow * o + o0;
    const float* res = sd == nullptr ? nullptr : sd + img * oh * ow * o + o0;
    // The bias and the residual first; every tap adds to them.
    for (int64_t q = 0; q < oh * ow; ++q) {
      float* row = out + q * o;
      for (int64_t j = 0; j < width; ++j) {
        row[j] = (bias == nullptr ? 0.0f : bias[o0 + j]) +
                 (res == nullptr ? 0.0f : res[q * o + j]);
      }
    }
    const float* image = xd + img * h * w * c;
    std::vector<float> gathered, product;
    for (int64_t i = 0; i < kh; ++i) {
      const TapRange r = rows[i];
      if (r.hi == r.lo) continue;
      for (int64_t j = 0; j < kw; ++j) {
        const TapRange cr = cols[j];
        if (cr.hi == cr.lo) continue;
        const float* tap = fd + o0 * per_channel + (i * kw + j) * c;
        const int64_t m = cr.hi - cr.lo;
        const int64_t in_col = cr.lo * sw - p.pads[1] + j * dw;
        if (sh == 1 && sw == 1 && m == ow && m == w) {
          // Whole rows in and out: the tap's rows are one run of memory.
          const int64_t in_row = r.lo - p.pads[0] + i * dh;
          Sgemm(false, true, (r.hi - r.lo) * ow, width, c,
                image + in_row * w * c, c, tap, per_channel,
                out + r.lo * ow * o, o, /*accumulate=*/true);
          continue;
        }
        // A rectangle: its input pixels gathered into one matrix, one
        // product (a product per row would stream the tap's filter rows
        // once per row), added into the rectangle of y.
        const int64_t rows_in = r.hi - r.lo;
        gathered.resize(rows_in * m * c);
        product.resize(rows_in * m * width);
        for (int64_t q = r.lo; q < r.hi; ++q) {
          const float* from =
              image + ((q * sh - p.pads[0] + i * dh) * w + in_col) * c;
          float* to = gathered.data() + (q - r.lo) * m * c;
          for (int64_t px = 0; px < m; ++px) {
            std::copy(from + px * sw * c, from + px * sw * c + c, to + px * c);
          }
        }
        Sgemm(false, true, rows_in * m, width, c, gathered.data(), c, tap,
              per_channel, product.data(), width);
        for (int64_t q = r.lo; q < r.hi; ++q) {
          for (int64_t px = 0; px < m; ++px) {
            const float* from = product.data() + ((q - r.lo) * m + px) * width;
            float* to = out + (q * ow + cr.lo + px) * o;
            for (int64_t jj = 0; jj < width; ++jj) to[jj] += from[jj];
          }
        }
      }
    }
    if (act == ConvActivation::kNone) return;
    for (int64_t q = 0; q < oh * ow; ++q) {
      float* row = out + q * o;
      for (int64_t j = 0; j < width; ++j) {
        row[j] = ApplyConvActivation(act, row[j]);
      }
    }
  });
  tap_runs.fetch_add(1);
}

int64_t ConvTapGemmsRuns() { return tap_runs.load(); }

int64_t ConvTapGemmsChannelSplitRuns() { return channel_split_runs.load(); }

}  // namespace sluice::cpu
