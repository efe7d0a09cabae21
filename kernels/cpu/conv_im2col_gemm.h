// ConvIm2colGemmNhwc: a channels-last float32 convolution as one GEMM, the
// image's windows copied into rows (im2col) and multiplied by the filter as
// the graph holds it ([O, KH*KW*C], no reordered copy), for the problems
// where oneDNN 2.6's direct AVX2 kernel is slow: deep inputs on small maps
// and strided windows. In ResNet-50 at two threads its 3 x 3 convolutions
// of 512 channels on 7 x 7 took 2.3-2.9 ms there and 1.7-1.9 ms here, those
// of 256 channels on 14 x 14 2.1-2.2 and 1.4-1.6, its first strided 1 x 1
// 2.7 and 1.3-1.5; and the filters oneDNN reordered for them (45 MiB) are
// not made. Shallow inputs on large maps (64 channels on 56 x 56) stay on
// the direct kernel, which is faster there (bench/RESULTS.md, 2026-12-07).
//
//   if (Im2colGemmPays(params, c, kh, kw, threads, OneDnnHasAvx512())) {
//     const Im2colGemmPlan plan =
//         PlanIm2colGemm(n * oh * ow, o, kh * kw * c, threads);
//     // scratch: plan.scratch_floats floats
//     ConvIm2colGemmNhwc(pool, plan, params, act, x, f, bias, side, y,
//                        scratch);
//   }
//
// The rows are cut into chunks of at most kIm2colChunkBytes of copied
// windows (one in a core's cache while its product runs); where there are
// fewer chunks than threads, the output channels are cut too (whole vectors
// of 8), each part copying its chunk's windows itself. Each worker of the
// pool takes every workers-th piece with its own scratch. The product is
// oneDNN's sgemm on the calling thread (sgemm.h); the bias, the residual
// and the activation are applied to each piece right after its product.
// Thread-safe: calls on different outputs are independent.
#ifndef SLUICE_KERNELS_CPU_CONV_IM2COL_GEMM_H_
#define SLUICE_KERNELS_CPU_CONV_IM2COL_GEMM_H_

#include <cstdint>

#include "core/tensor.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/conv_activation.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace sluice::cpu {

// The most bytes of copied windows one piece holds.
inline constexpr int64_t kIm2colChunkBytes = int64_t{2} << 20;

// Whether the convolution `p` of a `c`-channel image with a kh x kw filter,
// on a pool of `threads` threads, is one ConvIm2colGemmNhwc runs faster than
// oneDNN's direct kernel: ungrouped and undilated, at least 128 input
// channels, and a strided window of several taps, or one over at least 256
// channels, or a strided 1 x 1 over fewer than 512 (an unstrided 1 x 1 is
// oneDNN's 1 x 1 kernel, as fast as the GEMM). Measured on AVX2 with one
// and two threads, where each thread runs its own slice: from three threads
// up oneDNN runs the whole call on an OpenMP team, and with AVX-512
// (`avx512`: OneDnnHasAvx512()) on its brgemm and Winograd kernels, neither
// compared, so those stay there.
bool Im2colGemmPays(const Conv2DParams& p, int64_t c, int64_t kh, int64_t kw,
                    int threads, bool avx512);

// How the rows x outputs x depth product is cut (see above).
struct Im2colGemmPlan {
  int64_t chunk_rows = 0;      // rows of one piece (the last chunk may be less)
  int64_t row_chunks = 0;      // chunks of rows
  int64_t parts = 0;           // runs of output channels per chunk
  int64_t workers = 0;         // pool threads used, each with its own scratch
  int64_t scratch_floats = 0;  // for all workers
};
Im2colGemmPlan PlanIm2colGemm(int64_t rows, int64_t outputs, int64_t depth,
                              int threads);

// y = act(conv(x, f) + bias[o] + side), all NHWC.
// REQUIRES: x [N,H,W,C] and f [O,KH,KW,C] float32 host tensors, ungrouped
// and undilated; y [N,OH,OW,O] allocated; `plan` is PlanIm2colGemm(N*OH*OW,
// O, KH*KW*C, threads) for a pool of those threads; `scratch` holds
// plan.scratch_floats; bias (O floats) and side (y's shape) may be null;
// `pool` may be null (one thread).
void ConvIm2colGemmNhwc(const Eigen::ThreadPoolDevice* pool,
                        const Im2colGemmPlan& plan, const Conv2DParams& p,
                        ConvActivation act, const Tensor& x, const Tensor& f,
                        const float* bias, const Tensor* side, Tensor* y,
                        float* scratch);

// How many ConvIm2colGemmNhwc calls ran since the process started, and how
// many of them cut output channels (tests check the path they mean to
// test was taken). Thread-safe.
int64_t ConvIm2colGemmRuns();
int64_t ConvIm2colGemmChannelSplitRuns();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_CONV_IM2COL_GEMM_H_
