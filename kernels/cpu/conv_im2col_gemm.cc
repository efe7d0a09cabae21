// ConvIm2colGemmNhwc: im2col and one sgemm per piece of the output. See the
// header.
#include "kernels/cpu/conv_im2col_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/sgemm.h"

namespace sluice::cpu {
namespace {

std::atomic<int64_t> im2col_runs{0};
std::atomic<int64_t> im2col_channel_split_runs{0};

// The least rows a chunk is cut to (fewer make sgemm slow: 16 rows of a
// 4608-deep product ran at 60% of 49 rows' speed).
constexpr int64_t kLeastChunkRows = 32;
// Where a thread would get fewer rows than this, the threads cut the
// output channels instead (ResNet-50's 7 x 7 and 14 x 14 maps at two
// threads: 49 or 98 rows each ran up to 1.4x slower than half the channels
// each of all the rows).
constexpr int64_t kLeastRowsPerThread = 256;
// The least output channels a part keeps.
constexpr int64_t kLeastPartOutputs = 64;

// v = act(v + bias[j] + side[j]) over `rows` rows of `width` values, `ld`
// apart (side's rows too).
template <ConvActivation kAct>
void FinishIm2col(float* v, const float* bias, const float* side, int64_t rows,
                  int64_t width, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = v + r * ld;
    const float* res = side == nullptr ? nullptr : side + r * ld;
    if (bias != nullptr) {
      for (int64_t j = 0; j < width; ++j) row[j] += bias[j];
    }
    if (res != nullptr) {
      for (int64_t j = 0; j < width; ++j) row[j] += res[j];
    }
    if constexpr (kAct != ConvActivation::kNone) {
      for (int64_t j = 0; j < width; ++j) {
        row[j] = ApplyConvActivation(kAct, row[j]);
      }
    }
  }
}

void FinishIm2colPiece(ConvActivation act, float* v, const float* bias,
                       const float* side, int64_t rows, int64_t width,
                       int64_t ld) {
  switch (act) {
    case ConvActivation::kNone:
      return FinishIm2col<ConvActivation::kNone>(v, bias, side, rows, width,
                                                 ld);
    case ConvActivation::kRelu:
      return FinishIm2col<ConvActivation::kRelu>(v, bias, side, rows, width,
                                                 ld);
    case ConvActivation::kRelu6:
      return FinishIm2col<ConvActivation::kRelu6>(v, bias, side, rows, width,
                                                  ld);
    case ConvActivation::kHardSwish:
      return FinishIm2col<ConvActivation::kHardSwish>(v, bias, side, rows,
                                                      width, ld);
    case ConvActivation::kHardSigmoid:
      return FinishIm2col<ConvActivation::kHardSigmoid>(v, bias, side, rows,
                                                        width, ld);
    case ConvActivation::kSigmoid:
      return FinishIm2col<ConvActivation::kSigmoid>(v, bias, side, rows, width,
                                                    ld);
    case ConvActivation::kSilu:
      return FinishIm2col<ConvActivation::kSilu>(v, bias, side, rows, width,
                                                 ld);
  }
}

}  // namespace

bool Im2colGemmPays(const Conv2DParams& p, int64_t c, int64_t kh, int64_t kw,
                    int threads, bool avx512) {
  if (p.group != 1 || p.dilations[0] != 1 || p.dilations[1] != 1) {
    return false;
  }
  if (avx512 || threads > 2 || c < 128) return false;
  const bool strided = p.strides[0] > 1 || p.strides[1] > 1;
  // A strided 1 x 1 of 512 channels or more (ResNet-50's 14 x 14 and 7 x 7
  // downsampling) was 4-35% slower than oneDNN's.
  if (kh * kw == 1) return strided && c < 512;
  return strided || c >= 256;
}

Im2colGemmPlan PlanIm2colGemm(int64_t rows, int64_t outputs, int64_t depth,
                              int threads) {
  Im2colGemmPlan plan;
  const int64_t fit = kIm2colChunkBytes / (depth * int64_t{sizeof(float)});
  const int64_t most = std::max(kLeastChunkRows, fit);
  plan.row_chunks = std::max<int64_t>(1, (rows + most - 1) / most);
  // Chunks of equal size, and one a thread where each gets enough rows;
  // else the output channels are cut (a product of few rows is slow).
  plan.row_chunks =
      std::max(plan.row_chunks,
               std::min<int64_t>(
                   threads, std::max<int64_t>(1, rows / kLeastRowsPerThread)));
  plan.chunk_rows = (rows + plan.row_chunks - 1) / plan.row_chunks;
  plan.parts = 1;
  if (plan.row_chunks < threads) {
    plan.parts =
        std::min<int64_t>((threads + plan.row_chunks - 1) / plan.row_chunks,
                          std::max<int64_t>(1, outputs / kLeastPartOutputs));
  }
  plan.workers = std::min<int64_t>(threads, plan.row_chunks * plan.parts);
  plan.scratch_floats = plan.workers * plan.chunk_rows * depth;
  return plan;
}

void ConvIm2colGemmNhwc(const Eigen::ThreadPoolDevice* pool,
                        const Im2colGemmPlan& plan, const Conv2DParams& p,
                        ConvActivation act, const Tensor& x, const Tensor& f,
                        const float* bias, const Tensor* side, Tensor* y,
                        float* scratch) {
  const int64_t h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t o = f.dim(0), kh = f.dim(1), kw = f.dim(2);
  const int64_t oh = y->dim(1), ow = y->dim(2);
  const int64_t sh = p.strides[0], sw = p.strides[1];
  const int64_t top = p.pads[0], left = p.pads[1];
  const int64_t depth = kh * kw * c;
  const int64_t rows = x.dim(0) * oh * ow;
  const float* xd = x.data<float>();
  const float* fd = f.data<float>();
  const float* sd = side == nullptr ? nullptr : side->data<float>();
  float* yd = y->data<float>();
  // Row r's windows, one tap after another, into `to` (depth floats).
  auto copy_windows = [&](int64_t r, float* to) {
    const int64_t img = r / (oh * ow), q = r % (oh * ow);
    const int64_t iy0 = (q / ow) * sh - top, ix0 = (q % ow) * sw - left;
    const float* image = xd + img * h * w * c;
    for (int64_t i = 0; i < kh; ++i) {
      float* tap_row = to + i * kw * c;
      const int64_t iy = iy0 + i;
      if (iy < 0 || iy >= h) {
        std::memset(tap_row, 0, kw * c * sizeof(float));
        continue;
      }
      // The taps of this row that read the image are one run of memory.
      const int64_t j0 = std::max<int64_t>(0, -ix0);
      const int64_t j1 = std::max(j0, std::min(kw, w - ix0));
      if (j0 > 0) std::memset(tap_row, 0, j0 * c * sizeof(float));
      if (j1 > j0) {
        std::memcpy(tap_row + j0 * c, image + (iy * w + ix0 + j0) * c,
                    (j1 - j0) * c * sizeof(float));
      }
      if (j1 < kw) {
        std::memset(tap_row + j1 * c, 0, (kw - j1) * c * sizeof(float));
      }
    }
  };
  const int64_t pieces = plan.row_chunks * plan.parts;
  RunBlocks(pool, plan.workers, [&](int64_t worker) {
    float* col = scratch + worker * plan.chunk_rows * depth;
    for (int64_t piece = worker; piece < pieces; piece += plan.workers) {
      const int64_t chunk = piece / plan.parts, part = piece % plan.parts;
      const int64_t r0 = chunk * plan.chunk_rows;
      const int64_t r1 = std::min(rows, r0 + plan.chunk_rows);
      if (r1 <= r0) continue;
      const int64_t o0 = o * part / plan.parts / 8 * 8;
      const int64_t o1 =
          part + 1 == plan.parts ? o : o * (part + 1) / plan.parts / 8 * 8;
      if (o1 <= o0) continue;
      for (int64_t r = r0; r < r1; ++r) {
        copy_windows(r, col + (r - r0) * depth);
      }
      float* out = yd + r0 * o + o0;
      Sgemm(/*ta=*/false, /*tb=*/true, r1 - r0, o1 - o0, depth, col, depth,
            fd + o0 * depth, depth, out, o);
      FinishIm2colPiece(act, out, bias == nullptr ? nullptr : bias + o0,
                        sd == nullptr ? nullptr : sd + r0 * o + o0, r1 - r0,
                        o1 - o0, o);
    }
  });
  im2col_runs.fetch_add(1);
  if (plan.parts > 1) im2col_channel_split_runs.fetch_add(1);
}

int64_t ConvIm2colGemmRuns() { return im2col_runs.load(); }

int64_t ConvIm2colGemmChannelSplitRuns() {
  return im2col_channel_split_runs.load();
}

}  // namespace sluice::cpu
